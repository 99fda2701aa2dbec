"""Self-training (``train --self-train N``): each round's guide is what ``align corpus`` writes with the
last round's model and its kept teacher; a round goes on from the last round's weights with
``--self-train-epochs``; a resumed round ends with the weights of an uninterrupted run; the option needs
the built-in teacher."""

from __future__ import annotations

import csv

import pytest
import torch
from helpers import SAMPLE, Kill, invoke, tiny

from attnalign.data.alignments import read_alignments
from attnalign.data.corpus import read_corpus
from attnalign.data.fileio import SELF_GUIDE as GUIDE
from attnalign.errors import OptionError
from attnalign.nmt.checkpoint import load_checkpoint
from attnalign.training import TrainOptions, train
from attnalign.training.self_train import _model_links


@pytest.fixture(scope="module")
def pairs():
    return read_corpus(SAMPLE / "train.en", SAMPLE / "train.fr")[:300]


def options(**kw) -> TrainOptions:
    return tiny(direction="both", guide="auto", hidden=16, emb_dim=8,
                        align_head=True, parallel_directions="off", threads=1, epochs=2, **kw)


def same_weights(a, b) -> bool:
    return all(torch.equal(a["state_dict"][k], b["state_dict"][k]) for k in a["state_dict"])


@pytest.fixture(scope="module")
def trained(pairs, tmp_path_factory):
    """The same run without and with one round of self-training."""
    root = tmp_path_factory.mktemp("self")
    train(pairs, root / "once", options())
    # the second through the command line: --self-train reaches the library
    for side, k in (("src", 0), ("tgt", 1)):
        (root / f"train.{side}").write_text("".join(" ".join(p[k]) + "\n" for p in pairs))
    r = invoke("train", "--src", root / "train.src", "--tgt", root / "train.tgt", "--model", root / "twice",
               "--direction", "both", "--guide", "auto", "--align-head", "--hidden", "16", "--emb-dim", "8",
               "--epochs", "2", "--batch-tokens", "300", "--seed", "3", "--threads", "1",
               "--parallel-directions", "off", "--self-train", "1", "--quiet")
    assert r.exit_code == 0, r.stderr
    return root


def test_the_round_learns_what_align_corpus_writes_with_the_first_model(pairs, trained):
    expected = _model_links(trained / "once", pairs, "cpu")
    guide, _ = read_alignments(trained / "twice" / GUIDE, fmt="pharaoh")
    assert [sorted(a.links) for a in guide] == expected and sum(map(len, expected)) > 1000
    # a fresh student learned from them: other weights than the first round's, both rounds logged
    for d in ("forward", "reverse"):
        assert not same_weights(load_checkpoint(trained / "once" / f"{d}.pt"),
                                load_checkpoint(trained / "twice" / f"{d}.pt"))
    with open(trained / "twice" / "log.csv") as f:
        rounds = [(r["direction"], r["round"]) for r in csv.DictReader(f)]
    assert rounds == [(d, k) for k in "01" for d in ("forward", "forward", "reverse", "reverse")]
    # align corpus still blends the self-trained student with the kept teacher
    r = invoke("align", "corpus", "--model", trained / "twice", "--src", SAMPLE / "train.en", "--tgt",
               SAMPLE / "train.fr", "-o", trained / "out.align", "--teacher", "on")
    assert r.exit_code == 0, r.stderr


class KillInRound:
    """Interrupts the second direction-run of round 1 (the fourth run started) at its step ``at``."""

    def __init__(self, at: int):
        self.at, self.starts = at, 0

    def start(self, *a):
        self.starts += 1

    def validation(self, row): pass
    def end(self): pass

    def step(self, step, loss, tps):
        if self.starts == 4 and step >= self.at:
            raise Kill


def test_resume_continues_the_round_it_stopped_in(pairs, trained, tmp_path):
    with pytest.raises(Kill):
        train(pairs, tmp_path / "m", options(self_train=1, save_every=2), reporter=KillInRound(5))
    cfg = (tmp_path / "m" / "config.json").read_text()
    assert '"self_train_round": 1' in cfg
    train(pairs, tmp_path / "m", TrainOptions(), resume=True)
    for d in ("forward", "reverse"):
        assert same_weights(load_checkpoint(trained / "twice" / f"{d}.pt"),
                            load_checkpoint(tmp_path / "m" / f"{d}.pt")), d


