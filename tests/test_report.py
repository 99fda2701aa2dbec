"""`attnalign report`: a self-contained directory whose links resolve and whose tables add up."""

from __future__ import annotations

import html
import re
import shlex

import pandas as pd
import pytest
from helpers import SAMPLE, check_report, invoke


def test_report_from_a_bidirectional_rnn(models, tmp_path):
    out = tmp_path / "rep"
    r = invoke("report", "--model", models / "rnn", "--src", SAMPLE / "test.en", "--tgt", SAMPLE / "test.fr",
               "--gold", SAMPLE / "test.gold.pharaoh", "-o", out, "--gallery", "2")
    assert r.exit_code == 0, r.stderr
    page, scores = check_report(out)
    assert {"grow-diag-final-and", "soft", "intersection"} <= set(scores.sym)
    assert set(scores["shift"]) == {0}  # Shift-Att applies to Transformers, not to an RNN
    assert "worst_2.png" in page and "best_1.png" in page and "best:" in r.stdout
    sig = "gold:pharaoh|base:0|order:src-tgt|sents:200|metric:och-ney-micro|attnalign:"
    assert sig in r.stdout and f"signature: <code>{sig}" in page  # as `score` prints it
    # the gallery names each sentence by its 0-based index, the one plot sentence --index and the CSV use
    per = pd.read_csv(out / "per_sentence.csv")
    assert per["index"].tolist() == list(range(len(per))) and (per.sentence == per["index"] + 1).all()
    shown = [int(k) for k in re.findall(r"<b>index (\d+)</b>", page)]
    assert len(shown) == 4
    src = (SAMPLE / "test.en").read_text().splitlines()
    for k in shown:
        assert f" --index {k} -o sentence{k}.png" in page and " ".join(src[k].split()).lower() in page.lower()
    assert "max-width:100%" in page and "Made by attnalign" in page
    assert "Model: rnn, directions forward, reverse; architecture <code>" in page and "epochs=" in page
    # the default output of align corpus is scored beside the attention's readings, as score scores it
    default = scores[scores.configuration.str.startswith("align corpus default output")]
    assert len(default) == 1 and not default.best.iloc[0]
    r = invoke("align", "corpus", "--model", models / "rnn", "--src", SAMPLE / "test.en", "--tgt",
               SAMPLE / "test.fr", "-o", tmp_path / "default.align")
    assert r.exit_code == 0, r.stderr
    r = invoke("score", SAMPLE / "test.gold.pharaoh", tmp_path / "default.align", "--json")
    import json

    assert json.loads(r.stdout)["aer"] == pytest.approx(default.aer.iloc[0], abs=1e-6)
    assert f"{default.configuration.iloc[0]}: AER" in page
    # the scores on the page: sorted by AER, in %, the best first, every decoder and symmetrization named
    rows = re.findall(r"<tr( class=\"best\")?>\s*<td>(★?)</td>\s*<td>([^<]*)</td>\s*<td>([\d.]+)</td>", page)
    assert rows[0][:2] == (' class="best"', "★") and not any(b or star for b, star, *_ in rows[1:])
    aers = [float(a) for *_, a in rows]
    assert aers == sorted(aers) and abs(aers[0] - 100 * scores.aer.min()) <= 0.005  # 2 decimals
    assert "<code>argmax-src</code>" in page and "<code>grow-diag-final-and</code>" in page
    assert page.count('<th class="sort"') >= 11 and "<script>" in page  # sortable by a header click
    assert '<th class="sort" data-up="1" title="sort by this column">AER</th>' in page  # 1st click reverses
    # each gallery sentence's matrix as a table whose cells say their words, weight and status on hover
    assert page.count('<table class="hm">') == 4
    tips = re.findall(r'<td(?: class="[\w ]+")? style="[^"]*" title="([^"]*)">', page)
    assert tips and all(re.fullmatch(r"\S+ → \S+: [01]\.\d{3}(; .+)?", html.unescape(t)) for t in tips)
    assert any("right link (gold sure)" in t for t in tips) and any("wrong link" in t for t in tips)
    # a link's mark keeps its class's colour (no inline colour overrides it), and the matrix has a legend
    marked = re.findall(r'<td class="(?:r|w)[^"]*" style="([^"]*)"', page)
    assert marked and not any("color" in st for st in marked)
    assert page.count("<caption>darker: more attention; ● right link, ✗ wrong link") == 4
    # each gallery caption's command draws that very sentence with the links pictured: same scores

    found = re.findall(r"<code>(attnalign plot sentence [^<]*)</code>\): AER ([\d.]+)", page)
    assert len(found) == 4
    for cmd, aer in found[:2]:
        words = shlex.split(html.unescape(cmd))[1:]
        words[words.index("-o") + 1] = str(tmp_path / "again.png")
        again = invoke(*words, "--terminal")
        assert again.exit_code == 0, again.stderr
        assert f"AER {aer} " in again.stdout and (tmp_path / "again.png").is_file()


