"""A damaged or mismatched model directory is refused with one `error:` line: resume continues exactly the
run it resumes or refuses before writing anything, the two directions prove they belong together, and a
damaged file is an input error, never a traceback."""

from __future__ import annotations

import json
import shutil

import pytest
from helpers import SAMPLE, invoke, one_error, sample_texts, write


@pytest.fixture(scope="module")
def texts(tmp_path_factory):
    return sample_texts(tmp_path_factory.mktemp("texts"), 80)


@pytest.fixture(scope="module")
def trained(texts, tmp_path_factory):
    """Two small bidirectional models of other data: ``a`` and ``b``."""
    root = tmp_path_factory.mktemp("models")
    for name, n in (("a", 80), ("b", 60)):
        src = write(root / f"{name}.en", "".join(texts[0].read_text().splitlines(True)[:n]))
        tgt = write(root / f"{name}.fr", "".join(texts[1].read_text().splitlines(True)[:n]))
        r = invoke("train", "--src", src, "--tgt", tgt, "--model", root / name, "--hidden", "16", "--emb-dim",
                   "8", "--epochs", "1", "--direction", "both", "--quiet")
        assert r.exit_code == 0, r.output
    return root


@pytest.fixture
def model(trained, tmp_path):
    shutil.copytree(trained / "a", tmp_path / "m")
    return tmp_path / "m"


def snapshot(d):
    return {p.name: p.read_bytes() for p in d.iterdir()}


def test_resume_refuses_a_damaged_resumable_checkpoint_before_writing(model):
    last = model / "forward.last.pt"
    last.write_bytes(last.read_bytes()[: last.stat().st_size // 2])
    before = snapshot(model)
    one_error(invoke("train", "--model", model, "--resume", "--quiet"), 1, "cannot read the checkpoint")
    assert snapshot(model) == before


def test_resume_refuses_a_config_whose_directions_were_edited(model):
    cfg = json.loads((model / "config.json").read_text())
    cfg["directions"] = ["forward"]
    write(model / "config.json", json.dumps(cfg))
    before = snapshot(model)
    one_error(invoke("train", "--model", model, "--resume", "--quiet"), 1, "changed after the run began")
    assert snapshot(model) == before


ALIGN = ["align", "corpus", "--src", SAMPLE / "test.en", "--tgt", SAMPLE / "test.fr", "--quiet", "-o", "-"]


@pytest.mark.parametrize(("source", "says"), [("a/forward.pt", "holds the 'forward' direction"),
                                              ("b/reverse.pt", "trained on other data")])
def test_the_directions_must_belong_together(model, trained, source, says):
    shutil.copy(trained / source, model / "reverse.pt")
    one_error(invoke(*ALIGN, "--model", model), 1, says)
    one_error(invoke("align", "sentence", "--model", model, "--src", "the car .", "--tgt", "la voiture ."),
              1, says)


def test_a_fingerprint_of_the_wrong_type_is_an_error(model):
    cfg = json.loads((model / "config.json").read_text())
    cfg["data"]["fingerprint"] = 12345
    write(model / "config.json", json.dumps(cfg))
    one_error(invoke(*ALIGN, "--model", model), 1, "fingerprint is a int")


@pytest.mark.parametrize("damage", ["text", "zeros", "config-nested", "config-types"])
def test_damaged_model_files_get_one_error_line(model, damage):
    if damage == "text":
        write(model / "forward.pt", "hello, this is not a checkpoint")
    elif damage == "zeros":
        write(model / "reverse.pt", bytes(4096))
    else:
        cfg = json.loads((model / "config.json").read_text())
        if damage == "config-nested":
            cfg["pretrained"] = [[[[[[["deep"]]]]]]]
        else:
            cfg["model_config"] = "rnn"
        write(model / "config.json", json.dumps(cfg))
    one_error(invoke(*ALIGN, "--model", model), 1, "")
