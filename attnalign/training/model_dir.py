"""The model directory a training run writes: ``config.json`` (what was trained, with which options)
and ``log.csv`` (one row per validation); the checkpoints themselves are :mod:`attnalign.nmt.checkpoint`'s.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import json
import os
import shlex
import shutil
from collections.abc import Iterator
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from .. import dist
from .._version import __version__
from ..data.fileio import CONFIG_FILE, MODEL_DIR_FILES, model_file_open
from ..errors import AttnAlignError, OptionError, path_text
from ..nmt.checkpoint import FORMAT_VERSION, read_model_config
from .config_file import config_text
from .options import DIRECTIONS, TrainOptions, flag

LOG_FIELDS = ["direction", "epoch", "step", "train_loss", "dev_loss", "dev_ppl", "dev_aer",
              "tokens_per_s", "elapsed_s", "best", "round"]


def run_config(model_dir: Path) -> dict:
    """The ``config.json`` of the run ``--resume`` continues: an interrupted ``--overwrite`` run's
    staging directory, else ``model_dir``'s."""
    stage = staging_dir(model_dir)
    return read_model_config(stage if (stage / "config.json").exists() else model_dir)


def saved_options(model_dir: Path) -> TrainOptions:
    """The options the run in ``model_dir`` started with (``--resume`` continues with them)."""
    cfg = run_config(model_dir)
    if cfg.get("model_type") == "pretrained":
        raise OptionError("a fine-tuned pretrained model cannot be resumed", path=model_dir,
                          hint="run the fine-tuning again with --overwrite")
    if not isinstance(cfg.get("train_options"), dict):
        raise AttnAlignError("config.json records no training options to resume with",
                             path=model_dir, hint="start a new run with --overwrite")
    return TrainOptions.from_saved(cfg["train_options"])


