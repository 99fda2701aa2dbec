"""`attnalign report --pred`: other aligners' files compared with intervals, paired tests, breakdowns and a
gallery of disagreements, with a model or alone (then without torch)."""

from __future__ import annotations

import html
import re
import subprocess
import sys

import pandas as pd
import pytest
from helpers import ROOT, SAMPLE, TEST_TEXT, invoke, one_error, write

from attnalign.eval.metrics import Counts
from attnalign.report.sweep import Config, Result
from attnalign.report.systems import disagreement_order, row_names

DIAGONAL = SAMPLE / "test.diagonal.align"
TEXT = ["--src", SAMPLE / "test.en", "--tgt", SAMPLE / "test.fr", "--gold", SAMPLE / "test.gold.naacl"]


def worse_diagonal(tmp_path):
    """The sample's diagonal output with the links of its first 100 lines dropped."""
    lines = (SAMPLE / "test.diagonal.align").read_text().splitlines()
    kept = ("" if k < 100 else x for k, x in enumerate(lines))
    return write(tmp_path / "worse.align", "\n".join(kept) + "\n")


def test_files_alone(tmp_path):
    out = tmp_path / "rep"
    r = invoke("report", "--pred", SAMPLE / "test.diagonal.align", "--pred-name", "diagonal <b>",
               "--pred", worse_diagonal(tmp_path), "--pred-name", "worse", *TEXT, "-o", out, "--gallery", 2)
    assert r.exit_code == 0, r.stderr
    assert "best: diagonal <b>:" in r.stdout and "(2 systems)" in r.stdout
    systems = pd.read_csv(out / "systems.csv")
    assert list(systems.system) == ["diagonal <b>", "worse"]
    first, second = systems.iloc[0], systems.iloc[1]
    assert first.aer_low < first.aer < first.aer_high
    assert pd.isna(first.delta_aer) and second.delta_aer == pytest.approx(second.aer - first.aer)
    assert second.delta_aer_low > 0 and second.p_value < 0.01  # dropping links is significantly worse
    per = pd.read_csv(out / "systems_per_sentence.csv")
    assert len(per) == 400 and per[per.system == "worse"].links.sum() == second.links
    bands = pd.read_csv(out / "breakdown.csv")
    for (system, dim), grp in bands.groupby(["system", "dimension"]):  # each dimension covers every link
        assert grp.links.sum() == systems.set_index("system").links[system], (system, dim)
    page = (out / "index.html").read_text()
    assert html.escape("diagonal <b>") in page and "diagonal <b>" not in page  # a name is text, not markup
    assert "disagree_1.png" in page and "disagree_2.png" in page and "Breakdown" in page
    refs = {r.split("#")[0] for r in re.findall(r'(?:href|src)="([^"]+)"', page)}
    assert all((out / ref).is_file() for ref in refs)
    wrong = pd.read_csv(out / "systems_wrong_pairs.csv")
    assert set(wrong.system) == {"diagonal <b>", "worse"}


