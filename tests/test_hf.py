"""Pretrained Hugging Face translation models: tiny random MarianMT and M2M-100 models built here from
sample data (nothing downloaded), read through every command that takes --model."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from helpers import SAMPLE, check_report, invoke

pytest.importorskip("transformers", reason='the Hugging Face extra is not installed: pip install ".[hf]"')

from hf_models import build_m2m100, build_marian  # noqa: E402

from attnalign.nmt.checkpoint import is_hf_model  # noqa: E402
from attnalign.nmt.hf import HFModel  # noqa: E402
from attnalign.nmt.readouts import AttentionSpec  # noqa: E402


@pytest.fixture(scope="session")
def hf(tmp_path_factory):
    root = tmp_path_factory.mktemp("hf")
    return {"marian": build_marian(root / "marian"), "marian_rev": build_marian(root / "marian_rev", True),
            "m2m": build_m2m100(root / "m2m")}


def tokens(m: HFModel, words, target=False):
    side = m.tgt_side if target else m.src_side
    ids, index = side.encode(m.tok, words)
    return m.tok.convert_ids_to_tokens(ids), index


def _pieces_of_words(src, idx, n_words):
    return ["".join(p for p, k in zip(src, idx, strict=True) if k == w).lstrip("▁") for w in range(n_words)]


def test_pieces_map_to_words(hf):
    """Whatever pieces the installed sentencepiece cuts a word into, they come back to that word."""
    words = ["the", "red", "car", "."]
    m = HFModel(str(hf["m2m"]), "en", "fr")
    src, idx = tokens(m, words)  # the language code first, </s> last, neither a word (-1)
    assert (src[0], idx[0], src[-1], idx[-1]) == ("__en__", -1, "</s>", -1)
    assert idx[1:-1] == sorted(idx[1:-1]) and set(idx[1:-1]) == {0, 1, 2, 3}
    assert _pieces_of_words(src, idx, 4) == words
    tgt, t_idx = tokens(m, ["la", "voiture", "rouge", "."], target=True)
    assert (tgt[0], t_idx[0], tgt[-1], t_idx[-1]) == ("__fr__", -1, "</s>", -1)
    assert _pieces_of_words(tgt, t_idx, 4) == ["la", "voiture", "rouge", "."]
    marian = HFModel(str(hf["marian"]))
    src, idx = tokens(marian, words)
    assert src[-1] == "</s>" and idx[-1] == -1
    assert idx[:-1] == sorted(idx[:-1]) and set(idx[:-1]) == {0, 1, 2, 3}
    assert _pieces_of_words(src, idx, 4) == words


def test_word_matrix_from_a_known_token_attention(hf, monkeypatch):
    """Decoder row r attends all its mass to source token SRC_OF[r]; the word matrix follows by hand.
    The words' pieces are set here (any vocabulary ids do for a random model), so the hand computation
    does not depend on how the installed sentencepiece cuts them."""
    m = HFModel(str(hf["m2m"]), "en", "fr")
    for side, pieces in ((m.src_side, {"the": [10], "red": [11, 12], "car": [13], ".": [14, 15]}),
                         (m.tgt_side, {"la": [20], "voiture": [21], "rouge": [22], ".": [23, 24]})):
        side.cache.clear()
        side.cache.update(pieces)
    # source tokens: __en__ the re d car _ . </s>; decoder inputs: </s> __fr__ la voiture rouge _ .
    src_of = [0, 1, 4, 2, 3, 5, 7]

    def fake(src, mask, dec):
        import torch

        assert src.shape[1] == 8 and dec.shape[1] == 7
        att = torch.zeros(1, 2, 2, dec.shape[1], src.shape[1])
        for r, q in enumerate(src_of):
            att[0, :, :, r, q] = 1.0
        return att

    monkeypatch.setattr(m, "cross_attention", fake)
    pair = [(["the", "red", "car", "."], ["la", "voiture", "rouge", "."])]
    ((_, w, eos),) = m.iter_attention(pair, AttentionSpec())
    # la <- the; voiture <- car; rouge <- re; "." = mean of rows _ (-> d: red) and . (-> _: ".")
    np.testing.assert_allclose(w, [[1, 0, 0, 0], [0, 0, 1, 0], [0, 1, 0, 0], [0, 0.5, 0, 0.5]])
    np.testing.assert_allclose(eos, [0, 0, 0, 0])
    ((_, w, eos),) = m.iter_attention(pair, AttentionSpec(shift=1))  # each word read where it is input
    np.testing.assert_allclose(w, [[0, 0, 1, 0], [0, 1, 0, 0], [0, 1, 0, 0], [0, 0, 0, 0.5]])
    np.testing.assert_allclose(eos, [0, 0, 0, 0.5])  # the row reading </s>: no word


def test_real_extraction_shapes_and_rows(hf):
    m = HFModel(str(hf["marian"]))
    assert m.config == {"dec_layers": 2, "heads": 2} and m.model_type == "hf-marian"
    pairs = [(["the", "red", "car", "."], ["la", "voiture", "rouge", "."]), (["a"], []),
             (["i", "eat"], ["je"])]
    for spec in (AttentionSpec(), AttentionSpec(layer=0, head=1), AttentionSpec(layer="mean", shift=1)):
        got = {i: (w, e) for i, w, e in m.iter_attention(pairs, spec)}
        assert [got[i][0].shape for i in range(3)] == [(4, 4), (0, 1), (1, 2)]
        np.testing.assert_allclose(got[0][0].sum(1) + got[0][1], 1, atol=1e-5)  # rows keep their mass
    a = dict((i, w) for i, w, _ in m.iter_attention(pairs[:1], AttentionSpec(layer=0)))[0]
    b = dict((i, w) for i, w, _ in m.iter_attention(pairs[:1], AttentionSpec(layer=1)))[0]
    assert not np.allclose(a, b)  # the layer option reads another layer


def test_align_corpus_both_directions(hf, tmp_path):
    out = tmp_path / "o.align"
    r = invoke("align", "corpus", "--model", hf["marian"], "--reverse-model", hf["marian_rev"], "--src",
               SAMPLE / "test.en", "--tgt", SAMPLE / "test.fr", "-o", out, "--json-lines")
    assert r.exit_code == 0, r.stderr
    assert "sym=grow-diag-final-and" in r.stderr and "model_type=hf-marian" in r.stderr
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    src = (SAMPLE / "test.en").read_text().splitlines()
    assert len(lines) == len(src) == 200
    for rec, s in zip(lines, src, strict=True):
        assert all(0 <= i < len(s.split()) for i, _ in rec["links"])
    one = invoke("align", "corpus", "--model", hf["marian"], "--src", SAMPLE / "test.en", "--tgt",
                 SAMPLE / "test.fr", "-o", tmp_path / "one.align", "--layer", "0", "--head", "1",
                 "--shift", "1")
    assert one.exit_code == 0 and "sym=none" in one.stderr and "layer=0  head=1  shift=1" in one.stderr
    assert (tmp_path / "one.align").read_text() != out.read_text()


def test_multilingual_model_needs_languages(hf, tmp_path):
    args = ["align", "sentence", "--model", hf["m2m"], "--src", "the red car .", "--tgt",
            "la voiture rouge ."]
    r = invoke(*args)
    assert r.exit_code == 2 and "--src-lang and --tgt-lang" in r.stderr
    r = invoke(*args, "--src-lang", "en", "--tgt-lang", "xx")
    assert r.exit_code == 2 and "'xx'" in r.stderr
    r = invoke(*args, "--src-lang", "en", "--tgt-lang", "fr", "--json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["tgt"] == ["la", "voiture", "rouge", "."]
    r = invoke("align", "sentence", "--model", hf["marian"], "--src", "a", "--tgt", "b", "--src-lang", "en",
               "--tgt-lang", "fr")
    assert r.exit_code == 2 and "multilingual" in r.stderr


def test_plot_grid_and_report(hf, tmp_path):
    r = invoke("plot", "sentence", "--model", hf["marian"], "--src", "the red car .", "--tgt",
               "la voiture rouge .", "--layer", "all", "--head", "all", "-o", tmp_path / "grid.png")
    assert r.exit_code == 0, r.stderr
    out = tmp_path / "rep"
    r = invoke("report", "--model", hf["marian"], "--reverse-model", hf["marian_rev"], "--src",
               SAMPLE / "test.en", "--tgt", SAMPLE / "test.fr", "--gold", SAMPLE / "test.gold.pharaoh", "-o",
               out, "--gallery", "1")
    assert r.exit_code == 0, r.stderr
    page, scores = check_report(out)
    assert "pretrained Hugging Face model" in page and "aer_by_layer.png" in page
    assert {"0", "1", "mean"} <= set(scores.layer.astype(str)) and "grow-diag-final-and" in set(scores.sym)
    assert f"--reverse-model {hf['marian_rev']}" in page  # the gallery's commands name the reverse model


def test_errors(hf, models, tmp_path, monkeypatch):
    def align(model, *extra):
        return invoke("align", "sentence", "--model", model, "--src", "a", "--tgt", "b", *extra)

    r = align("hf:nobody/no-such-model")
    assert r.exit_code == 1 and "not in the local cache" in r.stderr and "hf download" in r.stderr
    assert "Traceback" not in r.stderr
    r = align(hf["marian"], "--sym", "grow-diag-final-and")
    assert r.exit_code == 2 and "--reverse-model" in r.stderr
    # an encoder-only model has no cross-attention
    from transformers import BertConfig, BertModel

    bert = tmp_path / "bert"
    BertModel(BertConfig(vocab_size=50, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=16)).save_pretrained(bert)
    r = align(bert)
    assert r.exit_code == 1 and "not an encoder-decoder" in r.stderr
    # an unknown model type
    odd = tmp_path / "odd"
    odd.mkdir()
    (odd / "config.json").write_text(json.dumps({"model_type": "no-such-architecture"}))
    r = align(odd)
    assert r.exit_code == 1 and "cannot read the Hugging Face model configuration" in r.stderr
    # remote code is never run: a config that asks for its own Python class is refused
    custom = tmp_path / "custom"
    custom.mkdir()
    marker = tmp_path / "ran"
    (custom / "modeling_evil.py").write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    (custom / "config.json").write_text(json.dumps({"model_type": "evil", "auto_map": {
        "AutoConfig": "modeling_evil.EvilConfig", "AutoModelForSeq2SeqLM": "modeling_evil.Evil"}}))
    r = align(custom)
    assert r.exit_code == 1 and not marker.exists()
    # HF-only options on an attnalign model
    r = align(models / "rnn", "--reverse-model", hf["marian_rev"])
    assert r.exit_code == 2 and "apply to pretrained Hugging Face models" in r.stderr
    # without the extra: one error line naming what to install
    import builtins

    real = builtins.__import__

    def no_transformers(name, *a, **k):
        if name == "transformers" or name.startswith("transformers."):
            raise ImportError(name)
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_transformers)
    r = align(hf["marian"])
    assert r.exit_code == 1 and 'pip install "attnalign[hf]"' in r.stderr


def test_detection(hf, models):
    assert is_hf_model("hf:Helsinki-NLP/opus-mt-en-fr") and is_hf_model(hf["m2m"])
    assert not is_hf_model(SAMPLE) and not is_hf_model(models / "rnn")  # attnalign's config.json


def test_guided_finetuning(hf, tmp_path):
    """train --init-from: one head learns the built-in aligner's links; align reads it by default."""
    lines = [(SAMPLE / f"train.{x}").read_text().splitlines()[:1500] for x in ("en", "fr")]
    for x, text in zip(("en", "fr"), lines, strict=True):
        (tmp_path / f"t.{x}").write_text("\n".join(text) + "\n")
    model = tmp_path / "ft"
    args = ["train", "--init-from", hf["marian"], "--src", tmp_path / "t.en", "--tgt", tmp_path / "t.fr",
            "--model", model, "--max-steps", "60", "--lr", "3e-3", "--batch-tokens", "600", "--quiet"]
    r = invoke(*args)
    assert r.exit_code == 2 and "--guide" in r.stderr  # it learns from a guide only
    r = invoke(*args, "--guide", "auto", "--dev-src", SAMPLE / "dev.en", "--dev-tgt", SAMPLE / "dev.fr",
               "--dev-gold", SAMPLE / "dev.gold.pharaoh")
    assert r.exit_code == 0, r.stderr
    cfg = json.loads((model / "config.json").read_text())
    assert cfg["model_type"] == "pretrained" and cfg["directions"] == ["forward"]
    tuned = cfg["model_config"]["heads"]["forward"]
    layer, head = tuned["layer"], tuned["head"]
    assert (model / "forward" / "model.safetensors").is_file() and (layer, head) in {(0, 0), (0, 1)}
    import pandas as pd

    log = pd.read_csv(model / "log.csv")
    assert log.dev_aer.iloc[-1] < log.dev_aer.iloc[0] or len(log) == 1
    # the fine-tuned head (read by default) aligns better than the model it started from, same reading
    scores = {}
    for name, m in (("base", hf["marian"]), ("tuned", model)):
        out = tmp_path / f"{name}.align"
        r = invoke("align", "corpus", "--model", m, "--src", SAMPLE / "test.en", "--tgt", SAMPLE / "test.fr",
                   "-o", out, "--gold", SAMPLE / "test.gold.naacl", "--layer", str(layer), "--head",
                   str(head))
        assert r.exit_code == 0, r.stderr
        scores[name] = float(re.search(r"│\s+([\d.]+) │", r.stdout).group(1))
    assert scores["tuned"] < scores["base"] - 10, scores
    r = invoke("align", "sentence", "--model", model, "--src", "the red car .", "--tgt", "la voiture rouge .")
    assert r.exit_code == 0 and "layer=align" in r.stdout
    r = invoke("train", "--model", model, "--resume")
    assert r.exit_code == 2 and "cannot be resumed" in r.stderr