def test_report_from_a_transformer_has_layers(models, tmp_path):
    out = tmp_path / "rep"
    r = invoke("report", "--model", models / "tf", "--src", SAMPLE / "test.en", "--tgt", SAMPLE / "test.fr",
               "--gold", SAMPLE / "test.gold.naacl", "-o", out, "--gallery", "1")
    assert r.exit_code == 0, r.stderr
    page, scores = check_report(out)
    assert "aer_by_layer.png" in page
    assert {"0", "1", "mean"} <= set(scores.layer.astype(str))


@pytest.mark.slow
def test_report_from_saved_attention(models, tmp_path):
    att = tmp_path / "a.npz"
    r = invoke("align", "corpus", "--model", models / "rnn", "--src", SAMPLE / "test.en", "--tgt",
               SAMPLE / "test.fr", "--save-attention", att, "--quiet", "-o", tmp_path / "o")
    assert r.exit_code == 0
    r = invoke("report", "--attention", att, "--gold", SAMPLE / "test.gold.pharaoh", "-o", tmp_path / "rep")
    assert r.exit_code == 0, r.stderr
    check_report(tmp_path / "rep")


def test_a_pair_longer_than_max_length_is_drawn_in_the_gallery(models, tmp_path):
    """align corpus skips a pair of more than --max-length tokens; the gallery draws it as its caption's
    plot sentence does (which skips no pair), not a traceback over its missing matrix."""
    src = (SAMPLE / "test.en").read_text().splitlines()[:2]
    tgt = (SAMPLE / "test.fr").read_text().splitlines()[:2]

    def long(lines: list[str], n: int = 300) -> str:  # n words: model tokens past MAX_LENGTH
        words = " ".join(lines).split()
        return " ".join(words[k % len(words)] for k in range(n))

    long_src, long_tgt = long(src), long(tgt)
    (tmp_path / "t.en").write_text("\n".join([*src, long_src]) + "\n")
    (tmp_path / "t.fr").write_text("\n".join([*tgt, long_tgt]) + "\n")
    golds = [" ".join(f"{i}-{i}" for i in range(min(len(a.split()), len(b.split()))))
             for a, b in zip([*src, long_src], [*tgt, long_tgt], strict=True)]
    (tmp_path / "g.pharaoh").write_text("\n".join(golds) + "\n")
    out = tmp_path / "rep"
    r = invoke("report", "--model", models / "rnn", "--src", tmp_path / "t.en", "--tgt", tmp_path / "t.fr",
               "--gold", tmp_path / "g.pharaoh", "-o", out, "--gallery", "3")
    assert r.exit_code == 0, r.stderr
    page = (out / "index.html").read_text()
    assert re.search(r'alt="(?:worst|best) \d: index 2"', page)  # the long pair is in the gallery


def test_report_errors(models, tmp_path):
    r = invoke("report", "--gold", SAMPLE / "test.gold.pharaoh", "-o", tmp_path / "rep")
    assert r.exit_code == 2 and "--model" in r.stderr


def captions_draw_their_pictures(page: str, out, tmp_path) -> list[tuple[str, list[str]]]:
    """Run each gallery caption's ``plot sentence`` command and check that it draws its picture's very
    bytes; the pictures' names with their commands' words."""
    found = re.findall(r'<img src="((?:worst|best)_\d\.png)".*?<code>(attnalign plot sentence [^<]*)</code>',
                       page, re.S)
    pictures = []
    for img, cmd in found:
        words = shlex.split(html.unescape(cmd))[1:]
        again = [*words[:words.index("-o") + 1], str(tmp_path / "again.png"), *words[words.index("-o") + 2:]]
        r = invoke(*again)
        assert r.exit_code == 0, r.stderr
        assert (tmp_path / "again.png").read_bytes() == (out / img).read_bytes(), (img, cmd)
        pictures.append((img, words))
    return pictures


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["rnn", "saved"])
def test_gallery_pictures_are_what_their_caption_commands_draw(models, tmp_path, kind):
    """A gallery picture shows the matrix its links were decoded from (the soft one for a soft best
    configuration), with the EOS column, and its caption's command draws the very same picture."""
    source = ["--model", models / "rnn", "--src", SAMPLE / "test.en", "--tgt", SAMPLE / "test.fr"]
    if kind == "saved":
        att = tmp_path / "a.npz"
        assert invoke("align", "corpus", *source, "--save-attention", att, "--quiet",
                      "-o", tmp_path / "o").exit_code == 0
        source = ["--attention", att]
    out = tmp_path / "rep"
    r = invoke("report", *source, "--gold", SAMPLE / "test.gold.pharaoh", "-o", out, "--gallery", "2")
    assert r.exit_code == 0, r.stderr
    page = (out / "index.html").read_text()
    pictures = captions_draw_their_pictures(page, out, tmp_path)
    assert [img for img, _ in pictures] == ["worst_1.png", "worst_2.png", "best_1.png", "best_2.png"]
    assert all("--eos" in words and "--thumbnail" not in words for _, words in pictures)
    # the words that lose their gold links to EOS, counted by hand from the saved forward matrices
    lost = pd.read_csv(out / "eos_losses.csv")
    assert list(lost.columns) == ["target word", "to EOS", "gold-linked"] and "eos_losses.csv" in page
    assert (lost["to EOS"] <= lost["gold-linked"]).all() and lost["to EOS"].is_monotonic_decreasing
    # the worst come first: the most wrong and missed links
    per = pd.read_csv(out / "per_sentence.csv")
    errors = per.links - per.hits_possible + per.sure - per.hits_sure
    worst = [int(k) for k in re.findall(r'alt="worst \d: index (\d+)"', page)]
    assert errors[worst[0]] == errors.max() and errors[worst[0]] >= errors[worst[1]]