def test_files_alone_import_no_torch(tmp_path):
    args = [str(a) for a in ["report", "--pred", SAMPLE / "test.diagonal.align", *TEXT, "-o", tmp_path / "r"]]
    code = ("import sys\nfrom typer.testing import CliRunner\nfrom attnalign.cli import app\n"
            f"r = CliRunner().invoke(app, {args!r})\n"
            "assert r.exit_code == 0, r.output\nassert 'torch' not in sys.modules\nprint('ok')\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]
    # one system alone: its worst sentences, its links over the gold
    page = (tmp_path / "r" / "index.html").read_text()
    assert "Its worst sentences" in page and "disagree_1.png" in page
    assert (tmp_path / "r" / "disagree_1.png").is_file()


def test_with_a_model_the_files_sit_beside_its_default_output(models, tmp_path):
    out = tmp_path / "rep"
    r = invoke("report", "--model", models / "rnn", "--pred", SAMPLE / "test.diagonal.align", *TEXT,
               "-o", out, "--gallery", 1)
    assert r.exit_code == 0, r.stderr
    scores = pd.read_csv(out / "scores.csv")
    row = scores[scores.configuration == "test.diagonal.align"].iloc[0]  # its row name: the file's name
    assert row.aer_low < row.aer < row.aer_high and not row.best
    assert scores.aer_low.notna().all()  # every configuration carries its interval
    systems = pd.read_csv(out / "systems.csv")
    assert systems.system.iloc[0].startswith("align corpus default output")
    assert systems.system.iloc[1] == "test.diagonal.align"
    page = (out / "index.html").read_text()
    assert "Systems compared" in page and "AER 95% interval" in page


@pytest.mark.parametrize(("args", "says", "code"), [
    (["--pred", "SHORT"], "the prediction has 3 lines but the gold has 200 sentences", 1),
    (["--pred", "FAR"], "out of range", 1),
    (["--pred", DIAGONAL, "--pred-name", "a", "--pred-name", "b"], "2 --pred-name for 1", 2),
    (["--pred-name", "a"], "--pred-name names --pred files", 2),
    (["--pred", DIAGONAL, "--pred", DIAGONAL], "are the same file", 2),
    (["--pred", DIAGONAL, "--pred", "FAR", "--pred-name", "a", "--pred-name", "a"], "the same name", 2),
])
def test_errors(tmp_path, args, says, code):
    files = {"SHORT": write(tmp_path / "short", "0-0\n0-0\n0-0\n"),
             "FAR": write(tmp_path / "far", "0-40\n" * 200)}
    args = [files.get(a, a) if isinstance(a, str) else a for a in args]
    r = invoke("report", *args, *TEXT, "-o", tmp_path / "rep")
    assert r.exit_code == code, r.stderr
    assert r.stderr.startswith("error:") and says in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "rep").exists()


def test_the_breakdown_shows_each_dimension_with_its_own_bands(tmp_path):
    out = tmp_path / "rep"
    r = invoke("report", "--pred", DIAGONAL, "--pred", worse_diagonal(tmp_path), *TEXT, "-o", out)
    assert r.exit_code == 0, r.stderr
    csv = pd.read_csv(out / "breakdown.csv")
    page = (out / "index.html").read_text()
    section = page[page.index("<h2>Breakdown</h2>"):page.index("<h2>Word pairs by system</h2>")]
    tables = dict(re.findall(r"<h3>By (\w+)</h3><div class=\"wrap\"><table.*?<tbody>(.*?)</tbody>", section))
    assert list(tables) == list(dict.fromkeys(csv.dimension))  # one table per dimension, in the CSV's order
    for dim, body in tables.items():
        rows = re.findall(r"<tr><td>(.*?)</td>", body)
        bands = csv[csv.dimension == dim].band.map(html.escape)
        assert rows == list(dict.fromkeys(bands))  # no row the CSV lacks, none twice
    # the sample's diagonal predicts nothing 8 words off the diagonal and the gold has nothing there
    far = re.search(r"<tr><td>8\+</td>(.*?)</tr>", tables["distance"]).group(1)
    assert "no links" in far and "<td></td>" not in section  # no blank reads as zero or missing
    assert ": P</th>" not in section[section.index("By type"):section.index("By distance")]  # fixed by type


