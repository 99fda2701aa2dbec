"""The alignment objectives beside the guide (training/objectives.py): hand-computed losses, a
known-answer task the lexical loss solves with no teacher, the agreement loss's effect on the two
directions, joint training's resume, and the options' errors."""

from __future__ import annotations

import math

import pytest
import torch
from helpers import SAMPLE
from test_align_head import shuffle_aers
from test_train import Kill, KillAt
from typer.testing import CliRunner

import attnalign.training.run as train_mod
from attnalign.cli import app
from attnalign.errors import OptionError
from attnalign.nmt.batching import make_batch
from attnalign.nmt.checkpoint import load_checkpoint, load_model
from attnalign.nmt.extract import corpus_attention
from attnalign.training import TrainOptions, train
from attnalign.training.objectives import agreement_loss, lexical_loss


def test_lexical_loss_by_hand():
    # one pair: source a b (+ EOS, the null word), target y (+ EOS); a second pair one word shorter on the
    # source side, whose padded column must not count
    b = make_batch([0, 1], [[5, 6], [5]], [[4], [4]])
    align = torch.tensor([[[0.5, 0.25, 0.25], [1 / 3, 1 / 3, 1 / 3]],
                          [[0.5, 0.5, 0.0], [0.5, 0.5, 0.0]]])  # [B, T+1, S+1]
    probs = torch.full((2, 3, 5), 0.15)  # p(y | x_j), V = 5: word 4 is y
    probs[0, :, 4] = torch.tensor([0.4, 0.2, 0.1])
    probs[1, :, 4] = torch.tensor([0.8, 0.3, 0.9])  # position 2 is padding in pair 1: never read
    got = lexical_loss(align, probs.log(), b.src_mask, b.tgt_out)
    pair0 = -math.log(0.5 * 0.4 + 0.25 * 0.2 + 0.25 * 0.1)  # 0.275
    pair1 = -math.log(0.5 * 0.8 + 0.5 * 0.3)  # 0.55
    assert got.item() == pytest.approx((pair0 + pair1) / 2, rel=1e-6)  # EOS rows left out


def test_agreement_loss_by_hand():
    fwd = torch.tensor([[[0.6, 0.3, 0.1], [0.2, 0.2, 0.6]]])  # [1, T+1, S+1]: 1 target word, 2 source
    rev = torch.tensor([[[0.8, 0.2], [0.5, 0.5], [0.9, 0.1]]])  # [1, S+1, T+1]
    # word cells only: (0.6 - 0.8)^2 + (0.3 - 0.5)^2 over T + S = 3 rows
    assert agreement_loss(fwd, rev, [2], [1]).item() == pytest.approx(0.08 / 3)
    same = rev.transpose(1, 2).clone()
    same[0, :, 2] = 0.7  # the EOS column (null) and row are never compared
    same[0, 1] = 0.3
    assert agreement_loss(same, rev, [2], [1]).item() == 0.0


def test_known_answer_the_lexical_loss_aligns_with_no_teacher(tmp_path):
    # the shuffle task: the translation attention cannot align it; the head, told nothing but to explain
    # each target word by the source words it weights, aligns it exactly
    head, attention = shuffle_aers(tmp_path / "m", guided=False, lexicon_weight=1.0)
    assert head < 0.05
    assert attention > 0.3
    assert "lexicon" not in load_checkpoint(tmp_path / "m" / "forward.pt")["state_dict"]  # training only


@pytest.fixture(scope="module")
def sample_pairs():
    from attnalign.data.corpus import read_corpus

    return read_corpus(SAMPLE / "train.en", SAMPLE / "train.fr")[:300]


def _joint(**kw) -> TrainOptions:
    base = dict(direction="both", model_config={"hidden": 32, "emb_dim": 16, "align_head": True}, epochs=2,
                batch_tokens=300, seed=3, lexicon_weight=1.0)
    return TrainOptions(**{**base, **kw})


def _disagreement(model_dir, pairs) -> float:
    fwd = corpus_attention(load_model(model_dir, "forward"), pairs)
    rev = corpus_attention(load_model(model_dir, "reverse"), [(t, s) for s, t in pairs])
    return sum(float(((f - r.T) ** 2).sum()) for (f, _), (r, _) in zip(fwd, rev, strict=True))


def test_agreement_brings_the_two_directions_together(tmp_path, sample_pairs):
    train(sample_pairs, tmp_path / "apart", _joint())
    train(sample_pairs, tmp_path / "together", _joint(agree_weight=20.0))
    apart = _disagreement(tmp_path / "apart", sample_pairs[:50])
    together = _disagreement(tmp_path / "together", sample_pairs[:50])
    assert together < 0.5 * apart


def test_joint_resume_equals_an_uninterrupted_run(tmp_path, sample_pairs, monkeypatch):
    opts = _joint(agree_weight=1.0, save_every=2)
    train(sample_pairs, tmp_path / "full", opts)
    # every step reported; the bar counts both directions' steps: 12 = step 6 of each, just saved
    monkeypatch.setattr(train_mod.time, "perf_counter", iter(range(0, 10**6, 2)).__next__)
    with pytest.raises(Kill):
        train(sample_pairs, tmp_path / "killed", opts, reporter=KillAt(12))
    monkeypatch.undo()
    assert load_checkpoint(tmp_path / "killed" / "reverse.last.pt")["step"] == 6
    train(sample_pairs, tmp_path / "killed", TrainOptions(), resume=True)
    for name in ("forward.pt", "reverse.pt", "forward.last.pt", "reverse.last.pt"):
        a, b = load_checkpoint(tmp_path / "full" / name), load_checkpoint(tmp_path / "killed" / name)
        assert a["step"] == b["step"]
        assert all(torch.equal(a["state_dict"][k], b["state_dict"][k]) for k in a["state_dict"]), name


@pytest.mark.parametrize(("options", "message"), [
    ({"agree_weight": 1.0, "direction": "forward"}, "--direction both"),
    ({"agree_weight": 1.0, "parallel_directions": "on"}, "one process"),
    ({"lexicon_weight": -1.0}, "--lexicon-weight"),
    ({"agree_weight": float("nan")}, "--agree-weight"),
    ({"lexicon_weight": 1.0, "model_config": {}}, "--align-head"),
])
def test_objective_options_are_checked_before_any_work(tmp_path, options, message):
    with pytest.raises(OptionError, match=message):
        train([(["a"], ["b"])], tmp_path / "m", _joint(**options))
    assert not (tmp_path / "m").exists()


def test_cli_objectives_reach_the_run(tmp_path):
    base = ["train", "--src", str(SAMPLE / "dev.en"), "--tgt", str(SAMPLE / "dev.fr"), "--model",
            str(tmp_path / "m"), "--align-head", "--hidden", "16", "--emb-dim", "8", "--max-steps", "2",
            "--quiet"]
    # no --guide: the lexical loss alone teaches the head
    r = CliRunner().invoke(app, [*base, "--lexicon-weight", "0.5", "--agree-weight", "2",
                                 "--direction", "both"])
    assert r.exit_code == 0, r.output
    import json

    saved = json.loads((tmp_path / "m" / "config.json").read_text())["train_options"]
    assert (saved["lexicon_weight"], saved["agree_weight"]) == (0.5, 2.0)
    assert "lexicon" in load_checkpoint(tmp_path / "m" / "reverse.last.pt")  # resumable with its lexicon
    r = CliRunner().invoke(app, [*base, "--lexicon-weight", "1", "--agree-weight", "1", "--overwrite"])
    assert r.exit_code == 2 and "--direction both" in r.output
