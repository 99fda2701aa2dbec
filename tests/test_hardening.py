"""Hostile input, class by class: outputs never land on what the run reads, the report is written whole
or not at all, and every bad input gets one `error:` line with its exit code (2: the command line; 1: an
input), never a traceback."""

from __future__ import annotations

import json
import shutil
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import SAMPLE, invoke, one_error, tiny, write

from attnalign.data.corpus import read_corpus
from attnalign.report import build as report_mod
from attnalign.training import train


@pytest.fixture(scope="module")
def pairs():
    return read_corpus(SAMPLE / "train.en", SAMPLE / "train.fr")[:120]


@pytest.fixture
def model_copy(models, tmp_path):
    """A copy of the two-direction RNN model, so a test may try to damage it."""
    shutil.copytree(models / "rnn", tmp_path / "M")
    return tmp_path / "M"


def snapshot(folder):
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


TEST = ["--src", SAMPLE / "test.en", "--tgt", SAMPLE / "test.fr"]


# --- 1, 2: an output never lands on a file the run reads -----------------------------------------

@pytest.mark.parametrize("flags", [["-o", "forward.pt"], ["-o", "config.json"], ["-o", "log.csv"],
                                   ["-o", "x.align", "--save-attention", "reverse.pt"]])
def test_align_corpus_refuses_to_write_over_the_models_files(model_copy, flags):
    before = snapshot(model_copy)
    args = [model_copy / f if f.endswith((".pt", ".json", ".csv")) else f for f in flags]
    r = invoke("align", "corpus", "--model", model_copy, *TEST, *args)
    one_error(r, 2, "--model file", "would be lost")
    assert snapshot(model_copy) == before
    for _ in range(2):  # a new file in the model directory is fine, and so is writing it again
        ok = invoke("align", "corpus", "--model", model_copy, *TEST, "-o", model_copy / "test.align",
                    "--quiet")
        assert ok.exit_code == 0, ok.output


def test_plot_refuses_to_write_over_the_models_files(model_copy):
    before = snapshot(model_copy)
    r = invoke("plot", "sentence", "--model", model_copy, "--src", "a b", "--tgt", "c d", "-o",
               model_copy / "forward.pt")
    assert r.exit_code == 2 and snapshot(model_copy) == before


def test_the_training_corpus_the_teacher_reads_is_an_input(tmp_path):
    pairs = read_corpus(SAMPLE / "train.en", SAMPLE / "train.fr")[:200]
    src = write(tmp_path / "t.en", "".join(" ".join(s) + "\n" for s, _ in pairs))
    tgt = write(tmp_path / "t.fr", "".join(" ".join(t) + "\n" for _, t in pairs))
    r = invoke("train", "--src", src, "--tgt", tgt, "--model", tmp_path / "m", "--hidden", "16",
               "--emb-dim", "8", "--epochs", "1", "--quiet")
    assert r.exit_code == 0, r.output
    before = src.read_bytes()
    r = invoke("align", "corpus", "--model", tmp_path / "m", *TEST, "--teacher", "on", "--teacher-corpus",
               "training", "-o", src, "--quiet")
    one_error(r, 2, "training corpus")
    assert src.read_bytes() == before


# --- 3, 16: train --overwrite keeps what it reads, and a symlinked model stays a link -----------------

def test_overwrite_keeps_a_guide_inside_the_model_dir_and_refuses_one_of_its_own(tmp_path, pairs):
    train(pairs, tmp_path / "D", tiny(epochs=1))
    src = write(tmp_path / "t.en", "".join(" ".join(s) + "\n" for s, _ in pairs))
    tgt = write(tmp_path / "t.fr", "".join(" ".join(t) + "\n" for _, t in pairs))
    base = ["train", "--src", src, "--tgt", tgt, "--model", tmp_path / "D", "--overwrite", "--quiet",
            "--hidden", "16", "--emb-dim", "8", "--epochs", "1"]
    ours = write(tmp_path / "D" / "self_guide.align", "0-0\n" * len(pairs))  # a file train writes there
    one_error(invoke(*base, "--guide", ours), 2, "a file of the model it reads")
    assert ours.exists()
    guide = write(tmp_path / "D" / "guide.align", "0-0\n" * len(pairs))  # the user's: it stays
    r = invoke(*base, "--guide", guide)
    assert r.exit_code == 0, r.output
    assert guide.read_text() == "0-0\n" * len(pairs)


