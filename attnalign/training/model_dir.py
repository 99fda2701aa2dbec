"""The model directory a training run writes: ``config.json`` (what was trained, with which options)
and ``log.csv`` (one row per validation); the checkpoints themselves are :mod:`attnalign.nmt.checkpoint`'s.
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

from .._version import __version__
from ..data.fileio import atomic_open
from ..errors import AttnAlignError
from ..nmt.checkpoint import FORMAT_VERSION, read_model_config
from .options import TrainOptions

LOG_FIELDS = ["direction", "epoch", "step", "train_loss", "dev_loss", "dev_ppl", "dev_aer",
              "tokens_per_s", "elapsed_s", "best"]


def saved_options(model_dir: Path) -> TrainOptions:
    """The options the run in ``model_dir`` started with (``--resume`` continues with them)."""
    return TrainOptions.from_saved(read_model_config(model_dir)["train_options"])


def prepare_dir(model_dir: Path, overwrite: bool, resume: bool) -> None:
    cfg = model_dir / "config.json"
    if resume:
        read_model_config(model_dir)
        return
    if model_dir.exists() and any(model_dir.iterdir()):
        if not overwrite:
            what = "a model" if cfg.exists() else "files"
            raise AttnAlignError(f"the model directory already holds {what}", path=model_dir,
                                 hint="pass --overwrite to replace it, --resume to continue its training, "
                                      "or choose another --model directory")
        if not cfg.exists():
            raise AttnAlignError("--overwrite refuses to empty a directory that is not a model directory",
                                 path=model_dir, hint="choose another --model directory")
        shutil.rmtree(model_dir)
    model_dir.mkdir(parents=True, exist_ok=True)


def write_config(model_dir: Path, options: TrainOptions, directions: list[str], model_config: dict) -> None:
    data = {
        "format_version": FORMAT_VERSION,
        "attnalign_version": __version__,
        "model_type": options.model_type,
        "model_config": model_config,
        "directions": directions,
        "lowercase": options.lowercase,
        "train_options": options.as_dict(),
    }
    with atomic_open(model_dir / "config.json") as f:
        json.dump(data, f, indent=2)
        f.write("\n")


def append_log(model_dir: Path, row: dict) -> None:
    path = model_dir / "log.csv"
    new = not path.exists()
    with open(path, "a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=LOG_FIELDS)
        if new:
            w.writeheader()
        w.writerow({k: row.get(k) for k in LOG_FIELDS})
