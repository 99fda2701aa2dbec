"""Nothing a user owns is lost: every file of a model directory is an input of the commands that read
the model, a report replaces only an empty folder or an earlier report, and `train --overwrite` replaces
only an attnalign model directory, keeping the user's own files inside it."""

from __future__ import annotations

import json
import os
import shutil
import threading

import pytest
from helpers import SAMPLE, TEST_TEXT, invoke, one_error, sample_texts, snapshot, tuning_json, write
from typer.testing import CliRunner

from attnalign.cli import app
from attnalign.data.attnfile import AttentionWriter
from attnalign.data.corpus import read_corpus
from attnalign.data.fileio import atomic_open
from attnalign.errors import AttnAlignError
from attnalign.report import build as report_mod


@pytest.fixture
def model(models, tmp_path):
    """A copy of the session's bidirectional RNN with a kept teacher and a self-training guide in it."""
    m = tmp_path / "m"
    shutil.copytree(models / "rnn", m)
    write(m / "teacher.npz", b"the kept teacher")
    write(m / "self_guide.align", "0-0\n")
    return m


@pytest.mark.parametrize("output", ["-o", "--save-attention"])
@pytest.mark.parametrize("name", ["teacher.npz", "self_guide.align", "forward.pt", "config.json", "log.csv",
                                  "link"])
def test_no_output_lands_on_a_file_of_the_model(model, output, name):
    if name == "link":  # a symlink elsewhere that points into the model directory
        os.symlink(model / "teacher.npz", model.parent / "link")
        target = model.parent / "link"
    else:
        target = model / name
    before = snapshot(model)
    r = invoke("align", "corpus", "--model", model, *TEST_TEXT, output, target, "--quiet")
    one_error(r, 2, "--model file", "would be lost")
    assert snapshot(model) == before


def test_a_new_file_in_the_model_directory_is_an_output_like_any_other(model):
    for _ in range(2):  # written, and written again
        r = invoke("align", "corpus", "--model", model, *TEST_TEXT, "-o", model / "test.align", "--quiet")
        assert r.exit_code == 0, r.output


def test_plot_refuses_to_draw_over_a_file_of_the_model(model):
    before = snapshot(model)
    for name in ("self_guide.align", "forward.pt"):
        r = invoke("plot", "sentence", "--model", model, "--src", "the car .", "--tgt", "la voiture .",
                   "-o", model / name)
        assert r.exit_code == 2, r.output
    assert snapshot(model) == before


REPORT = ["report", "--pred", SAMPLE / "test.diagonal.align", "--src", SAMPLE / "test.en", "--tgt",
          SAMPLE / "test.fr", "--gold", SAMPLE / "test.gold.naacl", "--gallery", "0"]


def test_a_report_never_replaces_the_users_folder(tmp_path, monkeypatch):
    site = tmp_path / "site"
    write(site.mkdir() or site / "index.html", "<html>my own page</html>")
    write(site / "notes.txt", "mine")
    r = invoke(*REPORT, "-o", site)
    assert r.exit_code == 2 and "attnalign did not write" in r.stderr
    assert (site / "index.html").read_text() == "<html>my own page</html>" and (site / "notes.txt").exists()
    monkeypatch.chdir(site)  # -o . from inside it
    r = invoke(*REPORT, "-o", ".")
    assert r.exit_code == 2 and (site / "notes.txt").read_text() == "mine"


def test_a_report_replaces_an_empty_folder_and_an_earlier_report(tmp_path):
    out = tmp_path / "rep"
    out.mkdir()
    assert invoke(*REPORT, "-o", out).exit_code == 0
    first = (out / "index.html").read_text()
    r = invoke(*REPORT, "-o", out)
    assert r.exit_code == 0, r.output
    assert (out / "index.html").read_text() == first


@pytest.fixture(scope="module")
def short_texts(tmp_path_factory):
    return sample_texts(tmp_path_factory.mktemp("texts"), 60)


def train_args(texts, model):
    src, tgt = texts
    return ["train", "--src", src, "--tgt", tgt, "--model", model, "--hidden", "16", "--emb-dim", "8",
            "--epochs", "1", "--quiet"]


