"""Bad input is one `error:` line naming the file, the line and the fix, with the documented exit code
(2: the command line is wrong; 1: an input or the run failed), never a traceback; user text is data,
never markup."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile

import numpy as np
import pytest
from helpers import ROOT, SAMPLE, TEST_TEXT, bomb_npz, invoke, one_error, write
from typer.testing import CliRunner

from attnalign.cli import app
from attnalign.data.attnfile import AttentionWriter
from attnalign.data.corpus import read_corpus
from attnalign.errors import AttnAlignError, OptionError
from attnalign.nmt.configs import BYTES_PER_PARAM, RNNConfig, TransformerConfig, check_fits
from attnalign.training import TrainOptions


def test_a_gold_outside_its_sentences_is_rejected_by_every_command(models, tmp_path):
    gold = write(tmp_path / "g.pharaoh", "0-0 40-1\n")  # sentence 1 has far fewer than 41 words
    model = models / "rnn"
    for args in (["report", "--model", model, *TEST_TEXT, "--gold", gold, "-o", tmp_path / "R"],
                 ["align", "corpus", "--model", model, *TEST_TEXT, "--gold", gold, "-o", tmp_path / "a"],
                 ["align", "statistical", *TEST_TEXT, "--gold", gold, "-o", tmp_path / "s"],
                 ["score", gold, gold, *TEST_TEXT]):
        one_error(invoke(*args), 1, "out of range", str(gold))
    assert not any(p.exists() for p in (tmp_path / "R", tmp_path / "a", tmp_path / "s"))


def _npz(path, meta, entries):
    with zipfile.ZipFile(path, "w") as z:
        for name, arr in {"meta": np.array(json.dumps(meta)) if not isinstance(meta, np.ndarray) else meta,
                          **entries}.items():
            with z.open(name + ".npy", "w") as f:
                np.lib.format.write_array(f, np.asarray(arr), allow_pickle=False)
    return path


def pair_entries(att, src=("a", "b"), tgt=("x", "y")):
    return {"att_0": att, "eos_0": np.zeros(len(tgt), np.float32), "src_0": np.array(src, dtype=str),
            "tgt_0": np.array(tgt, dtype=str)}


@pytest.mark.parametrize("case", ["meta-list", "meta-string", "complex", "strings", "empty"])
def test_broken_attention_files_are_one_error(tmp_path, case):
    good = np.full((2, 2), 0.5, np.float32)
    meta, entries = {"model": "m"}, pair_entries(good)
    if case == "meta-list":
        meta = np.array(json.dumps([1, 2]))
    elif case == "meta-string":
        meta = np.array(json.dumps("x"))
    elif case == "complex":
        entries = pair_entries(good.astype(np.complex64))
    elif case == "strings":
        entries = pair_entries(np.array([["a", "b"], ["c", "d"]]))
    else:  # a pair with empty sides, as align corpus writes it
        entries = pair_entries(np.zeros((0, 0), np.float32), (), ())
    f = _npz(tmp_path / "a.npz", meta, entries)
    r = invoke("plot", "sentence", "--attention", f, "--index", "0", "-o", tmp_path / "p.png")
    one_error(r, 1, str(f))
    r = invoke("report", "--attention", f, "--gold", write(tmp_path / "g", "0-0\n"), "-o", tmp_path / "R")
    one_error(r, 1)


def test_plot_of_a_saved_file_refuses_options_it_cannot_honour(models, tmp_path):
    f = tmp_path / "a.npz"
    r = invoke("align", "corpus", "--model", models / "tf", *TEST_TEXT, "-o", tmp_path / "o",
               "--save-attention", f, "--quiet")
    assert r.exit_code == 0, r.output
    for opt, needle in ((["--layer", "all"], "--layer all"), (["--shift", "1"], "--shift"),
                        (["--layer", "0"], "--layer"), (["--sym", "intersection"], "both directions")):
        r = invoke("plot", "sentence", "--attention", f, "--index", "1", "-o", tmp_path / "p.png", *opt)
        one_error(r, 2, needle)
    assert not (tmp_path / "p.png").exists()


@pytest.mark.parametrize("codec", ["rot13", "hex", "base64", "zlib", "bz2", "uu", "punycode"])
def test_codecs_that_are_not_text_encodings_exit_2(codec, tmp_path):
    r = invoke("align", "statistical", *TEST_TEXT, "--encoding", codec, "-o", tmp_path / "a")
    one_error(r, 2, "not a text encoding")


def test_two_inputs_from_stdin_exit_2(models):
    one_error(invoke("score", "-", "-", input="0-0\n"), 2, "both read stdin")
    one_error(invoke("align", "corpus", "--model", models / "rnn", "--src", "-", "--tgt", "-",
                     input="a b\n"), 2, "both read stdin")


@pytest.mark.parametrize("value", ["inf", "-inf", "nan"])
def test_infinite_counts_exit_2(value, tmp_path, pairs):
    r = invoke("align", "statistical", *TEST_TEXT, "--identical", value, "-o", tmp_path / "a")
    one_error(r, 2, "--identical")
    r = invoke("train", *TEST_TEXT, "--model", tmp_path / "m", "--guide", "auto", "--guide-identical", value)
    one_error(r, 2, "--guide-identical")
    assert not (tmp_path / "m").exists()


def test_terminal_escape_codes_in_user_text_are_shown_not_obeyed(models):
    r = invoke("align", "sentence", "--model", models / "rnn", "--src", "the \x1b[2Jred car", "--tgt",
               "la voiture")
    assert r.exit_code == 0, r.output
    assert "\x1b" not in r.stdout and "\\x1b[2Jred" in r.stdout


@pytest.mark.parametrize("content", [b"0-0 1-1\x00 2-2\n", b"0" * ((64 << 20) + 10)])
def test_a_file_that_is_not_line_based_text_is_refused_when_read(tmp_path, content):
    pred = write(tmp_path / "p.align", content)
    r = invoke("score", SAMPLE / "test.gold.naacl", pred)
    one_error(r, 1, "not a line-based text file")


def test_a_naacl_gold_counts_its_own_sentences(tmp_path):
    """200 gold sentences, a text and a prediction of 400: the gold's 200 are scored, as a Pharaoh gold's
    lines are, whatever the text's length."""
    twice = {n: write(tmp_path / n, (SAMPLE / f).read_text() * 2) for n, f in
             (("t.en", "test.en"), ("t.fr", "test.fr"), ("p.align", "test.diagonal.align"))}
    alone = json.loads(invoke("score", SAMPLE / "test.gold.naacl", SAMPLE / "test.diagonal.align",
                              "--json").stdout)["aer"]
    for gold in ("test.gold.naacl", "test.gold.pharaoh"):
        r = invoke("score", SAMPLE / gold, twice["p.align"], "--src", twice["t.en"], "--tgt", twice["t.fr"],
                   "--json")
        assert r.exit_code == 0, r.output
        assert json.loads(r.stdout)["aer"] == pytest.approx(alone), gold
        assert "scoring the first 200" in r.stderr


