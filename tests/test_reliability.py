"""The README's reliability promises: nothing a user owns is lost, every bad input gets one `error:` line
and a documented exit code (2: the command line is wrong; 1: an input or the run failed), user text is
data, never markup."""

from __future__ import annotations

import json
import os
import threading

import numpy as np
import pytest
import torch
from helpers import SAMPLE, invoke, tiny, write

from attnalign.data.corpus import read_corpus
from attnalign.data.fileio import atomic_open
from attnalign.errors import AttnAlignError, OptionError
from attnalign.nmt.checkpoint import load_checkpoint, load_model
from attnalign.training import DevSet, TrainOptions, train
from attnalign.training import run as run_mod


@pytest.fixture(scope="module")
def pairs():
    return read_corpus(SAMPLE / "train.en", SAMPLE / "train.fr")[:120]


@pytest.fixture
def texts(tmp_path, pairs):
    src = write(tmp_path / "t.en", "".join(" ".join(s) + "\n" for s, _ in pairs))
    tgt = write(tmp_path / "t.fr", "".join(" ".join(t) + "\n" for _, t in pairs))
    return src, tgt


# --- outputs: rename only over regular files -------------------------------------------------------

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


# --- an output never overwrites an input ----------------------------------------------------------

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


# --- train: validate first, replace the old model only with a complete new one ---------------------

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


# --- resume continues the run it resumes -----------------------------------------------------------

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


# --- user text is data ------------------------------------------------------------------------------

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


# --- every bad input: one error line and the documented exit code ----------------------------------

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


# --- interrupted and incomplete models ---------------------------------------------------------------

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


# --- inputs: BOM, UTF-16, stdin ---------------------------------------------------------------------

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
