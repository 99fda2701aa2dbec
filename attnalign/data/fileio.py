"""Safe output files: everything attnalign writes appears whole or not at all, and nothing a user owns
is replaced by accident.

:func:`atomic_open` writes a regular file through a temporary file beside it and renames it over the
target only when the block ends without an error, so a failed or killed run never leaves a half-written
output (and never clobbers a good one). A symlink is followed (its target is replaced, the link stays);
a device node or a FIFO (``/dev/null``, ``/dev/stdout``, a named pipe) is written through, never
replaced. ``-`` means stdout. Temporary files carry the writer's process id, so one left by a killed
run is removed by the next write beside it.

:func:`check_writable` and :func:`check_distinct` fail before long work, not after it: an output that
cannot be written, or that names one of the run's inputs (or another of its outputs).
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import json
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO

from ..errors import AttnAlignError, OptionError, path_text  # noqa: F401 (path_text: its home for data/)

STDIO = "-"
# What train writes in a model directory (training/model_dir.py), and the blend align corpus --tune-gold
# chose for it (combine/tune.py): no command's output replaces one, train --overwrite replaces them all.
TEACHER_FILE, SELF_GUIDE, BLEND_FILE = "teacher.npz", "self_guide.align", "blend.json"
CONFIG_FILE = "train.toml"  # the run's options as train --config reads them (training/config_file.py)
MODEL_DIR_FILES = frozenset({"config.json", "log.csv", TEACHER_FILE, SELF_GUIDE, BLEND_FILE, CONFIG_FILE} | {
    f"{d}{ext}" for d in ("forward", "reverse") for ext in (".pt", ".last.pt", ".start.pt")})


def is_stdio(path: str | os.PathLike | None) -> bool:
    return path is not None and str(path) == STDIO


def _special(p: Path) -> bool:
    """An existing path that is not a regular file or a directory (device, FIFO, socket)."""
    try:
        mode = os.stat(p).st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def check_writable(path: str | os.PathLike, what: str = "output file") -> Path:
    """Raise a clear error now if ``path`` cannot be created or replaced."""
    p = Path(path)
    if is_stdio(p) or _special(p):
        return p
    if p.is_dir():
        raise AttnAlignError(f"{what} is a directory", path=p, hint="give a file name")
    target = Path(os.path.realpath(p))
    parent = target.parent
    if not parent.exists():
        raise AttnAlignError(
            f"the folder for the {what} does not exist", path=p, hint=f"create it: mkdir -p {parent}"
        )
    if not os.access(parent, os.W_OK) or (target.exists() and not os.access(target, os.W_OK)):
        raise AttnAlignError(f"{what} is not writable", path=p, hint="check the permissions")
    if target.name in MODEL_DIR_FILES and is_model_dir(parent):
        raise OptionError(f"the {what} would replace {target.name} of the attnalign model directory {parent}",
                          path=p, hint="write it to another file; the model would be lost")
    return p


def is_model_dir(folder: Path) -> bool:
    """Whether ``folder`` holds an attnalign model (its ``config.json`` lists directions)."""
    try:
        config = json.loads((folder / "config.json").read_bytes())
    except (OSError, ValueError):
        return False
    return isinstance(config, dict) and "directions" in config


def same_file(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """Whether two paths name the same file (through links and ``..``); stdio is never the same."""
    if is_stdio(a) or is_stdio(b):
        return False
    try:
        return os.path.samefile(a, b)
    except OSError:  # one does not exist yet
        return os.path.realpath(a) == os.path.realpath(b)


def check_distinct(outputs: Mapping[str, str | os.PathLike | None],
                   inputs: Mapping[str, str | os.PathLike | None]) -> None:
    """Refuse an output that names an input or another output (``{option: path}``; None: not given)."""
    outs = [(k, v) for k, v in outputs.items() if v is not None and not _special(Path(v))]
    ins = [(k, v) for k, v in inputs.items() if v is not None]
    for i, (name, path) in enumerate(outs):
        for other, used in [*ins, *outs[:i]]:
            if same_file(path, used):
                kind = "input" if (other, used) in ins else "output"
                raise OptionError(f"{name} names the same file as the {kind} {other}", path=path,
                                  hint=f"write {name} to another file; {other} would be lost")


def write_error(path: str | os.PathLike, e: OSError) -> AttnAlignError:
    """The error for a write to ``path`` that failed (a full disk, a quota, an I/O error): the file is
    named, and the old one, if any, is untouched."""
    return AttnAlignError(f"cannot write the file ({e.strerror or e}); the earlier file, if any, is kept",
                          path=path, hint="check the free space of its disk (df -h), or write elsewhere")


def check_one_stdin(inputs: Mapping[str, str | os.PathLike | None]) -> None:
    """Refuse two inputs read from stdin (``-``): the second would read what the first left, nothing."""
    named = [k for k, v in inputs.items() if v is not None and is_stdio(v)]
    if len(named) > 1:
        raise OptionError(f"{named[0]} and {named[1]} both read stdin (-); only one input can",
                          hint="give one of them as a file, or as a process substitution <(...)")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def _stem(target: Path) -> str:
    """The part of ``target``'s name its temporary files carry: the name, or for a name so long that
    ``.NAME.PID.XXXXXXXX.tmp`` would pass the file system's 255 bytes, its start and a hash of it."""
    name = target.name
    if len(name.encode("utf-8", "surrogateescape")) <= 120:
        return name
    digest = hashlib.sha256(name.encode("utf-8", "surrogateescape")).hexdigest()[:12]
    return name.encode("utf-8", "surrogateescape")[:80].decode("utf-8", "ignore") + "~" + digest


