"""The HMM aligner: forward-backward against brute-force path enumeration, and known-answer EM."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from statistical_helpers import train_agreement, train_hmm

from attnalign.data.alignments import Alignment
from attnalign.eval.metrics import Counts, corpus_counts
from attnalign.statistical import align_statistical, directional_posteriors, posterior_links, viterbi_links
from attnalign.statistical.hmm import _HMM
from attnalign.statistical.kernels import hmm_posteriors, transitions


def brute_force(emit_w, emit_n, trans, init, p0, T, S):
    """Word and NULL posteriors and the expected word-to-word moves by summing over every state path
    (states: S words, then S NULLs)."""
    post_w, post_n, xi, z = np.zeros((T, S)), np.zeros(T), np.zeros((S, S)), 0.0
    for path in itertools.product(range(2 * S), repeat=T):
        p = 1.0
        for t, s in enumerate(path):
            if t == 0:
                p *= init[s] if s < S else (p0 if s == S else 0.0)
            else:
                prev = path[t - 1] % S
                p *= trans[prev, s] if s < S else (p0 if s - S == prev else 0.0)
            p *= emit_w[t, s] if s < S else emit_n[t]
        z += p
        for t, s in enumerate(path):
            if s < S:
                post_w[t, s] += p
            else:
                post_n[t] += p
            if t and s < S:  # a move to word s from the position of the state before
                xi[path[t - 1] % S, s] += p
    return post_w / z, post_n / z, xi / z


def _batch(seed: int = 0):
    """Two sentences, T=3 S=3 and T=2 S=2 (padded to 3 x 3): random emissions, the transitions of a
    random jump table."""
    rng = np.random.default_rng(seed)
    p0, max_jump, S, T = 0.2, 2, np.array([3, 2]), np.array([3, 2])
    emit_w = rng.random((2, 3, 3))
    emit_w[1, 2:] = 0
    emit_w[1, :, 2:] = 0
    emit_n = rng.random((2, 3)) * 0.3
    emit_n[1, 2:] = 0
    jump = rng.random(2 * max_jump + 1) + 0.1
    trans, init = np.zeros((2, 3, 3)), np.zeros((2, 3))
    for b, s in enumerate(S.tolist()):
        trans[b, :s, :s], init[b, :s] = transitions(jump, s, p0, max_jump)
    return emit_w, emit_n, trans, init, S, T, p0, jump, max_jump


def test_the_e_step_equals_brute_force_with_padding():
    """hmm_posteriors (the E-step of a batch of cells: emissions read from the table, transitions from
    the jump table) gives every path's sum: the word posteriors, NULL in the last column, 0 in the
    padding, and the expected moves summed by jump distance."""
    emit_w, emit_n, trans, init, S, T, p0, jump, max_jump = _batch()
    assert np.allclose(trans[1, :2, :2].sum(-1), 1 - p0) and np.allclose(init.sum(-1), 1 - p0)
    # a table holding every cell's emission once: cell (b, j, i) -> entry; the padding -> the final 0
    emit = np.concatenate([emit_w.ravel(), emit_n.ravel(), [0.0]])
    idx = np.full((2, 3, 4), len(emit) - 1)
    idx[..., :3] = np.arange(emit_w.size).reshape(2, 3, 3)
    idx[..., 3] = emit_w.size + np.arange(emit_n.size).reshape(2, 3)
    for b in range(2):
        idx[b, T[b]:] = len(emit) - 1
        idx[b, :, S[b]:3] = len(emit) - 1
    post, jumps = hmm_posteriors(idx, emit, jump, S, T, p0, max_jump)
    expected = np.zeros(2 * max_jump + 1)
    for b, (t, s) in enumerate([(3, 3), (2, 2)]):
        bw, bn, bx = brute_force(emit_w[b], emit_n[b], trans[b], init[b], p0, t, s)
        assert np.allclose(post[b, :t, :s], bw) and np.allclose(post[b, :t, 3], bn)
        assert (post[b, t:] == 0).all() and (post[b, :, s:3] == 0).all()
        d = np.clip(np.arange(s)[None, :] - np.arange(s)[:, None], -max_jump, max_jump) + max_jump  # [k, i]
        expected += np.bincount(d.ravel(), bx.ravel(), 2 * max_jump + 1)
    assert np.allclose(jumps, expected)


def test_long_jumps_share_the_end_bucket():
    # with max_jump 1 the jumps of 1, 2 and 3 share one bucket: from position 0 each gets a third of it
    trans, _ = transitions(np.ones(3), 4, 0.0, 1)
    row = trans[0].tolist()
    assert row[1] == pytest.approx(row[2]) == pytest.approx(row[3])
    assert row[0] == pytest.approx(3 * row[1])  # the stay bucket is not shared
    # from position -1 a first word at 1, 2 or 3 (jumps 2 to 4) shares the bucket of jumps >= 1 with 0
    _, init = transitions(np.ones(3), 4, 0.0, 1)
    assert init.tolist() == pytest.approx([0.25] * 4)


def test_hmm_resolves_repeated_words_by_position():
    # 'a' translates to 'x' (twice in a sentence): lexical models cannot tell which 'a' is which 'x';
    # the HMM's jump model prefers the monotone reading
    pairs = [(["a", "a", "b"], ["x", "x", "y"]), (["b", "c"], ["y", "z"]), (["a", "c"], ["x", "z"])] * 20
    post = train_hmm(pairs, iterations=5)
    assert viterbi_links(post[0]) == [(0, 0), (1, 1), (2, 2)]
    assert all(np.allclose(p.sum(1), 1) for p in post)


def test_hmm_handles_empty_sides_and_both_directions():
    pairs = [([], ["x"]), (["a"], []), (["a", "b"], ["x", "y"]), (["b"], ["y"])] * 3
    post = train_hmm(pairs, iterations=2)
    assert post[0].shape == (1, 1) and post[1].shape == (0, 2)
    links = align_statistical(pairs, sym="intersection", model="hmm")
    assert links[2] == [(0, 0), (1, 1)] and links[0] == []
    with pytest.raises(ValueError, match="unknown statistical model"):
        align_statistical(pairs, model="ibm9")


def test_posterior_links_need_both_directions():
    # forward [T=2, S+1=3] and reverse [S=2, T+1=3] posteriors, NULL last; threshold 0.2 on the minimum
    fwd = np.array([[0.7, 0.1, 0.2],
                    [0.3, 0.6, 0.1]])
    rev = np.array([[0.9, 0.25, 0.0],   # source 0: target 0 (0.9), target 1 (0.25)
                    [0.0, 0.15, 0.85]])  # source 1: target 1 only 0.15 -> mostly NULL
    # (0,0): min(0.7, 0.9) kept; (0,1): min(0.3, 0.25) kept; (1,1): min(0.6, 0.15) dropped
    assert posterior_links(fwd, rev) == [(0, 0), (0, 1)]
    assert posterior_links(fwd, rev, threshold=0.3) == [(0, 0)]
    assert posterior_links(np.zeros((0, 3)), np.zeros((2, 1))) == []


def test_agreement_batches_pair_the_same_cells():
    # forward cell (j, i) of a batch is reverse cell (i, j): the same two words, whatever the padding
    from attnalign.statistical.em import make_batch
    from attnalign.statistical.ids import IdCorpus, LexTable

    corpus = IdCorpus.encode([(["a", "b", "c"], ["x", "y"]), (["d"], ["z", "w", "v"])])
    rev = corpus.swapped()
    rows = np.arange(2)
    fb, rb = make_batch(corpus, LexTable(corpus), rows), make_batch(rev, LexTable(rev), rows)
    fkeys, rkeys = LexTable(corpus).keys, LexTable(rev).keys
    for b, (S, T) in enumerate([(3, 2), (1, 3)]):
        for j in range(T):
            for i in range(S):
                e, f = divmod(int(fkeys[fb.idx[b, j, i]]), corpus.n_tgt)
                f2, e2 = divmod(int(rkeys[rb.idx[b, i, j]]), rev.n_tgt)
                assert (corpus.src_words[e], corpus.tgt_words[f]) == (rev.tgt_words[e2], rev.src_words[f2])
    assert fb.idx.shape == (2, 3, 4) and rb.idx.shape == (2, 3, 4)  # [B, Tm, Sm + 1] both ways


def _sample_pairs(n_train: int):
    from pathlib import Path

    from attnalign.data.alignments import read_alignments
    from attnalign.data.corpus import read_corpus

    d = Path(__file__).resolve().parent.parent / "sample_data"
    test = read_corpus(d / "test.en", d / "test.fr")
    train = read_corpus(d / "train.en", d / "train.fr")[:n_train]
    gold, _ = read_alignments(d / "test.gold.pharaoh")
    return test + train, gold, len(test)


def test_agreement_makes_the_directions_agree():
    # the defining property of joint training: the two directions' link posteriors move together
    # (on the real gold sets it is also worth 1-8 AER points: bench/quality.py --config hmm-agree)
    pairs, gold, n = _sample_pairs(300)
    indep = directional_posteriors(pairs, "hmm", iterations=3, prefix=0, identical=0)  # as joint below
    joint = train_agreement(pairs, iterations=3)

    def disagreement(fwd, rev):  # mean |p_fwd(i, j) - p_rev(i, j)| over the word cells
        return np.mean([np.abs(f[:, :-1] - r[:, :-1].T).mean() for f, r in zip(fwd, rev, strict=True)])

    assert disagreement(*joint) < 0.6 * disagreement(*indep)
    assert all(np.allclose(f.sum(1), 1) for f in joint[0]) and all(np.allclose(r.sum(1), 1) for r in joint[1])
    hyps = [Alignment.from_links(posterior_links(f, r))
            for f, r in zip(joint[0][:n], joint[1][:n], strict=True)]
    assert sum(corpus_counts(hyps, gold), Counts()).aer < 0.05


def test_rows_whose_emissions_all_underflow_still_get_a_posterior():
    # a tiny VB alpha can drive t(f | e) to 0 for every word of a row (on Ro-En with alpha 0.001 this made
    # NaNs); the emission floor keeps every row a proper distribution
    hmm = _HMM([(["a", "b", "c"], ["x", "y", "z", "w"])] * 3, 0.2, 10, 0.01, 1, 2_000_000, {})
    hmm.set_t(np.zeros_like(hmm.t))
    post = hmm.posteriors(0, 3)
    assert all(np.isfinite(p).all() and np.allclose(p.sum(1), 1) for p in post)


def test_agreement_with_no_iterations_is_the_independent_start():
    pairs, _, _ = _sample_pairs(100)
    fwd, rev = train_agreement(pairs, iterations=0)
    ind_f, ind_r = directional_posteriors(pairs, "hmm", iterations=0, prefix=0, identical=0)
    assert all(np.allclose(a, b) for a, b in zip(fwd, ind_f, strict=True))
    assert all(np.allclose(a, b) for a, b in zip(rev, ind_r, strict=True))


def test_align_statistical_posterior_and_errors():
    pairs = [(["a", "b"], ["x", "y"]), (["b", "c"], ["y", "z"]), (["a", "c"], ["x", "z"])] * 10
    for model in ("ibm2", "hmm", "hmm-agree"):
        assert align_statistical(pairs, sym="posterior", model=model)[0] == [(0, 0), (1, 1)]
    with pytest.raises(ValueError, match="unknown symmetrization"):
        align_statistical(pairs, sym="soft")
