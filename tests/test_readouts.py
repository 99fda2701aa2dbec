"""Readouts: a model's matrix read from its attention weights, their norm-weighted form (Kobayashi et al.
2020) or the gradient saliency of the target word (Ding et al. 2019), with known answers, and every view
taking every readout."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import torch
from helpers import SAMPLE, TEST_TEXT, invoke, one_error
from torch import nn

from attnalign.data.attnfile import read_attention
from attnalign.nmt.batching import make_batch
from attnalign.nmt.checkpoint import load_model
from attnalign.nmt.configs import RNNConfig, TransformerConfig
from attnalign.nmt.extract import corpus_attention
from attnalign.nmt.models.rnn import RNNModel
from attnalign.nmt.models.transformer import TransformerModel
from attnalign.nmt.readouts import READOUTS, AttentionSpec

GOLD = SAMPLE / "test.gold.pharaoh"


class _Sum(nn.Module):
    """A model whose every state is the sum of the source embeddings (padding included: its embedding is
    zero), read by a linear output layer: log p(y | x) = (W h)_y - log sum_v exp (W h)_v, h = sum_j e_j,
    so d log p / d e_j = W_y - sum_v p_v W_v, the same vector for every j."""

    def __init__(self, table, out):
        super().__init__()
        self.src_emb = nn.Embedding.from_pretrained(torch.tensor(table), padding_idx=0)
        self.out = nn.Linear(2, len(out), bias=False)
        self.out.weight.data = torch.tensor(out)

    def states(self, src, src_mask, tgt_in):
        h = self.src_emb(src).sum(1, keepdim=True)  # [B, 1, E]
        return h.expand(-1, tgt_in.size(1), -1)


def test_saliency_is_the_hand_computed_gradient_times_input():
    # embeddings: 1 -> (1, 0), 2 -> (0, 2); output words 0 and 1 with W = I. The source "1 2": h = (1, 2),
    # p = softmax(1, 2), d log p_1 / d e = W_1 - p_0 W_0 - p_1 W_1 = (-p_0, 1 - p_1) = (-p_0, p_0);
    # saliency of the two source words: |(-p_0, p_0) . (1, 0)| = p_0, |(-p_0, p_0) . (0, 2)| = 2 p_0:
    # rows of 1/3 and 2/3 (the third column is the source EOS's position, a zero embedding here)
    model = _Sum([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]], [[1.0, 0.0], [0.0, 1.0]])
    b = make_batch([0], [[1, 2]], [[1]])  # the ids as given; make_batch adds EOS and BOS
    b.src[0, 2] = 0  # the EOS's id, here a zero embedding (its column stays 0)
    b.tgt_out[0] = torch.tensor([1, 1])
    m = READOUTS["saliency"].read(model, b, AttentionSpec(readout="saliency"))
    assert torch.allclose(m[0], torch.tensor([[1 / 3, 2 / 3, 0.0]] * 2), atol=1e-6)


def _rnn(**kw):
    torch.manual_seed(0)
    return RNNModel(RNNConfig(hidden=12, emb_dim=6, **kw), 20, 20).eval()


@pytest.mark.parametrize("frozen", [False, True], ids=["weights-with-gradients", "weights-frozen"])
@pytest.mark.parametrize("kw", [{}, {"input_feeding": False}, {"align_head": True}, {"cell": "lstm"},
                                {"enc_layers": 2}, {"dec_layers": 2}])
def test_saliency_is_the_derivative_of_log_p_as_each_embedding_scales(kw, frozen):
    # gradient x input of word j for target step t is d/da log p(y_t) with e_j scaled by a, at a = 1:
    # a finite difference of the model run on each pair alone checks the batched passes, with the
    # weights' gradients formed and (as extraction runs it) not formed: a one-layer GRU encoder's tangents
    # in forward mode, the others' backward passes (an LSTM, two layers)
    model = _rnn(**kw).double()  # in float64, so that the finite difference is exact to 1e-6
    model.requires_grad_(not frozen)
    src, tgt = [[3, 4, 5, 6], [7, 8]], [[9, 10, 11], [12, 13, 14, 15, 16]]
    b = make_batch([0, 1], src, tgt)
    with torch.enable_grad():
        got = READOUTS["saliency"].read(model, b, AttentionSpec(readout="saliency"))
    for k in range(2):
        one = make_batch([0], [src[k]], [tgt[k]])
        S, T = one.src.size(1), one.tgt_in.size(1)
        want = torch.zeros(T, S, dtype=torch.float64)
        for j in range(S):
            diff = []
            for a in (1 + 1e-4, 1 - 1e-4):
                scale = torch.ones(1, S, 1, dtype=torch.float64)
                scale[0, j] = a
                hook = model.src_emb.register_forward_hook(lambda m, i, out, s=scale: out * s)
                with torch.no_grad():
                    logp = torch.log_softmax(model.out(model.states(one.src, one.src_mask, one.tgt_in)), -1)
                hook.remove()
                diff.append(logp[0].gather(1, one.tgt_out[0].unsqueeze(1)).squeeze(1).double())
            want[:, j] = (diff[0] - diff[1]) / 2e-4
        want = want.abs() / want.abs().sum(1, keepdim=True)
        assert torch.allclose(got[k, :T, :S], want, atol=1e-6), (got[k, :T, :S], want)


def test_norm_is_attention_when_every_value_has_the_same_norm():
    # one head whose value and output maps are the identity, over a memory normalised without scale or
    # bias (every row the same norm): each weight is scaled alike, so the rows are the attention's
    torch.manual_seed(0)
    model = TransformerModel(TransformerConfig(d_model=8, heads=1, ff_dim=16, enc_layers=1, dec_layers=1), 20,
                             20).eval()
    cross = model.dec[0].cross
    with torch.no_grad():
        for lin in (cross.v, cross.o):
            lin.weight.copy_(torch.eye(8))
            lin.bias.zero_()
    b = make_batch([0, 1], [[3, 4, 5, 6], [7, 8]], [[9, 10, 11], [12, 13]])
    with torch.inference_mode():
        att = READOUTS["attention"].read(model, b, AttentionSpec())
        norm = READOUTS["norm"].read(model, b, AttentionSpec(readout="norm"))
        assert torch.allclose(norm, att, atol=1e-4)
        # with the values' norms apart, the readouts differ: the norm weighs what each state adds
        with torch.no_grad():
            cross.v.weight.copy_(torch.diag(torch.arange(1.0, 9.0)))
        other = READOUTS["norm"].read(model, b, AttentionSpec(readout="norm"))
        assert not torch.allclose(other, att, atol=1e-3)


@pytest.mark.parametrize("readout", list(READOUTS))
def test_every_readout_gives_rows_of_one_over_words(models, pairs, readout):
    for name, spec in (("rnn", AttentionSpec(readout=readout)),
                       ("tf", AttentionSpec(layer=0, head=1, readout=readout))):
        lm = load_model(models / name, "forward")
        mats = corpus_attention(lm, pairs[:6], spec)
        for (s, t), (m, eos) in zip(pairs[:6], mats, strict=True):
            assert m.shape == (len(t), len(s)) and (m >= 0).all()
            np.testing.assert_allclose(m.sum(1) + eos, 1, atol=1e-5)


def test_a_saliency_extraction_leaves_the_weights_as_it_found_them(models, pairs):
    # the extraction differentiates with respect to the input only: no weight gets a gradient, and the
    # weights that required one still do (a model trained on after a readout trains every weight)
    lm = load_model(models / "rnn", "forward")
    lm.model.tgt_emb.requires_grad_(False)
    wanted = {name: p.requires_grad for name, p in lm.model.named_parameters()}
    corpus_attention(lm, pairs[:4], AttentionSpec(readout="saliency"))
    assert {name: p.requires_grad for name, p in lm.model.named_parameters()} == wanted
    assert any(wanted.values()) and not all(wanted.values())
    assert all(p.grad is None for p in lm.model.parameters())


def test_readouts_differ_and_repeat(models, pairs):
    lm = load_model(models / "rnn", "forward")
    read = {r: corpus_attention(lm, pairs[:4], AttentionSpec(readout=r))[2][0] for r in READOUTS}
    assert not np.allclose(read["attention"], read["saliency"], atol=1e-3)
    assert not np.allclose(read["attention"], read["norm"], atol=1e-4)
    smooth = [corpus_attention(lm, pairs[:4], AttentionSpec(readout="saliency", smoothgrad=3))[2][0]
              for _ in range(2)]
    np.testing.assert_array_equal(*smooth)  # the noise is seeded: a run repeats exactly
    assert not np.allclose(smooth[0], read["saliency"], atol=1e-4)


def _pharaoh(text: str) -> list[set]:
    return [set(line.split()) for line in text.splitlines()]


def test_align_corpus_reads_the_readout_and_saves_it(models, tmp_path):
    out = {}
    for r in READOUTS:
        res = invoke("align", "corpus", "--model", models / "rnn", *TEST_TEXT, "--readout", r, "--quiet",
                     "-o", tmp_path / f"{r}.align", "--save-attention", tmp_path / f"{r}.npz", "--gold", GOLD)
        assert res.exit_code == 0, res.output
        out[r] = (tmp_path / f"{r}.align").read_text()
        assert read_attention(tmp_path / f"{r}.npz", 0).meta["readout"] == r
    assert out["attention"] != out["norm"] != out["saliency"] != out["attention"]
    # a saved file holds one readout's matrices: another is not read from it
    saved = ("plot", "sentence", "--attention", tmp_path / "norm.npz", "--index", 0, "-o", tmp_path / "x.png")
    one_error(invoke(*saved, "--readout", "saliency"), 2, "--readout", "norm")
    r = invoke(*saved)
    assert r.exit_code == 0 and (tmp_path / "x.png").stat().st_size > 0, r.output


def test_sentence_views_show_align_corpus_line_for_every_readout(models, tmp_path):
    src, tgt = "the cat sat on the mat .", "le chat était assis sur le tapis ."
    (tmp_path / "s.en").write_text(src + "\n")
    (tmp_path / "s.fr").write_text(tgt + "\n")
    for r, more in (("norm", ()), ("saliency", ("--smoothgrad", "2"))):
        line = invoke("align", "corpus", "--model", models / "rnn", "--src", tmp_path / "s.en", "--tgt",
                      tmp_path / "s.fr", "--readout", r, *more, "--quiet")
        assert line.exit_code == 0, line.output
        pair = ("--model", models / "rnn", "--src", src, "--tgt", tgt, "--readout", r, *more)
        one = invoke("align", "sentence", *pair, "--json")
        assert one.exit_code == 0, one.output
        links = {f"{i}-{j}" for i, j in json.loads(one.stdout)["links"]}
        assert links == _pharaoh(line.stdout)[0]
        png = tmp_path / f"{r}.html"
        shown = invoke("plot", "sentence", *pair, "--html", png)
        assert shown.exit_code == 0, shown.output
        assert f"forward {r} readout" in png.read_text()
    # the explorer of the pair switches between its readouts, each a thumbnail beside the others
    page = tmp_path / "all.html"
    assert invoke("plot", "sentence", "--model", models / "rnn", "--src", src, "--tgt", tgt, "--html",
                  page).exit_code == 0
    data = re.search(r'<script type="application/json" id="data">(.*?)</script>', page.read_text(), re.S)
    names = [v["name"] for v in json.loads(data.group(1))["sentences"][0]["views"]]
    assert "attention" in names[0]
    assert all(any(f"{r} readout" in n for n in names) for r in ("norm", "saliency"))


def test_report_reads_the_readout(models, tmp_path):
    r = invoke("report", "--model", models / "tf", *TEST_TEXT, "--gold", GOLD, "--readout", "norm",
               "--gallery", 1, "-o", tmp_path / "rep")
    assert r.exit_code == 0, r.output
    page = (tmp_path / "rep" / "index.html").read_text()
    assert "--readout norm" in page  # the gallery's captions draw what the report scored
    one_error(invoke("report", "--pred", GOLD, *TEST_TEXT, "--gold", GOLD, "--readout", "norm", "-o",
                     tmp_path / "rep2"), 2, "--readout")


def test_readout_errors_are_one_line(models, tmp_path):
    args = ("align", "sentence", "--model", models / "rnn", "--src", "a b", "--tgt", "c d")
    one_error(invoke(*args, "--smoothgrad", 2), 2, "--smoothgrad", "saliency")
    one_error(invoke(*args, "--readout", "saliency", "--smoothgrad", -1), 2, "--smoothgrad")
    r = invoke(*args, "--readout", "nothing")
    assert r.exit_code == 2 and "attention" in r.stderr and "Traceback" not in r.output


def test_saliency_needs_the_translation_output(tmp_path):
    from attnalign.data.corpus import read_corpus
    from attnalign.training import TrainOptions, train

    pairs = read_corpus(SAMPLE / "train.en", SAMPLE / "train.fr")[:60]
    diagonal = [[(k, k) for k in range(min(len(s), len(t)))] for s, t in pairs]
    train(pairs, tmp_path / "m", TrainOptions.of(hidden=8, emb_dim=8, epochs=1, align_head=True,
                                                 translation=False), guide=diagonal)
    one_error(invoke("align", "sentence", "--model", tmp_path / "m", "--src", "a b", "--tgt", "c d",
                     "--readout", "saliency"), 2, "translation")
    # its explorer (what --preset align trains on a CPU) shows the readouts it can give, without saliency
    page = tmp_path / "pair.html"
    r = invoke("plot", "sentence", "--model", tmp_path / "m", "--src", "a b", "--tgt", "c d", "--html", page)
    assert r.exit_code == 0, r.output
    data = re.search(r'<script type="application/json" id="data">(.*?)</script>', page.read_text(), re.S)
    names = [v["name"] for v in json.loads(data.group(1))["sentences"][0]["views"]]
    assert any("norm readout" in n for n in names) and not any("saliency" in n for n in names)


def test_a_gradient_readout_on_a_cpu_reads_smaller_batches_unless_told():
    from attnalign.nmt.extract import batch_tokens_for
    from attnalign.nmt.options import BATCH_TOKENS, GRADIENT_BATCH_TOKENS

    saliency, attention = AttentionSpec(readout="saliency"), AttentionSpec()
    assert GRADIENT_BATCH_TOKENS < BATCH_TOKENS
    assert batch_tokens_for(saliency, "cpu") == GRADIENT_BATCH_TOKENS
    assert batch_tokens_for(attention, "cpu") == BATCH_TOKENS
    assert batch_tokens_for(saliency, "cuda:0") == BATCH_TOKENS  # a GPU gains from large batches
    # a --batch-tokens given is kept
    assert batch_tokens_for(saliency, "cpu", 7) == batch_tokens_for(attention, "cpu", 7) == 7
