"""The teacher of a guided model, kept: its soft matrices of the training corpus in the model directory
(``teacher.npz``), so that ``align corpus`` on that corpus reads them instead of training the teacher a
second time, and the counts its models learned (:mod:`.learned`), so that on other sentences it goes on
from them instead of starting from nothing. Torch-free.

The file is a NumPy ``.npz``: ``cells`` (every pair's ``[T, S]`` matrix, row-major, one after the
other, each weight as a byte: round(255 w)), ``shapes`` (``[n, 2]``: T and S per pair, in corpus
order; a pair with an empty side has no cells), ``keys`` (``[n]``: each pair's
:func:`~attnalign.data.corpus.pair_keys`, so that any part of the corpus finds its matrices), ``meta``
(JSON: the teacher's options and the corpus fingerprint) and, for the models that keep them,
``kept.<model>.<fwd|rev>.<array>`` (:meth:`.learned.KeptCounts.arrays`). A byte per cell keeps
310,000 Hansards pairs under 200 MB; the rounding (at most 1/510) is far below what moves a link across
the decoding threshold.
"""

from __future__ import annotations

import json
import os
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ..data.fileio import TEACHER_FILE, model_file_open, path_text
from ..data.npz import check_members
from ..errors import AttnAlignError, warn
from .ids import CHUNK_PAIRS, chunks
from .learned import KeptCounts
from .options import DEFAULT

FILE = TEACHER_FILE
_SIDES = ("fwd", "rev")
_LEVELS = 255
# what reading a damaged or foreign teacher file raises
READ_ERRORS = (OSError, ValueError, KeyError, EOFError, AttributeError, zipfile.BadZipFile)


def teacher_meta(options: dict, fingerprint: str, pairs: int) -> dict:
    """What a kept teacher must match to be used: the teacher's options (``TeacherOptions`` as a
    dict), the corpus fingerprint and its number of pairs."""
    return {"options": options, "fingerprint": fingerprint, "pairs": pairs}