def round_steps(model_dir) -> dict[tuple[str, str], int]:
    """Each (direction, round)'s last logged step."""
    with open(model_dir / "log.csv") as f:
        return {(r["direction"], r["round"]): int(r["step"]) for r in csv.DictReader(f)}


def test_a_round_can_go_on_from_the_last_rounds_weights(pairs, trained, tmp_path):
    r = invoke("train", "--src", trained / "train.src", "--tgt", trained / "train.tgt", "--model",
               tmp_path / "m", "--direction", "both", "--guide", "auto", "--align-head", "--hidden", "16",
               "--emb-dim", "8", "--epochs", "2", "--batch-tokens", "300", "--seed", "3", "--threads", "1",
               "--parallel-directions", "off", "--self-train", "1", "--self-train-epochs", "0.01", "--quiet")
    assert r.exit_code == 0, r.stderr
    steps, first = round_steps(tmp_path / "m"), round_steps(trained / "twice")
    for d in ("forward", "reverse"):
        # round 0 as before; round 1 one update (0.01 of a pass, at least one) from round 0's weights:
        # a step of Adam moves each weight by about the learning rate, where a new student differs
        # everywhere
        assert steps[d, "0"] == first[d, "0"] > 10 and steps[d, "1"] == 1
        once, now = load_checkpoint(trained / "once" / f"{d}.pt"), load_checkpoint(tmp_path / "m" / f"{d}.pt")
        moved = max((w - once["state_dict"][k]).abs().max().item() for k, w in now["state_dict"].items())
        assert 0 < moved < 1e-2, d
        assert now["src_vocab"] == once["src_vocab"] and now["tgt_vocab"] == once["tgt_vocab"]
    # the copies the round started from are gone once the run has ended
    assert not list((tmp_path / "m").glob("*.start.pt"))


def test_resume_continues_a_round_that_goes_on(pairs, tmp_path):
    opts = options(self_train=1, self_train_epochs=1, save_every=2)
    train(pairs, tmp_path / "whole", opts)
    with pytest.raises(Kill):
        train(pairs, tmp_path / "m", opts, reporter=KillInRound(3))
    assert (tmp_path / "m" / "forward.start.pt").exists()
    train(pairs, tmp_path / "m", TrainOptions(), resume=True)
    for d in ("forward", "reverse"):
        assert same_weights(load_checkpoint(tmp_path / "whole" / f"{d}.pt"),
                            load_checkpoint(tmp_path / "m" / f"{d}.pt")), d


def test_self_training_needs_the_built_in_teacher(tmp_path):
    with pytest.raises(OptionError, match="--self-train"):
        TrainOptions.of(self_train=1, guide="links.align").check(has_guide_links=True)
    r = invoke("train", "--src", SAMPLE / "dev.en", "--tgt", SAMPLE / "dev.fr", "--model", tmp_path / "m",
               "--self-train", "1")
    assert r.exit_code == 2 and "--guide auto" in r.stderr and not (tmp_path / "m").exists()
    r = invoke("train", "--src", SAMPLE / "dev.en", "--tgt", SAMPLE / "dev.fr", "--model", tmp_path / "m",
               "--preset", "align", "--self-train", "9")
    assert r.exit_code == 2 and "--self-train" in r.stderr
    with pytest.raises(OptionError, match="--self-train-epochs"):
        TrainOptions.of(self_train=1, guide="auto", self_train_epochs=0).check()
    r = invoke("train", "--src", SAMPLE / "dev.en", "--tgt", SAMPLE / "dev.fr", "--model", tmp_path / "m",
               "--preset", "align", "--self-train-epochs", "1.5")
    assert r.exit_code == 2 and "add --self-train N" in r.stderr and not (tmp_path / "m").exists()


def test_a_damaged_kept_teacher_is_one_error(pairs, trained, tmp_path):
    import shutil

    from attnalign.errors import AttnAlignError

    shutil.copytree(trained / "once", tmp_path / "m")
    (tmp_path / "m" / "teacher.npz").write_bytes(b"not a zip")
    with pytest.raises(AttnAlignError, match="kept teacher"):
        _model_links(tmp_path / "m", pairs, "cpu")