@pytest.mark.parametrize("gold", ["pharaoh", "naacl"])
def test_a_dev_text_longer_than_its_gold_is_scored_on_the_gold_sentences(texts, tmp_path, gold):
    src, tgt = texts
    dev = {side: write(tmp_path / f"dev3.{side}", (SAMPLE / f"test.{side}").read_text() * 3)
           for side in ("en", "fr")}
    r = invoke("train", "--src", src, "--tgt", tgt, "--model", tmp_path / "m", "--epochs", "1", "--hidden",
               "16", "--emb-dim", "8", "--dev-src", dev["en"], "--dev-tgt", dev["fr"], "--dev-gold",
               SAMPLE / f"test.gold.{gold}", "--quiet")
    assert r.exit_code == 0, r.output
    assert "scoring the first 200" in r.stderr
    log = (tmp_path / "m" / "log.csv").read_text()
    assert "dev_aer" in log




def test_file_names_that_are_not_utf8_are_written_as_escapes(tmp_path):

    name = os.fsdecode(b"bad\xffname.align")
    pred = tmp_path / name
    shutil.copy(SAMPLE / "test.diagonal.align", pred)
    per = tmp_path / os.fsdecode(b"per\xff.csv")
    r = invoke("score", SAMPLE / "test.gold.naacl", pred, "--per-sentence", per)
    assert r.exit_code == 0, r.output
    assert "bad\\xffname.align" in per.read_text()
    out = tmp_path / os.fsdecode(b"rep\xff")
    r = invoke("report", "--pred", pred, "--gold", SAMPLE / "test.gold.naacl", *TEST_TEXT, "-o", out)
    assert r.exit_code == 0, r.output
    assert "bad\\xffname.align" in (out / "index.html").read_text()
    r = invoke("plot", "sentence", "--pred", pred, "--gold", SAMPLE / "test.gold.naacl", *TEST_TEXT,
               "--index", "3", "-o", tmp_path / "p.png")
    assert r.exit_code == 0, r.output
    r = invoke("score", SAMPLE / "test.gold.naacl", tmp_path / os.fsdecode(b"missing\xff.align"))
    one_error(r, 1, "missing\\xff.align: prediction file does not exist")  # in an error line too


