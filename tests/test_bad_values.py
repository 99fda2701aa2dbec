"""Values that cannot work are refused before any work, with one `error:` line: networks too large for the
machine's memory, absurd learning rates and seeds, closed or mis-encoded input streams."""

from __future__ import annotations

import subprocess
import sys

import pytest
from helpers import ROOT, SAMPLE, invoke, write

from attnalign.errors import OptionError
from attnalign.nmt.configs import BYTES_PER_PARAM, RNNConfig, TransformerConfig, check_fits


def test_the_memory_estimate_by_hand():
    # one GRU layer each way: encoder 2 directions x 3 gates x h x (e + h), decoder 3 x h x ((e + h) + h)
    # (input feeding), and two h x h attention matrices
    c = RNNConfig(emb_dim=4, hidden=2)
    assert c.min_params() == 2 * 3 * 2 * (4 + 2) + 3 * 2 * ((4 + 2) + 2) + 2 * 2 * 2
    t = TransformerConfig(d_model=8, ff_dim=16, enc_layers=1, dec_layers=1)
    assert t.min_params() == (4 * 64 + 2 * 128) + (8 * 64 + 2 * 128)
    check_fits(1000, memory=1000 * BYTES_PER_PARAM)  # fits exactly
    with pytest.raises(OptionError, match="this machine has"):
        check_fits(1001, memory=1000 * BYTES_PER_PARAM)


TRAIN = ["train", "--src", SAMPLE / "test.en", "--tgt", SAMPLE / "test.fr", "--epochs", "1", "--quiet"]


@pytest.mark.parametrize(("args", "says"), [
    (["--hidden", "10000000"], "GiB for its weights"),
    (["--emb-dim", "10000000"], "GiB for its weights"),
    (["--model-type", "transformer", "--d-model", "10000000", "--heads", "1"], "GiB for its weights"),
    (["--layers", "5000"], "--layers must be >= 1 and <= 64"),
    (["--layers", "100000"], "--layers must be >= 1 and <= 64"),
    (["--lr", "1e30"], "--lr must be > 0 and <= 1"),
    (["--lr", "1e300"], "--lr must be > 0 and <= 1"),
    (["--seed", "18446744073709551616"], "--seed must be >= 0"),
    (["--seed", "-1"], "--seed must be >= 0"),
    # options that would do nothing
    (["--guide-seed", "5"], "--guide-seed sets the built-in teacher of --guide auto"),
    (["--guide-samplers", "3", "--guide-model", "fertility"], "--guide-model, --guide-samplers set"),
    (["--guide", str(SAMPLE / "test.gold.pharaoh"), "--guide-seed", "5"], "--guide-seed sets"),
    (["--resume", "--overwrite"], "--resume continues the run"),
])
def test_train_refuses_before_any_work(tmp_path, args, says):
    r = invoke(*TRAIN, "--model", tmp_path / "m", *args)
    assert r.exit_code == 2, r.output
    assert r.stderr.startswith("error:") and says in r.stderr and "Traceback" not in r.output
    assert not (tmp_path / "m").exists()


def test_report_refuses_stdin_as_both_gold_and_pred_and_a_file_as_its_folder(tmp_path):
    text = ["--src", SAMPLE / "test.en", "--tgt", SAMPLE / "test.fr"]
    r = invoke("report", "--gold", "-", "--pred", "-", *text, "-o", tmp_path / "rep", input="0-0\n")
    assert r.exit_code == 2 and "both read stdin" in r.stderr, r.output
    assert not (tmp_path / "rep").exists()
    mine = write(tmp_path / "notes.txt", "mine")  # -o onto a file: a usage error, as elsewhere
    r = invoke("report", "--gold", SAMPLE / "test.gold.naacl", "--pred", SAMPLE / "test.diagonal.align",
               *text,
               "-o", mine)
    assert r.exit_code == 2 and "must be a folder" in r.stderr and mine.read_text() == "mine", r.output


def test_stdin_closed_is_an_input_error(tmp_path):
    code = (f"import sys; sys.argv = ['attnalign', 'align', 'statistical', '--src', '-', '--tgt', "
            f"{str(SAMPLE / 'test.fr')!r}, '-o', {str(tmp_path / 'out')!r}, '--quiet']\n"
            "from attnalign.cli import main\nmain()")
    r = subprocess.run([sys.executable, "-c", code], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       cwd=ROOT, close_fds=True, preexec_fn=lambda: __import__("os").close(0))
    assert r.returncode == 1, r.stderr
    assert r.stderr.startswith("error:") and "stdin is closed" in r.stderr and "Traceback" not in r.stderr


def test_utf16_without_a_byte_order_mark(tmp_path):
    text = write(tmp_path / "u16.txt", "a b\nc d\n".encode("utf-16-le"))
    r = invoke("align", "statistical", "--src", text, "--tgt", text, "--encoding", "utf-16", "-o",
               tmp_path / "out", "--quiet")
    assert r.exit_code == 1 and "does not start with BOM" in r.stderr and "utf-16-le" in r.stderr
    ok = invoke("align", "statistical", "--src", text, "--tgt", text, "--encoding", "utf-16-le", "-o",
                tmp_path / "out", "--quiet")
    assert ok.exit_code == 0, ok.output


def test_a_line_too_long_to_be_a_sentence_is_left_out_with_a_warning(tmp_path):
    from attnalign.statistical.settings import MAX_WORDS

    src_lines = (SAMPLE / "test.en").read_text().splitlines()[:30]
    tgt_lines = (SAMPLE / "test.fr").read_text().splitlines()[:30]
    src = write(tmp_path / "s", "\n".join([" ".join(["w"] * (MAX_WORDS + 1)), *src_lines[1:]]) + "\n")
    tgt = write(tmp_path / "t", "\n".join(tgt_lines) + "\n")
    r = invoke("align", "statistical", "--src", src, "--tgt", tgt, "-o", tmp_path / "out", "--quiet")
    assert r.exit_code == 0, r.output
    assert f"1 pair with more than {MAX_WORDS:,} words on a side left out" in r.stderr
    lines = (tmp_path / "out").read_text().splitlines()
    assert len(lines) == 30 and lines[0] == "" and lines[1]
    drawn = invoke("plot", "sentence", "--pred", tmp_path / "out", "--src", src, "--tgt", tgt, "--index", "0",
                   "--terminal")
    assert drawn.exit_code == 2 and "draws pairs of up to" in drawn.stderr and "Traceback" not in drawn.output
