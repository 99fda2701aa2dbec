"""The Gibbs-sampled HMM + fertility aligner: hand-computed tables, known-answer corpora, determinism,
and the combined teacher (hmm-agree+fertility)."""

from __future__ import annotations

import random
from dataclasses import replace

import numpy as np
import pytest
from statistical_helpers import train_fertility

from attnalign.statistical import (
    COMBINED,
    FERTILITY_THRESHOLD,
    align_statistical,
    check_choices,
    directional_posteriors,
    posterior_links,
    viterbi_links,
)
from attnalign.statistical.fertility import _buckets, _tables, sample_marginals
from attnalign.statistical.gibbs import into_counts, out_counts, tail


def test_tail_count_shares_the_clipped_buckets():
    # max_jump 2, S = 7 real positions, previous link at 3: jumps -3..+3 to the real positions; the
    # distances >= 2 (positions 5, 6) share one bucket, <= -2 (positions 0, 1) another
    d = [-3, -2, -1, 0, 1, 2, 3, 4]  # the last position is padding
    first, last = into_counts(3, 7, 2)
    assert (first, last) == (2, 2)
    assert [tail(x, first, last, 2) for x in d] == [2, 2, 1, 1, 1, 2, 2, 2]


@pytest.mark.parametrize("max_jump", [1, 2, 3, 10])
def test_bucket_counts_match_counting_positions(max_jump):
    for S in range(1, 9):
        i = np.arange(S)
        for ref in range(-1, S + 1):
            into = (int(((i - ref) <= -max_jump).sum()), int(((i - ref) >= max_jump).sum()))
            out = (int(((ref - i) <= -max_jump).sum()), int(((ref - i) >= max_jump).sum()))
            got_in, got_out = into_counts(ref, S, max_jump), out_counts(ref, S, max_jump)
            assert got_in == tuple(max(c, 1) for c in into) and got_out == tuple(max(c, 1) for c in out)


def test_tables_count_jumps_over_null_and_fertilities():
    # one sentence, source a b c (S = 3), target links a, a, NULL: fertilities 2, 0, 0; jumps from the
    # start (-1 -> 0: +1), 0 -> 0 (0), the NULL skipped, then to the end (0 -> 3: +3, clipped to +2)
    pairs = [(["a", "b", "c"], ["x", "y", "z"])]
    buckets, n_src, _, _ = _buckets(pairs, [np.array([0, 0, 3])])
    J, fert = _tables(buckets, n_src, max_jump=2, max_fertility=3)
    assert J.tolist() == [0, 0, 1, 1, 1]  # distances -2..+2
    assert buckets[0].phi.tolist() == [[2, 0, 0, 0]]  # the last column is NULL
    assert fert[1:4].tolist() == [[0, 0, 1, 0], [1, 0, 0, 0], [1, 0, 0, 0]]  # types a, b, c (0: NULL)


def _dictionary_corpus(n: int, seed: int = 0):
    """Random sentences of distinct words out of 12 source words, each translated word for word
    (w3 -> v3), with one neighbour swap in half of the sentences: the true links are known."""
    rng = random.Random(seed)
    pairs, truth = [], []
    for _ in range(n):
        S = rng.randint(3, 7)
        src = [f"w{k}" for k in rng.sample(range(12), S)]  # no word twice: the links are unambiguous
        order = list(range(S))
        if rng.random() < 0.5:
            k = rng.randrange(S - 1)
            order[k], order[k + 1] = order[k + 1], order[k]
        pairs.append((src, [src[i].replace("w", "v") for i in order]))
        truth.append(sorted((i, j) for j, i in enumerate(order)))
    return pairs, truth


def test_sampler_recovers_a_dictionary_with_reordering():
    pairs, truth = _dictionary_corpus(300)
    fwd, rev = train_fertility(pairs, sweeps=10, fertility_from=3, collect=5)
    assert all(m.shape == (len(t), len(s) + 1) and np.allclose(m.sum(1), 1)
               for m, (s, t) in zip(fwd, pairs, strict=True))
    hits = sum(len(set(viterbi_links(m)) & set(g)) for m, g in zip(fwd, truth, strict=True))
    assert hits / sum(map(len, truth)) > 0.97
    # links sampled in half the sweeps of both directions: every one right, nearly all found
    links = [set(posterior_links(f, r, FERTILITY_THRESHOLD)) for f, r in zip(fwd, rev, strict=True)]
    right = sum(len(a & set(g)) for a, g in zip(links, truth, strict=True))
    assert right == sum(map(len, links)) and right / sum(map(len, truth)) > 0.93


