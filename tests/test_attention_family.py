"""The attention family: the cosine score, Luong's local attention (local-m, local-p) and Bahdanau's
decoder, checked by hand on small known inputs, and each trained, saved, loaded and read as an aligner."""

from __future__ import annotations

import math

import pytest
import torch
from helpers import SAMPLE, invoke, sample_texts

from attnalign.nmt.configs import RNNConfig
from attnalign.nmt.models.attention import Attention
from attnalign.nmt.models.rnn import RNNModel


def test_cosine_scores_of_known_vectors():
    att = Attention("cosine", 2)
    q = torch.tensor([[[1.0, 0.0]]])  # [B=1, T=1, D=2]
    keys = torch.tensor([[[2.0, 0.0], [0.0, 3.0], [-1.0, 0.0], [1.0, 1.0]]])  # cos: 1, 0, -1, 1/sqrt 2
    scores = att.scores(q, att.precompute(keys))
    assert torch.allclose(scores, 10.0 * torch.tensor([[[1.0, 0.0, -1.0, 1 / math.sqrt(2)]]]))
    w = att.weights(q, torch.ones(1, 4, dtype=torch.bool), att.precompute(keys))
    want = torch.softmax(10.0 * torch.tensor([1.0, 0.0, -1.0, 1 / math.sqrt(2)]), 0)
    assert torch.allclose(w[0, 0], want)


def _seven(span: str, window: int, query=None):
    """A 7-word source (all real), 4 target steps, keys that score every position alike."""
    att = Attention("dot", 3, span, window)
    keys = torch.zeros(1, 7, 3)
    q = torch.zeros(1, 4, 3) if query is None else query
    return att, q, keys, torch.ones(1, 7, dtype=torch.bool)


def test_local_m_window_by_hand():
    att, q, keys, mask = _seven("local-m", 1)
    # p_t = t * S / T = t * 7 / 4: 0, 1.75, 3.5, 5.25; inside: |s - p_t| <= 1
    used = att.used(q, mask, att.precompute(keys), tgt_len=torch.tensor([4]))
    inside = [[0, 1], [1, 2], [3, 4], [5, 6]]
    for t, cells in enumerate(inside):
        want = torch.zeros(7)
        want[cells] = 1 / len(cells)  # equal scores: uniform over the window
        assert torch.allclose(used[0, t], want), t
    assert torch.allclose(att.weights(q, mask, att.precompute(keys), tgt_len=torch.tensor([4])).sum(-1),
                          torch.ones(1, 4))


def test_local_p_window_and_gaussian_by_hand():
    att, q, keys, mask = _seven("local-p", 2)
    with torch.no_grad():
        att.v_p.weight.zero_()  # sigmoid(0) = 0.5: p_t = 7 * 0.5 = 3.5 for every step
    assert torch.allclose(att.positions(q, mask), torch.full((1, 4), 3.5))
    used = att.used(q, mask, att.precompute(keys))
    # window |s - 3.5| <= 2: s = 2, 3, 4, 5; softmax uniform 1/4; Gaussian sigma = 1: exp(-(s - 3.5)^2 / 2)
    want = torch.zeros(7)
    for s in (2, 3, 4, 5):
        want[s] = 0.25 * math.exp(-((s - 3.5) ** 2) / 2)
    assert torch.allclose(used[0, 0], want)
    read = att.weights(q, mask, att.precompute(keys))
    assert torch.allclose(read[0, 0], want / want.sum()) and torch.allclose(read.sum(-1), torch.ones(1, 4))
    ctx, w = att(q, keys, mask)
    assert torch.allclose(w, read)  # the alignment read: the decoder's weights, renormalised


def test_a_padding_step_outside_every_window_is_no_nan():
    att, q, keys, mask = _seven("local-m", 1)
    used = att.used(q, mask, att.precompute(keys), steps=torch.tensor([0, 9, 20, 30]),
                    tgt_len=torch.tensor([4]))
    assert not torch.isnan(used).any() and torch.allclose(used.sum(-1), torch.ones(1, 4))


@pytest.mark.parametrize("cfg", [dict(attention="cosine"), dict(attention_span="local-m", window=2),
                                 dict(attention_span="local-p", window=3, input_feeding=False),
                                 dict(decoder_style="bahdanau", attention="additive"),
                                 dict(decoder_style="bahdanau", attention_span="local-p", cell="lstm",
                                      dec_layers=2)])