@pytest.mark.slow
def test_a_large_gallery_is_drawn_as_thumbnails_its_captions_draw(models, tmp_path, monkeypatch):
    """From THUMBNAIL_FIGURES figures on the gallery's pictures are thumbnails: each caption's command
    says --thumbnail and draws the very same bytes; the matrices are left to the explorer, not repeated
    on the page."""
    import attnalign.report.plots as plots

    monkeypatch.setattr(plots, "THUMBNAIL_FIGURES", 2)
    out = tmp_path / "rep"
    r = invoke("report", "--model", models / "rnn", "--src", SAMPLE / "test.en", "--tgt", SAMPLE / "test.fr",
               "--gold", SAMPLE / "test.gold.pharaoh", "-o", out, "--gallery", "1")
    assert r.exit_code == 0, r.stderr
    page = (out / "index.html").read_text()
    pictures = captions_draw_their_pictures(page, out, tmp_path)
    assert [img for img, _ in pictures] == ["worst_1.png", "best_1.png"]
    assert all("--thumbnail" in words for _, words in pictures)
    assert '<table class="hm">' not in page and 'loading="lazy"' in page
    explorer = (out / "explorer.html").read_text()
    assert all(f"index {k}" in explorer for k in re.findall(r"<b>index (\d+)</b>", page))


def test_the_attention_statistics_label_their_log_axis_in_plain_numbers():
    """Words are never TeX (text.parse_math off), so the log axis must not use TeX labels either: they
    showed as ``$\\mathdefault{10^{3}}$``."""
    import numpy as np

    from attnalign.eval.plot import _mpl
    from attnalign.report.plots import attention_stats_figure

    plt = _mpl()
    rng = np.random.default_rng(0)
    fig = attention_stats_figure(rng.random(500), np.concatenate([np.zeros(2000), rng.random(30)]))
    fig.canvas.draw()
    labels = [t.get_text() for ax in fig.axes for t in ax.get_yticklabels() + ax.get_xticklabels()]
    plt.close(fig)
    assert labels and not [t for t in labels if "$" in t or "mathdefault" in t], labels
    assert {"1", "10", "100", "1000"} <= set(labels)


@pytest.mark.slow
def test_a_large_gallery_drawn_by_several_processes_is_the_same_bytes(models, tmp_path, monkeypatch):
    """From PARALLEL_FIGURES figures on, one process per core draws the gallery: the same pictures."""
    import attnalign.report.plots as plots

    source = ["--model", models / "rnn", "--src", SAMPLE / "test.en", "--tgt", SAMPLE / "test.fr",
              "--gold", SAMPLE / "test.gold.pharaoh", "--gallery", "3"]
    assert invoke("report", *source, "-o", tmp_path / "one").exit_code == 0
    monkeypatch.setattr(plots, "PARALLEL_FIGURES", 2)
    r = invoke("report", *source, "-o", tmp_path / "many")
    assert r.exit_code == 0, r.output
    names = sorted(p.name for p in (tmp_path / "one").glob("*_[0-9].png"))
    assert len(names) == 6
    for name in names:
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "many" / name).read_bytes(), name


def test_the_gallery_reads_each_sentence_once_for_its_picture_and_the_explorer(models, tmp_path, monkeypatch):
    # the picture (the links decoded with the EOS column) and the explorer's panels (both directions) are
    # of one extraction: each gallery kind's sentences are read by one call, not one a view
    from attnalign.nmt.aligner import Aligner

    calls = []
    extract = Aligner.extract

    def counted(self, pairs, start=0):
        calls.append(len(pairs))
        return extract(self, pairs, start)

    monkeypatch.setattr(Aligner, "extract", counted)
    out = tmp_path / "rep"
    r = invoke("report", "--model", models / "rnn", "--src", SAMPLE / "test.en", "--tgt", SAMPLE / "test.fr",
               "--gold", SAMPLE / "test.gold.pharaoh", "-o", out, "--gallery", "3")
    assert r.exit_code == 0, r.stderr
    assert calls.count(3) == 2  # worst, then best: three sentences each, once (not once a view)
    assert len(re.findall(r'"label"', (out / "explorer.html").read_text())) >= 6
