"""Saved attention matrices: a streamable ``.npz`` file. Torch-free.

The file is an ordinary NumPy ``.npz`` (a zip of ``.npy`` arrays) written entry by entry, so a corpus
of any size streams to disk with flat memory, and ``numpy.load`` reads any pair lazily::

    z = numpy.load("attention.npz")
    meta = json.loads(str(z["meta"]))          # model, direction, layer, head, shift, ...
    m = z["att_42"]                            # pair 42 (0-based line): [T_tgt, S_src] float32
    src, tgt = z["src_42"], z["tgt_42"]        # its tokens (unicode arrays)
    eos = z["eos_42"]                          # [T_tgt] attention mass on the source EOS

``att_42`` is the matrix the links were decoded from (the forward attention, its mean with the reverse
one under ``--sym soft``, either blended with the statistical teacher where one joined). Where the run
read the reverse direction, ``rev_42`` holds the reverse matrix it read, turned to ``[T_tgt, S_src]``,
and ``reveos_42`` the reverse direction's EOS mass per source word ``[S_src]``; where ``att_42`` is not
the forward matrix itself, ``fwd_42`` holds that. ``meta`` records the decoding (``sym``, ``decoder``,
``threshold``, ``teacher``: the teacher's weight), so that the links can be read again exactly.
Pairs skipped (too long) have no entries. :func:`read_attention` returns one pair as a record.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import AttnAlignError
from .corpus import copied_stream, is_piped
from .npz import check_members

# One entry of an attention file is one pair's matrix: 256 MiB is an 8,192 x 8,192 float32 matrix, far
# beyond any sentence pair.
ENTRY_BYTES = 256 << 20

_PAIR_ENTRY = re.compile(r"att_\d{1,12}\.npy")


class AttentionWriter:
    """Write pairs' matrices one by one into an open binary file (see :mod:`attnalign.data.fileio`)."""

    def __init__(self, fileobj, meta: dict):
        self.zip = zipfile.ZipFile(fileobj, mode="w", compression=zipfile.ZIP_STORED, allowZip64=True)
        self._put("meta", np.array(json.dumps(meta)))

    def _put(self, name: str, arr: np.ndarray) -> None:
        with self.zip.open(name + ".npy", "w", force_zip64=True) as f:
            np.lib.format.write_array(f, np.asarray(arr), allow_pickle=False)

    def add(self, index: int, src: list[str], tgt: list[str], matrix: np.ndarray, eos: np.ndarray,
            reverse: np.ndarray | None = None, *, forward: np.ndarray | None = None,
            reverse_eos: np.ndarray | None = None) -> None:
        """One pair: ``matrix`` the links were decoded from, ``eos`` ``[T]``; ``reverse`` ``[T, S]`` and
        ``reverse_eos`` ``[S]`` where the reverse direction was read; ``forward`` where it is not
        ``matrix``."""
        self._put(f"att_{index}", matrix.astype(np.float32))
        self._put(f"eos_{index}", eos.astype(np.float32))
        self._put(f"src_{index}", np.array(src, dtype=str))
        self._put(f"tgt_{index}", np.array(tgt, dtype=str))
        for name, arr in (("rev", reverse), ("reveos", reverse_eos), ("fwd", forward)):
            if arr is not None:
                self._put(f"{name}_{index}", arr.astype(np.float32))

    def exit(self, kind, error, trace) -> bool:
        """A context exit: close the file, or after an error (the run's, or a full disk) abandon it
        quietly, so that the run's own error is the one said."""
        if kind is None:
            self.close()
        else:
            with contextlib.suppress(OSError, ValueError):
                self.close()
        return False

    def close(self) -> None:
        """Write the zip's directory; after a failed write (a full disk) the file is abandoned quietly:
        the error already said so, and the atomic output is not renamed into place."""
        try:
            self.zip.close()
        except (OSError, ValueError):
            self.zip.fp = None  # nothing more to write, also not from the ZipFile's destructor
            raise


@dataclass
class SavedPair:
    index: int
    src: list[str]
    tgt: list[str]
    matrix: np.ndarray  # [T_tgt, S_src] the links were decoded from
    eos: np.ndarray  # [T_tgt]
    reverse: np.ndarray | None  # [T_tgt, S_src] or None
    meta: dict
    forward: np.ndarray | None = None  # [T_tgt, S_src] the forward matrix read (None: matrix is it)
    reverse_eos: np.ndarray | None = None  # [S_src] or None


REWRITE = "write the file again with attnalign align corpus --save-attention"  # a damaged file's hint