def test_overwrite_through_a_symlink_replaces_the_folder_and_keeps_the_link(tmp_path, pairs):
    src = write(tmp_path / "t.en", "".join(" ".join(s) + "\n" for s, _ in pairs))
    tgt = write(tmp_path / "t.fr", "".join(" ".join(t) + "\n" for _, t in pairs))
    args = ["train", "--src", src, "--tgt", tgt, "--hidden", "16", "--emb-dim", "8", "--epochs", "1",
            "--quiet"]
    assert invoke(*args, "--model", tmp_path / "real").exit_code == 0
    (tmp_path / "link").symlink_to(tmp_path / "real")
    old = (tmp_path / "real" / "forward.pt").read_bytes()
    r = invoke(*args, "--model", tmp_path / "link", "--overwrite", "--seed", "7")
    assert r.exit_code == 0, r.output
    assert (tmp_path / "link").is_symlink() and (tmp_path / "real" / "forward.pt").read_bytes() != old
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "real", "t.en", "t.fr"]


# --- 4, 5, 15: the report folder is written whole, never over its inputs --------------------------

REPORT = ["--gold", SAMPLE / "test.gold.naacl", "--gallery", "1"]


def test_a_failing_report_keeps_the_old_folder_whole(models, tmp_path, monkeypatch):
    out = tmp_path / "R"
    r = invoke("report", "--model", models / "rnn", *TEST, *REPORT, "-o", out)
    assert r.exit_code == 0, r.output
    before = snapshot(out)

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(report_mod, "write_page", interrupted)  # after the tables and plots
    r = invoke("report", "--model", models / "rnn", *TEST, *REPORT, "--gallery", "2", "-o", out)
    assert r.exit_code == 130 and "no output was written" in r.stderr
    assert snapshot(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["R"]  # no staging folder left
    monkeypatch.undo()
    r = invoke("report", "--model", models / "rnn", *TEST, *REPORT, "--gallery", "2", "-o", out)
    assert r.exit_code == 0 and snapshot(out) != before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["R"]


def test_report_refuses_inputs_inside_its_folder_and_folders_it_did_not_write(models, tmp_path):
    out = tmp_path / "R"
    assert invoke("report", "--model", models / "rnn", *TEST, *REPORT, "-o", out).exit_code == 0
    before = snapshot(out)
    gold = shutil.copy(SAMPLE / "test.gold.naacl", out / "gold.naacl")
    before = snapshot(out)
    r = invoke("report", "--model", models / "rnn", *TEST, "--gold", gold, "-o", out)
    one_error(r, 2, "--gold lies inside the report folder")
    assert snapshot(out) == before
    mine = tmp_path / "mine"
    mine.mkdir()
    write(mine / "notes.txt", "my notes\n")
    one_error(invoke("report", "--model", models / "rnn", *TEST, *REPORT, "-o", mine), 2, "did not write")
    assert (mine / "notes.txt").read_text() == "my notes\n"
    one_error(invoke("report", "--model", models / "rnn", *TEST, *REPORT, "-o", "-"), 2, "stdout")
    one_error(invoke("report", "--model", models / "rnn", *TEST, "--gold", SAMPLE / "test.gold.naacl",
                     "--gallery", "-1", "-o", tmp_path / "R2"), 2, "--gallery")
    assert not (tmp_path / "R2").exists()


# --- 6, 8: a gold that does not fit its text -------------------------------------------------------

def test_a_gold_outside_its_sentences_is_rejected_by_every_command(models, tmp_path):
    gold = write(tmp_path / "g.pharaoh", "0-0 40-1\n")  # sentence 1 has far fewer than 41 words
    for args in (["report", "--model", models / "rnn", *TEST, "--gold", gold, "-o", tmp_path / "R"],
                 ["align", "corpus", "--model", models / "rnn", *TEST, "--gold", gold, "-o", tmp_path / "a"],
                 ["align", "statistical", *TEST, "--gold", gold, "-o", tmp_path / "s"],
                 ["score", gold, gold, *TEST]):
        one_error(invoke(*args), 1, "out of range", str(gold))
    assert not any(p.exists() for p in (tmp_path / "R", tmp_path / "a", tmp_path / "s"))


def test_a_huge_naacl_sentence_id_is_an_error_not_a_memory_error(tmp_path):
    gold = write(tmp_path / "g.naacl", "100000000 1 1 S\n")
    one_error(invoke("score", gold, gold), 1, "sentence 100000000", str(gold))


# --- 7, 13: saved attention files ------------------------------------------------------------------

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
    r = invoke("align", "corpus", "--model", models / "tf", *TEST, "-o", tmp_path / "o",
               "--save-attention", f, "--quiet")
    assert r.exit_code == 0, r.output
    for opt, needle in ((["--layer", "all"], "--layer all"), (["--shift", "1"], "--shift"),
                        (["--layer", "0"], "--layer"), (["--sym", "intersection"], "both directions")):
        r = invoke("plot", "sentence", "--attention", f, "--index", "1", "-o", tmp_path / "p.png", *opt)
        one_error(r, 2, needle)
    assert not (tmp_path / "p.png").exists()


# --- 9, 17, 18: options ----------------------------------------------------------------------------

@pytest.mark.parametrize("codec", ["rot13", "hex", "base64", "zlib", "bz2", "uu", "punycode"])
def test_codecs_that_are_not_text_encodings_exit_2(codec, tmp_path):
    r = invoke("align", "statistical", *TEST, "--encoding", codec, "-o", tmp_path / "a")
    one_error(r, 2, "not a text encoding")


def test_two_inputs_from_stdin_exit_2(models):
    one_error(invoke("score", "-", "-", input="0-0\n"), 2, "both read stdin")
    one_error(invoke("align", "corpus", "--model", models / "rnn", "--src", "-", "--tgt", "-",
                     input="a b\n"), 2, "both read stdin")


@pytest.mark.parametrize("value", ["inf", "-inf", "nan"])
def test_infinite_counts_exit_2(value, tmp_path, pairs):
    r = invoke("align", "statistical", *TEST, "--identical", value, "-o", tmp_path / "a")
    one_error(r, 2, "--identical")
    r = invoke("train", *TEST, "--model", tmp_path / "m", "--guide", "auto", "--guide-identical", value)
    one_error(r, 2, "--guide-identical")
    assert not (tmp_path / "m").exists()


# --- 11, 12, 19: broken model files and full disks name their file ----------------------------------

@pytest.mark.parametrize("keep", [0.0, 0.01, 0.5, 0.99])
def test_a_truncated_checkpoint_names_its_file(model_copy, keep):
    f = model_copy / "forward.pt"
    data = f.read_bytes()
    f.write_bytes(data[: int(keep * len(data))])
    one_error(invoke("align", "sentence", "--model", model_copy, "--src", "a", "--tgt", "b"), 1, str(f))


def test_a_format_version_of_another_type_is_said_as_it_is(model_copy):
    cfg = json.loads((model_copy / "config.json").read_text())
    (model_copy / "config.json").write_text(json.dumps({**cfg, "format_version": "1"}))
    one_error(invoke("align", "sentence", "--model", model_copy, "--src", "a", "--tgt", "b"), 1, "'1'")


@pytest.mark.parametrize("edit", [{"model_config": None}, {"train_options": "x"},
                                  {"data": {"files": {"src": 5}}}, {"finished": "forward"}])
def test_config_json_of_the_wrong_types_is_one_error(model_copy, tmp_path, edit):
    cfg = json.loads((model_copy / "config.json").read_text())
    (model_copy / "config.json").write_text(json.dumps({**cfg, **edit}))
    for args in (["align", "corpus", "--model", model_copy, *TEST, "-o", tmp_path / "a"],
                 ["plot", "sentence", "--model", model_copy, "--src", "a", "--tgt", "b", "-o",
                  tmp_path / "p.png"],
                 ["train", "--model", model_copy, "--resume", "--quiet"]):
        one_error(invoke(*args), 1, "config.json")


def test_a_full_disk_while_saving_names_the_checkpoint_and_keeps_the_old_model(tmp_path, pairs, monkeypatch):
    src = write(tmp_path / "t.en", "".join(" ".join(s) + "\n" for s, _ in pairs))
    tgt = write(tmp_path / "t.fr", "".join(" ".join(t) + "\n" for _, t in pairs))
    args = ["train", "--src", src, "--tgt", tgt, "--model", tmp_path / "m", "--hidden", "16",
            "--emb-dim", "8", "--epochs", "1", "--quiet"]
    assert invoke(*args).exit_code == 0
    before = snapshot(tmp_path / "m")

    def full(*a, **k):
        raise RuntimeError("[enforce fail at inline_container.cc:603] . unexpected pos 4416 vs 4352")

    monkeypatch.setattr(torch, "save", full)
    r = invoke(*args, "--overwrite")
    one_error(r, 1, "cannot write the file", ".pt", "disk")
    assert snapshot(tmp_path / "m") == before
    assert not [p for p in (tmp_path / "m").iterdir() if p.name.endswith(".tmp")]


def test_terminal_escape_codes_in_user_text_are_shown_not_obeyed(models):
    r = invoke("align", "sentence", "--model", models / "rnn", "--src", "the \x1b[2Jred car", "--tgt",
               "la voiture")
    assert r.exit_code == 0, r.output
    assert "\x1b" not in r.stdout and "\\x1b[2Jred" in r.stdout


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP"])
def test_a_terminated_run_cleans_up_and_keeps_the_old_output(tmp_path, sig):
    """SIGTERM and SIGHUP end a run as Ctrl-C does: exit 130, the old output kept, no temporary file."""
    import os
    import signal
    import subprocess
    import sys
    import threading
    import time

    pairs = read_corpus(SAMPLE / "train.en", SAMPLE / "train.fr") * 20  # time to be interrupted
    src = write(tmp_path / "t.en", "".join(" ".join(s) + "\n" for s, _ in pairs))
    tgt = write(tmp_path / "t.fr", "".join(" ".join(t) + "\n" for _, t in pairs))
    out = write(tmp_path / "old.align", "0-0\n")
    # FORCE_COLOR: the progress display draws on the pipe too, so its first line says the passes began
    p = subprocess.Popen([sys.executable, "-m", "attnalign", "align", "statistical", "--src", str(src),
                          "--tgt", str(tgt), "-o", str(out)], stderr=subprocess.PIPE, text=True,
                         env={**os.environ, "PYTHONUNBUFFERED": "1", "FORCE_COLOR": "1"})
    seen: list[str] = []
    reader = threading.Thread(target=lambda: seen.extend(iter(lambda: p.stderr.read(1), "")), daemon=True)
    reader.start()
    deadline = time.time() + 120
    while "pairs/s" not in "".join(seen) and p.poll() is None and time.time() < deadline:
        time.sleep(0.05)  # waiting for the readiness line: the aligner's passes have begun
    p.send_signal(getattr(signal, sig))
    p.wait(timeout=60)
    reader.join(timeout=10)
    err = "".join(seen)
    assert p.returncode == 130, err[-2000:]
    assert f"stopped by {sig}" in err and "Traceback" not in err
    assert out.read_text() == "0-0\n" and not list(tmp_path.glob("*.tmp")) and not list(tmp_path.glob(".*"))


def _catches_sigterm(pid: int) -> bool:
    """Whether process ``pid`` has a handler of its own for SIGTERM (Linux /proc: SigCgt's bit 15)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text().splitlines()
        mask = next(x for x in status if x.startswith("SigCgt:"))
    except (OSError, StopIteration):
        return False
    return bool(int(mask.split()[1], 16) & (1 << 14))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_sigterm_while_the_command_line_loads_is_an_interruption():
    """The handler is in place before the command line's imports (numpy, numba, Typer: about a second):
    a SIGTERM sent as soon as the process catches it is exit 130 with one line, not 143 or a traceback."""
    import signal
    import subprocess

    for _ in range(3):  # a run that ended before the signal reached it (a descheduled test) goes again
        p = subprocess.Popen([sys.executable, "-m", "attnalign", "score", str(SAMPLE / "test.gold.naacl"),
                              str(SAMPLE / "test.diagonal.align")], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        while not _catches_sigterm(p.pid) and p.poll() is None:  # the event: its handler is installed
            pass
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=300)
        if p.returncode != 0:
            break
    assert p.returncode == 130, (p.returncode, err[-2000:])
    assert err.strip() == "interrupted: stopped by SIGTERM: no output was written", err[-2000:]


def test_a_signal_inside_a_compiled_loop_is_an_interruption():
    """numba reports a signal that lands in its code as a SystemError (one per compiled frame) caused
    by the handler's KeyboardInterrupt: that is Ctrl-C, exit 130, not a traceback."""
    from attnalign.cli.common import interruption

    stop = KeyboardInterrupt("stopped by SIGHUP")
    inner = SystemError("_numba_unpickle returned a result with an exception set")
    inner.__cause__ = stop
    outer = SystemError("CPUDispatcher(hmm_posteriors) returned a result with an exception set")
    outer.__cause__ = inner
    assert interruption(outer) is stop and interruption(stop) is stop
    assert interruption(SystemError("a real bug")) is None and interruption(ValueError()) is None


# --- round 4: no run without an end, a gold counts its own sentences ------------------------------

@pytest.fixture
def small_texts(tmp_path, pairs):
    src = write(tmp_path / "t.en", "".join(" ".join(s) + "\n" for s, _ in pairs))
    tgt = write(tmp_path / "t.fr", "".join(" ".join(t) + "\n" for _, t in pairs))
    return src, tgt


def test_a_corpus_left_empty_by_max_length_is_one_error_not_an_endless_run(small_texts, tmp_path):
    src, tgt = small_texts
    r = invoke("train", "--src", src, "--tgt", tgt, "--model", tmp_path / "x", "--max-length", "1",
               "--epochs", "1", "--hidden", "16", "--emb-dim", "8")
    one_error(r, 1, "longer than --max-length 1", "nothing is left to train on")
    assert not (tmp_path / "x").exists()


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
def test_a_dev_text_longer_than_its_gold_is_scored_on_the_gold_sentences(small_texts, tmp_path, gold):
    src, tgt = small_texts
    dev = {side: write(tmp_path / f"dev3.{side}", (SAMPLE / f"test.{side}").read_text() * 3)
           for side in ("en", "fr")}
    r = invoke("train", "--src", src, "--tgt", tgt, "--model", tmp_path / "m", "--epochs", "1", "--hidden",
               "16", "--emb-dim", "8", "--dev-src", dev["en"], "--dev-tgt", dev["fr"], "--dev-gold",
               SAMPLE / f"test.gold.{gold}", "--quiet")
    assert r.exit_code == 0, r.output
    assert "scoring the first 200" in r.stderr
    log = (tmp_path / "m" / "log.csv").read_text()
    assert "dev_aer" in log


# --- round 4: resume takes only its own run --------------------------------------------------------

def _interrupted(folder, src, tgt, seed="1", other=()):
    """A one-direction run stopped after its last checkpoint: config.json and forward.last.pt say it
    has not finished."""
    from attnalign.nmt.checkpoint import load_checkpoint, save_checkpoint

    r = invoke("train", "--src", src, "--tgt", tgt, "--model", folder, "--epochs", "2", "--hidden", "16",
               "--emb-dim", "8", "--save-every", "2", "--seed", seed, "--quiet", *other)
    assert r.exit_code == 0, r.output
    cfg = json.loads((folder / "config.json").read_text())
    cfg["finished"] = []
    (folder / "config.json").write_text(json.dumps(cfg))
    last = load_checkpoint(folder / "forward.last.pt")
    save_checkpoint(folder / "forward.last.pt", {**last, "finished": False, "step": 2})
    return folder


@pytest.mark.parametrize("foreign", ["other corpus", "other seed", "best checkpoint"])
def test_resume_refuses_a_checkpoint_that_is_not_its_runs(small_texts, tmp_path, foreign):
    src, tgt = small_texts
    m = _interrupted(tmp_path / "m", src, tgt)
    if foreign == "best checkpoint":  # finished weights without an optimizer, put where the run resumes
        shutil.copy(m / "forward.pt", m / "forward.last.pt")
    else:
        other_src, other_tgt = src, tgt
        if foreign == "other corpus":
            other_src = write(tmp_path / "o.en", src.read_text()[::-1].replace("\n", " ", 5) + "\n")
            other_tgt = write(tmp_path / "o.fr", tgt.read_text()[::-1].replace("\n", " ", 5) + "\n")
        o = _interrupted(tmp_path / "o", other_src, other_tgt, seed="2")
        shutil.copy(o / "forward.last.pt", m / "forward.last.pt")
    before = snapshot(m)
    r = invoke("train", "--model", m, "--resume", "--quiet")
    one_error(r, 1, "forward.last.pt is not this run's resumable checkpoint")
    assert snapshot(m) == before


def test_resume_refuses_options_that_differ_from_the_runs(small_texts, tmp_path):
    src, tgt = small_texts
    m = _interrupted(tmp_path / "m", src, tgt)
    before = snapshot(m)
    r = invoke("train", "--model", m, "--resume", "--hidden", "32", "--lr", "0.9")
    one_error(r, 2, "--hidden, --lr differ from the run's")
    # the run's own command again, with --resume: accepted
    r = invoke("train", "--src", src, "--tgt", tgt, "--model", m, "--epochs", "2", "--hidden", "16",
               "--emb-dim", "8", "--save-every", "2", "--seed", "1", "--quiet", "--threads", "1", "--resume")
    assert r.exit_code == 0, r.output
    # libraries of other versions than the run began with
    m = _interrupted(tmp_path / "m2", src, tgt)
    cfg = json.loads((m / "config.json").read_text())
    cfg["libraries"]["torch"] = "1.0.0"
    (m / "config.json").write_text(json.dumps(cfg))
    one_error(invoke("train", "--model", m, "--resume"), 1, "other library versions: torch 1.0.0")
    assert snapshot(tmp_path / "m") != before  # the accepted resume trained on


def test_a_direction_from_another_run_is_refused(small_texts, tmp_path):
    src, tgt = small_texts
    args = ["--src", src, "--tgt", tgt, "--epochs", "1", "--hidden", "16", "--emb-dim", "8", "--quiet",
            "--direction", "both", "--parallel-directions", "off"]
    for name, seed in (("a", "1"), ("b", "2")):
        assert invoke("train", *args, "--model", tmp_path / name, "--seed", seed).exit_code == 0
    shutil.copy(tmp_path / "b" / "reverse.pt", tmp_path / "a" / "reverse.pt")
    r = invoke("align", "corpus", "--model", tmp_path / "a", "--src", src, "--tgt", tgt)
    one_error(r, 1, "reverse.pt", "another training run")


# --- round 4: data lost ----------------------------------------------------------------------------

def test_commands_without_model_never_write_over_a_model_directorys_files(model_copy, tmp_path):
    before = snapshot(model_copy)
    r = invoke("align", "statistical", *TEST, "-o", model_copy / "forward.pt")
    one_error(r, 2, "would replace forward.pt of the attnalign model directory")
    r = invoke("score", SAMPLE / "test.gold.naacl", SAMPLE / "test.diagonal.align", "--per-sentence",
               model_copy / "log.csv")
    one_error(r, 2, "would replace log.csv")
    assert snapshot(model_copy) == before
    # a file of the user's own inside a model directory is an output like any other
    r = invoke("score", SAMPLE / "test.gold.naacl", SAMPLE / "test.diagonal.align", "--per-sentence",
               model_copy / "mine.csv")
    assert r.exit_code == 0 and (model_copy / "mine.csv").is_file()


def test_overwrite_keeps_a_users_folder_named_after_a_direction(small_texts, tmp_path):
    src, tgt = small_texts
    m = tmp_path / "m"
    args = ["train", "--src", src, "--tgt", tgt, "--model", m, "--epochs", "1", "--hidden", "16", "--emb-dim",
            "8", "--quiet"]
    assert invoke(*args).exit_code == 0
    write((m / "forward").mkdir() or m / "forward" / "notes.txt", "mine\n")
    assert invoke(*args, "--overwrite").exit_code == 0
    assert (m / "forward" / "notes.txt").read_text() == "mine\n" and (m / "forward.pt").is_file()


def test_a_model_directory_being_trained_is_locked(small_texts, tmp_path):
    import os

    from attnalign.training.model_dir import locked

    src, tgt = small_texts
    m = tmp_path / "m"
    with locked(m):  # as a run in progress holds it
        r = invoke("train", "--src", src, "--tgt", tgt, "--model", m, "--epochs", "1", "--hidden", "16",
                   "--emb-dim", "8", "--overwrite")
    one_error(r, 1, f"being trained by process {os.getpid()}")
    assert not m.exists()
    r = invoke("train", "--src", src, "--tgt", tgt, "--model", m, "--epochs", "1", "--hidden", "16",
               "--emb-dim", "8", "--quiet")
    assert r.exit_code == 0, r.output  # released when the holder ends


def _report_dir(tmp_path, name="R", files=("index.html", "a.png")):
    from attnalign.data.fileio import atomic_dir

    with atomic_dir(tmp_path / name, "report folder", marker=("index.html", "attnalign report")) as stage:
        for f in files:
            write(stage / f, "attnalign report\n" if f == "index.html" else f)
    return tmp_path / name


def test_a_report_written_again_keeps_the_files_the_user_added(tmp_path):
    out = _report_dir(tmp_path)
    write(out / "my_notes.txt", "mine\n")
    _report_dir(tmp_path, files=("index.html", "b.png"))
    names = sorted(p.name for p in out.iterdir())
    assert names == [".attnalign-files", "b.png", "index.html", "my_notes.txt"]
    # a writer killed between its renames left the old report aside: the next one puts it back first
    out.rename(tmp_path / ".R.999999999.x.old")
    _report_dir(tmp_path, files=("index.html", "c.png"))
    assert sorted(p.name for p in out.iterdir()) == [".attnalign-files", "c.png", "index.html",
                                                     "my_notes.txt"]


def test_a_swap_cut_between_its_renames_puts_the_old_report_back(tmp_path, monkeypatch):
    import os

    from attnalign.data import fileio

    out = _report_dir(tmp_path)
    before = snapshot(out)
    renames = []

    def second_fails(a, b):
        renames.append((a, b))
        if len(renames) == 2:
            raise KeyboardInterrupt
        os.rename(a, b)

    monkeypatch.setattr(fileio.os, "rename", second_fails)
    with pytest.raises(KeyboardInterrupt):
        _report_dir(tmp_path, files=("index.html", "b.png"))
    monkeypatch.undo()
    assert snapshot(out) == before and sorted(p.name for p in tmp_path.iterdir()) == ["R"]


# --- round 4: resampling and unpacking within the machine ------------------------------------------

def test_too_few_resamples_are_refused_and_an_interval_holds_its_estimate(tmp_path):
    from attnalign.eval.metrics import Counts
    from attnalign.eval.significance import intervals, paired_test

    r = invoke("score", SAMPLE / "test.gold.naacl", SAMPLE / "test.diagonal.align", "--confidence",
               "--samples", "3")
    one_error(r, 2, "--samples")
    # two sentences, two resamples that both drop the better one: the percentiles alone leave the score out
    per = [Counts(2, 2, 2, 2, 2, 1), Counts(2, 2, 2, 0, 0, 1)]
    weights = np.array([[0, 2], [0, 2]])
    iv = intervals(per, weights)["aer"]
    assert iv.low <= 0.5 <= iv.high  # the corpus AER: 1 - 4/8
    test = paired_test(per, [Counts(2, 2, 2, 2, 2, 1), Counts(2, 2, 2, 2, 2, 1)], weights)
    assert test.interval.low <= test.delta <= test.interval.high


def test_resamples_are_drawn_in_blocks_of_bounded_memory(monkeypatch):
    from attnalign.eval import significance
    from attnalign.eval.metrics import Counts

    b = significance.Bootstrap(300, 7)
    monkeypatch.setattr(significance, "BLOCK_BYTES", 8 * 50 * 40)  # 40 resamples of 50 sentences a block
    blocks = list(b.blocks(50))
    assert len(blocks) == 8 and np.array_equal(np.concatenate(blocks), b.weights(50))  # the same numbers
    assert isinstance(b.resamples(50), significance.Bootstrap)  # too big for one block: drawn in blocks
    per = [Counts(k % 3, 2, 3, k % 2, k % 3, 1) for k in range(50)]
    assert significance.intervals(per, b) == significance.intervals(per, b.weights(50))


def test_an_attention_file_entry_that_inflates_past_any_pair_is_refused_unread(tmp_path):
    path = tmp_path / "bomb.npz"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("meta.npy", _npy(np.array(json.dumps({"model": "m"}))))
        z.writestr("att_0.npy", _npy(np.zeros((9000, 9000), dtype=np.float32)))  # 309 MiB of zeros, deflated
        z.writestr("src_0.npy", _npy(np.array(["a"])))
        z.writestr("tgt_0.npy", _npy(np.array(["b"])))
        z.writestr("eos_0.npy", _npy(np.zeros(9000, dtype=np.float32)))
    assert path.stat().st_size < 2 << 20
    r = invoke("plot", "sentence", "--attention", path, "--index", "0", "-o", tmp_path / "x.png")
    one_error(r, 1, "more than any entry of it holds")


def _npy(a: np.ndarray) -> bytes:
    import io

    f = io.BytesIO()
    np.save(f, a)
    return f.getvalue()


# --- round 4: names, hints, and every exit path one line --------------------------------------------

NAACL_TEXT = ["--src", SAMPLE / "test.en", "--tgt", SAMPLE / "test.fr"]


def test_report_rows_have_names_of_their_own(tmp_path):
    r = invoke("report", "--pred", SAMPLE / "test.diagonal.align", "--pred-name",
               "align corpus default output: student + teacher", "--gold", SAMPLE / "test.gold.naacl",
               *NAACL_TEXT, "-o", tmp_path / "R")
    one_error(r, 2, "is the name of one of the model's rows")
    r = invoke("report", "--pred", "-", "--pred", "-", "--gold", SAMPLE / "test.gold.naacl", *NAACL_TEXT,
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
    r = invoke("report", "--pred", pred, "--gold", gold_file, *NAACL_TEXT, "-o", tmp_path / "R")
    assert r.exit_code == 0, r.output
    assert (tmp_path / "R" / "index.html").is_file()


def test_the_captions_a_report_writes_for_a_naacl_pred_run(tmp_path):
    import html
    import re
    import shlex

    r = invoke("report", "--pred", SAMPLE / "test.gold.naacl", "--pred", SAMPLE / "test.diagonal.align",
               "--gold", SAMPLE / "test.gold.pharaoh", *NAACL_TEXT, "-o", tmp_path / "R", "--gallery", "1")
    assert r.exit_code == 0, r.output
    page = (tmp_path / "R" / "index.html").read_text()
    cmd = html.unescape(re.search(r"<code>(attnalign plot sentence [^<]*)</code>", page).group(1))
    words = shlex.split(cmd)[1:]
    words[words.index("-o") + 1] = str(tmp_path / "again.png")
    again = invoke(*words)
    assert again.exit_code == 0, again.output
    # hints name options the command has: report and plot read --pred-format, --pred-one-based, --reverse-pred
    r = invoke("plot", "sentence", "--pred", SAMPLE / "test.diagonal.align", "--pred-format", "naacl",
               *NAACL_TEXT, "--index", "0", "-o", tmp_path / "x.png")
    one_error(r, 1, "--pred-format pharaoh")
    # a text shorter than a NAACL gold: said as it is
    short = {s: write(tmp_path / f"s.{s}", "".join((SAMPLE / f"test.{s}").read_text().splitlines(True)[:150]))
             for s in ("en", "fr")}
    r = invoke("score", SAMPLE / "test.gold.naacl", SAMPLE / "test.diagonal.align", "--src", short["en"],
               "--tgt", short["fr"])
    one_error(r, 1, "sentence 200 has links, but the text has only 150 sentences")


def test_file_names_that_are_not_utf8_are_written_as_escapes(tmp_path):
    import os

    name = os.fsdecode(b"bad\xffname.align")
    pred = tmp_path / name
    shutil.copy(SAMPLE / "test.diagonal.align", pred)
    per = tmp_path / os.fsdecode(b"per\xff.csv")
    r = invoke("score", SAMPLE / "test.gold.naacl", pred, "--per-sentence", per)
    assert r.exit_code == 0, r.output
    assert "bad\\xffname.align" in per.read_text()
    out = tmp_path / os.fsdecode(b"rep\xff")
    r = invoke("report", "--pred", pred, "--gold", SAMPLE / "test.gold.naacl", *NAACL_TEXT, "-o", out)
    assert r.exit_code == 0, r.output
    assert "bad\\xffname.align" in (out / "index.html").read_text()
    r = invoke("plot", "sentence", "--pred", pred, "--gold", SAMPLE / "test.gold.naacl", *NAACL_TEXT,
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


@pytest.mark.parametrize("damage", [b"garbage", b""])
def test_a_damaged_sentencepiece_model_in_a_checkpoint_is_one_error(model_copy, damage):
    from attnalign.nmt.checkpoint import load_checkpoint, save_checkpoint

    ck = load_checkpoint(model_copy / "forward.pt")
    ck["src_spm"] = torch.frombuffer(bytearray(damage or b"\0"), dtype=torch.uint8)[:len(damage)].clone()
    save_checkpoint(model_copy / "forward.pt", ck)
    r = invoke("align", "corpus", "--model", model_copy, *TEST)
    one_error(r, 1, "sentencepiece model inside is damaged")
    assert "\x1b" not in r.stderr and len(r.stderr.strip().splitlines()) == 2  # the error and its hint


def test_a_subword_checkpoint_without_its_segmenter_is_damaged(model_copy):
    """A subword model read without its sentencepiece model would align whole words: refused (the
    model's config.json says it reads pieces; its checkpoint holds no segmenter)."""
    config = json.loads((model_copy / "config.json").read_text())
    config["train_options"]["subword"] = 60
    (model_copy / "config.json").write_text(json.dumps(config))
    one_error(invoke("align", "corpus", "--model", model_copy, *TEST), 1, "holds no sentencepiece model")


@pytest.mark.parametrize("edit, command, code", [
    ({"hidden": "16"}, "resume", 2), ({"lr": "nan"}, "resume", 2),
    ({"model_type": "pretrained"}, "align", 1)])
def test_hand_edited_config_values_are_one_error(small_texts, tmp_path, edit, command, code):
    src, tgt = small_texts
    m = _interrupted(tmp_path / "m", src, tgt)
    cfg = json.loads((m / "config.json").read_text())
    if "model_type" in edit:
        cfg.update(edit)
    elif "hidden" in edit:
        cfg["train_options"]["model_config"].update(edit)
    else:
        cfg["train_options"].update(edit)
    (m / "config.json").write_text(json.dumps(cfg))
    args = (["train", "--model", m, "--resume"] if command == "resume" else
            ["align", "corpus", "--model", m, "--src", src, "--tgt", tgt, "-o", tmp_path / "o.align"])
    one_error(invoke(*args), code)


@pytest.mark.parametrize("env, needle", [({"WORLD_SIZE": "2"}, "WORLD_SIZE=2 asks for several processes"),
                                         ({"LOCAL_WORLD_SIZE": "abc"}, "LOCAL_WORLD_SIZE='abc'")])
def test_a_broken_launcher_environment_is_one_error_naming_the_variable(monkeypatch, tmp_path, env, needle):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    one_error(invoke("align", "statistical", *TEST, "-o", tmp_path / "x.align"), 2, needle)


def test_minor_values_are_refused_or_written(tmp_path):
    r = invoke("train", "--src", SAMPLE / "dev.en", "--tgt", SAMPLE / "dev.fr", "--model", tmp_path / "m",
               "--batch-tokens", "99999999999999999999")
    one_error(r, 2, "--batch-tokens")
    long = tmp_path / ("a" * 240 + ".align")
    r = invoke("align", "statistical", *TEST, "-o", long)
    assert r.exit_code == 0 and long.is_file()
    one_error(invoke("score", write(tmp_path / "g", "\u0663-\u0664\n"), write(tmp_path / "p", "0-0\n")), 1,
              "cannot read")
