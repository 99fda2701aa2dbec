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


def _packed_gru(rnn, x, lengths, h0):
    """nn.GRU itself over padded rows, through packed sequences."""
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

    if lengths is None:
        return rnn(x, h0)
    out, final = rnn(pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False), h0)
    return pad_packed_sequence(out, batch_first=True, total_length=x.size(1))[0], final


@pytest.mark.parametrize("bidirectional", [True, False])
@pytest.mark.parametrize("layers", [1, 2])
@pytest.mark.parametrize("lengths", [[5, 3, 1, 4], None])
@pytest.mark.parametrize("given_state", [True, False])
def test_the_written_out_gru_is_the_gru(bidirectional, layers, lengths, given_state):
    """A GRU trained on a CPU runs its recurrence with its backward pass written out: the same outputs
    (padding exactly 0), final states and gradients of every input and weight as nn.GRU's."""
    from attnalign.nmt.models.recurrent import run_recurrent

    torch.manual_seed(0)
    rnn = torch.nn.GRU(4, 3, layers, batch_first=True, bidirectional=bidirectional).double()
    B, T, D = 4, 5, 2 if bidirectional else 1
    x = torch.randn(B, T, 4, dtype=torch.double, requires_grad=True)
    h0 = torch.randn(layers * D, B, 3, dtype=torch.double, requires_grad=True) if given_state else None
    lens = None if lengths is None else torch.tensor(lengths)
    mine, theirs = run_recurrent(rnn, x, lens, h0), _packed_gru(rnn, x, lens, h0)
    assert mine[0].grad_fn is not None and "GRURecurrence" in str(mine[1].grad_fn.next_functions)
    w_out, w_final = torch.randn_like(theirs[0]), torch.randn_like(theirs[1])
    wrt = [x, *([h0] if given_state else []), *rnn.parameters()]
    grads = [torch.autograd.grad((out * w_out).sum() + (final * w_final).sum(), wrt)
             for out, final in (mine, theirs)]
    for a, b in zip((*mine, *grads[0]), (*theirs, *grads[1]), strict=True):
        assert torch.allclose(a, b, atol=1e-12)
    if lengths is not None:
        assert torch.all(mine[0][2, 1:] == 0)


def test_the_written_out_gru_passes_gradcheck():
    from attnalign.nmt.models.recurrent import _GRURecurrence

    torch.manual_seed(0)
    T, D, B, H = 3, 2, 2, 2
    args = [torch.randn(T, D, B, 3 * H, dtype=torch.double), torch.randn(D, B, H, dtype=torch.double),
            torch.randn(D, 3 * H, H, dtype=torch.double), torch.randn(D, 3 * H, dtype=torch.double)]
    mask = torch.tensor([[1, 1], [1, 0], [0, 0]], dtype=torch.double).view(T, 1, B, 1).expand(T, D, B, 1)
    for a in args:
        a.requires_grad_()
    assert torch.autograd.gradcheck(lambda *a: _GRURecurrence.apply(*a, mask.contiguous()), args)
    assert torch.autograd.gradcheck(lambda *a: _GRURecurrence.apply(*a, None), args)


def test_the_written_out_gru_trains_the_student_as_nn_gru_does(monkeypatch):
    """One update of a student (alignment head, no input feeding, no translation) on a CPU: the same
    loss and weights after it as with nn.GRU's own recurrence."""
    from attnalign.nmt.models import recurrent

    def update():
        torch.manual_seed(0)
        m = build_model("rnn", {"hidden": 16, "emb_dim": 8, "input_feeding": False, "translation": False,
                                "align_head": True, "dropout": 0.0}, 12, 11).double()
        out = m(BATCH.src, BATCH.src_mask, BATCH.tgt_in)
        loss = out.align[..., 0].sum() + out.attention[..., 1].square().sum()
        loss.backward()
        return [loss.detach(), *[p.grad for p in m.parameters() if p.grad is not None]]

    mine = update()
    monkeypatch.setattr(recurrent, "_written_out", lambda rnn, x: False)
    theirs = update()
    assert len(mine) == len(theirs) > 10
    assert all(torch.allclose(a, b, atol=1e-12) for a, b in zip(mine, theirs, strict=True))


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