@pytest.mark.parametrize("damage", ["truncated-weights", "config-string", "no-source-spm", "pickled-weights"])
def test_a_damaged_model_folder_is_one_error(hf, tmp_path, damage):
    """A truncated safetensors file, a config value of the wrong type, a missing tokenizer file, a
    pickled weights file (refused, never unpickled): each an error line naming the folder."""
    import pickle
    import shutil

    m = shutil.copytree(hf["marian"], tmp_path / "m")
    weights = m / "model.safetensors"
    if damage == "truncated-weights":
        weights.write_bytes(weights.read_bytes()[:5000])
    elif damage == "config-string":
        cfg = json.loads((m / "config.json").read_text())
        (m / "config.json").write_text(json.dumps({**cfg, "d_model": "16"}))
    elif damage == "no-source-spm":
        (m / "source.spm").unlink()
    else:
        weights.unlink()

        class Boom:
            def __reduce__(self):
                return (print, ("unpickled!",))

        (m / "pytorch_model.bin").write_bytes(pickle.dumps({"x": Boom()}))
    r = invoke("align", "sentence", "--model", m, "--src", "the red car .", "--tgt", "la voiture rouge .")
    assert r.exit_code == 1, r.output
    assert r.stderr.lstrip().startswith("error:") and "Traceback" not in r.output and str(m) in r.stderr
    assert "unpickled!" not in r.output
