"""Nothing a user owns is lost: every file of a model directory is an input of the commands that read
the model, a report replaces only an empty folder or an earlier report, and `train --overwrite` replaces
only an attnalign model directory, keeping the user's own files inside it."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from helpers import SAMPLE, invoke, sample_texts, tuning_json, write


@pytest.fixture
def model(models, tmp_path):
    """A copy of the session's bidirectional RNN with a kept teacher and a self-training guide in it."""
    m = tmp_path / "m"
    shutil.copytree(models / "rnn", m)
    write(m / "teacher.npz", b"the kept teacher")
    write(m / "self_guide.align", "0-0\n")
    return m


@pytest.mark.parametrize("output", ["-o", "--save-attention"])
@pytest.mark.parametrize("name", ["teacher.npz", "self_guide.align", "forward.pt", "link"])
def test_no_output_lands_on_a_file_of_the_model(model, output, name):
    if name == "link":  # a symlink elsewhere that points into the model directory
        os.symlink(model / "teacher.npz", model.parent / "link")
        target = model.parent / "link"
    else:
        target = model / name
    before = (model / ("teacher.npz" if name == "link" else name)).read_bytes()
    r = invoke("align", "corpus", "--model", model, "--src", SAMPLE / "test.en", "--tgt", SAMPLE / "test.fr",
               output, target, "--quiet")
    assert r.exit_code == 2 and r.stderr.startswith("error:"), r.output
    assert "--model file" in r.stderr
    assert (model / ("teacher.npz" if name == "link" else name)).read_bytes() == before


def test_plot_refuses_to_draw_over_a_file_of_the_model(model):
    r = invoke("plot", "sentence", "--model", model, "--src", "the car .", "--tgt", "la voiture .",
               "-o", model / "self_guide.align")
    assert r.exit_code == 2 and (model / "self_guide.align").read_text() == "0-0\n"


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
def texts(tmp_path_factory):
    return sample_texts(tmp_path_factory.mktemp("texts"), 60)


def train_args(texts, model):
    src, tgt = texts
    return ["train", "--src", src, "--tgt", tgt, "--model", model, "--hidden", "16", "--emb-dim", "8",
            "--epochs", "1", "--quiet"]


@pytest.mark.parametrize("config", [{"name": "my project"}, {"architectures": ["MarianMTModel"]}, None])
def test_overwrite_replaces_only_a_model_directory(texts, tmp_path, config):
    proj = tmp_path / "proj"
    proj.mkdir()
    if config is not None:
        write(proj / "config.json", json.dumps(config))
    write(proj / "data.txt", "mine")
    r = invoke(*train_args(texts, proj), "--overwrite")
    assert r.exit_code in (1, 2) and r.stderr.startswith("error:"), r.output
    assert (proj / "data.txt").read_text() == "mine"
    assert config is None or json.loads((proj / "config.json").read_text()) == config


def test_overwrite_keeps_the_users_files_in_the_model_directory(texts, tmp_path, monkeypatch):
    m = tmp_path / "m"
    assert invoke(*train_args(texts, m)).exit_code == 0
    write(m / "notes.txt", "mine")
    shutil.copy(texts[0], m / "s.en")  # the user's text, even one this run reads
    r = invoke(*train_args((m / "s.en", texts[1]), m), "--overwrite")
    assert r.exit_code == 0, r.output
    assert (m / "notes.txt").read_text() == "mine" and (m / "s.en").read_bytes() == texts[0].read_bytes()
    assert json.loads((m / "config.json").read_text())["directions"] == ["forward"]
    monkeypatch.chdir(m)  # replacing the folder the command runs in: refused, with what to do instead
    r = invoke(*train_args(texts, "."), "--overwrite")
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
