"""Safe output files: everything attnalign writes appears whole or not at all.

:func:`atomic_open` writes to a temporary file beside the target and renames it over the target only
when the block ends without an error, so a failed or killed run never leaves a half-written output
(and never clobbers a good one). :func:`check_writable` fails before long work, not after it.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from ..errors import AttnAlignError


def check_writable(path: str | os.PathLike, what: str = "output file") -> Path:
    """Raise a clear error now if ``path`` cannot be created or replaced."""
    p = Path(path)
    if p.is_dir():
        raise AttnAlignError(f"{what} is a directory", path=p, hint="give a file name")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.exists():
        raise AttnAlignError(
            f"the folder for the {what} does not exist", path=p, hint=f"create it: mkdir -p {parent}"
        )
    if not os.access(parent, os.W_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise AttnAlignError(f"{what} is not writable", path=p, hint="check the permissions")
    return p


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_open(
    path: str | os.PathLike, mode: str = "w", encoding: str | None = "utf-8"
) -> Iterator[IO]:
    """Open a temporary file beside ``path``; on success it replaces ``path`` atomically."""
    p = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent or ".")
    try:
        os.chmod(tmp, 0o666 & ~_umask())
        with os.fdopen(fd, mode, encoding=None if "b" in mode else encoding) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, p)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
