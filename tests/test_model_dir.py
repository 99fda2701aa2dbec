"""A model directory stays whole: a failed or refused run keeps the old model, `--resume` continues
exactly the run it resumes or refuses before writing, and a damaged or foreign file in it is one error
line naming it."""

from __future__ import annotations

import json
import os
import shutil

import numpy as np
import pytest
import torch
from helpers import (
    SAMPLE,
    TEST_TEXT,
    bomb_npz,
    edit,
    invoke,
    one_error,
    sample_texts,
    snapshot,
    tiny,
    tuning_json,
    write,
)

from attnalign.errors import AttnAlignError
from attnalign.nmt.checkpoint import load_checkpoint, load_model
from attnalign.statistical import teacher_file
from attnalign.training import DevSet, train
from attnalign.training import run as run_mod


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
    for args in (["align", "corpus", "--model", model_copy, *TEST_TEXT, "-o", tmp_path / "a"],
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
def test_resume_refuses_a_checkpoint_that_is_not_its_runs(texts, tmp_path, foreign):
    src, tgt = texts
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


def test_resume_refuses_options_that_differ_from_the_runs(texts, tmp_path):
    src, tgt = texts
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


def test_resume_names_what_a_preset_sets_otherwise_than_the_run(texts, tmp_path):
    # a preset's values count as given on a resume; where they differ from the run's (the preset changed
    # between versions, or the run began without it) the error says the preset set them, not the user
    src, tgt = texts
    m = _interrupted(tmp_path / "m", src, tgt)
    before = snapshot(m)
    r = invoke("train", "--model", m, "--resume", "--preset", "align")
    one_error(r, 2, "--preset align sets", "guide_samplers", "hidden", "otherwise than the run began")
    assert "leave --preset out to resume" in r.output
    assert "from the run's" not in r.output  # nothing was typed otherwise
    r = invoke("train", "--model", m, "--resume", "--preset", "align", "--hidden", "16", "--lr", "0.9")
    one_error(r, 2, "--lr differs from the run's; --preset align sets", "leave them and --preset out")
    assert "hidden" not in r.stderr  # typed, as the run has it: the preset's value does not count
    assert snapshot(m) == before


def test_a_direction_from_another_run_is_refused(texts, tmp_path):
    src, tgt = texts
    args = ["--src", src, "--tgt", tgt, "--epochs", "1", "--hidden", "16", "--emb-dim", "8", "--quiet",
            "--direction", "both", "--parallel-directions", "off"]
    for name, seed in (("a", "1"), ("b", "2")):
        assert invoke("train", *args, "--model", tmp_path / name, "--seed", seed).exit_code == 0
    shutil.copy(tmp_path / "b" / "reverse.pt", tmp_path / "a" / "reverse.pt")
    r = invoke("align", "corpus", "--model", tmp_path / "a", "--src", src, "--tgt", tgt)
    one_error(r, 1, "reverse.pt", "another training run")


def test_a_model_directory_being_trained_is_locked(texts, tmp_path):

    from attnalign.training.model_dir import locked

    src, tgt = texts
    m = tmp_path / "m"
    with locked(m):  # as a run in progress holds it
        r = invoke("train", "--src", src, "--tgt", tgt, "--model", m, "--epochs", "1", "--hidden", "16",
                   "--emb-dim", "8", "--overwrite")
    one_error(r, 1, f"being trained by process {os.getpid()}")
    assert not m.exists()
    r = invoke("train", "--src", src, "--tgt", tgt, "--model", m, "--epochs", "1", "--hidden", "16",
               "--emb-dim", "8", "--quiet")
    assert r.exit_code == 0, r.output  # released when the holder ends


@pytest.mark.parametrize("damage", [b"garbage", b""])
def test_a_damaged_sentencepiece_model_in_a_checkpoint_is_one_error(model_copy, damage):
    from attnalign.nmt.checkpoint import load_checkpoint, save_checkpoint

    ck = load_checkpoint(model_copy / "forward.pt")
    ck["src_spm"] = torch.frombuffer(bytearray(damage or b"\0"), dtype=torch.uint8)[:len(damage)].clone()
    save_checkpoint(model_copy / "forward.pt", ck)
    r = invoke("align", "corpus", "--model", model_copy, *TEST_TEXT)
    one_error(r, 1, "sentencepiece model inside is damaged")
    assert "\x1b" not in r.stderr and len(r.stderr.strip().splitlines()) == 2  # the error and its hint


def test_a_subword_checkpoint_without_its_segmenter_is_damaged(model_copy):
    """A subword model read without its sentencepiece model would align whole words: refused (the
    model's config.json says it reads pieces; its checkpoint holds no segmenter)."""
    config = json.loads((model_copy / "config.json").read_text())
    config["train_options"]["subword"] = 60
    (model_copy / "config.json").write_text(json.dumps(config))
    one_error(invoke("align", "corpus", "--model", model_copy, *TEST_TEXT), 1, "holds no sentencepiece model")


@pytest.mark.parametrize("edit, command, code", [
    ({"hidden": "16"}, "resume", 2), ({"lr": "nan"}, "resume", 2),
    ({"model_type": "pretrained"}, "align", 1)])
def test_hand_edited_config_values_are_one_error(texts, tmp_path, edit, command, code):
    src, tgt = texts
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


@pytest.mark.parametrize("bad", [["--device", "cuda:7"], ["--cell", "foo"], ["--epochs", "0"],
                                 ["--epochs", "many"], ["--epochs", "inf"],
                                 ["--model-type", "transformer", "--d-model", "32", "--heads", "3"]])
def test_overwrite_with_a_bad_option_keeps_the_old_model(texts, tmp_path, bad):
    src, tgt = texts
    base = ["train", "--src", src, "--tgt", tgt, "--model", tmp_path / "m", "--hidden", "16",
            "--emb-dim", "8", "--epochs", "1", "--quiet"]
    assert invoke(*base).exit_code == 0
    before = {p.name: p.read_bytes() for p in (tmp_path / "m").iterdir()}
    r = invoke(*[a for a in base if a not in ("--hidden", "16", "--emb-dim", "8")], "--overwrite", *bad)
    assert r.exit_code in (1, 2) and r.stderr.startswith("error:") and "Traceback" not in r.output
    assert {p.name: p.read_bytes() for p in (tmp_path / "m").iterdir()} == before
    fresh = invoke("train", "--src", src, "--tgt", tgt, "--model", tmp_path / "new", "--quiet", *bad)
    assert fresh.exit_code in (1, 2) and not (tmp_path / "new").exists()  # nothing left to block a re-run


def test_overwrite_that_fails_mid_training_keeps_the_old_model(tmp_path, pairs, monkeypatch):
    train(pairs, tmp_path / "m", tiny(epochs=1))
    old = load_checkpoint(tmp_path / "m" / "forward.pt")["state_dict"]

    def crash(*a, **k):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(run_mod.DirectionRun, "_validate", crash)
    with pytest.raises(RuntimeError):
        train(pairs, tmp_path / "m", tiny(epochs=1, seed=5), overwrite=True)
    monkeypatch.undo()
    now = load_model(tmp_path / "m").model.state_dict()
    assert all(torch.equal(old[k], now[k]) for k in old)
    train(pairs, tmp_path / "m", tiny(epochs=1, seed=5), overwrite=True)  # a plain re-run replaces it
    assert not any(torch.equal(old[k], load_checkpoint(tmp_path / "m" / "forward.pt")["state_dict"][k])
                   for k in old if old[k].numel() > 1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]  # no staging directory left


def test_overwrite_keeps_an_input_inside_the_model_dir(tmp_path, pairs):
    train(pairs, tmp_path / "m", tiny(epochs=1))
    src = write(tmp_path / "m" / "t.en", "a b\n" * 20)
    tgt = write(tmp_path / "m" / "t.fr", "x y\n" * 20)
    r = invoke("train", "--src", src, "--tgt", tgt, "--model", tmp_path / "m", "--overwrite", "--quiet",
               "--hidden", "16", "--emb-dim", "8", "--epochs", "1")
    assert r.exit_code == 0, r.output
    assert src.read_text() == "a b\n" * 20 and tgt.read_text() == "x y\n" * 20


def test_resume_restores_the_dev_options_and_refuses_another_corpus(texts, tmp_path, monkeypatch):
    src, tgt = texts
    dev = ["--dev-src", SAMPLE / "dev.en", "--dev-tgt", SAMPLE / "dev.fr",
           "--dev-gold", SAMPLE / "dev.gold.pharaoh"]
    seen = []
    run = run_mod.DirectionRun
    real_train, real_update = run.train, run._update

    def interrupt(self, group, reporter):
        raise KeyboardInterrupt

    monkeypatch.setattr(run, "train",
                        lambda self, d, resume, rep: seen.append(d) or real_train(self, d, resume, rep))
    monkeypatch.setattr(run, "_update", interrupt)
    r = invoke("train", "--src", src, "--tgt", tgt, "--model", tmp_path / "m", "--hidden", "16",
               "--emb-dim", "8", "--epochs", "1", "--quiet", *dev)
    assert r.exit_code == 130 and "--resume" in r.stderr
    monkeypatch.setattr(run, "_update", real_update)
    other = write(tmp_path / "o.en", src.read_text().replace("the", "a"))
    r = invoke("train", "--src", other, "--tgt", tgt, "--model", tmp_path / "m", "--resume", "--quiet")
    assert r.exit_code == 1 and "another training corpus" in r.stderr
    seen.clear()
    r = invoke("train", "--model", tmp_path / "m", "--resume", "--quiet")  # no data options at all
    assert r.exit_code == 0, r.output
    assert seen and seen[0] is not None and seen[0].gold is not None  # validated on the saved dev gold


def test_library_resume_with_another_dev_set_is_refused(tmp_path, pairs):
    opts = tiny(epochs=1)
    train(pairs, tmp_path / "m", opts, dev=DevSet(pairs[:10]))
    with pytest.raises(AttnAlignError, match="another dev set"):
        train(pairs, tmp_path / "m", opts, resume=True)


@pytest.mark.parametrize("content", [b"[1, 2, 3]", b"\xff\xfe not utf-8", b'{"format_version": 1}'])
def test_a_broken_config_json_is_an_error(models, tmp_path, content):
    m = tmp_path / "m"
    m.mkdir()
    (m / "config.json").write_bytes(content)
    r = invoke("align", "sentence", "--model", m, "--src", "a", "--tgt", "b")
    assert r.exit_code == 1 and r.stderr.startswith("error:") and "config.json" in r.stderr


def test_a_checkpoint_with_missing_keys_or_other_shapes_is_an_error(models, tmp_path):
    import shutil

    m = tmp_path / "m"
    shutil.copytree(models / "rnn", m)
    ck = load_checkpoint(m / "forward.pt")
    ck["state_dict"] = {k: v[..., :1] for k, v in ck["state_dict"].items()}
    torch.save(ck, m / "forward.pt")
    with pytest.raises(AttnAlignError, match="does not hold a model this version can load"):
        load_model(m)
    del ck["src_vocab"]
    torch.save(ck, m / "forward.pt")
    with pytest.raises(AttnAlignError, match="does not hold a model"):
        load_model(m)


def test_align_says_when_a_models_training_was_interrupted(tmp_path, pairs):
    train(pairs, tmp_path / "m", tiny(epochs=1, direction="both"))
    cfg = json.loads((tmp_path / "m" / "config.json").read_text())
    cfg["finished"] = ["forward"]
    (tmp_path / "m" / "config.json").write_text(json.dumps(cfg))
    (tmp_path / "m" / "reverse.pt").unlink()
    r = invoke("align", "sentence", "--model", tmp_path / "m", "--src", "a", "--tgt", "b", "--sym", "union")
    assert r.exit_code == 1 and "interrupted" in r.stderr and "--resume" in r.stderr
    r = invoke("train", "--src", SAMPLE / "dev.en", "--tgt", SAMPLE / "dev.fr", "--model", tmp_path / "m")
    assert r.exit_code == 1 and "interrupted training run" in r.stderr




def test_a_damaged_kept_teacher_is_trained_again_with_a_warning(tmp_path):
    bomb_npz(tmp_path / teacher_file.FILE, "cells")
    with pytest.warns(Warning, match="is damaged"):
        assert teacher_file.load_kept(tmp_path, {}) is None
    with pytest.raises(AttnAlignError, match="the file is damaged"):
        teacher_file.SavedTeacher(tmp_path / teacher_file.FILE)
    shapes = np.array([[2, -3]], dtype=np.int64)  # a negative shape
    np.savez(tmp_path / "neg.npz", cells=np.zeros(0, dtype=np.uint8), shapes=shapes,
             meta=np.array(json.dumps({"pairs": 1})))
    with pytest.raises(ValueError, match="not a teacher file"):
        teacher_file.SavedTeacher(tmp_path / "neg.npz")


@pytest.fixture(scope="module")
def model_texts(tmp_path_factory):
    return sample_texts(tmp_path_factory.mktemp("model_texts"), 80)


@pytest.fixture(scope="module")
def trained(model_texts, tmp_path_factory):
    """Two small bidirectional models of other data, each with the teacher that guided it: ``a`` and
    ``b``."""
    root = tmp_path_factory.mktemp("models")
    for name, n in (("a", 80), ("b", 60)):
        src = write(root / f"{name}.en", "".join(model_texts[0].read_text().splitlines(True)[:n]))
        tgt = write(root / f"{name}.fr", "".join(model_texts[1].read_text().splitlines(True)[:n]))
        r = invoke("train", "--src", src, "--tgt", tgt, "--model", root / name, "--hidden", "16", "--emb-dim",
                   "8", "--epochs", "1", "--direction", "both", "--guide", "auto", "--quiet")
        assert r.exit_code == 0, r.output
    return root


@pytest.fixture
def model(trained, tmp_path):
    shutil.copytree(trained / "a", tmp_path / "m")
    return tmp_path / "m"


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
    one_error(invoke(*ALIGN, "--model", model), 1, "fingerprint is a whole number, not a string")


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


@pytest.mark.parametrize("name", ["train.toml", "log.csv", "blend.json", "teacher.npz", "forward.pt"])
def test_overwrite_refuses_a_users_folder_under_a_model_files_name(texts, tmp_path, name):
    """A folder of the user's named as one of the model's files is not the model's: ``--overwrite``
    stops before it trains, naming it, and the folder and the old model stay."""
    src, tgt = texts
    base = ["train", "--src", src, "--tgt", tgt, "--model", tmp_path / "m", "--hidden", "16",
            "--emb-dim", "8", "--epochs", "1", "--quiet"]
    assert invoke(*base).exit_code == 0
    (tmp_path / "m" / name).unlink(missing_ok=True)
    (tmp_path / "m" / name).mkdir()
    write(tmp_path / "m" / name / "notes", "mine\n")
    before = snapshot(tmp_path / "m")
    one_error(invoke(*base, "--overwrite"), 1, name, "--overwrite would delete it")
    assert snapshot(tmp_path / "m") == before and not (tmp_path / ".m.new").exists()


def test_a_run_that_fails_before_its_first_checkpoint_leaves_nothing_behind(tmp_path, pairs, monkeypatch):
    """Nothing to resume: a new model directory is removed (a later run is not told of an interrupted
    one), an empty folder that was there stays, an --overwrite run's staging goes (an interruption, by
    contrast, stays resumable: test_resume_restores_the_dev_options_and_refuses_another_corpus)."""
    def crash(*a, **k):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(run_mod.DirectionRun, "_validate", crash)
    with pytest.raises(RuntimeError):
        train(pairs, tmp_path / "new" / "m", tiny(epochs=1))
    assert not (tmp_path / "new" / "m").exists()
    (tmp_path / "empty").mkdir()
    with pytest.raises(RuntimeError):
        train(pairs, tmp_path / "empty", tiny(epochs=1))
    assert list((tmp_path / "empty").iterdir()) == []
    monkeypatch.undo()
    train(pairs, tmp_path / "m", tiny(epochs=1))
    monkeypatch.setattr(run_mod.DirectionRun, "_validate", crash)
    before = snapshot(tmp_path / "m")
    with pytest.raises(RuntimeError):
        train(pairs, tmp_path / "m", tiny(epochs=1, seed=4), overwrite=True)
    assert snapshot(tmp_path / "m") == before and not (tmp_path / ".m.new").exists()


@pytest.mark.parametrize("value", [np.nan, -1.0, np.inf])
def test_a_kept_teacher_whose_counts_are_not_counts_is_refused(model, value):
    """teacher.npz's counts are expected values: a NaN, a negative or an infinite one is a damaged file,
    said once, and not used (the teacher is trained again where one is needed)."""
    path = model / teacher_file.FILE
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    options = json.loads(str(arrays["meta"]))["options"]
    assert teacher_file.load_kept(model, options) is not None
    name = next(k for k in arrays if k.startswith("kept.") and k.endswith(".counts"))
    arrays[name] = arrays[name].copy()
    arrays[name][0] = value
    np.savez(path, **arrays)
    teacher_file._WARNED.clear()
    with pytest.warns(Warning, match="teacher.npz is damaged"):
        assert teacher_file.load_kept(model, options) is None


def test_another_models_blend_json_is_not_used(model, trained):
    """blend.json names the training run it was tuned for: a file copied from another model is a warning
    naming it, and the default blend is used; its choice is not written (it follows from the rest)."""
    from attnalign.combine import Tuning, kept_blend, save_tuning

    save_tuning(trained / "b", Tuning.from_json(tuning_json()))
    written = json.loads((trained / "b" / "blend.json").read_text())
    assert "chosen" not in written and written["model"] == json.loads(
        (trained / "b" / "config.json").read_text())["data"]["run_id"]
    assert kept_blend(trained / "b") is not None
    shutil.copy(trained / "b" / "blend.json", model / "blend.json")
    with pytest.warns(Warning, match="was tuned for another model"):
        assert kept_blend(model) is None
    (trained / "b" / "blend.json").unlink()