@pytest.mark.parametrize("args", [[], ["--json"]])
def test_a_closed_stdout_is_one_error_line(args):
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "attnalign", "score", str(SAMPLE / "test.gold.naacl"),
                        str(SAMPLE / "test.diagonal.align"), *args], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True, timeout=120,
                       preexec_fn=lambda: __import__("os").close(1))
    assert r.returncode == 1 and "error: stdout is closed" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("env, needle", [({"WORLD_SIZE": "2"}, "WORLD_SIZE=2 asks for several processes"),
                                         ({"LOCAL_WORLD_SIZE": "abc"}, "LOCAL_WORLD_SIZE='abc'")])
def test_a_broken_launcher_environment_is_one_error_naming_the_variable(monkeypatch, tmp_path, env, needle):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    one_error(invoke("align", "statistical", *TEST_TEXT, "-o", tmp_path / "x.align"), 2, needle)


def test_minor_values_are_refused_or_written(tmp_path):
    r = invoke("train", "--src", SAMPLE / "dev.en", "--tgt", SAMPLE / "dev.fr", "--model", tmp_path / "m",
               "--batch-tokens", "99999999999999999999")
    one_error(r, 2, "--batch-tokens")
    long = tmp_path / ("a" * 240 + ".align")
    r = invoke("align", "statistical", *TEST_TEXT, "-o", long)
    assert r.exit_code == 0 and long.is_file()
    one_error(invoke("score", write(tmp_path / "g", "\u0663-\u0664\n"), write(tmp_path / "p", "0-0\n")), 1,
              "cannot read")


def test_brackets_in_sentences_and_paths_are_text(models, tmp_path):
    r = invoke("align", "sentence", "--model", models / "rnn", "--src", "the [laughter] car [/x] .",
               "--tgt", "la [/x] voiture [bold] .")
    assert r.exit_code == 0, r.output
    assert "[/x]" in r.stdout and "[bold]" in r.stdout  # every target word has a link here
    d = tmp_path / "d[/x]"
    d.mkdir(parents=True)
    src, tgt = write(d / "a.en", "the house .\n"), write(d / "a.fr", "\n")
    r = invoke("align", "corpus", "--model", models / "rnn", "--src", src, "--tgt", tgt, "-o", d / "o",
               "--quiet")
    assert r.exit_code == 0 and "d[/x]" in r.stderr  # the empty-side warning names the path as written


def test_an_error_message_keeps_its_brackets(tmp_path):
    gold = write(tmp_path / "g", "1 1 1 S 0.5\n1 1 2 Q\n")
    r = invoke("score", gold, gold)
    assert r.exit_code == 1 and "[confidence]" in r.stderr


@pytest.mark.parametrize("opt", [["--threads", "-2"], ["--hidden", "0"], ["--layers", "0"], ["--lr", "-1"],
                                 ["--dropout", "2"], ["--label-smoothing", "2"], ["--batch-tokens", "0"],
                                 ["--save-every", "0"], ["--threads", "0"], ["--guide-weight", "-1"]])
