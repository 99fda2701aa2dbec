"""A teacher's matrices read for the pairs being aligned (:class:`TeacherView`; the teacher's corpus,
the model's training corpus followed by the new pairs, is a :class:`~attnalign.data.corpus.Corpus`), and
two teachers read as one (:class:`Stacked`). Torch-free.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


class TeacherView:
    """A teacher's matrices read for the pairs being aligned: pair ``k`` of them is pair ``index[k]`` of
    the teacher's corpus (``index`` None: the same pair). ``teacher``: anything with ``pairs`` (the pairs
    it learned from) and ``matrices(lo, hi)`` (a fitted ``statistical.SoftTeacher``, a kept one)."""

    def __init__(self, teacher, index: Sequence[int] | None = None):
        self.teacher = teacher
        self.index = None if index is None else np.asarray(index, dtype=np.int64)
        self.pairs = teacher.pairs  # what selects the blend: the pairs it learned from
        self.aligned = teacher.pairs if index is None else len(self.index)  # the pairs it can be read for

    def matrices(self, lo: int, hi: int) -> list[np.ndarray]:
        """The ``[T, S]`` matrices of aligned pairs ``lo..hi``, read in runs of consecutive positions."""
        if self.index is None:
            return self.teacher.matrices(lo, hi)
        ids, out, k = self.index[lo:hi], [], 0
        while k < len(ids):
            end = k + 1
            while end < len(ids) and ids[end] == ids[end - 1] + 1:
                end += 1
            out += self.teacher.matrices(int(ids[k]), int(ids[end - 1]) + 1)
            k = end
        return out


class Stacked:
    """Two teachers read as one corpus: ``first``'s pairs, then ``then``'s (the teacher ``train`` kept,
    then one that went on from its counts over the pairs it lacks)."""

    def __init__(self, first, then):
        self.first, self.then = first, then
        self.pairs = first.pairs + then.pairs

    def matrices(self, lo: int, hi: int) -> list[np.ndarray]:
        n = self.first.pairs
        return (self.first.matrices(lo, min(hi, n)) if lo < n else []) + (
            self.then.matrices(max(lo, n) - n, hi - n) if hi > n else [])