def save_matrices(path: str | os.PathLike, teacher, keep: list[int], shapes: list[tuple[int, int]],
                  meta: dict, keys: np.ndarray | None = None) -> None:
    """Write ``teacher``'s matrices (a fitted :class:`.align.SoftTeacher` over the pairs ``keep`` of a
    corpus whose pairs have ``shapes`` (T, S) and ``keys``, in order) to ``path``, atomically."""
    offsets = np.zeros(len(shapes) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([t * s for t, s in shapes])
    cells = np.zeros(int(offsets[-1]), dtype=np.uint8)
    for lo, hi in chunks(len(keep), CHUNK_PAIRS):
        for k, m in zip(keep[lo:hi], teacher.matrices(lo, hi), strict=True):
            cells[offsets[k]:offsets[k + 1]] = np.rint(np.clip(m, 0.0, 1.0) * _LEVELS).ravel()
    kept = {name: array for model, sides in getattr(teacher, "kept", {}).items()
            for side, counts in zip(_SIDES, sides, strict=True)
            for name, array in counts.arrays(f"kept.{model}.{side}.").items()}
    if keys is not None:
        kept["keys"] = np.asarray(keys, dtype=np.uint64)
    with model_file_open(path, "wb") as f:
        np.savez(f, cells=cells, shapes=np.asarray(shapes, dtype=np.int64).reshape(-1, 2),
                 meta=np.array(json.dumps(meta)), **kept)


class SavedTeacher:
    """A kept teacher: :meth:`matrices` as a fitted :class:`.align.SoftTeacher` gives them; ``keys``:
    its pairs' keys (None in a file kept before they were)."""

    def __init__(self, path: str | os.PathLike):
        with np.load(Path(path), allow_pickle=False) as z:
            check_members(z, path, "kept teacher")
            self.meta = json.loads(str(z["meta"]))
            shapes = z["shapes"]
            self._cells = z["cells"]
            self.keys = z["keys"] if "keys" in z.files else None
        if not isinstance(self.meta, dict) or shapes.ndim != 2 or shapes.shape[1] != 2 \
                or shapes.dtype.kind not in "iu" or (shapes < 0).any() or self._cells.dtype != np.uint8:
            raise ValueError("not a teacher file")
        if self.keys is not None and (self.keys.dtype != np.uint64 or self.keys.shape != (len(shapes),)):
            raise ValueError("the teacher file's keys do not match its shapes")
        self._shapes = shapes
        self._offsets = np.concatenate([[0], np.cumsum(shapes[:, 0] * shapes[:, 1])])
        if self._offsets[-1] != len(self._cells):
            raise ValueError("the teacher file's cells do not match its shapes")
        self.pairs = len(shapes)

    def matrices(self, lo: int, hi: int) -> list[np.ndarray]:
        """The ``[T, S]`` matrices of pairs ``lo..hi``."""
        return [self._cells[self._offsets[k]:self._offsets[k + 1]].reshape(self._shapes[k]) / _LEVELS
                for k in range(lo, hi)]


def _stored_options(meta: dict) -> dict | None:
    """The teacher options a file was kept with, an option it lacks (kept before the option existed)
    at its default, which that teacher had."""
    options = meta.get("options")
    return {**DEFAULT.as_kwargs(), **options} if isinstance(options, dict) else None


_WARNED: set[Path] = set()  # the damaged teacher files a run has warned of


def _read(model_dir: str | os.PathLike, read: Callable, fingerprint: str | None = None):
    """``read(z, meta)`` of the model directory's teacher file (the open ``.npz`` and its meta), or
    None where there is none, it cannot be read, or it was kept for another training corpus than the
    model's (``fingerprint``: the model's, as its ``config.json`` records it; None: not checked)."""
    path = Path(model_dir) / FILE
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as z:
            check_members(z, path, "kept teacher")
            meta = json.loads(str(z["meta"]))
            if not isinstance(meta, dict):
                raise ValueError("its meta is not a JSON object")
            if fingerprint is not None and meta.get("fingerprint") != fingerprint:
                warn(f"{path_text(path)} was kept for another training corpus than the model's (it is "
                     "another model's teacher): it is not used")
                return None
            return read(z, meta)
    except (*READ_ERRORS, AttnAlignError):
        # said in our words, once a run: numpy's own ("load it unsafely") reads as advice to do so
        if path not in _WARNED:
            _WARNED.add(path)
            warn(f"{path_text(path)} is damaged (not a teacher file attnalign wrote): it is not used, and a "
                 "teacher is trained again where one is needed")
        return None


def load_matching(model_dir: str | os.PathLike, options: dict, pairs: int,
                  fingerprint: Callable[[], str]) -> SavedTeacher | None:
    """The model directory's kept teacher if it was kept with these teacher ``options`` for a corpus of
    ``pairs`` pairs whose fingerprint is ``fingerprint()`` (asked only when the rest matches: it reads
    the corpus); None if there is none, it was kept for other data or options, or it cannot be read
    (the teacher is then trained again, as if none were kept)."""
    def matching(z, meta):
        stored = {**meta, "options": _stored_options(meta)}
        if stored != teacher_meta(options, meta.get("fingerprint"), pairs):
            return None
        if meta["fingerprint"] != fingerprint():
            return None
        return SavedTeacher(Path(model_dir) / FILE)

    return _read(model_dir, matching)


def load_keyed(model_dir: str | os.PathLike, options: dict, fingerprint: str | None = None
               ) -> SavedTeacher | None:
    """The model directory's kept teacher if it was kept with these teacher ``options`` and records its
    pairs' keys; else None (none kept, other options, a file from before keys were kept, or one that
    cannot be read)."""
    def keyed(z, meta):
        if _stored_options(meta) != options or "keys" not in z.files:
            return None
        return SavedTeacher(Path(model_dir) / FILE)

    return _read(model_dir, keyed, fingerprint)


def load_kept(model_dir: str | os.PathLike, options: dict, fingerprint: str | None = None
              ) -> tuple[dict, int] | None:
    """The counts the model directory's kept teacher learned (per model name, both directions'
    :class:`.learned.KeptCounts`: :class:`.align.SoftTeacher`'s ``kept``) and its number of training
    pairs, if it was kept with these teacher ``options`` and holds them; else None (none kept, other
    options, a file from before counts were kept, or one that cannot be read)."""
    def counts(z, meta):
        if _stored_options(meta) != options:
            return None
        models = sorted({n.split(".")[1] for n in z.files if n.startswith("kept.")})
        kept = {m: tuple(KeptCounts.from_arrays(z, f"kept.{m}.{side}.") for side in _SIDES) for m in models}
        return (kept, int(meta["pairs"])) if kept else None

    return _read(model_dir, counts, fingerprint)