def test_train_options_out_of_range_exit_2(texts, tmp_path, opt):
    src, tgt = texts
    r = invoke("train", "--src", src, "--tgt", tgt, "--model", tmp_path / "m", "--quiet", *opt)
    assert r.exit_code == 2 and r.stderr.startswith(f"error: {opt[0]} must be") and r.exception is not None
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize(("opt", "code"), [(["--threads", "-3"], 2), (["--encoding", "foo"], 2),
                                           (["--threshold", "2"], 2), (["--threshold", "nan"], 2),
                                           (["--threshold", "-1"], 2), (["--batch-tokens", "0"], 2),
                                           (["--max-length", "0"], 2), (["--decoder", "foo"], 2),
                                           (["--threshold", "abc"], 2), (["--src", "/nonexistent"], 1)])
def test_align_bad_options_and_inputs(models, tmp_path, opt, code):
    src, tgt = write(tmp_path / "a.en", "the house .\n"), write(tmp_path / "a.fr", "la maison .\n")
    args = {"--src": src, "--tgt": tgt, **dict([opt])}
    r = invoke("align", "corpus", "--model", models / "rnn", "--quiet",
               *[x for kv in args.items() for x in kv])
    assert r.exit_code == code and "Traceback" not in r.output
    assert r.stderr.startswith("error:") or "Invalid value" in r.stderr


def test_an_attention_file_with_object_arrays_is_an_error(tmp_path):
    from attnalign.data.attnfile import read_attention

    f = tmp_path / "a.npz"
    np.savez(f, meta=np.array(json.dumps({})), att_0=np.array([object()], dtype=object),
             eos_0=np.zeros(1), src_0=np.array(["a"]), tgt_0=np.array(["b"]))
    with pytest.raises(AttnAlignError, match="cannot be read"):
        read_attention(f, 0)


def test_option_errors_are_a_distinct_class():
    with pytest.raises(OptionError):
        TrainOptions.of(epochs=0).check()
    assert issubclass(OptionError, AttnAlignError)


def test_bom_is_stripped_everywhere(tmp_path):
    src = write(tmp_path / "a.en", "\ufeffthe house\n".encode())
    tgt = write(tmp_path / "a.fr", "la maison\n")
    assert read_corpus(src, tgt) == [(["the", "house"], ["la", "maison"])]
    pred = write(tmp_path / "p", "\ufeff0-0 1-1\n".encode())
    r = invoke("score", pred, pred)
    assert r.exit_code == 0, r.output


def test_utf16_corpus(tmp_path):
    src = write(tmp_path / "a.en", "the house\nà\n".encode("utf-16"))
    tgt = write(tmp_path / "a.fr", "la maison\nb\n".encode("utf-16"))
    assert read_corpus(src, tgt, encoding="utf-16") == [(["the", "house"], ["la", "maison"]), (["à"], ["b"])]


def test_stdin_as_a_corpus(tmp_path):
    r = invoke("align", "statistical", "--corpus", "-", input="the house ||| la maison\na ||| b\n")
    assert r.exit_code == 0, r.output
    assert len(r.stdout.splitlines()) == 2


runner = CliRunner()


def attention_file(path, matrix=None, extra: dict | None = None):
    with open(path, "wb") as f:
        w = AttentionWriter(f, {"model": "m", "sym": "none", "layer": None, "head": "mean", "shift": 0})
        m = np.array([[0.9, 0.1], [0.2, 0.8]], dtype=np.float32) if matrix is None else matrix
        w.add(0, ["a", "b"], ["x", "y"], m, np.array([0.0, 0.0], dtype=np.float32))
        for name, arr in (extra or {}).items():
            w._put(name, arr)
        w.close()
    return path




def plot(path, *args):
    return runner.invoke(app, ["plot", "sentence", "--attention", str(path), "--index", "0", *args])


