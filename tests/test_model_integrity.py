"""A damaged or mismatched model directory is refused with one `error:` line: resume continues exactly the
run it resumes or refuses before writing anything, the two directions prove they belong together, and a
damaged file is an input error, never a traceback."""

from __future__ import annotations

import json
import shutil

import pytest
from helpers import SAMPLE, edit, invoke, one_error, sample_texts, tuning_json, write


@pytest.fixture(scope="module")
def texts(tmp_path_factory):
    return sample_texts(tmp_path_factory.mktemp("texts"), 80)


@pytest.fixture(scope="module")
def trained(texts, tmp_path_factory):
    """Two small bidirectional models of other data, each with the teacher that guided it: ``a`` and
    ``b``."""
    root = tmp_path_factory.mktemp("models")
    for name, n in (("a", 80), ("b", 60)):
        src = write(root / f"{name}.en", "".join(texts[0].read_text().splitlines(True)[:n]))
        tgt = write(root / f"{name}.fr", "".join(texts[1].read_text().splitlines(True)[:n]))
        r = invoke("train", "--src", src, "--tgt", tgt, "--model", root / name, "--hidden", "16", "--emb-dim",
                   "8", "--epochs", "1", "--direction", "both", "--guide", "auto", "--quiet")
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


def test_another_models_kept_teacher_is_not_used(model, trained, tmp_path):
    """teacher.npz records the training corpus its counts were learned from: another model's is refused
    (a warning naming it; --teacher-corpus kept then has no counts to go on from)."""
    shutil.copy(trained / "b" / "teacher.npz", model / "teacher.npz")
    base = ["align", "corpus", "--model", model, "--src", SAMPLE / "test.en", "--tgt", SAMPLE / "test.fr",
            "--teacher", "on", "--quiet"]
    r = invoke(*base, "--teacher-corpus", "kept", "-o", tmp_path / "kept.align")
    one_error(r, 2, "keeps no teacher counts")
    assert "was kept for another training corpus" in r.stderr
    r = invoke(*base, "--teacher-corpus", "aligned", "-o", tmp_path / "aligned.align")
    assert r.exit_code == 0 and "teacher_pairs=200" in r.stderr, r.output


class _Runs:
    def __reduce__(self):  # what unpickling would call: never, under weights_only
        return (print, ("unpickled!",))


def test_a_pickled_checkpoint_is_refused_in_our_words(model, tmp_path):
    import torch

    torch.save({"format_version": 1, "payload": _Runs()}, model / "forward.pt")
    r = invoke("align", "corpus", "--model", model, "--src", SAMPLE / "test.en", "--tgt", SAMPLE / "test.fr",
               "-o", tmp_path / "o.align")
    one_error(r, 1, "holds Python objects beyond tensors and plain data")
    assert "weights_only" not in r.stderr and "unpickled!" not in r.output


def test_a_damaged_kept_teacher_is_said_once_in_our_words(model, tmp_path):
    import numpy as np

    np.savez(model / "teacher.npz", meta=np.array([object()], dtype=object))  # a pickled array
    r = invoke("align", "corpus", "--model", model, "--src", SAMPLE / "test.en", "--tgt", SAMPLE / "test.fr",
               "--teacher", "on", "--quiet", "-o", tmp_path / "o.align")
    assert r.exit_code == 0, r.output
    assert r.stderr.count("teacher.npz is damaged") == 1 and "allow_pickle" not in r.stderr


@pytest.mark.parametrize(("path", "value"), [
    ("best.threshold", float("nan")), ("best.threshold", 1e308), ("best.threshold", -5),
    ("best.teacher_weight", float("nan")), ("best.teacher_weight", -1), ("best.decoder", "bogus"),
    ("best.sym", "bogus"), ("best.threshold", "abc"), ("best.teacher_weight", None), ("best.sym", ...),
    ("paired", ...), ("sentences", float("inf")), ("scores.0.0.threshold", float("nan")), ("scores", []),
    ("paired.p_value", float("nan")), ("default", "soft"),
])
def test_a_hand_edited_blend_json_is_checked_as_its_options_are(model, path, value):
    """Every value of blend.json passes the checks of the option it stands for; a file that fails them
    is a warning naming it, and the default blend is used."""
    from attnalign.combine import kept_blend

    write(model / "blend.json", json.dumps(tuning_json()))
    assert kept_blend(model) is not None  # the file as written is used
    write(model / "blend.json", json.dumps(edit(tuning_json(), path, value)))
    with pytest.warns(Warning, match=r"blend.json is damaged \(.+\): the default blend is used"):
        assert kept_blend(model) is None


def test_align_corpus_with_a_damaged_blend_json_decodes_as_the_default(model, tmp_path):
    base = ["align", "corpus", "--model", model, "--src", SAMPLE / "test.en", "--tgt", SAMPLE / "test.fr",
            "--teacher", "on", "--teacher-corpus", "aligned", "--quiet"]
    r = invoke(*base, "-o", tmp_path / "default.align")
    assert r.exit_code == 0, r.output
    write(model / "blend.json", json.dumps(edit(tuning_json(), "best.threshold", -5)))
    r = invoke(*base, "-o", tmp_path / "edited.align")
    assert r.exit_code == 0 and "blend.json is damaged" in r.stderr and "Traceback" not in r.output, r.output
    assert (tmp_path / "edited.align").read_text() == (tmp_path / "default.align").read_text()