@contextlib.contextmanager
def locked(model_dir: Path) -> Iterator[None]:
    """Hold the model directory for one run: a second run into it (two ``--overwrite`` runs would stage
    in the same folder) is refused, naming the process that holds it. An advisory lock, released by the
    kernel when the process ends however it ends, on a file named after the directory's real path in a
    folder of the temporary directory (nothing is added beside the user's files; the file stays, since
    removing it would let two runs lock two files). Under torchrun process 0 holds it."""
    if dist.world()[0] != 0 or os.name != "posix":
        yield
        return
    import fcntl
    import tempfile

    real = os.path.realpath(os.path.abspath(model_dir))
    folder = Path(tempfile.gettempdir()) / f"attnalign-locks-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    path = folder / (hashlib.sha256(real.encode("utf-8", "surrogatepass")).hexdigest()[:24] + ".lock")
    with open(path, "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            f.seek(0)
            holder = f.read().strip() or "another process"
            raise AttnAlignError(f"the model directory is being trained by process {holder}",
                                 path=model_dir, hint="wait for that run to end, or choose another --model "
                                                      "directory") from None
        f.seek(0)
        f.truncate()
        f.write(str(os.getpid()))
        f.flush()
        yield


def staging_dir(model_dir: Path) -> Path:
    """Where ``--overwrite`` trains the new model, beside the old one, until it is complete."""
    return model_dir.parent / f".{model_dir.name}.new"


def _recover(model_dir: Path) -> None:
    """Undo a swap cut short between its two renames: the old model goes back in place."""
    old = model_dir.parent / f".{model_dir.name}.old"
    if not model_dir.exists() and old.is_dir():
        old.rename(model_dir)


def written_by_attnalign(model_dir: Path, name: str) -> bool:
    """Whether the entry ``name`` of ``model_dir`` is one that ``train`` writes (the rest are the user's,
    and ``--overwrite`` keeps them): a folder named after a direction only in a fine-tuned model's."""
    if name in MODEL_DIR_FILES:
        return True
    try:
        return name in DIRECTIONS and read_model_config(model_dir).get("model_type") == "pretrained"
    except AttnAlignError:
        return False


def foreign_entries(model_dir: Path) -> list[str]:
    """The entries of ``model_dir`` under a name ``train`` writes that are not what it writes there (a
    folder named ``train.toml``, a device, a file named after a fine-tuned model's direction folder):
    the user's, which replacing the model would delete. A link is not among them: the model's own
    files replace a link, never its target."""
    try:
        pretrained = read_model_config(model_dir).get("model_type") == "pretrained"
    except AttnAlignError:
        pretrained = False
    bad = []
    for name in sorted(MODEL_DIR_FILES | (set(DIRECTIONS) if pretrained else set())):
        p = model_dir / name
        if p.is_symlink() or not os.path.lexists(p):
            continue
        own = p.is_dir() and (p / "config.json").is_file() if name in DIRECTIONS else p.is_file()
        if not own:
            bad.append(name)
    return bad


def check_replaceable(model_dir: Path) -> None:
    """Refuse, before any work, an ``--overwrite`` of a directory that is not an attnalign model, that
    this command runs in, or that holds entries of the user's under names the model's files take."""
    try:
        read_model_config(model_dir)
    except AttnAlignError:
        raise AttnAlignError("--overwrite replaces only an attnalign model directory; this one is not",
                             path=model_dir, hint="choose another --model directory") from None
    if Path.cwd().resolve().is_relative_to(model_dir.resolve()):
        raise OptionError("--overwrite cannot replace the folder this command runs in", path=model_dir,
                          hint=f"run it from the parent folder: cd {model_dir.parent} and give "
                               f"--model {model_dir.name}")
    bad = foreign_entries(model_dir)
    if bad:
        one = len(bad) == 1
        raise AttnAlignError(f"the model directory holds {', '.join(bad)}, which {'is' if one else 'are'} "
                             "not what attnalign train writes under that name; --overwrite would delete "
                             f"{'it' if one else 'them'}", path=model_dir,
                             hint="move or rename it, or choose another --model directory")


def needs_replacing(model_dir: Path) -> bool:
    """Whether ``model_dir`` holds something a new run's model would replace."""
    return model_dir.is_dir() and any(model_dir.iterdir())


def prepare_dir(model_dir: Path, overwrite: bool, resume: bool) -> Path:
    """The directory this run writes to: ``model_dir`` itself, or with ``overwrite`` of an existing
    model a staging directory that :func:`finish_dir` swaps in once the new model is complete (the old
    model stays usable until then, and stays if the run fails)."""
    model_dir = Path(os.path.abspath(model_dir))
    _recover(model_dir)
    stage = staging_dir(model_dir)
    if resume:
        if (stage / "config.json").exists():  # an interrupted --overwrite run
            read_model_config(stage)
            return stage
        read_model_config(model_dir)
        return model_dir
    if model_dir.exists() and not model_dir.is_dir():
        raise AttnAlignError("--model names a file, not a directory", path=model_dir,
                             hint="choose a directory name for the model")
    if needs_replacing(model_dir):
        if not overwrite:
            what = "files"
            if (model_dir / "config.json").exists():
                cfg = read_model_config(model_dir)
                done = set(cfg.get("finished", cfg["directions"])) >= set(cfg["directions"])
                what = "a model" if done else "an interrupted training run (--resume continues it)"
            raise AttnAlignError(f"the model directory already holds {what}", path=model_dir,
                                 hint="pass --overwrite to replace it, --resume to continue its training, "
                                      "or choose another --model directory")
        check_replaceable(model_dir)
        if stage.exists():
            shutil.rmtree(stage)
        stage.mkdir()
        return stage
    model_dir.mkdir(parents=True, exist_ok=True)
    return model_dir


def discard_unstarted(work_dir: Path, model_dir: Path, created: bool) -> None:
    """After a run that failed before its first checkpoint, remove what it wrote: it holds nothing to
    resume, and a directory of a ``config.json`` alone would be taken for an interrupted run. A staging
    directory goes whole (the old model stays); in ``model_dir`` the model's own files go, and the
    directory too where this run ``created`` it and nothing else is left. A run with a checkpoint
    stays, for ``--resume``."""
    work_dir, model_dir = Path(os.path.abspath(work_dir)), Path(os.path.abspath(model_dir))
    if not work_dir.is_dir() or any(work_dir.glob("*.pt")):
        return
    if work_dir != model_dir:
        shutil.rmtree(work_dir, ignore_errors=True)
        return
    for name in MODEL_DIR_FILES:
        p = work_dir / name
        if p.is_symlink() or p.is_file():
            p.unlink(missing_ok=True)
    if created:
        with contextlib.suppress(OSError):  # not empty: the user's files are kept
            work_dir.rmdir()


def finish_dir(work_dir: Path, model_dir: Path) -> None:
    """Put a complete staged model in place of the old one (see :func:`prepare_dir`); the files of the
    user's in the old directory (those ``train`` does not write) move into the new one."""
    model_dir = Path(os.path.abspath(model_dir))
    if Path(os.path.abspath(work_dir)) == model_dir:
        return
    for entry in model_dir.iterdir():
        if not written_by_attnalign(model_dir, entry.name) and not (work_dir / entry.name).exists():
            entry.rename(work_dir / entry.name)
    old = model_dir.parent / f".{model_dir.name}.old"
    if old.exists():
        shutil.rmtree(old)
    model_dir.rename(old)
    work_dir.rename(model_dir)
    shutil.rmtree(old)


def write_config(model_dir: Path, options: TrainOptions, directions: list[str], model_config: dict,
                 data: dict | None = None, finished: list[str] | None = None, self_round: int = 0,
                 model_type: str | None = None) -> None:
    """``config.json``: the network (``model_type``, else the options'), the options, what data the run
    saw (``data``: fingerprints and files, so that ``--resume`` can check and restore them), the
    directions whose training ended, and the self-training round they belong to (``--self-train``);
    and ``train.toml``: the options as ``train --config`` reads them, the network as it runs."""
    own = model_type is None
    payload = {
        "format_version": FORMAT_VERSION,
        "attnalign_version": __version__,
        "model_type": options.network.model_type if own else model_type,
        "model_config": model_config,
        "directions": directions,
        "lowercase": options.data.lowercase,
        "train_options": options.record(),
        "data": data or {},
        "finished": finished or [],
        **({"self_train_round": self_round} if self_round else {}),
        "libraries": libraries(),
    }
    with model_file_open(model_dir / "config.json") as f:
        json.dump(payload, f, indent=2)
        f.write("\n")
    config = shlex.quote(path_text(final_dir(model_dir) / CONFIG_FILE))
    comment = (f"The options of this model's training run (attnalign {__version__}), as the network ran.\n"
               f"To train it again: attnalign train --config {config} {data_options(data)} --model NEW\n"
               "Options typed beside --config win over this file's values (it names every one, so a "
               "--preset beside it changes nothing).")
    with model_file_open(model_dir / CONFIG_FILE) as f:
        f.write(config_text(options, model_config if own else None, comment))


def data_options(data: dict | None) -> str:
    """The command line's data options of a run (``config.json``'s ``data``): its files and how its
    gold was read, as ``train`` takes them."""
    files = (data or {}).get("files") or {}
    words = [f"{flag(k)} {shlex.quote(path_text(v))}" for k, v in files.items()
             if k in ("src", "tgt", "corpus", "dev_src", "dev_tgt", "dev_gold") and v]
    if not any(files.get(k) for k in ("src", "tgt", "corpus")):  # read from a stream
        words.insert(0, "--src SRC --tgt TGT")
    gold = files.get("gold_options") or {}
    if gold.get("encoding", "utf-8") != "utf-8":
        words.append(f"--encoding {shlex.quote(gold['encoding'])}")
    if gold.get("fmt", "auto") != "auto":
        words.append(f"--gold-format {shlex.quote(gold['fmt'])}")
    if gold.get("one_based") is not None:
        words.append("--gold-one-based" if gold["one_based"] else "--gold-zero-based")
    if gold.get("reverse"):
        words.append("--reverse-gold")
    return " ".join(words)


def final_dir(work_dir: Path) -> Path:
    """The model directory a run writes ``work_dir`` for: itself, or the one a staging directory
    (:func:`staging_dir`) will replace."""
    name = work_dir.name
    if name.startswith(".") and name.endswith(".new") and len(name) > 5:
        return work_dir.parent / name[1:-len(".new")]
    return work_dir


def libraries() -> dict[str, str | None]:
    """The versions of the libraries a run's result depends on: another sentencepiece can cut the same
    corpus into other pieces, so the same options, seed and data give another model (docs/benchmarks.md,
    "The student on a GPU")."""
    found = {}
    for name in ("torch", "sentencepiece", "numpy", "numba"):
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = None
    return found


def start_round(model_dir: Path, self_round: int, going_on: bool = False) -> None:
    """Record in ``config.json`` that self-training round ``self_round`` begins: no direction of it has
    finished (``--resume`` continues that round). ``going_on``: the round goes on from the weights
    of the round before, copied first to :func:`round_start` (the round overwrites the best checkpoint
    as it goes; a resumed round starts from the same weights)."""
    for direction in read_model_config(model_dir).get("directions", []) if going_on else []:
        best, start = model_dir / f"{direction}.pt", round_start(model_dir, direction)
        with model_file_open(start, "wb") as f:
            f.write(best.read_bytes())
    cfg = _update_config(model_dir, self_train_round=self_round, finished=[])
    for direction in cfg.get("directions", []):  # the last round's resumable state is done with
        (model_dir / f"{direction}.last.pt").unlink(missing_ok=True)


def round_start(model_dir: Path, direction: str) -> Path:
    """Where a self-training round that goes on from the round before finds that round's weights."""
    return model_dir / f"{direction}.start.pt"


def drop_round_starts(model_dir: Path) -> None:
    """Remove the rounds' starting weights once the run has ended (they are the last round's start)."""
    for direction in read_model_config(model_dir).get("directions", []):
        round_start(model_dir, direction).unlink(missing_ok=True)


def mark_finished(model_dir: Path, direction: str) -> None:
    """Record in ``config.json`` that ``direction`` finished training."""
    finished = read_model_config(model_dir).get("finished", [])
    _update_config(model_dir, finished=sorted({*finished, direction}))


def _update_config(model_dir: Path, **changes) -> dict:
    """Rewrite ``config.json`` (atomically) with ``changes``; the new config."""
    cfg = {**read_model_config(model_dir), **changes}
    with model_file_open(model_dir / "config.json") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    return cfg


def append_log(model_dir: Path, row: dict) -> None:
    path = model_dir / "log.csv"
    if path.is_symlink():  # the model's own file: never appended to through a link out of the directory
        path.unlink()
    with open(path, "a", newline="") as f:
        # the two directions' processes (--parallel-directions) append at once: one header, whole rows
        with contextlib.suppress(OSError, ImportError):
            import fcntl

            fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        fields = LOG_FIELDS
        if f.seek(0, os.SEEK_END) != 0:  # a log begun by an older version keeps its own columns
            with open(path, newline="") as r:
                fields = next(csv.reader(r), None) or LOG_FIELDS
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        if f.tell() == 0:
            w.writeheader()
        w.writerow({k: row.get(k) for k in fields})
