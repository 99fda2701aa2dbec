"""`attnalign align`: corpus order, one line per pair, every output, bidirectional decoding, errors."""

from __future__ import annotations

import json

import numpy as np
import pytest
from helpers import SAMPLE, invoke, write

from attnalign.data.attnfile import read_attention, saved_indices
from attnalign.data.corpus import read_corpus
from attnalign.errors import AttnAlignError, AttnAlignWarning
from attnalign.nmt.aligner import Aligner, AlignOptions, decode_pair


@pytest.fixture
def corpus(tmp_path):
    """Ten sample test pairs, one with an empty side, as two files."""
    pairs = read_corpus(SAMPLE / "test.en", SAMPLE / "test.fr")[:10]
    src = [" ".join(s) for s, _ in pairs]
    tgt = [" ".join(t) for _, t in pairs]
    tgt[3] = ""
    return (write(tmp_path / "c.en", "\n".join(src) + "\n"), write(tmp_path / "c.fr", "\n".join(tgt) + "\n"))


def test_one_line_per_pair_in_corpus_order(models, corpus, tmp_path):
    out = tmp_path / "out.align"
    r = invoke("align", "corpus", "--model", models / "rnn", "--src", corpus[0], "--tgt", corpus[1],
               "-o", out, "--sym", "none", "--quiet")
    assert r.exit_code == 0, r.stderr
    lines = out.read_text().split("\n")[:-1]
    assert len(lines) == 10 and lines[3] == ""
    assert "1 of 10 pairs have an empty side" in r.stderr
    # corpus order: aligning each pair alone gives the same line
    aligner = Aligner(models / "rnn", AlignOptions(sym="none"))
    pairs = read_corpus(*corpus)
    for k in (0, 5, 9):
        (alone,) = aligner.align_pairs([pairs[k]])
        assert lines[k] == " ".join(f"{i}-{j}" for i, j in alone.links)
    # small chunks stream the same result
    chunked = Aligner(models / "rnn", AlignOptions(sym="none", chunk_size=3))
    assert [p.links for p in chunked.align(pairs)] == [p.links for p in aligner.align(pairs)]


def test_stdout_scores_json_lines(models, corpus):
    r = invoke("align", "corpus", "--model", models / "rnn", "--src", corpus[0], "--tgt", corpus[1],
               "--scores", "--quiet")
    assert r.exit_code == 0
    first = r.stdout.split("\n")[0].split()
    assert all(":" in tok and 0.0 <= float(tok.split(":")[1]) <= 1.0 for tok in first)
    assert "aligned 10 pairs" in r.stderr
    r = invoke("align", "corpus", "--model", models / "rnn", "--src", corpus[0], "--tgt", corpus[1],
               "--json-lines", "--quiet")
    rows = [json.loads(x) for x in r.stdout.splitlines()]
    assert len(rows) == 10 and rows[3]["links"] == [] and rows[0]["index"] == 0
    assert len(rows[0]["links"]) == len(rows[0]["scores"]) and rows[0]["src"][0] == "the"


@pytest.mark.parametrize("sym", ["none", "intersection", "union", "grow-diag", "grow-diag-final",
                                 "grow-diag-final-and", "soft"])
def test_every_symmetrization_runs_and_scores(models, tmp_path, sym):
    out = tmp_path / "o"
    r = invoke("align", "corpus", "--model", models / "rnn", "--src", SAMPLE / "test.en", "--tgt",
               SAMPLE / "test.fr", "--sym", sym, "-o", out, "--gold", SAMPLE / "test.gold.pharaoh", "--quiet")
    assert r.exit_code == 0, r.stderr
    assert "AER" in r.stdout and f"sym={sym}" in r.stderr
    assert len(out.read_text().split("\n")) == 201


def test_intersection_is_within_union(models):
    pairs = read_corpus(SAMPLE / "test.en", SAMPLE / "test.fr")[:20]
    inter = Aligner(models / "rnn", AlignOptions(sym="intersection")).align_pairs(pairs)
    union = Aligner(models / "rnn", AlignOptions(sym="union")).align_pairs(pairs)
    gdfa = Aligner(models / "rnn", AlignOptions(sym="grow-diag-final-and")).align_pairs(pairs)
    for a, b, c in zip(inter, union, gdfa, strict=True):
        assert set(a.links) <= set(c.links) <= set(b.links)


def test_decode_pair_soft_and_hard():
    fwd = np.array([[0.9, 0.1], [0.6, 0.4]])  # target 1 prefers source 0 in the forward model
    rev = np.array([[0.8, 0.1], [0.2, 0.9]])  # turned reverse: source 1 prefers target 1
    links, scores, _ = decode_pair(fwd, None, None, None, "argmax", "none")
    assert links == [(0, 0), (0, 1)] and scores[(0, 1)] == pytest.approx(0.6)
    links, _, _ = decode_pair(fwd, None, rev, None, "argmax", "intersection")
    assert links == [(0, 0)]
    links, _, _ = decode_pair(fwd, None, rev, None, "argmax", "union")
    assert links == [(0, 0), (0, 1), (1, 1)]
    links, scores, m = decode_pair(fwd, None, rev, None, "argmax", "soft")  # mean: [[.85,.1],[.4,.65]]
    assert links == [(0, 0), (1, 1)] and scores[(1, 1)] == pytest.approx(0.65)