@pytest.mark.parametrize("config", [{"name": "my project"}, {"architectures": ["MarianMTModel"]}, None])
def test_overwrite_replaces_only_a_model_directory(short_texts, tmp_path, config):
    proj = tmp_path / "proj"
    proj.mkdir()
    if config is not None:
        write(proj / "config.json", json.dumps(config))
    write(proj / "data.txt", "mine")
    r = invoke(*train_args(short_texts, proj), "--overwrite")
    assert r.exit_code in (1, 2) and r.stderr.startswith("error:"), r.output
    assert (proj / "data.txt").read_text() == "mine"
    assert config is None or json.loads((proj / "config.json").read_text()) == config


def test_overwrite_keeps_the_users_files_in_the_model_directory(short_texts, tmp_path, monkeypatch):
    m = tmp_path / "m"
    assert invoke(*train_args(short_texts, m)).exit_code == 0
    write(m / "notes.txt", "mine")
    shutil.copy(short_texts[0], m / "s.en")  # the user's text, even one this run reads
    r = invoke(*train_args((m / "s.en", short_texts[1]), m), "--overwrite")
    assert r.exit_code == 0, r.output
    assert (m / "notes.txt").read_text() == "mine"
    assert (m / "s.en").read_bytes() == short_texts[0].read_bytes()
    assert json.loads((m / "config.json").read_text())["directions"] == ["forward"]
    monkeypatch.chdir(m)  # replacing the folder the command runs in: refused, with what to do instead
    r = invoke(*train_args(short_texts, "."), "--overwrite")
    assert r.exit_code == 2 and "cd " in r.stderr and (m / "notes.txt").exists()


def test_a_model_directorys_own_files_replace_a_link_never_its_target(tmp_path):
    """blend.json (and every file of the model directory) is written by replacing its entry: a link
    there that leads out of the directory is replaced, the user's file it names is untouched."""
    from attnalign.combine import Tuning, save_tuning
    from attnalign.training.model_dir import append_log

    m = tmp_path / "m"
    m.mkdir()
    notes = write(tmp_path / "notes.txt", "my notes\n")
    for name in ("blend.json", "log.csv"):
        os.symlink(notes, m / name)
    save_tuning(m, Tuning.from_json(tuning_json()))
    append_log(m, {"epoch": 1})
    assert notes.read_text() == "my notes\n"
    assert not (m / "blend.json").is_symlink() and json.loads((m / "blend.json").read_text())["gold"] == "g"
    assert not (m / "log.csv").is_symlink() and "epoch" in (m / "log.csv").read_text()


def test_a_model_file_that_is_a_folder_is_one_error_naming_it(tmp_path):
    from attnalign.combine import Tuning, save_tuning
    from attnalign.errors import AttnAlignError

    (tmp_path / "blend.json").mkdir()
    with pytest.raises(AttnAlignError, match="blend.json of the model directory is not a regular file") as e:
        save_tuning(tmp_path, Tuning.from_json(tuning_json()))
    assert ".tmp" not in str(e.value)




def test_the_training_corpus_the_teacher_reads_is_an_input(tmp_path):
    pairs = read_corpus(SAMPLE / "train.en", SAMPLE / "train.fr")[:200]
    src = write(tmp_path / "t.en", "".join(" ".join(s) + "\n" for s, _ in pairs))
    tgt = write(tmp_path / "t.fr", "".join(" ".join(t) + "\n" for _, t in pairs))
    r = invoke("train", "--src", src, "--tgt", tgt, "--model", tmp_path / "m", "--hidden", "16",
               "--emb-dim", "8", "--epochs", "1", "--quiet")
    assert r.exit_code == 0, r.output
    before = src.read_bytes()
    r = invoke("align", "corpus", "--model", tmp_path / "m", *TEST_TEXT, "--teacher", "on",
               "--teacher-corpus", "training", "-o", src, "--quiet")
    one_error(r, 2, "training corpus")
    assert src.read_bytes() == before


GOLD_GALLERY = ["--gold", SAMPLE / "test.gold.naacl", "--gallery", "1"]


