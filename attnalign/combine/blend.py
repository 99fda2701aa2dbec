"""The student's attention and its teacher's matrices, blended and decoded: :class:`Combined`."""

from __future__ import annotations

import copy
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace

import numpy as np

from ..decoding import SYMMETRIZATIONS
from ..decoding.policy import Decoding, TeacherPlan
from ..errors import AttnAlignError, OptionError
from ..nmt.aligner import AlignedPair, Aligner, read_links
from .views import TeacherView


def blend(student: np.ndarray, teacher: np.ndarray, weight: float) -> np.ndarray:
    """``(1 - weight) * student + weight * teacher``, both ``[T, S]``."""
    if student.shape != teacher.shape:
        raise ValueError(f"the student's matrix is {student.shape} but the teacher's {teacher.shape}")
    return (1 - weight) * student + weight * teacher


class Combined:
    """An :class:`~attnalign.nmt.aligner.Aligner`'s attention blended with a teacher's matrices
    (``teacher``: read for the pairs being aligned, the ``plan`` that found it) and decoded with
    ``decoding`` (every value given: :func:`attnalign.combine.run_decoding` decides it). Aligns as the
    aligner does (:meth:`align`), in one process."""

    def __init__(self, aligner: Aligner, teacher: TeacherView, plan: TeacherPlan, decoding: Decoding):
        self.aligner, self.teacher, self.plan, self.decoding = aligner, teacher, plan, decoding
        if SYMMETRIZATIONS[self.decoding.sym].both and aligner.reverse is None:
            raise OptionError(f"--sym {self.decoding.sym} needs the reverse direction, which this run did "
                              "not load", hint="give --sym explicitly")

    def with_decoding(self, decoding: Decoding) -> Combined:
        """The same blend decoded with ``decoding`` (every value given): a ``--tune-gold`` candidate, or
        its choice."""
        other = copy.copy(self)
        other.decoding = decoding
        return other

    @property
    def lowercase(self) -> bool:
        return self.aligner.lowercase

    @property
    def description(self) -> dict:
        """The aligner's settings with this decoding and the teacher's weight and pairs."""
        return {**self.aligner.describe(self.decoding), "teacher_pairs": self.plan.pairs}

    def blended(self, pair: AlignedPair, teacher: np.ndarray) -> AlignedPair:
        """``pair`` decoded from the blend of its attention with ``teacher`` (``[T, S]``): a new pair whose
        ``forward`` and ``reverse`` are the blends the links are read from (``pair`` is left as it is: a
        ``--tune-gold`` candidate reads it again)."""
        if pair.skipped:
            return pair
        w = self.decoding.teacher_weight
        return read_links(replace(pair, forward=blend(pair.forward, teacher, w),
                                  reverse=None if pair.reverse is None else blend(pair.reverse, teacher, w)),
                          self.decoding)

    def align_pairs(self, pairs: Sequence, start: int = 0) -> list[AlignedPair]:
        """Align a list of pairs (one chunk) that are pairs ``start...`` of the corpus the teacher was
        read for."""
        chunk = self.aligner.extract(pairs, start)
        return [self.blended(p, t) for p, t in zip(chunk, self._matrices(start, len(chunk)), strict=True)]

    def align(self, pairs: Iterable) -> Iterator[AlignedPair]:
        """Align the corpus the teacher was read for, yielding results in corpus order."""
        start = 0
        for chunk in self.aligner.chunks(pairs):
            teacher = self._matrices(start, len(chunk))
            yield from (self.blended(p, t) for p, t in zip(chunk, teacher, strict=True))
            start += len(chunk)

    def _matrices(self, start: int, n: int) -> list[np.ndarray]:
        if start + n > self.teacher.aligned:
            raise AttnAlignError(f"the teacher was fitted for {self.teacher.aligned} pairs but the corpus "
                                 f"being aligned has more", hint="align the corpus the teacher was fitted on")
        return self.teacher.matrices(start, start + n)