def _left_by_killed_writers(target: Path, suffix: str) -> list[Path]:
    """The ``.STEM.PID.*SUFFIX`` files or folders beside ``target`` whose writer's process is gone."""
    left = []
    stem = _stem(target)
    with contextlib.suppress(OSError):
        for tmp in target.parent.glob(f".{glob.escape(stem)}.*{suffix}"):
            pid = tmp.name[len(stem) + 2:].split(".", 1)[0]
            if pid.isdigit() and int(pid) != os.getpid() and not _pid_alive(int(pid)):
                left.append(tmp)
    return left


def clean_stale_temps(target: Path) -> None:
    """Remove temporary files of ``target`` left by writers that were killed (their process is gone)."""
    for tmp in _left_by_killed_writers(target, ".tmp"):
        tmp.unlink(missing_ok=True)


@contextlib.contextmanager
def atomic_open(
    path: str | os.PathLike, mode: str = "w", encoding: str | None = "utf-8", *, entry: bool = False
) -> Iterator[IO]:
    """Open ``path`` for writing: a regular file (or a new one, or a symlink's target) through a
    temporary file that replaces it on success; a device or FIFO directly; ``-`` is stdout. With
    ``entry`` (a model directory's own files, :func:`model_file_open`), the directory's entry itself is
    replaced: a symlink there is replaced by the file, never followed out of the directory, and a
    device or FIFO there is an error."""
    text = "b" not in mode
    p = Path(path)
    if entry:
        target = Path(os.path.realpath(p.parent)) / p.name
        if not target.is_symlink() and (_special(target) or target.is_dir()):
            raise AttnAlignError(f"{p.name} of the model directory is not a regular file (a folder, a "
                                 "device, a FIFO)", path=p,
                                 hint="remove it or move it away; attnalign writes the file there")
    elif is_stdio(path):
        stream = sys.stdout if text else sys.stdout.buffer
        yield stream
        stream.flush()
        return
    elif _special(p):
        with open(p, mode, encoding=encoding if text else None) as f:
            yield f
        return
    else:
        target = Path(os.path.realpath(p))  # a symlink stays a symlink; its target gets the new content
    clean_stale_temps(target)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{_stem(target)}.{os.getpid()}.", suffix=".tmp",
                                   dir=target.parent)
    except OSError as e:
        raise AttnAlignError(f"cannot write here ({e.strerror})", path=p,
                             hint="choose an output in a folder you can write to") from None
    try:
        kept_mode = target.exists() and not (entry and target.is_symlink())
        os.chmod(tmp, target.stat().st_mode & 0o7777 if kept_mode else 0o666 & ~_umask())
        with os.fdopen(fd, mode, encoding=encoding if text else None) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException as e:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(e, OSError) and e.filename is None and e.errno is not None:  # a write that failed
            raise write_error(p, e) from None
        raise


def model_file_open(path: str | os.PathLike, mode: str = "w") -> contextlib.AbstractContextManager[IO]:
    """Write one of a model directory's own files (:data:`MODEL_DIR_FILES`) atomically, replacing its
    entry in the directory: a link there that leads out of it is replaced, its target never written."""
    return atomic_open(path, mode, entry=True)