def test_saved_attention_round_trip(models, corpus, tmp_path):
    att = tmp_path / "att.npz"
    r = invoke("align", "corpus", "--model", models / "rnn", "--src", corpus[0], "--tgt", corpus[1],
               "--save-attention", att, "--sym", "grow-diag-final-and", "--quiet")
    assert r.exit_code == 0, r.stderr
    assert saved_indices(att) == list(range(10))
    assert read_attention(att, 3).matrix.shape == (0, 9)  # the pair with an empty target side
    p = read_attention(att, 0)
    assert p.matrix.shape == (len(p.tgt), len(p.src)) and p.reverse.shape == p.matrix.shape
    assert np.allclose(p.matrix.sum(1) + p.eos, 1, atol=1e-5)
    assert p.meta["sym"] == "grow-diag-final-and"
    with pytest.raises(AttnAlignError, match="no pair 10"):
        read_attention(att, 10)


def test_transformer_layers_heads_and_errors(models, corpus):
    base = ["align", "corpus", "--model", models / "tf", "--src", corpus[0], "--tgt", corpus[1], "--quiet"]
    for extra in (["--layer", "0", "--head", "1"], ["--layer", "mean"], ["--layer", "-1", "--shift", "1"]):
        r = invoke(*base, *extra)
        assert r.exit_code == 0, r.stderr
    r = invoke(*base, "--layer", "5")
    assert r.exit_code == 2 and "no layer 5; valid: 0..1, -2..-1 or mean" in r.stderr
    r = invoke(*base, "--head", "7")
    assert r.exit_code == 2 and "no head 7" in r.stderr
    r = invoke(*base, "--sym", "intersection")
    assert r.exit_code == 2 and "both directions" in r.stderr


def test_rnn_ignores_layer_with_a_warning(models):
    with pytest.warns(AttnAlignWarning, match="Transformer models only"):
        Aligner(models / "rnn", AlignOptions(layer=1))


def test_long_pairs_are_skipped_with_a_warning(models, corpus, tmp_path):
    r = invoke("align", "corpus", "--model", models / "rnn", "--src", corpus[0], "--tgt", corpus[1],
               "--max-length", "10", "--quiet", "-o", tmp_path / "o")
    assert r.exit_code == 0
    assert "longer than --max-length 10" in r.stderr and "(line 1)" in r.stderr
    assert len((tmp_path / "o").read_text().split("\n")) == 11


def test_wrong_language_order_warns(models):
    pairs = read_corpus(SAMPLE / "test.fr", SAMPLE / "test.en")[:50]
    with pytest.warns(AttnAlignWarning, match="swap --src and --tgt"):
        list(Aligner(models / "rnn", AlignOptions(sym="none")).align(pairs))


def test_output_not_writable_fails_before_work(models, corpus, tmp_path):
    r = invoke("align", "corpus", "--model", models / "rnn", "--src", corpus[0], "--tgt", corpus[1],
               "-o", tmp_path / "missing" / "o.align")
    assert r.exit_code == 1 and "does not exist" in r.stderr and "aligned" not in r.stderr


def test_failed_run_leaves_the_old_output_intact(models, corpus, tmp_path, monkeypatch):
    out = write(tmp_path / "o.align", "precious\n")
    calls = {"n": 0}
    real = Aligner.extract

    def boom(self, pairs, start=0):
        calls["n"] += 1
        if calls["n"] > 1:
            raise KeyboardInterrupt
        return real(self, pairs, start)

    monkeypatch.setattr(Aligner, "extract", boom)
    monkeypatch.setattr(AlignOptions, "__init__", _small_chunks(AlignOptions.__init__))
    r = invoke("align", "corpus", "--model", models / "rnn", "--src", corpus[0], "--tgt", corpus[1],
               "-o", out, "--quiet")
    assert r.exit_code == 130
    assert out.read_text() == "precious\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".o.align")] == []


def _small_chunks(init):
    def wrapped(self, *a, **kw):
        init(self, *a, **kw)
        object.__setattr__(self, "chunk_size", 2)

    return wrapped


def test_missing_model_and_bad_options(corpus, tmp_path, models):
    r = invoke("align", "corpus", "--model", tmp_path / "nope", "--src", corpus[0], "--tgt", corpus[1])
    assert r.exit_code == 1 and "not an attnalign model directory" in r.stderr
    r = invoke("align", "corpus", "--model", models / "rnn", "--src", corpus[0], "--tgt", corpus[1],
               "--layer", "top")
    assert r.exit_code == 2 and "an integer, 'mean' or 'align'" in r.stderr


def test_align_sentence(models):
    r = invoke("align", "sentence", "--model", models / "rnn", "--src", "the red car .", "--tgt",
               "la voiture rouge .")
    assert r.exit_code == 0, r.stderr
    assert "voiture" in r.stdout and "weight" in r.stdout
    r = invoke("align", "sentence", "--model", models / "rnn", "--src", "the red car .", "--tgt",
               "la voiture rouge .", "--json", "--sym", "none")
    d = json.loads(r.stdout)
    assert d["src"] == ["the", "red", "car", "."] and len(d["links"]) == 4  # argmax: one per target word