def test_each_kind_gives_rows_of_one_and_learns(cfg):
    torch.manual_seed(0)
    model = RNNModel(RNNConfig(emb_dim=8, hidden=8, dropout=0.0, **cfg).check(), 12, 12)
    src = torch.randint(4, 12, (3, 6))
    src_mask = torch.ones(3, 6, dtype=torch.bool)
    src_mask[2, 4:] = False
    tgt_in = torch.randint(4, 12, (3, 5))
    tgt_in[2, 3:] = 0  # padding
    out = model(src, src_mask, tgt_in)
    real = tgt_in != 0
    assert torch.allclose(out.attention.sum(-1)[real], torch.ones(int(real.sum())), atol=1e-5)
    assert (out.attention[2, :, 4:] == 0).all()  # padded source positions
    loss = out.logits.logsumexp(-1).mean()
    loss.backward()
    assert all(p.grad is not None for n, p in model.named_parameters() if "align_head" not in n
               and not (n.startswith("out.") or n.endswith("_emb.weight")) and p.requires_grad)


def test_bahdanau_has_no_input_feeding_and_old_configs_load_as_global():
    assert RNNConfig(decoder_style="bahdanau").check().input_feeding is False
    old = {"emb_dim": 8, "hidden": 8, "enc_layers": 1, "dec_layers": 1, "cell": "gru", "attention": "general",
           "dropout": 0.2, "input_feeding": True, "tie_embeddings": False, "align_head": False}
    cfg = RNNConfig(**old)
    assert (cfg.attention_span, cfg.decoder_style) == ("global", "luong")


@pytest.mark.parametrize("args", [["--attention", "cosine"], ["--attention-span", "local-p", "--window", "3"],
                                  ["--decoder-style", "bahdanau", "--attention", "additive"]])
def test_a_tiny_model_of_each_kind_trains_saves_loads_and_aligns(tmp_path, args):
    src, tgt = sample_texts(tmp_path, 60)
    m = tmp_path / "m"
    r = invoke("train", "--src", src, "--tgt", tgt, "--model", m, "--epochs", "1", "--hidden", "8",
               "--emb-dim", "8", "--direction", "both", "--quiet", *args)
    assert r.exit_code == 0, r.output
    r = invoke("align", "corpus", "--model", m, "--src", src, "--tgt", tgt, "-o", tmp_path / "a.align",
               "--quiet")
    assert r.exit_code == 0, r.output
    lines = (tmp_path / "a.align").read_text().splitlines()
    assert len(lines) == 60 and sum(len(x.split()) for x in lines) > 60
    import json

    network = json.loads((m / "config.json").read_text())["model_config"]
    assert {k: network[k] for k in ("attention", "attention_span", "decoder_style")} == {
        "attention": "cosine" if "cosine" in args else "additive" if "additive" in args else "general",
        "attention_span": "local-p" if "local-p" in args else "global",
        "decoder_style": "bahdanau" if "bahdanau" in args else "luong"}


@pytest.mark.parametrize("args, needle", [(["--attention-span", "local-m", "--window", "0"], "--window"),
                                          (["--attention-span", "local-p", "--window", "-2"], "--window"),
                                          (["--window", "5"], "local attention's window"),
                                          (["--model-type", "transformer", "--decoder-style", "bahdanau"],
                                           "not apply")])
def test_bad_windows_and_options_are_usage_errors(tmp_path, args, needle):
    r = invoke("train", "--src", SAMPLE / "dev.en", "--tgt", SAMPLE / "dev.fr", "--model", tmp_path / "m",
               *args)
    assert r.exit_code == 2 and needle in r.stderr, r.output
    assert not (tmp_path / "m").exists()


def test_plot_draws_local_p_predicted_position(tmp_path):
    from attnalign.nmt.aligner import AlignOptions
    from attnalign.training import TrainOptions, train
    from attnalign.workflows.views import model_panels

    texts = [("the red car", "la voiture rouge"), ("a car", "une voiture"),
             ("the car is red", "la voiture est rouge")] * 10
    pairs = [(s.split(), t.split()) for s, t in texts]
    m = tmp_path / "m"
    train(pairs, m, TrainOptions.of(epochs=1, batch_tokens=200, hidden=8, emb_dim=8, attention_span="local-p",
                                    window=2))
    src, tgt = ["the", "red", "car"], ["la", "voiture", "rouge"]
    (panel,) = model_panels(m, src, tgt, AlignOptions())
    assert panel.positions is not None and panel.positions.shape == (3,)
    assert ((panel.positions >= 0) & (panel.positions <= len(src))).all()
    assert "predicted position" in panel.title
    r = invoke("plot", "sentence", "--model", m, "--src", "the red car", "--tgt", "la voiture rouge", "-o",
               tmp_path / "p.png")
    assert r.exit_code == 0 and (tmp_path / "p.png").stat().st_size > 1000
