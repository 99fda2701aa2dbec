"""The built-in IBM2-diagonal aligner and guided-alignment training."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from helpers import SAMPLE
from statistical_helpers import all_cells, train_ibm2, unpad

from attnalign.data.alignments import Alignment, read_alignments
from attnalign.data.corpus import read_corpus
from attnalign.errors import AttnAlignError
from attnalign.eval.metrics import Counts, corpus_counts
from attnalign.nmt.batching import make_batch
from attnalign.statistical import align_statistical, viterbi_links, word_prefixes
from attnalign.statistical.em import digamma as _digamma
from attnalign.statistical.em import m_step
from attnalign.training import TrainOptions, guide_loss, guide_targets, train


@pytest.mark.parametrize(("x", "value"), [(1.0, -0.5772156649), (0.5, -1.9635100260), (10.0, 2.2517525891)])
def test_digamma(x, value):
    assert _digamma(np.array([x]))[0] == pytest.approx(value, abs=1e-8)


def test_em_finds_the_word_translations():
    # 'a' always comes with 'x'; 'b' with 'y'; 'c' with 'z'. Orders differ so position alone can't tell.
    pairs = [(["a", "b"], ["y", "x"]), (["a", "c"], ["x", "z"]), (["b", "c"], ["z", "y"]),
             (["a"], ["x"])] * 3
    post = train_ibm2(pairs, iterations=10, tension=0.0, alpha=0.0)
    assert viterbi_links(post[0]) == [(0, 1), (1, 0)]  # a-x, b-y
    assert viterbi_links(post[2]) == [(0, 1), (1, 0)]  # b-y, c-z
    assert post[3].shape == (1, 2) and np.allclose(post[3].sum(1), 1)


def test_empty_sides_and_null():
    post = train_ibm2([([], ["x"]), (["a"], ["x"])])
    assert post[0].shape == (1, 1) and viterbi_links(post[0]) == []
    assert viterbi_links(np.array([[0.2, 0.8]])) == []  # NULL (last column) wins: no link


def test_statistical_aligner_on_the_sample_data():
    pairs = read_corpus(SAMPLE / "test.en", SAMPLE / "test.fr") + read_corpus(SAMPLE / "train.en",
                                                                            SAMPLE / "train.fr")
    gold, _ = read_alignments(SAMPLE / "test.gold.pharaoh")
    links = align_statistical(pairs, sym="grow-diag-final-and", model="ibm2")[:200]
    aer = sum(corpus_counts([Alignment.from_links(x) for x in links], gold), Counts()).aer
    assert aer < 0.15


def test_guide_targets_and_loss_by_hand():
    b = make_batch([0], [[5, 6]], [[7, 8]])  # 2 source words + EOS, 2 target words (+ EOS row)
    g = guide_targets(b, [[(0, 0), (1, 0), (1, 1)]])
    assert g.shape == (1, 3, 3)
    assert g[0].tolist() == [[0.5, 0.5, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.0]]
    att = torch.tensor([[[0.5, 0.25, 0.25], [0.5, 0.5, 0.0], [0.1, 0.1, 0.8]]])
    # row 0: -(0.5 log 0.5 + 0.5 log 0.25); row 1: -log 0.5; row 2 has no links
    expected = (-(0.5 * math.log(0.5) + 0.5 * math.log(0.25)) - math.log(0.5)) / 2
    assert guide_loss(att, g).item() == pytest.approx(expected)


def test_guided_training_teaches_the_attention(tmp_path):
    """With the gold as guide, six short epochs give a far better AER than without."""
    import random

    r = random.Random(0)
    pairs, gold = [], []
    for _ in range(600):
        s = [f"w{r.randint(0, 19)}" for _ in range(r.randint(3, 7))]
        pairs.append((s, s[::-1]))
        gold.append([(len(s) - 1 - j, j) for j in range(len(s))])
    from attnalign.training import DevSet

    dev = DevSet(pairs[:50], [Alignment.from_links(g) for g in gold[:50]])
    opts = TrainOptions.of(hidden=32, emb_dim=16, dropout=0.0, epochs=6,
                        batch_tokens=300, lr=3e-3, warmup=5)
    plain = train(pairs, tmp_path / "plain", opts, dev=dev)["directions"]["forward"]["dev_aer"]
    guided = train(pairs, tmp_path / "guided", opts.updated(guide_weight=1.0),
                   dev=dev, guide=gold)["directions"]["forward"]["dev_aer"]
    assert guided < 0.1 < plain


def test_guide_must_match_the_corpus(tmp_path):
    with pytest.raises(AttnAlignError, match="2 lines for 1 pairs"):
        train([(["a"], ["b"])], tmp_path / "m", TrainOptions.of(epochs=1), guide=[[], []])


def test_word_prefixes_by_hand():
    pairs = [(["maisons", "a"], ["houses"]), ([], ["x"])]
    assert word_prefixes(pairs, 5) == [(["maiso", "a"], ["house"]), ([], ["x"])]
    assert word_prefixes(pairs, 0) is pairs
    with pytest.raises(ValueError, match="prefix"):
        word_prefixes(pairs, -1)


@pytest.mark.parametrize("model", ["ibm2", "hmm", "hmm-agree"])
def test_prefixes_pool_the_inflected_forms_of_a_word(model):
    # "chaton"/"maison" are frequent, always aligned monotonically; the first pair holds forms seen once,
    # in crossed order. On whole words the two singletons are interchangeable and position (monotone)
    # decides, wrongly; cut to 5 characters they are "chato"/"maiso", whose translations are known.
    pairs = [(["maisonsb", "chatonsa"], ["cat", "house"])]
    pairs += [(["chaton", "vert"], ["cat", "green"]), (["maison", "vert"], ["house", "green"]),
              (["vert"], ["green"])] * 4
    sym = "posterior" if model == "hmm-agree" else "intersection"
    assert align_statistical(pairs, sym=sym, model=model, prefix=5)[0] == [(0, 1), (1, 0)]
    assert align_statistical(pairs, sym=sym, model=model, prefix=0)[0] == [(0, 0), (1, 1)]


def test_guide_prefix_option(tmp_path):
    with pytest.raises(AttnAlignError, match="--guide-prefix"):
        train([(["a"], ["b"])], tmp_path / "m",
              TrainOptions.of(epochs=1, guide="auto", guide_prefix=-1))


def test_identical_types_get_extra_counts_by_hand():
    # source ids: NULL 0, a 1, b 2; target ids: a 0, c 1; type pairs sorted by (source, target):
    # NULL-a, NULL-c, a-a, a-c, b-a, b-c. Only a-a is identical; NULL never is.
    _, table, bonus = all_cells([(["a", "b"], ["a", "c"])], identical=2.0)
    assert bonus.tolist() == [0, 0, 2, 0, 0, 0]
    # plain EM (alpha 0) with one count per type pair: t(a | a) = (1 + 2) / (2 + 2), t(c | a) = 1 / 4
    assert m_step(table, np.ones(6), alpha=0.0, bonus=bonus).tolist() == [0.5, 0.5, 0.75, 0.25, 0.5, 0.5]
    assert all_cells([(["a"], ["a"])])[2] is None


@pytest.mark.parametrize("model", ["ibm2", "hmm", "hmm-agree"])
def test_identical_words_pull_singletons_together(model):
    # "anna" and "boris", seen once, swap places; without the prior position decides (monotone, wrong),
    # with 5 extra counts the identical names link across
    pairs = [(["anna", "vede", "boris"], ["boris", "sees", "anna"])]
    pairs += [(["chat", "vert"], ["cat", "green"]), (["vede", "vert"], ["sees", "green"]),
              (["vert"], ["green"])] * 4
    sym = "posterior" if model == "hmm-agree" else "intersection"
    assert align_statistical(pairs, sym=sym, model=model, identical=5.0)[0] == [(0, 2), (1, 1), (2, 0)]
    assert align_statistical(pairs, sym=sym, model=model, identical=0.0)[0] == [(0, 0), (1, 1), (2, 2)]
    with pytest.raises(ValueError, match="identical"):
        align_statistical(pairs, sym=sym, model=model, identical=-1.0)


def test_guide_identical_option(tmp_path):
    with pytest.raises(AttnAlignError, match="--guide-identical"):
        train([(["a"], ["b"])], tmp_path / "m",
              TrainOptions.of(epochs=1, guide="auto", guide_identical=-1.0))
    with pytest.raises(AttnAlignError, match="--guide-samplers 2: hmm-agree does not sample"):
        train([(["a"], ["b"])], tmp_path / "m",
              TrainOptions.of(epochs=1, guide="auto", guide_model="hmm-agree", guide_samplers=2))


def cell_keys(corpus) -> np.ndarray:
    """Every cell's key ``e * n_tgt + f`` (NULL: e = 0), pair by pair, ``[T, S + 1]`` row-major, pairs
    with an empty side left out: plain Python, the reference for the compiled table and cells."""
    keys = []
    for k in range(len(corpus)):
        src = corpus.src[corpus.src_off[k]:corpus.src_off[k + 1]].tolist()
        tgt = corpus.tgt[corpus.tgt_off[k]:corpus.tgt_off[k + 1]].tolist()
        if src and tgt:
            keys += [e * corpus.n_tgt + f for f in tgt for e in (*src, 0)]
    return np.array(keys, np.int64)


def test_the_table_holds_every_cells_key_once_in_order():
    """LexTable's keys are the sorted distinct keys of every cell, and type e's run from starts[e],
    whatever the threads (each thread takes its own source types)."""
    from attnalign.statistical import kernels
    from attnalign.statistical.ids import IdCorpus, LexTable

    pairs = read_corpus(SAMPLE / "train.en", SAMPLE / "train.fr")[:500] + [([], ["x"]), (["y"], [])]
    corpus = IdCorpus.encode(pairs, prefix=4)
    keys = np.unique(cell_keys(corpus))
    starts = np.searchsorted(keys, np.arange(corpus.n_src + 1) * corpus.n_tgt)
    for parts in (1, 3, 8):
        got, got_starts = kernels.lex_keys(corpus.src, corpus.src_off, corpus.tgt, corpus.tgt_off,
                                           corpus.n_src, corpus.n_tgt, parts)
        assert np.array_equal(got, keys) and np.array_equal(got_starts, starts)
    table = LexTable(corpus)
    assert np.array_equal(table.keys, keys) and np.array_equal(table.pair_src, keys // corpus.n_tgt)


def test_the_cells_find_each_key_where_a_binary_search_of_the_whole_table_does():
    """The compiled cells search a key among its source type's entries only: the same entry as
    np.searchsorted over the whole table, padded (make_batch) and unpadded (flat_cells, as places in
    the source type's row)."""
    from attnalign.statistical.em import make_batch, plan
    from attnalign.statistical.ids import IdCorpus, LexTable
    from attnalign.statistical.kernels import flat_cells

    corpus = IdCorpus.encode(read_corpus(SAMPLE / "train.en", SAMPLE / "train.fr")[:500], prefix=4)
    table = LexTable(corpus)
    keys = cell_keys(corpus)
    expected = np.searchsorted(table.keys, keys)
    assert np.array_equal(table.keys[expected], keys)
    rows = np.arange(len(corpus))
    for kind in (np.uint16, np.int32):  # unpadded, each cell's place in its source type's row
        flat = np.empty(len(keys), kind)
        off = flat_cells(corpus.src, corpus.src_off, corpus.tgt, corpus.tgt_off, rows, table.keys,
                         table.starts, table.width, flat)
        assert np.array_equal(table.starts[keys // corpus.n_tgt] + flat, expected) and off[-1] == len(keys)
    for group in plan(corpus, rows, 20_000, lambda B, S, T: B * T * (S + 1)):
        b = make_batch(corpus, table, group)
        for k, cells in zip(group.tolist(), unpad(b, b.idx), strict=True):
            assert np.array_equal(cells.ravel(), expected[off[k]:off[k + 1]])


def test_ibm2_posteriors_by_hand():
    """One pair, 2 source words, 1 target word: the diagonal prior of word j = 1 of 1 over i = 1, 2 of 2
    is exp(-4 |i/2 - 1|), i.e. e^-2 and 1, shared out of 1 - p0; NULL gets p0; each times t."""
    from attnalign.statistical.em import CellBatch, ibm2_posteriors

    b = CellBatch(np.array([0]), np.array([2]), np.array([1]), np.array([[[0, 1, 2]]]))  # cells -> t entries
    t_ext = np.array([0.5, 0.25, 0.4, 0.0])
    p0, h = 0.1, np.array([math.exp(-2), 1.0])
    score = np.array([0.5 * 0.9 * h[0] / h.sum(), 0.25 * 0.9 * h[1] / h.sum(), 0.4 * p0])
    assert np.allclose(ibm2_posteriors(b, t_ext, p0, 4.0)[0, 0], score / score.sum(), rtol=1e-12)
    padded = CellBatch(np.array([0, 1]), np.array([1, 2]), np.array([1, 2]), np.array(
        [[[0, 3, 2], [3, 3, 3]], [[0, 1, 2], [1, 0, 2]]]))
    post = ibm2_posteriors(padded, t_ext, p0, 4.0)
    assert np.allclose(post.sum(-1), [[1, 0], [1, 1]]) and post[0, 0, 1] == 0  # padding: 0


@pytest.mark.parametrize("parts", [1, 2, 3])
def test_counts_add_up_in_order_whatever_the_threads(parts):
    """The counts of any number of threads equal np.add.at's, bit for bit (each entry's cells are
    added in the same order), one direction alone or two in the same loop."""
    from attnalign.statistical.count_kernels import add_counts

    rng = np.random.default_rng(0)
    idx, w = rng.integers(0, 101, 50_000), rng.random(50_000)
    idx2, w2 = rng.integers(0, 37, 20_000).astype(np.int32), rng.random(20_000)  # the other index type
    expected, expected2 = np.zeros(101), np.zeros(37)
    np.add.at(expected, idx, w)
    np.add.at(expected2, idx2, w2)
    total = np.zeros(101)
    add_counts(total, idx, w, parts, total, idx, w, 0)  # one direction: parts2 0
    assert np.array_equal(total, expected)
    total, total2 = np.zeros(101), np.zeros(37)
    add_counts(total, idx, w, parts, total2, idx2, w2, 4 - parts)
    assert np.array_equal(total, expected) and np.array_equal(total2, expected2)


def test_a_batch_holds_each_cells_table_entry():
    """make_batch's cells are the table entries of (source word or NULL, target word), the padding
    one past the table's end, for pairs of different lengths and a pair with no source words."""
    from attnalign.statistical.em import make_batch
    from attnalign.statistical.ids import IdCorpus, LexTable

    corpus = IdCorpus.encode([(["a", "b"], ["x"]), (["b"], ["y", "x", "z"]), ([], ["x"])])
    table = LexTable(corpus)
    entry = {int(k): n for n, k in enumerate(table.keys)}
    b = make_batch(corpus, table, np.array([0, 1, 2]))
    a, bb, x, y, z = 1, 2, 1, 2, 3  # ids in order of appearance; NULL is 0
    w, pad = table.width, len(table)
    assert b.S.tolist() == [2, 1, 0] and b.T.tolist() == [1, 3, 1]
    assert b.idx[0].tolist() == [[entry[a * w + x], entry[bb * w + x], entry[x]], [pad] * 3, [pad] * 3]
    assert b.idx[1].tolist() == [[entry[bb * w + y], pad, entry[y]], [entry[bb * w + x], pad, entry[x]],
                                 [entry[bb * w + z], pad, entry[z]]]
    assert b.idx[2].tolist() == [[pad, pad, entry[x]], [pad] * 3, [pad] * 3]  # no source: NULL only


def test_ibm2_viterbi_is_the_argmax_of_each_pairs_posteriors(monkeypatch):
    """The sampler's start: IBM2's best source position per target word (S for NULL), computed batch by
    batch, equals the argmax of each pair's posteriors, empty sides and sentences of every length
    included."""
    from attnalign.statistical import em
    from attnalign.statistical.ibm2 import IBM2
    from attnalign.statistical.ids import IdCorpus

    pairs = read_corpus(SAMPLE / "train.en", SAMPLE / "train.fr")[:300]
    pairs += [([], ["a", "b"]), (["a"], []), (["x"] * 30, ["y"]), (["the"], ["la", "le", "les"])]
    corpus = IdCorpus.encode(pairs)
    for cache in (0, 10**9):  # every batch rebuilt, or every batch kept from training
        monkeypatch.setattr(em, "cache_cells", lambda cache=cache: cache)
        ibm2 = IBM2(corpus, 2, hold=True)
        assert len(ibm2.batches.cached) == (0 if cache == 0 else len(ibm2.batches.groups))
        expect = [p.argmax(axis=1) for p in ibm2.posteriors(0, len(pairs))]
        assert ibm2.viterbi().tolist() == np.concatenate(expect).tolist()
        assert not ibm2.batches.cached  # released


def test_union_cells_by_hand():
    """Two pairs' links from flat cells: a link where both posteriors reach 0.2, or both sampled counts
    reach half of the sweeps; an empty pair between them."""
    from attnalign.statistical.decode_kernels import union_cells

    S, T = np.array([2, 0, 1]), np.array([2, 3, 1])
    # pair 0: forward [T=2, S+1=3], reverse [S=2, T+1=3]; pair 1: 3 NULL cells forward, none reverse
    fwd = np.array([0.5, 0.1, 0.4, 0.1, 0.1, 0.8] + [1, 1, 1] + [0.9, 0.1])
    rev = np.array([0.6, 0.3, 0.1, 0.19, 0.1, 0.71] + [] + [0.2, 0.8])
    f_at, r_at = np.array([0, 6, 9]), np.array([0, 6, 6])
    counts_f = np.array([0, 0, 4, 0, 3, 1] + [4, 4, 4] + [0, 4], dtype=np.uint8)
    counts_r = np.array([0, 2, 2, 0, 2, 2] + [] + [0, 4], dtype=np.uint8)
    li, lj, starts = union_cells(S, T, fwd, f_at, rev, r_at, counts_f, f_at, counts_r, r_at, 4, 0.2, 0.5)
    # pair 0: (0,0) posteriors 0.5/0.6; (0,1) 0.1 no, counts 0/2 no; (1,0) 0.1 no, counts 0/0 no;
    # (1,1) posteriors 0.1 no, counts 3/4 and 2/4 yes; pair 2: (0,0) posteriors 0.9 and 0.2 yes
    assert list(zip(li.tolist(), lj.tolist(), strict=True)) == [(0, 0), (1, 1), (0, 0)]
    assert starts.tolist() == [0, 2, 2, 3]


def test_the_em_cache_changes_no_table(monkeypatch):
    """EM keeps its batches' cells between passes up to CACHE_SHARE of the machine's memory (4 bytes a
    cell) and rebuilds the rest every pass: the agreement HMMs trained with every batch kept, some or
    none have the same tables."""
    from attnalign.statistical import em
    from attnalign.statistical.hmm import HMMAgreement
    from attnalign.statistical.ids import IdCorpus

    assert em.cache_cells(8 * 2**30) == int(0.1 * 8 * 2**30) // 4
    assert em.cache_cells(0) == em.CACHE_CELLS  # the system does not say
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "4")  # torchrun's processes on this machine share it
    assert em.cache_cells(8 * 2**30) == int(0.1 * 8 * 2**30 / 4) // 4
    monkeypatch.delenv("LOCAL_WORLD_SIZE")
    corpus = IdCorpus.encode(read_corpus(SAMPLE / "train.en", SAMPLE / "train.fr")[:200])
    tables = []
    for cache in (0, 5_000, 10**9):
        monkeypatch.setattr(em, "cache_cells", lambda cache=cache: cache)
        m = HMMAgreement(corpus, 2, ibm2_iterations=2, max_cells=20_000)
        tables.append((m.fwd.t, m.rev.t, m.fwd.jump))
    for t in tables[1:]:
        for a, b in zip(tables[0], t, strict=True):
            np.testing.assert_array_equal(a, b)


def test_counts_are_summed_across_processes_a_slice_at_a_time(monkeypatch):
    """Under torchrun the fertility model's link counts (uint8, a cell each) are summed in place a slice
    at a time, never as one float64 copy of the whole; every element is summed once, the last slice
    short; with one process nothing is reduced."""
    from attnalign.statistical import processes

    calls = []

    def doubled(x):  # two processes holding the same counts
        calls.append((x.dtype, len(x)))
        return 2 * x

    monkeypatch.setattr(processes, "all_reduce", doubled)
    x = np.arange(10, dtype=np.uint8)
    assert processes.summed_in_place(x, step=4) is x and calls == []  # one process
    monkeypatch.setattr(processes, "world", lambda: (0, 2))
    assert processes.summed_in_place(x, step=4) is x
    assert x.tolist() == [2 * k for k in range(10)] and x.dtype == np.uint8
    assert calls == [(np.float64, 4), (np.float64, 4), (np.float64, 2)]


def test_the_memory_shares_read_a_containers_limit(monkeypatch, tmp_path):
    """The memory the caches and the samplers take a share of is the container's limit where it is
    below the machine's memory; "max", a limit beyond the machine's, or no file at all mean the
    machine's."""
    import os

    from attnalign.data import npz

    physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    v2, v1 = tmp_path / "memory.max", tmp_path / "memory.limit_in_bytes"
    monkeypatch.setattr(npz, "CGROUP_LIMITS", (str(v2), str(v1)))
    assert npz.machine_memory() == physical  # neither file
    v2.write_text("max\n")
    v1.write_text(f"{physical * 4}\n")
    assert npz.machine_memory() == physical
    v1.write_text(f"{2**30}\n")
    assert npz.machine_memory() == 2**30
    v2.write_text(f"{2**29}\n")
    assert npz.machine_memory() == 2**29
