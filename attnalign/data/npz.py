"""Reading ``.npz`` files that may be damaged or hostile: every array's header is checked against the
bytes its zip entry holds and against the machine's memory before anything is allocated (a header that
claims 64 GB in a file of a few bytes is a damaged file, not an allocation). Torch-free."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import numpy as np

from ..errors import AttnAlignError

# A container's memory limit (cgroup v2, then v1), which the physical memory does not show: "max" or a
# number beyond the machine's means none.
CGROUP_LIMITS = ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")


def machine_memory() -> int | None:
    """The memory this process may use in bytes: the machine's physical memory, or its container's
    limit where that is lower (None where the system says neither)."""
    try:
        known = [os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")]
    except (ValueError, OSError, AttributeError):
        known = []
    for path in CGROUP_LIMITS:
        try:
            text = Path(path).read_text(encoding="ascii").strip()
        except (OSError, UnicodeDecodeError):
            continue
        if text.isdigit() and int(text) > 0:
            known.append(int(text))
    return min(known) if known else None


def check_members(npz, path: str | os.PathLike, what: str, entry_bytes: int | None = None) -> None:
    """Raise an :class:`AttnAlignError` naming ``path`` (a ``what``) unless every array of the open
    ``numpy.load`` result ``npz`` declares no more data than its zip entry holds, no more than this
    machine's memory and, with ``entry_bytes``, no more than that (what one entry of such a file can
    hold: a compressed entry may truly inflate to gigabytes)."""
    memory = machine_memory()
    for info in npz.zip.infolist():
        try:
            with npz.zip.open(info) as f:
                version = np.lib.format.read_magic(f)
                read = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                        else np.lib.format.read_array_header_2_0)
                shape, _, dtype = read(f)
                header = f.tell()
        except (ValueError, OSError, zipfile.BadZipFile, EOFError) as e:
            raise AttnAlignError(f"the {what} has a damaged entry {info.filename!r} ({str(e)[:120]})",
                                 path=Path(path), hint="write the file again") from None
        need = int(np.prod(shape, dtype=np.float64)) * dtype.itemsize
        if need + header > info.file_size:
            raise AttnAlignError(f"the {what}'s entry {info.filename!r} claims {need:,} bytes but holds "
                                 f"{info.file_size - header:,}: the file is damaged", path=Path(path),
                                 hint="write the file again")
        if entry_bytes is not None and need > entry_bytes:
            raise AttnAlignError(f"the {what}'s entry {info.filename!r} claims {need / 2**20:,.0f} MiB, more "
                                 f"than any entry of it holds ({entry_bytes / 2**20:,.0f} MiB): the file is "
                                 "damaged or not attnalign's", path=Path(path), hint="write the file again")
        if memory is not None and need > memory:
            raise AttnAlignError(f"the {what}'s entry {info.filename!r} needs {need / 2**30:,.1f} GiB, more "
                                 f"than this machine's {memory / 2**30:,.1f} GiB", path=Path(path),
                                 hint="read it on a larger machine, or write it again")