def test_a_sound_file_draws(tmp_path):
    r = plot(attention_file(tmp_path / "a.npz"), "--terminal")
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize("value", [np.nan, np.inf, -0.5, 7.0])
def test_weights_outside_zero_one(tmp_path, value):
    m = np.array([[value, 0.1], [0.2, 0.8]], dtype=np.float32)
    one_error(plot(attention_file(tmp_path / "a.npz", m), "--terminal"), (1, 2), "outside 0-1")


def test_an_entry_that_names_no_pair(tmp_path):
    path = attention_file(tmp_path / "a.npz", extra={"att_x": np.zeros((1, 1), dtype=np.float32)})
    r = runner.invoke(app, ["report", "--attention", str(path), "--gold", str(_gold(tmp_path)), "-o",
                            str(tmp_path / "rep")])
    one_error(r, (1, 2), "names no pair")


def _gold(tmp_path):
    (tmp_path / "g.align").write_text("0-0 1-1\n")
    return tmp_path / "g.align"


@pytest.mark.parametrize("shape", [(1 << 16, 1 << 16), (1 << 20, 1 << 20)])  # 16 GiB and 4 TiB claimed
def test_a_header_that_claims_more_than_the_file_holds(tmp_path, shape):
    one_error(plot(bomb_npz(tmp_path / "a.npz", "att_0", shape), "--terminal"), (1, 2), "the file is damaged")


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


def test_threads_beyond_a_few_per_core_are_refused_before_any_work(texts, tmp_path):
    """Thousands of threads crash the libraries that start them: --threads is at most
    THREADS_PER_CORE per core of the machine, and the help says so."""
    from attnalign.nmt.options import max_threads

    src, tgt = texts
    too_many = str(max_threads() + 1)
    r = invoke("train", "--src", src, "--tgt", tgt, "--model", tmp_path / "m", "--threads", too_many)
    one_error(r, 2, f"--threads must be >= 1 and <= {max_threads()}")
    r = invoke("align", "statistical", "--src", src, "--tgt", tgt, "--threads", too_many)
    one_error(r, 2, "--threads")
    assert not (tmp_path / "m").exists() and not (tmp_path / ".m.new").exists()


def test_a_typed_sentence_that_is_not_utf8_is_one_error(models, tmp_path):
    for flag in ("--src", "--tgt"):
        pair = {"--src": "the car", "--tgt": "la voiture", flag: "the car\udcff"}
        for out in (["-o", tmp_path / "p.png"], ["--html", tmp_path / "p.html"]):
            one_error(invoke("plot", "sentence", "--model", models / "rnn", "--src", pair["--src"], "--tgt",
                             pair["--tgt"], *out), 2, f"the {flag} sentence is not UTF-8 text", "\\xff")


def test_an_attention_file_that_is_no_zip_is_said_in_our_words_and_stdin_is_read(tmp_path):
    text = write(tmp_path / "a.npz", "0-0 1-1\n")
    r = plot(text, "--terminal")
    one_error(r, 1, "not an attnalign attention file")
    assert "pickle" not in r.stderr
    good = attention_file(tmp_path / "good.npz")
    r = runner.invoke(app, ["plot", "sentence", "--attention", "-", "--index", "0", "--terminal"],
                      input=good.read_bytes())
    assert r.exit_code == 0 and "x" in r.stdout, r.output


def test_a_stream_beside_a_file_is_read_one_line_past_the_files_length(models, tmp_path):
    """The file sets the pair count: the stream beside it is read one line further, no more, and a
    longer stream is one error line saying so."""
    tgt = write(tmp_path / "t.fr", "la maison\n" * 3)
    r = invoke("align", "corpus", "--model", models / "rnn", "--src", "-", "--tgt", tgt, "-o", tmp_path / "o",
               input="the house\n" * 100)
    one_error(r, 1, "different line counts", "- has more than 3 lines", "has 3 lines")
    r = invoke("align", "corpus", "--model", models / "rnn", "--src", "-", "--tgt", tgt, "-o", tmp_path / "o",
               input="the house\n" * 3)
    assert r.exit_code == 0 and len((tmp_path / "o").read_text().splitlines()) == 3, r.output
