"""Registries are the only lists: a gold format and an attention score registered from outside the
package, after attnalign (and its command line) was imported, are choices of the CLI and the API, and
``--help`` lists them."""

from __future__ import annotations

import math

import pytest
from helpers import invoke, sample_texts, write

import attnalign as aa
from attnalign.data.alignments import ALIGNMENT_FORMATS
from attnalign.nmt.scores import SCORES


@pytest.fixture
def arrows():
    """A format of one line per sentence, its links written ``i>j`` (sure) or ``i>?j`` (possible)."""

    @aa.register_format("arrows", help="arrows: a line of i>j links per sentence", line_per_sentence=True)
    def read(path, encoding, role, n_sentences, max_sentences, from_text):
        lines = path.read_text(encoding=encoding).splitlines()[:max_sentences]
        links = [aa.RawLink(k, int(i), int(j.lstrip("?")), not j.startswith("?"), None, k + 1)
                 for k, line in enumerate(lines) for i, j in (x.split(">") for x in line.split())]
        return links, len(lines) if n_sentences is None else n_sentences, 0

    yield "arrows"
    del ALIGNMENT_FORMATS["arrows"]


@pytest.fixture
def scaled():
    """The Transformer's scaled dot product as an RNN attention score."""

    @aa.register_score("scaled", "q^T k / sqrt(d)")
    class Scaled(aa.Score):
        def score(self, attn, query, proj):
            return query @ proj.transpose(1, 2) / math.sqrt(query.shape[-1])

    yield "scaled"
    del SCORES["scaled"]


def test_a_gold_format_registered_later_is_read_by_the_cli_and_the_api(arrows, tmp_path):
    gold = write(tmp_path / "g.arrows", "0>0 1>?1\n2>1\n")
    pred = write(tmp_path / "p.align", "0-0 1-1\n2-1 0-0\n")
    r = invoke("score", gold, pred, "--gold-format", arrows)
    assert r.exit_code == 0, r.output
    hyp, _ = aa.read_alignments(pred)
    ref, _ = aa.read_alignments(gold, fmt=arrows)
    assert ref[0].sure == {(0, 0)} and ref[0].possible == {(0, 0), (1, 1)}
    report = aa.score_files(gold, [pred], aa.GoldOptions(fmt=arrows))
    # sure 2, possible 3, predicted 4 of which 3 possible and 2 sure: AER = 1 - (3 + 2) / (4 + 2)
    assert report.systems[0].total.aer == pytest.approx(1 - 5 / 6)
    assert f"{100 * (1 - 5 / 6):.2f}" in r.stdout
    assert "arrows: a line of i>j links" in invoke("score", "--help", env={"COLUMNS": "300"}).stdout
    bad = invoke("score", gold, pred, "--gold-format", "arrowz")
    assert bad.exit_code == 2 and "'arrows'" in bad.stderr


def test_an_attention_score_registered_later_trains_through_the_cli_and_the_api(scaled, tmp_path):
    src, tgt = sample_texts(tmp_path, 60)
    r = invoke("train", "--src", src, "--tgt", tgt, "--model", tmp_path / "m", "--attention", scaled,
               "--epochs", 1, "--hidden", 16, "--emb-dim", 8, "--batch-tokens", 300, "--quiet")
    assert r.exit_code == 0, r.output
    assert '"attention": "scaled"' in (tmp_path / "m" / "config.json").read_text()
    pairs = aa.read_corpus(src, tgt)
    aa.train(pairs, tmp_path / "api", aa.TrainOptions.of(attention=scaled, hidden=16, emb_dim=8, epochs=1,
                                                          batch_tokens=300))
    (p,) = aa.Aligner(tmp_path / "api", aa.AlignOptions(sym="none")).align_pairs(pairs[:1])
    assert p.matrix.shape == (len(pairs[0][1]), len(pairs[0][0]))
    assert "scaled (q^T k / sqrt(d))" in invoke("train", "--help", env={"COLUMNS": "300"}).stdout