def test_a_failing_report_keeps_the_old_folder_whole(models, tmp_path, monkeypatch):
    out = tmp_path / "R"
    r = invoke("report", "--model", models / "rnn", *TEST_TEXT, *GOLD_GALLERY, "-o", out)
    assert r.exit_code == 0, r.output
    before = snapshot(out)

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(report_mod, "write_page", interrupted)  # after the tables and plots
    r = invoke("report", "--model", models / "rnn", *TEST_TEXT, *GOLD_GALLERY, "--gallery", "2", "-o", out)
    assert r.exit_code == 130 and "no output was written" in r.stderr
    assert snapshot(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["R"]  # no staging folder left
    monkeypatch.undo()
    r = invoke("report", "--model", models / "rnn", *TEST_TEXT, *GOLD_GALLERY, "--gallery", "2", "-o", out)
    assert r.exit_code == 0 and snapshot(out) != before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["R"]


def test_report_refuses_inputs_inside_its_folder_and_folders_it_did_not_write(models, tmp_path):
    out = tmp_path / "R"
    assert invoke("report", "--model", models / "rnn", *TEST_TEXT, *GOLD_GALLERY, "-o", out).exit_code == 0
    before = snapshot(out)
    gold = shutil.copy(SAMPLE / "test.gold.naacl", out / "gold.naacl")
    before = snapshot(out)
    r = invoke("report", "--model", models / "rnn", *TEST_TEXT, "--gold", gold, "-o", out)
    one_error(r, 2, "--gold lies inside the report folder")
    assert snapshot(out) == before
    mine = tmp_path / "mine"
    mine.mkdir()
    write(mine / "notes.txt", "my notes\n")
    one_error(invoke("report", "--model", models / "rnn", *TEST_TEXT, *GOLD_GALLERY, "-o", mine), 2,
              "did not write")
    assert (mine / "notes.txt").read_text() == "my notes\n"
    one_error(invoke("report", "--model", models / "rnn", *TEST_TEXT, *GOLD_GALLERY, "-o", "-"), 2, "stdout")
    one_error(invoke("report", "--model", models / "rnn", *TEST_TEXT, "--gold", SAMPLE / "test.gold.naacl",
                     "--gallery", "-1", "-o", tmp_path / "R2"), 2, "--gallery")
    assert not (tmp_path / "R2").exists()


def test_commands_without_model_never_write_over_a_model_directorys_files(model_copy, tmp_path):
    before = snapshot(model_copy)
    r = invoke("align", "statistical", *TEST_TEXT, "-o", model_copy / "forward.pt")
    one_error(r, 2, "would replace forward.pt of the attnalign model directory")
    r = invoke("score", SAMPLE / "test.gold.naacl", SAMPLE / "test.diagonal.align", "--per-sentence",
               model_copy / "log.csv")
    one_error(r, 2, "would replace log.csv")
    assert snapshot(model_copy) == before
    # a file of the user's own inside a model directory is an output like any other
    r = invoke("score", SAMPLE / "test.gold.naacl", SAMPLE / "test.diagonal.align", "--per-sentence",
               model_copy / "mine.csv")
    assert r.exit_code == 0 and (model_copy / "mine.csv").is_file()


def test_overwrite_keeps_a_users_folder_named_after_a_direction(texts, tmp_path):
    src, tgt = texts
    m = tmp_path / "m"
    args = ["train", "--src", src, "--tgt", tgt, "--model", m, "--epochs", "1", "--hidden", "16", "--emb-dim",
            "8", "--quiet"]
    assert invoke(*args).exit_code == 0
    write((m / "forward").mkdir() or m / "forward" / "notes.txt", "mine\n")
    assert invoke(*args, "--overwrite").exit_code == 0
    assert (m / "forward" / "notes.txt").read_text() == "mine\n" and (m / "forward.pt").is_file()


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


def test_a_symlinked_output_keeps_its_link_and_gets_new_content(tmp_path):
    target = write(tmp_path / "real.txt", "old\n")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    with atomic_open(link) as f:
        f.write("new\n")
    assert link.is_symlink() and target.read_text() == "new\n"


def test_device_nodes_and_fifos_are_written_through_never_replaced(tmp_path):
    with atomic_open(os.devnull) as f:
        f.write("discarded\n")
    assert os.path.exists(os.devnull) and not os.path.isfile(os.devnull)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    def read():
        with open(fifo) as f:
            got.append(f.read())

    reader = threading.Thread(target=read)
    reader.start()
    with atomic_open(fifo) as f:
        f.write("through the pipe\n")
    reader.join(5)
    assert got == ["through the pipe\n"] and not fifo.is_file()


def test_a_killed_writers_temp_file_is_removed_by_the_next_write(tmp_path):
    stale = write(tmp_path / ".out.txt.999999999.abcd.tmp", "half")  # no such process
    live = write(tmp_path / f".out.txt.{os.getpid() + 0}.live.tmp", "ours")  # a live writer's
    with atomic_open(tmp_path / "out.txt") as f:
        f.write("x")
    assert not stale.exists() and live.exists()


def test_an_unwritable_folder_names_the_output(tmp_path):
    with pytest.raises(AttnAlignError) as e, atomic_open("/proc/attnalign-test.txt") as f:
        f.write("x")
    assert e.value.path == "/proc/attnalign-test.txt"


def test_dash_writes_stdout(models, tmp_path):
    src, tgt = write(tmp_path / "a.en", "the house .\n"), write(tmp_path / "a.fr", "la maison .\n")
    r = invoke("align", "corpus", "--model", models / "rnn", "--src", src, "--tgt", tgt, "-o", "-", "--quiet")
    assert r.exit_code == 0 and len(r.stdout.splitlines()) == 1 and not (tmp_path / "-").exists()


def test_output_equal_to_an_input_is_refused(models, tmp_path):
    src, tgt = write(tmp_path / "a.en", "the house .\n"), write(tmp_path / "a.fr", "la maison .\n")
    m = models / "rnn"
    r = invoke("align", "corpus", "--model", m, "--src", src, "--tgt", tgt, "-o", src)
    assert r.exit_code == 2 and "--output names the same file as the input --src" in r.stderr
    assert src.read_text() == "the house .\n"
    r = invoke("align", "corpus", "--model", m, "--src", src, "--tgt", tgt, "-o", tmp_path / "x",
               "--save-attention", tmp_path / "x")
    assert r.exit_code == 2 and "--save-attention" in r.stderr
    link = tmp_path / "link.fr"
    link.symlink_to(tgt)
    r = invoke("align", "statistical", "--src", src, "--tgt", tgt, "-o", link)
    assert r.exit_code == 2 and tgt.read_text() == "la maison .\n"
    pred = write(tmp_path / "p", "0-0\n")
    gold = write(tmp_path / "g", "0-0\n")
    r = invoke("score", gold, pred, "--per-sentence", pred)
    assert r.exit_code == 2 and pred.read_text() == "0-0\n"


runner = CliRunner()


def test_a_full_disk_while_saving_attention_is_one_error_line(models, tmp_path, monkeypatch):
    import errno

    from helpers import SAMPLE

    out = tmp_path / "att.npz"
    out.write_bytes(b"the old file")
    real = AttentionWriter._put
    calls = []

    def fills(self, name, arr):  # the disk is full after a few entries
        calls.append(name)
        if len(calls) > 6:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(self, name, arr)

    monkeypatch.setattr(AttentionWriter, "_put", fills)
    hits = []
    monkeypatch.setattr("sys.unraisablehook", hits.append)
    args = ["align", "corpus", "--model", models / "rnn", "--src", SAMPLE / "test.en", "--tgt",
            SAMPLE / "test.fr", "-o", tmp_path / "a.align", "--save-attention", out, "--quiet"]
    r = runner.invoke(app, [str(a) for a in args])
    import gc

    gc.collect()
    assert r.exit_code == 1, r.output
    assert r.stderr.startswith("error:") and "att.npz" in r.stderr and "Traceback" not in r.output
    assert out.read_bytes() == b"the old file" and not hits  # the old file kept; no destructor's traceback
