"""What an update costs in operator calls, and what it waits for: the RNN without input feeding runs
a target of any length in the same number of dispatches; an update reads nothing back from the device
until its losses are checked; the batch's lengths come from the host."""

from __future__ import annotations

import json

import pytest
import torch
from helpers import SAMPLE, invoke
from torch.profiler import ProfilerActivity, profile

from attnalign.nmt.batching import make_batch
from attnalign.nmt.configs import RNNConfig
from attnalign.nmt.models import build_model
from attnalign.training.guide import guide_loss


def dispatches(model, tgt_len: int) -> int:
    """The aten ops called from Python in one forward pass over a target of ``tgt_len`` tokens (not
    those an operator calls inside it, such as a CPU GRU's steps). Without gradients, as a GPU's
    recurrence runs: a CPU's training pass writes a GRU's steps out (test_models)."""
    torch.manual_seed(0)
    b = make_batch([0, 1], [[3, 4, 5], [6, 7]], [[3 + k % 5 for k in range(tgt_len)], [4, 5]])
    with torch.no_grad(), profile(activities=[ProfilerActivity.CPU]) as prof:
        model(b.src, b.src_mask, b.tgt_in, lengths=b.lengths)
    top = [e for e in prof.events() if e.cpu_parent is None or not e.cpu_parent.name.startswith("aten::")]
    return sum(e.name.startswith("aten::") for e in top)


@pytest.mark.parametrize("feeding", [True, False])
def test_without_input_feeding_the_dispatches_do_not_grow_with_the_target(feeding):
    model = build_model("rnn", {"hidden": 8, "emb_dim": 8, "input_feeding": feeding, "align_head": True},
                        12, 12)
    short, long = dispatches(model, 4), dispatches(model, 16)
    if feeding:  # one small step per target position
        assert long > short + 12 * 5
    else:
        assert long == short


def test_the_lengths_given_are_the_masks_own():
    """The host's lengths stand in for the mask's row sums: the same output as reading them from the
    mask (which, on a GPU, waits for the device)."""
    torch.manual_seed(0)
    model = build_model("rnn", {"hidden": 8, "emb_dim": 8, "align_head": True}, 12, 12).eval()
    b = make_batch([0, 1, 2], [[3, 4, 5], [6, 7], [8]], [[3, 4], [5, 6, 7, 8], [9]])
    assert b.lengths[0].tolist() == b.src_mask.sum(1).tolist() == [4, 3, 2]
    assert b.lengths[1].tolist() == (b.tgt_in != 0).sum(1).tolist() == [3, 5, 2]
    assert b.tokens == int((b.tgt_out != 0).sum()) == 10
    given, read = model(b.src, b.src_mask, b.tgt_in, lengths=b.lengths), model(b.src, b.src_mask, b.tgt_in)
    for x, y in ((given.logits, read.logits), (given.attention, read.attention), (given.align, read.align)):
        assert torch.equal(x, y)


def test_the_guide_loss_without_guided_rows_is_zero_and_differentiable():
    att = torch.full((1, 2, 3), 1 / 3, requires_grad=True)
    loss = guide_loss(att, torch.zeros(1, 2, 3))
    loss.backward()
    assert loss.item() == 0.0 and torch.equal(att.grad, torch.zeros(1, 2, 3))
    target = torch.tensor([[[0.5, 0.5, 0.0], [0.0, 0.0, 0.0]]])  # one guided row: its cross-entropy
    assert guide_loss(att, target).item() == pytest.approx(-torch.log(torch.tensor(1 / 3)).item())


def test_input_feeding_is_a_network_option(tmp_path):
    """--no-input-feeding is saved in config.json and builds the decoder that reads the embeddings alone."""
    r = invoke("train", "--src", SAMPLE / "dev.en", "--tgt", SAMPLE / "dev.fr", "--model", tmp_path / "m",
               "--no-input-feeding", "--epochs", "1", "--hidden", "16", "--emb-dim", "8", "--quiet")
    assert r.exit_code == 0, r.output
    assert json.loads((tmp_path / "m" / "config.json").read_text())["model_config"]["input_feeding"] is False
    from attnalign.nmt.checkpoint import load_model

    assert load_model(tmp_path / "m").model.decoder.input_size == 8
    assert RNNConfig().input_feeding  # the default keeps it


@pytest.mark.parametrize("args, needle", [
    (["--model-type", "transformer", "--no-input-feeding"], "--[no-]input-feeding does not apply"),
    (["--decoder-style", "bahdanau", "--input-feeding"], "Bahdanau's reads the context")])
def test_input_feeding_where_it_means_nothing_is_a_usage_error(tmp_path, args, needle):
    r = invoke("train", "--src", SAMPLE / "dev.en", "--tgt", SAMPLE / "dev.fr", "--model", tmp_path / "m",
               *args)
    assert r.exit_code == 2 and needle in r.stderr, r.output
    assert not (tmp_path / "m").exists()