def test_sampling_is_deterministic_per_seed_and_keeps_empty_sides():
    pairs, _ = _dictionary_corpus(60)
    pairs = pairs + [([], ["v1"]), (["w1"], [])]
    init = [np.zeros(len(t), dtype=np.int64) for _, t in pairs]
    a, b = (sample_marginals(pairs, init, sweeps=4, fertility_from=2, collect=2, seed=3)
            .frequencies(0, len(pairs)) for _ in range(2))
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert a[-2].shape == (1, 1) and not a[-2].any() and a[-1].shape == (0, 2)  # empty sides: no links
    with pytest.raises(ValueError, match="collect"):
        sample_marginals(pairs, init, sweeps=2, collect=3)


def test_samplers_pool_the_counts_of_chains_seeded_one_after_another():
    from attnalign.statistical.fertility import FertilityModel
    from attnalign.statistical.ids import IdCorpus
    from attnalign.statistical.settings import MAX_SAMPLERS

    pairs, _ = _dictionary_corpus(60)
    corpus = IdCorpus.encode(pairs)
    kw = {"sweeps": 4, "fertility_from": 2, "collect": 2}
    one, two = (FertilityModel(corpus, seed=s, **kw) for s in (3, 4))
    pooled = FertilityModel(corpus, seed=3, samplers=2, **kw)
    for d in range(2):
        assert pooled.marginals[d].collect == 4
        assert np.array_equal(pooled.marginals[d].counts, one.marginals[d].counts + two.marginals[d].counts)
    assert not np.array_equal(one.marginals[0].counts, two.marginals[0].counts)  # the chains differ
    fwd, _ = pooled.posteriors(0, len(pairs))
    assert all(np.allclose(m.sum(1), 1) for m in fwd)  # still frequencies: rows sum to 1
    with pytest.raises(ValueError, match="samplers"):
        FertilityModel(corpus, samplers=MAX_SAMPLERS + 1, **kw)


def test_a_larger_corpus_samples_fewer_sweeps(monkeypatch):
    """Hand-computed: 40 * sqrt(28,000 / n) sweeps beyond 28,000 pairs, at least 12, the fertility
    model and the counted sweeps at the same shares (10/40 and 20/40); the model samples that schedule."""
    from attnalign.statistical import fertility
    from attnalign.statistical.fertility import FertilityModel
    from attnalign.statistical.ids import IdCorpus
    from attnalign.statistical.settings import SAMPLER

    def schedule(n):
        s = SAMPLER.for_pairs(n)
        return s.sweeps, s.fertility_from, s.collect

    assert schedule(28_000) == (40, 10, 20)  # every sweep up to full_pairs
    assert schedule(112_000) == (20, 5, 10)  # 40 * sqrt(1/4)
    assert schedule(160_484) == (17, 4, 8)  # 16.7
    assert schedule(310_484) == (12, 3, 6)  # 12.01
    assert schedule(2_000_000) == (12, 3, 6)  # 4.7: the floor
    seen = []
    real = fertility.sample_marginals
    monkeypatch.setattr(fertility, "sample_marginals", lambda *a, **k: seen.append(
        (k["sweeps"], k["fertility_from"], k["collect"])) or real(*a, **k))
    monkeypatch.setattr(fertility, "SAMPLER", replace(SAMPLER, full_pairs=15, min_sweeps=2))
    pairs, _ = _dictionary_corpus(60)  # 60 pairs: 40 * sqrt(15 / 60) = 20 sweeps
    FertilityModel(IdCorpus.encode(pairs))
    assert seen == [(20, 5, 10)] * 2  # both directions


def test_cells_of_two_or_four_bytes_sample_the_same_links(monkeypatch):
    """A cell holds its place in its source type's table row: in 2 bytes where every row is shorter than
    65,536 entries, else 4; the sampler reads the same entries either way."""
    from attnalign.statistical import fertility

    pairs, _ = _dictionary_corpus(60)
    init = [np.zeros(len(t), dtype=np.int64) for _, t in pairs]
    small = sample_marginals(pairs, init, sweeps=4, fertility_from=2, collect=2, seed=3).counts
    monkeypatch.setattr(fertility, "_cell_type", lambda table: np.int32)
    assert np.array_equal(sample_marginals(pairs, init, sweeps=4, fertility_from=2, collect=2, seed=3).counts,
                          small)


@pytest.mark.parametrize("threads", [2, 3])
def test_the_parallel_sweep_draws_the_links_of_the_serial_one(monkeypatch, threads):
    """The sentences' draws at one position shared among the cores (``sweep_parallel``) take the same
    uniform numbers as the one-core sweep, so the links are the same, bit for bit."""
    from attnalign.statistical import gibbs, kernels

    pairs, _ = _dictionary_corpus(200)
    pairs += [(["w1"] * 7, ["v2", "v1"]), (["w3", "w2"], ["v1"] * 9)]  # lengths unlike the others'
    init = [np.zeros(len(t), dtype=np.int64) for _, t in pairs]
    kw = dict(sweeps=5, fertility_from=2, collect=3, seed=4)
    used = []
    for name in ("sweep", "sweep_parallel"):
        real = getattr(gibbs, name)
        monkeypatch.setattr(gibbs, name, lambda *a, _n=name, _f=real: used.append(_n) or _f(*a))
    try:
        kernels.set_threads(1)
        one = sample_marginals(pairs, init, **kw).counts
        assert set(used) == {"sweep"}
        used.clear()
        kernels.set_threads(threads)
        assert np.array_equal(sample_marginals(pairs, init, **kw).counts, one)
        assert set(used) == ({"sweep_parallel"} if kernels.threads() > 1 else {"sweep"})
    finally:
        kernels.set_threads()


