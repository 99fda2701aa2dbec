"""`attnalign score` through Typer's CliRunner: stdout vs stderr, exit codes, every output."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from helpers import SAMPLE, invoke, write


def test_table_on_stdout_signature_and_counts():
    r = invoke("score", SAMPLE / "test.gold.naacl", SAMPLE / "test.diagonal.align")
    assert r.exit_code == 0, r.stderr
    assert "AER" in r.stdout and "test.diagonal.align" in r.stdout
    assert "gold:naacl|base:1|order:src-tgt|sents:200" in r.stdout
    assert r.stderr == ""


def test_json_keys_and_gold_against_itself():
    r = invoke("score", SAMPLE / "test.gold.pharaoh", SAMPLE / "test.gold.naacl", "--json")
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)
    assert {"aer", "precision", "recall", "f1", "sentences", "links", "sure", "possible"} <= set(d)
    assert d["aer"] == 0.0 and d["precision"] == 1.0 and d["sentences"] == 200
    assert isinstance(d["links"], int)


def test_several_systems_one_row_each(tmp_path):
    out = tmp_path / "per.csv"
    r = invoke(
        "score", SAMPLE / "test.gold.pharaoh", SAMPLE / "test.diagonal.align",
        SAMPLE / "test.gold.pharaoh", "--json", "--per-sentence", out,
    )
    assert r.exit_code == 0, r.stderr
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert len(rows) == 2 and rows[1]["aer"] == 0.0 and rows[0]["aer"] > 0.2
    df = pd.read_csv(out)
    assert len(df) == 400 and set(df.system) == {str(SAMPLE / "test.diagonal.align"),
                                                 str(SAMPLE / "test.gold.pharaoh")}
    diag = df[df.system.str.endswith("diagonal.align")]
    assert diag.links.sum() == rows[0]["links"] and diag.sure.sum() == rows[0]["sure"]
    assert "per-sentence scores written" in r.stderr


def test_longer_prediction_scores_the_first_lines(tmp_path):
    gold = write(tmp_path / "gold", "0-0\n1-1\n")
    pred = write(tmp_path / "pred", "0-0\n1-1\n5-5\n6-6\n")
    r = invoke("score", gold, pred, "--json")
    assert r.exit_code == 0
    assert json.loads(r.stdout)["aer"] == 0.0
    assert "scoring the first 2" in r.stderr


def test_a_pharaoh_gold_ending_in_empty_lines_says_what_it_scores(tmp_path):
    """The RWTH German-English gold's shape: the sentences, then an empty line. Without the text it is
    one more sentence without links, said; the text's length cuts it, said, and the signature counts
    what was scored."""
    gold = write(tmp_path / "gold", "0-0 1-1\n0-0\n\n")
    pred = write(tmp_path / "pred", "0-0 1-1\n0-0\n0-0\n")
    r = invoke("score", gold, pred, "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["sentences"] == 3
    assert "ends in 1 empty line, read as sentences without links: 3 sentences are scored" in r.stderr
    src, tgt = write(tmp_path / "t.en", "a b\nc\n"), write(tmp_path / "t.fr", "x y\nz\n")
    r = invoke("score", gold, pred, "--src", src, "--tgt", tgt)
    assert r.exit_code == 0 and "sents:2|" in r.stdout and "│ 0.00 │" in r.stdout, r.output
    assert "the 1 beyond the text's 2 sentences are left out: 2 sentences are scored" in r.stderr


def test_shorter_prediction_is_an_error(tmp_path):
    gold = write(tmp_path / "gold", "0-0\n1-1\n")
    pred = write(tmp_path / "pred", "0-0\n")
    r = invoke("score", gold, pred)
    assert r.exit_code == 1
    assert "1 lines but the gold has 2 sentences" in r.stderr and "Traceback" not in r.stderr


def test_empty_prediction_lines_score_without_crashing(tmp_path):
    gold = write(tmp_path / "gold", "0-0\n1-1\n")
    pred = write(tmp_path / "pred", "\n\n")
    r = invoke("score", gold, pred, "--json")
    assert r.exit_code == 0
    d = json.loads(r.stdout)
    assert d["aer"] == 1.0 and d["links"] == 0


@pytest.mark.parametrize(
    ("args", "message", "code"),
    [
        (["missing.gold", "x"], "does not exist", 1),
        (["{gold}", "{bad}"], "cannot read", 1),
        (["{gold}", "{gold}", "--src", "{gold}"], "needs both", 2),
        (["{gold}", "{gold}", "--src", "{txt}", "--tgt", "{txt}"], "out of range", 1),
        (["{gold}", "{gold}", "--per-sentence", "/nonexistent/dir/x.csv"], "does not exist", 1),
    ],
)
def test_errors_exit_1_or_2_with_a_message(tmp_path, args, message, code):
    files = {
        "gold": write(tmp_path / "gold", "0-0 1-1\n"),
        "bad": write(tmp_path / "bad", "0-0 zz\n"),
        "txt": write(tmp_path / "txt", "one\n"),
    }
    r = invoke("score", *[a.format(**files) for a in args])
    assert r.exit_code == code  # 2: the command line is wrong; 1: an input is
    assert r.stderr.startswith("error:") and message in r.stderr
    assert "Traceback" not in r.stderr and r.stdout == ""


def test_version_and_help():
    r = invoke("--version")
    assert r.exit_code == 0 and r.stdout.startswith("attnalign ")
    r = invoke("score", "--help")
    assert r.exit_code == 0 and "--gold-one-based" in r.stdout


def test_python_m_entry_point():
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-m", "attnalign", "--version"], capture_output=True,
                       text=True, check=True)
    assert p.stdout.startswith("attnalign ")


@pytest.mark.parametrize("width", [300, 100, 80, 50])
def test_a_narrow_terminal_keeps_every_number_whole_and_the_signature_uncut(width):
    """At any width the table shows whole numbers (the counts leave first, then each system becomes a
    record of lines) and the signature is whole, broken only after its ``|``."""
    import io

    from rich.console import Console

    from attnalign.cli.render import score_table
    from attnalign.eval.scoring import score_files
    from attnalign.eval.significance import Bootstrap

    systems = [SAMPLE / "test.diagonal.align", SAMPLE / "test.gold.naacl"]
    report = score_files(SAMPLE / "test.gold.naacl", systems, bootstrap=Bootstrap(), paired=True)
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, color_system=None)
    console.print(score_table(report, intervals=True, width=width))
    lines = buffer.getvalue().splitlines()
    assert "…" not in buffer.getvalue() and all(len(line) <= width for line in lines)
    assert any("33.05 [30.59, 35.48]" in line for line in lines)  # as the wide table prints it
    start = next(k for k, line in enumerate(lines) if line.startswith("gold:"))
    signature = ""
    for line in lines[start:]:
        signature += line.rstrip()
        if not signature.endswith("|"):
            break
    assert signature == report.signature
    assert any("sentences ┃" in line for line in lines) == (width == 300)  # the counts' columns: if they fit
