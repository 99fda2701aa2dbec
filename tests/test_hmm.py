"""The HMM aligner: forward-backward against brute-force path enumeration, and known-answer EM."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from attnalign.hmm import _forward_backward, _transitions, train_hmm_posteriors
from attnalign.statistical import align_statistical, viterbi_links


def brute_force(emit_w, emit_n, trans, init, p0, T, S):
    """Word and NULL posteriors by summing over every state path (states: S words, then S NULLs)."""
    post_w, post_n, z = np.zeros((T, S)), np.zeros(T), 0.0
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
    return post_w / z, post_n / z


def test_forward_backward_equals_brute_force_with_padding():
    g = torch.Generator().manual_seed(0)
    p0, max_jump = 0.2, 2
    # sentence 0: T=3, S=3; sentence 1: T=2, S=2 (padded to 3 x 3)
    emit_w = torch.rand(2, 3, 3, generator=g, dtype=torch.float64)
    emit_w[1, 2:] = 0
    emit_w[1, :, 2:] = 0
    emit_n = torch.rand(2, 3, generator=g, dtype=torch.float64) * 0.3
    emit_n[1, 2:] = 0
    s_mask = torch.tensor([[True, True, True], [True, True, False]])
    t_mask = torch.tensor([[True, True, True], [True, True, False]])
    jump = torch.rand(2 * max_jump + 1, generator=g, dtype=torch.float64) + 0.1
    trans, init, _ = _transitions(jump, s_mask, p0, max_jump)
    assert torch.allclose(trans[1, :2, :2].sum(-1), torch.full((2,), 1 - p0, dtype=torch.float64))
    assert torch.allclose(init.sum(-1), torch.full((2,), 1 - p0, dtype=torch.float64))
    g_w, g_n, _ = _forward_backward(emit_w, emit_n, trans, init, t_mask, p0)
    for b, (T, S) in enumerate([(3, 3), (2, 2)]):
        args = (emit_w[b].numpy(), emit_n[b].numpy(), trans[b].numpy(), init[b].numpy())
        bw, bn = brute_force(*args, p0, T, S)
        assert np.allclose(g_w[b, :T, :S].numpy(), bw)
        assert np.allclose(g_n[b, :T].numpy(), bn)
        assert (g_w[b, T:] == 0).all() and (g_w[b, :, S:] == 0).all()


def test_long_jumps_share_the_end_bucket():
    # with max_jump 1 the jumps of 1, 2 and 3 share one bucket: from position 0 each gets a third of it
    trans, _, _ = _transitions(torch.ones(3, dtype=torch.float64), torch.ones(1, 4, dtype=torch.bool), 0.0, 1)
    row = trans[0, 0].tolist()
    assert row[1] == pytest.approx(row[2]) == pytest.approx(row[3])
    assert row[0] == pytest.approx(3 * row[1])  # the stay bucket is not shared


def test_hmm_resolves_repeated_words_by_position():
    # 'a' translates to 'x' (twice in a sentence): lexical models cannot tell which 'a' is which 'x';
    # the HMM's jump model prefers the monotone reading
    pairs = [(["a", "a", "b"], ["x", "x", "y"]), (["b", "c"], ["y", "z"]), (["a", "c"], ["x", "z"])] * 20
    post = train_hmm_posteriors(pairs, iterations=5)
    assert viterbi_links(post[0]) == [(0, 0), (1, 1), (2, 2)]
    assert all(np.allclose(p.sum(1), 1) for p in post)


def test_hmm_handles_empty_sides_and_both_directions():
    pairs = [([], ["x"]), (["a"], []), (["a", "b"], ["x", "y"]), (["b"], ["y"])] * 3
    post = train_hmm_posteriors(pairs, iterations=2)
    assert post[0].shape == (1, 1) and post[1].shape == (0, 2)
    links = align_statistical(pairs, sym="intersection", model="hmm")
    assert links[2] == [(0, 0), (1, 1)] and links[0] == []
    with pytest.raises(ValueError, match="unknown statistical model"):
        align_statistical(pairs, model="ibm9")