def test_combined_teacher_is_the_union_of_its_parts():
    pairs, _ = _dictionary_corpus(80)
    agree = directional_posteriors(pairs, "hmm-agree")
    fert = directional_posteriors(pairs, "fertility", prefix=0)
    expect = [sorted(set(posterior_links(a, b)) | set(posterior_links(c, d, FERTILITY_THRESHOLD)))
              for a, b, c, d in zip(*agree, *fert, strict=True)]
    assert align_statistical(pairs, "posterior", model=COMBINED) == expect
    with pytest.raises(ValueError, match="takes sym 'posterior'"):
        align_statistical(pairs, "intersection", model=COMBINED)
    with pytest.raises(ValueError, match="combines two of them"):
        directional_posteriors(pairs, COMBINED)
    from attnalign.errors import AttnAlignError

    with pytest.raises(AttnAlignError, match="has no 'grow-diag'"):
        check_choices(COMBINED, "grow-diag")


def test_a_stop_ends_the_sampler_before_its_next_bucket():
    import threading

    from attnalign.statistical.progress import Stopped, stopping

    pairs = [(["a", "b"], ["x", "y"])] * 20
    stop = threading.Event()
    stop.set()
    with pytest.raises(Stopped), stopping(stop):
        sample_marginals(pairs, [np.array([0, 1])] * 20, sweeps=5, collect=2)


def test_ctrl_c_stops_both_sampler_threads_at_once(tmp_path):
    """Ctrl-C while the two directions sample in two threads: the run ends within a bucket, not after
    the threads have finished sampling (the executor used to wait for them)."""
    import subprocess
    import sys

    script = tmp_path / "interrupt.py"
    script.write_text('''
import os, signal, threading, time
from attnalign.statistical import fertility, gibbs, kernels

# Ctrl-C as a terminal delivers it, whatever this process inherited (a job started with & ignores SIGINT)
signal.signal(signal.SIGINT, signal.default_int_handler)
from attnalign.statistical.ids import IdCorpus

kernels.set_threads(2)
words = [f"w{k}" for k in range(300)]
pairs = [([words[(7 * n + k) % 300] for k in range(12)], [words[(7 * n + k + 1) % 300] for k in range(12)])
         for n in range(6000)]
calls, fired, sweep = [], [], gibbs.sweep
def fire():
    fired.append(len(calls))
    os.kill(os.getpid(), signal.SIGINT)
def sweep_then_interrupt(*args):
    if not calls:
        threading.Timer(0.3, fire).start()
    calls.append(1)
    return sweep(*args)
gibbs.sweep = sweep_then_interrupt
try:
    fertility.FertilityModel(IdCorpus.encode(pairs), sweeps=2000, fertility_from=5, collect=5)
    print("finished", len(calls))
except KeyboardInterrupt:
    print("stopped", len(calls) - fired[0])
''')
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600)
    word, calls = p.stdout.split()
    # stopped between sweeps, long before the 2 x 2,000 sweeps end: counted in sweeps, not seconds (a
    # loaded machine is slower to stop, but its samplers are slower too)
    assert word == "stopped" and int(calls) < 1000, (p.stdout, p.stderr[-2000:])


def test_the_directions_sample_at_once_within_the_memory_share(monkeypatch):
    """Both directions' samplers run at once where their state fits PARALLEL_SHARE of the machine's
    memory; past it they run one after the other with a warning that says why, to the same links."""
    from helpers import SAMPLE

    from attnalign.data.corpus import read_corpus
    from attnalign.errors import AttnAlignWarning
    from attnalign.statistical import align_statistical, fertility, kernels

    assert fertility.parallel_budget(10 * 2**30) == int(0.4 * 10 * 2**30)
    assert fertility.parallel_budget(0) == fertility.PARALLEL_BYTES  # the system does not say
    pairs = read_corpus(SAMPLE / "train.en", SAMPLE / "train.fr")[:300]
    monkeypatch.setattr(kernels, "threads", lambda: 2)
    at_once = align_statistical(pairs, model="fertility", sym="grow-diag-final-and")
    monkeypatch.setattr(fertility, "parallel_budget", lambda: 0)
    with pytest.warns(AttnAlignWarning, match="one after the other"):
        in_turn = align_statistical(pairs, model="fertility", sym="grow-diag-final-and")
    assert in_turn == at_once
