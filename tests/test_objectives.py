"""The agreement objective (training/objectives.py, training/joint.py): the loss by hand, its effect on
the two directions trained together, joint training's resume, and the options' errors."""

from __future__ import annotations

import csv

import pytest
import torch
from helpers import SAMPLE
from test_train import Kill, KillAt
from typer.testing import CliRunner

import attnalign.training.run as train_mod
from attnalign.cli import app
from attnalign.errors import OptionError
from attnalign.nmt.checkpoint import load_checkpoint, load_model
from attnalign.nmt.extract import corpus_attention
from attnalign.training import TrainOptions, train
from attnalign.training.objectives import agreement_loss


def test_agreement_loss_by_hand():
    fwd = torch.tensor([[[0.6, 0.3, 0.1], [0.2, 0.2, 0.6]]])  # [1, T+1, S+1]: 1 target word, 2 source
    rev = torch.tensor([[[0.8, 0.2], [0.5, 0.5], [0.9, 0.1]]])  # [1, S+1, T+1]
    # word cells only: (0.6 - 0.8)^2 + (0.3 - 0.5)^2 over T + S = 3 rows
    assert agreement_loss(fwd, rev, [2], [1]).item() == pytest.approx(0.08 / 3)
    same = rev.transpose(1, 2).clone()
    same[0, :, 2] = 0.7  # the EOS column (null) and row are never compared
    same[0, 1] = 0.3
    assert agreement_loss(same, rev, [2], [1]).item() == 0.0


@pytest.fixture(scope="module")
def sample_pairs():
    from attnalign.data.corpus import read_corpus

    return read_corpus(SAMPLE / "train.en", SAMPLE / "train.fr")[:300]


def csv_rows(path) -> list[dict]:
    with open(path) as f:
        return list(csv.DictReader(f))


def _joint(**kw) -> TrainOptions:
    base = dict(direction="both", model_config={"hidden": 32, "emb_dim": 16, "align_head": True}, epochs=2,
                batch_tokens=300, seed=3, guide="auto")
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
    assert together < 0.8 * apart  # 0.69 here: the shared guide already brings them close


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
    ({"agree_weight": -1.0}, "--agree-weight"),
    ({"agree_weight": float("nan")}, "--agree-weight"),
    ({"agree_weight": 1.0, "model_config": {}}, "--align-head"),
])
def test_objective_options_are_checked_before_any_work(tmp_path, options, message):
    with pytest.raises(OptionError, match=message):
        train([(["a"], ["b"])], tmp_path / "m", _joint(**options))
    assert not (tmp_path / "m").exists()


def test_cli_objectives_reach_the_run(tmp_path):
    base = ["train", "--src", str(SAMPLE / "dev.en"), "--tgt", str(SAMPLE / "dev.fr"), "--model",
            str(tmp_path / "m"), "--align-head", "--hidden", "16", "--emb-dim", "8", "--max-steps", "2",
            "--quiet"]
    r = CliRunner().invoke(app, [*base, "--guide", "auto", "--agree-weight", "2", "--direction", "both"])
    assert r.exit_code == 0, r.output
    import json

    saved = json.loads((tmp_path / "m" / "config.json").read_text())["train_options"]
    assert saved["agree_weight"] == 2.0
    assert {r["direction"] for r in csv_rows(tmp_path / "m" / "log.csv")} == {"forward", "reverse"}
    r = CliRunner().invoke(app, [*base, "--guide", "auto", "--agree-weight", "1", "--overwrite"])
    assert r.exit_code == 2 and "--direction both" in r.output
