"""Model shapes and attention masking: every attention variant, both cells, the Transformer."""

from __future__ import annotations

import pytest
import torch

from attnalign.errors import OptionError
from attnalign.nmt.batching import bucket_batches, make_batch
from attnalign.nmt.models import build_model
from attnalign.nmt.scores import SCORES

# Two pairs of different lengths: source lengths 3 and 1 (+EOS), target lengths 2 and 4 (+BOS/EOS).
BATCH = make_batch([0, 1], [[5, 6, 7], [5]], [[4, 5], [6, 7, 8, 9]])


def check_attention(att: torch.Tensor) -> None:
    """[..., T, S]: rows sum to 1, padded source positions exactly 0."""
    assert torch.allclose(att.sum(-1), torch.ones(att.shape[:-1]), atol=1e-5)
    assert torch.all(att[1, ..., 2:] == 0)  # pair 1 has 1 word + EOS: columns 2, 3 are padding


def test_batch_layout():
    assert BATCH.src.tolist() == [[5, 6, 7, 3], [5, 3, 0, 0]]
    assert BATCH.tgt_in.tolist() == [[2, 4, 5, 0, 0], [2, 6, 7, 8, 9]]
    assert BATCH.tgt_out.tolist() == [[4, 5, 3, 0, 0], [6, 7, 8, 9, 3]]
    assert BATCH.src_mask.tolist() == [[True] * 4, [True, True, False, False]]


@pytest.mark.parametrize("attention", list(SCORES))
@pytest.mark.parametrize("cell", ["gru", "lstm"])
def test_rnn_shapes_and_masking(attention, cell):
    torch.manual_seed(0)
    m = build_model("rnn", {"attention": attention, "cell": cell, "hidden": 16, "emb_dim": 8}, 12, 11)
    logits, att, _ = m(BATCH.src, BATCH.src_mask, BATCH.tgt_in)
    assert logits.shape == (2, 5, 11) and att.shape == (2, 5, 4)
    check_attention(att)
    m.eval()
    args = (BATCH.src, BATCH.src_mask, BATCH.tgt_in)
    assert torch.equal(m.attention(*args), m(*args)[1])


def _decode(m, src, src_mask, tgt_in):
    memory, h0 = m.encode(src, src_mask)
    return m._decode(memory, src_mask, h0, tgt_in)


def _reference_decode(m, src, src_mask, tgt_in):
    """The input-feeding decoder written with nn.GRU one step at a time (dropout off)."""
    memory, state = m.encode(src, src_mask)
    emb, proj = m.tgt_emb(tgt_in), m.attn.precompute(memory)
    feed = emb.new_zeros(emb.size(0), m.cfg.hidden)
    outs, attns = [], []
    for t in range(emb.size(1)):
        h, state = m.decoder(torch.cat([emb[:, t], feed], -1).unsqueeze(1), state)
        ctx, w = m.attn(h, memory, src_mask, proj)
        feed = torch.tanh(m.combine(torch.cat([h, ctx], -1))).squeeze(1)
        outs.append(feed)
        attns.append(w)
    return torch.stack(outs, 1), torch.cat(attns, 1)


@pytest.mark.parametrize("attention", list(SCORES))
def test_gru_step_loop_is_the_gru(attention):
    """The one-layer GRU's loop (input gates of the embeddings computed once for all steps) gives
    nn.GRU's outputs, attention and gradients."""
    torch.manual_seed(0)
    m = build_model("rnn", {"attention": attention, "hidden": 16, "emb_dim": 8}, 12, 11).eval()
    args = (BATCH.src, BATCH.src_mask, BATCH.tgt_in)
    grads = []
    for run in (_decode, _reference_decode):
        m.zero_grad()
        vec, att = run(m, *args)
        (vec.square().sum() + att[..., 0].sum()).backward()
        grads.append((vec.detach(), att.detach(), [p.grad.clone() for p in m.parameters()
                                                   if p.grad is not None]))
    (v1, a1, g1), (v2, a2, g2) = grads
    assert torch.allclose(v1, v2, atol=1e-6) and torch.allclose(a1, a2, atol=1e-6)
    assert all(torch.allclose(x, y, atol=1e-5) for x, y in zip(g1, g2, strict=True))


def test_rnn_without_input_feeding_and_deeper():
    m = build_model("rnn", {"hidden": 16, "emb_dim": 8, "input_feeding": False, "enc_layers": 2,
                            "dec_layers": 2}, 12, 11)
    logits, att, _ = m(BATCH.src, BATCH.src_mask, BATCH.tgt_in)
    assert logits.shape == (2, 5, 11)
    check_attention(att)


def test_transformer_keeps_every_layer_and_head():
    m = build_model("transformer", {"d_model": 16, "heads": 4, "ff_dim": 32, "enc_layers": 2,
                                    "dec_layers": 3}, 12, 11)
    logits, att, _ = m(BATCH.src, BATCH.src_mask, BATCH.tgt_in)
    assert logits.shape == (2, 5, 11) and att.shape == (2, 3, 4, 5, 4)  # [B, layers, heads, T, S]
    check_attention(att)


def test_transformer_is_causal():
    """Changing a later target token must not change earlier rows of attention or logits."""
    m = build_model("transformer", {"d_model": 16, "heads": 2, "ff_dim": 32, "enc_layers": 1,
                                    "dec_layers": 2}, 12, 11).eval()
    a = m(BATCH.src, BATCH.src_mask, BATCH.tgt_in)
    tgt = BATCH.tgt_in.clone()
    tgt[1, 4] = 10
    b = m(BATCH.src, BATCH.src_mask, tgt)
    assert torch.allclose(a[0][1, :4], b[0][1, :4], atol=1e-6)
    assert torch.allclose(a[1][1, :, :, :4], b[1][1, :, :, :4], atol=1e-6)


def test_bad_configs():
    with pytest.raises(OptionError, match="--attention"):
        build_model("rnn", {"attention": "sine"}, 10, 10)
    with pytest.raises(OptionError, match="divisible"):
        build_model("transformer", {"d_model": 10, "heads": 3}, 10, 10)


def test_bucket_batches_respect_the_budget_and_cover_everything():
    import random

    lengths = [(random.Random(i).randint(1, 30), random.Random(-i).randint(1, 30)) for i in range(500)]
    batches = bucket_batches(lengths, 200, random.Random(0))
    assert sorted(i for b in batches for i in b) == list(range(500))
    for b in batches:
        assert len(b) == 1 or max(max(lengths[i]) + 1 for i in b) * len(b) <= 200
    assert bucket_batches(lengths, 200, random.Random(0)) == batches  # deterministic


def test_denormals_are_flushed_inside_the_block_only():
    """Inside: a denormal reads as zero. After (even after an error): IEEE again; a caller's own
    flush setting is left as it was."""
    from attnalign.nmt.device import flushed_denormals

    def probe():
        return (torch.tensor([1e-39]) * 1).item()

    assert probe() > 0
    with flushed_denormals():
        assert probe() == 0.0
    assert probe() > 0
    with pytest.raises(ValueError), flushed_denormals():
        raise ValueError
    assert probe() > 0
    torch.set_flush_denormal(True)
    try:
        with flushed_denormals():
            pass
        assert probe() == 0.0
    finally:
        torch.set_flush_denormal(False)