def open_attention(path: str | os.PathLike):
    """Open a saved attention file (``numpy.load``), with a clear error if it is not one."""
    p = Path(path)
    if is_piped(p):  # stdin or a pipe: a zip is read from its end, so the stream is copied whole first
        try:
            p = copied_stream(p)
        except OSError as e:
            raise AttnAlignError(f"cannot read the attention file ({e.strerror})", path=path) from None
    if not p.exists():
        raise AttnAlignError("attention file not found", path=p,
                             hint="write one with: attnalign align corpus ... --save-attention FILE")
    if p.is_dir() or not zipfile.is_zipfile(p):  # said before numpy, whose own words are pickle advice
        raise AttnAlignError("not an attnalign attention file (an .npz file is a zip archive; this is not "
                             "one)", path=path, hint="give a file written by attnalign align corpus "
                                                     "--save-attention")
    try:
        z = np.load(p, allow_pickle=False)
        check_members(z, p, "attention file", ENTRY_BYTES)
        meta = json.loads(str(z["meta"]))
    except (zipfile.BadZipFile, KeyError, ValueError, OSError, AttributeError) as e:
        raise AttnAlignError(f"not an attnalign attention file ({e})", path=p) from None
    if not isinstance(meta, dict):
        raise AttnAlignError("not an attnalign attention file (its meta entry is not a JSON object)", path=p,
                             hint=REWRITE)
    return z


class AttentionFile:
    """A saved attention file, opened and checked once (:func:`open_attention`), read a pair at a time
    (:meth:`pair`): a report reads every gold sentence's pair, and opening the file for each would
    check every entry of it each time. A context manager that closes the file."""

    def __init__(self, path: str | os.PathLike):
        self.path = path
        self.z = open_attention(path)
        self.names = set(self.z.zip.namelist())
        self.meta = json.loads(str(self.z["meta"]))

    def __enter__(self) -> AttentionFile:
        return self

    def __exit__(self, *exc) -> bool:
        self.z.close()
        return False

    def indices(self) -> list[int]:
        """Indices of the pairs in the file, in file order."""
        names = [n for n in self.z.zip.namelist() if n.startswith("att_")]
        odd = [n for n in names if not _PAIR_ENTRY.fullmatch(n)]
        if odd:
            raise AttnAlignError(f"the attention file has an entry {odd[0]!r} that names no pair",
                                 path=self.path,
                                 hint=REWRITE)
        return [int(n[4:-4]) for n in names]

    def pair(self, index: int) -> SavedPair:
        """One pair (0-based corpus line), its arrays checked."""
        z, path = self.z, self.path
        if f"att_{index}.npy" not in self.names:
            raise AttnAlignError(f"the attention file has no pair {index} (skipped, or out of range)",
                                 path=path)
        try:
            rev, fwd, rev_eos = (z[f"{name}_{index}"] if f"{name}_{index}.npy" in self.names else None
                                 for name in ("rev", "fwd", "reveos"))
            pair = SavedPair(index, [str(t) for t in z[f"src_{index}"]], [str(t) for t in z[f"tgt_{index}"]],
                             z[f"att_{index}"], z[f"eos_{index}"], rev, self.meta, fwd, rev_eos)
        except (KeyError, ValueError, TypeError, OSError, zipfile.BadZipFile) as e:  # object arrays, cuts
            raise AttnAlignError(f"pair {index} of the attention file cannot be read ({str(e)[:200]})",
                                 path=path, hint=REWRITE) from None
        arrays = (("matrix", pair.matrix), ("EOS mass", pair.eos), ("reverse matrix", rev),
                  ("forward matrix", fwd), ("reverse EOS mass", rev_eos))
        for name, arr in arrays:
            if arr is not None and arr.dtype.kind not in "fiu":  # float, int, unsigned
                raise AttnAlignError(f"pair {index} of the attention file has a {name} of type {arr.dtype}, "
                                     "not real numbers", path=path,
                                     hint=REWRITE)
        shape = (len(pair.tgt), len(pair.src))
        shapes = (pair.matrix.shape, pair.eos.shape, shape if rev is None else rev.shape,
                  shape if fwd is None else fwd.shape, shape[1:] if rev_eos is None else rev_eos.shape)
        if shapes != (shape, shape[:1], shape, shape, shape[1:]):
            raise AttnAlignError(f"pair {index} of the attention file has a matrix of shape "
                                 f"{pair.matrix.shape} for {shape[0]} target and {shape[1]} source words",
                                 path=path)
        for _, arr in arrays:  # attention weights: 0-1, a float's rounding allowed
            if arr is not None and arr.size and not (
                    np.isfinite(arr).all() and 0 <= arr.min() <= arr.max() <= 1 + 1e-3):
                raise AttnAlignError(f"pair {index} of the attention file holds weights outside 0-1 (NaN, "
                                     "inf or negative)", path=path, hint=REWRITE)
        return pair


def read_attention(path: str | os.PathLike, index: int) -> SavedPair:
    """One pair (0-based corpus line) from a saved attention file (to read many, open an
    :class:`AttentionFile` once)."""
    with AttentionFile(path) as f:
        return f.pair(index)


def saved_indices(path: str | os.PathLike) -> list[int]:
    """Indices of the pairs in a saved attention file, in file order."""
    with AttentionFile(path) as f:
        return f.indices()