def inside(path: str | os.PathLike, folder: str | os.PathLike) -> bool:
    """Whether ``path`` is ``folder`` or lies under it (through links and ``..``)."""
    if is_stdio(path) or is_stdio(folder):
        return False
    p, d = os.path.realpath(path), os.path.realpath(folder)
    return p == d or p.startswith(d.rstrip(os.sep) + os.sep)


def _holds(path: Path, text: str) -> bool:
    """Whether the file ``path`` holds ``text`` in its first 4 KiB."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return text in f.read(4096)
    except OSError:
        return False


# The list of what atomic_dir wrote into a folder: what is not on it is the user's, and stays.
WRITTEN_LIST = ".attnalign-files"


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike, what: str = "output folder", marker: tuple[str, str] | None = None
               ) -> Iterator[Path]:
    """A folder written whole or not at all: the block fills a new folder beside ``path``, which
    replaces the old one only when the block ends without an error (a symlink stays; its target is
    replaced). A failed, interrupted or killed run leaves the old folder as it was: the swap's two
    renames complete, or the old folder goes back (by this process, or by the next writer where this
    one was killed between them). ``marker``: (file, text) that a folder attnalign wrote holds; any
    other folder with files in it is refused rather than replaced. The files the user added to an
    earlier folder (not on its :data:`WRITTEN_LIST`) move into the new one."""
    p = Path(path)
    if is_stdio(p):
        raise OptionError(f"the {what} cannot be stdout (-)", hint="give a folder name")
    target = Path(os.path.realpath(p))
    for old in _left_by_killed_writers(target, ".old"):  # a swap cut short between its renames
        if not target.exists():
            os.rename(old, target)
        else:
            shutil.rmtree(old, ignore_errors=True)
    if target.exists() and not target.is_dir():
        raise AttnAlignError(f"the {what} must be a folder", path=p, hint="give a folder name")
    if marker and target.is_dir() and any(target.iterdir()) and not _holds(target / marker[0], marker[1]):
        raise OptionError(f"the {what} holds files attnalign did not write; it would be replaced whole",
                          path=p, hint="give a new or empty folder, or an earlier report of attnalign's")
    parent = target.parent
    if not parent.is_dir():
        raise AttnAlignError(f"the folder for the {what} does not exist", path=p,
                             hint=f"create it: mkdir -p {parent}")
    for old in _left_by_killed_writers(target, ".new"):
        shutil.rmtree(old, ignore_errors=True)
    try:
        stage = Path(tempfile.mkdtemp(prefix=f".{_stem(target)}.{os.getpid()}.", suffix=".new", dir=parent))
    except OSError as e:
        raise AttnAlignError(f"cannot write here ({e.strerror})", path=p,
                             hint="choose an output in a folder you can write to") from None
    old = stage.with_name(stage.name[:-len(".new")] + ".old")
    try:
        os.chmod(stage, 0o777 & ~_umask())
        yield stage
        written = sorted(str(f.relative_to(stage)) for f in stage.rglob("*") if f.is_file())
        (stage / WRITTEN_LIST).write_text("".join(w + "\n" for w in written), encoding="utf-8")
        if target.exists():
            _keep_users_files(target, stage)
            os.rename(target, old)
            os.rename(stage, target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(stage, target)
    except BaseException:
        if old.exists() and not target.exists():  # interrupted between the two renames
            os.rename(old, target)
        if old.exists() and not stage.exists():
            shutil.rmtree(old, ignore_errors=True)
        shutil.rmtree(stage, ignore_errors=True)
        raise


def _keep_users_files(old: Path, new: Path) -> None:
    """Move the entries of the earlier folder ``old`` that attnalign did not write (not on its
    :data:`WRITTEN_LIST`) into ``new``, where the new run wrote nothing of that name. A folder written
    before the list was kept has no list: every entry the new run did not write again is kept."""
    try:
        ours = set((old / WRITTEN_LIST).read_text(encoding="utf-8").splitlines())
    except OSError:
        ours = None
    for f in sorted(old.rglob("*")):
        rel = f.relative_to(old)
        if not f.is_file() or str(rel) == WRITTEN_LIST or (ours is not None and str(rel) in ours):
            continue
        dest = new / rel
        if not dest.exists():
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.rename(f, dest)