def test_a_pred_file_is_named_by_its_row_name_everywhere(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    one = write(tmp_path / "a" / "out.align", DIAGONAL.read_text())
    two = worse_diagonal(tmp_path).rename(tmp_path / "b" / "out.align")
    out = tmp_path / "rep"
    r = invoke("report", "--pred", one, "--pred", two, *TEXT, "-o", out, "--gallery", 1)
    assert r.exit_code == 0, r.stderr
    assert list(pd.read_csv(out / "systems.csv").system) == ["a/out.align", "b/out.align"]
    page = (out / "index.html").read_text()
    # the full paths stay only in commands (the page's command line and each picture's plot command)
    text = re.sub(r"<code>.*?</code>", "", page, flags=re.S)
    assert str(tmp_path) not in text, "a title or header holds a path the row name shortens"
    assert "a/out.align: AER" in page and "<summary>b/out.align: most frequently" in page


def test_row_names_by_hand():
    assert row_names(["x/y/out.align", "z/y/out.align", "w.align"]) == ["x/y/out.align", "z/y/out.align",
                                                                        "w.align"]
    assert row_names(["-", "runs/a.align"]) == ["--pred 1", "a.align"]


def test_files_alone_need_the_corpus(tmp_path):
    r = invoke("report", "--pred", SAMPLE / "test.diagonal.align", "--gold", SAMPLE / "test.gold.naacl",
               "-o", tmp_path / "rep")
    assert r.exit_code == 2 and "give the corpus" in r.stderr


def result(name, links):
    per = [Counts(len(lk), 1, 1, 0, 0, 1) for lk in links]
    return Result(Config(None, 0, "", "none", label=name), per, links)


def test_disagreement_order_by_hand():
    pairs = [(["a", "b"], ["x", "y"])] * 3 + [(["a"], ["x"])]
    one = result("one", [[(0, 0)], [(0, 0), (1, 1)], [(0, 0)], [(0, 0)]])
    two = result("two", [[(0, 0)], [(0, 1), (1, 0)], [(0, 0), (1, 1)], []])
    # sentence 0: the same links; 1: four links not shared; 2: one; 3: too short to draw
    assert disagreement_order([one, two], pairs, 5) == [1, 2]
    assert disagreement_order([one, two], pairs, 1) == [1]




def test_report_rows_have_names_of_their_own(tmp_path):
    r = invoke("report", "--pred", SAMPLE / "test.diagonal.align", "--pred-name",
               "align corpus default output: student + teacher", "--gold", SAMPLE / "test.gold.naacl",
               *TEST_TEXT, "-o", tmp_path / "R")
    one_error(r, 2, "is the name of one of the model's rows")
    r = invoke("report", "--pred", "-", "--pred", "-", "--gold", SAMPLE / "test.gold.naacl", *TEST_TEXT,
               "-o", tmp_path / "R", input="0-0\n" * 200)
    one_error(r, 2, "--pred 1 and --pred 2 both read stdin")


@pytest.mark.parametrize("gold", ["blank", "possible only"])
def test_a_report_of_a_system_without_links_or_a_gold_without_sure_links(tmp_path, gold):
    pred, gold_file = SAMPLE / "test.diagonal.align", SAMPLE / "test.gold.naacl"
    if gold == "blank":
        pred = write(tmp_path / "blank.align", "\n" * 200)
    else:
        possible = (SAMPLE / "test.gold.naacl").read_text().replace(" S\n", " P\n")
        gold_file = write(tmp_path / "p.naacl", possible)
    r = invoke("report", "--pred", pred, "--gold", gold_file, *TEST_TEXT, "-o", tmp_path / "R")
    assert r.exit_code == 0, r.output
    assert (tmp_path / "R" / "index.html").is_file()


def test_the_captions_a_report_writes_for_a_naacl_pred_run(tmp_path):
    import html
    import re
    import shlex

    r = invoke("report", "--pred", SAMPLE / "test.gold.naacl", "--pred", SAMPLE / "test.diagonal.align",
               "--gold", SAMPLE / "test.gold.pharaoh", *TEST_TEXT, "-o", tmp_path / "R", "--gallery", "1")
    assert r.exit_code == 0, r.output
    page = (tmp_path / "R" / "index.html").read_text()
    cmd = html.unescape(re.search(r"<code>(attnalign plot sentence [^<]*)</code>", page).group(1))
    words = shlex.split(cmd)[1:]
    words[words.index("-o") + 1] = str(tmp_path / "again.png")
    again = invoke(*words)
    assert again.exit_code == 0, again.output
    # hints name options the command has: report and plot read --pred-format, --pred-one-based, --reverse-pred
    r = invoke("plot", "sentence", "--pred", SAMPLE / "test.diagonal.align", "--pred-format", "naacl",
               *TEST_TEXT, "--index", "0", "-o", tmp_path / "x.png")
    one_error(r, 1, "--pred-format pharaoh")
    # a text shorter than a NAACL gold: said as it is
    short = {s: write(tmp_path / f"s.{s}", "".join((SAMPLE / f"test.{s}").read_text().splitlines(True)[:150]))
             for s in ("en", "fr")}
    r = invoke("score", SAMPLE / "test.gold.naacl", SAMPLE / "test.diagonal.align", "--src", short["en"],
               "--tgt", short["fr"])
    one_error(r, 1, "sentence 200 has links, but the text has only 150 sentences")


def test_one_file_is_one_system_however_it_is_spelled(tmp_path, monkeypatch):
    monkeypatch.chdir(SAMPLE)
    r = invoke("report", "--pred", "test.diagonal.align", "--pred", "./test.diagonal.align", "--gold",
               SAMPLE / "test.gold.naacl", *TEST_TEXT, "-o", tmp_path / "R")
    one_error(r, 2, "are the same file")
