"""The teacher's blend policy, in one place: when ``align corpus`` combines the student's attention with
the statistical teacher's soft matrices, on what the teacher trains, and how the blend is decoded.
Torch-free, so that the CLI's help quotes it; :mod:`attnalign.nmt.aligner` applies it, and
``--teacher``, ``--teacher-weight`` and ``--teacher-corpus`` read it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence

import numpy as np

from ..data.corpus import pair_keys

# What combining with the teacher means (``align corpus --teacher``; see nmt.aligner): each
# direction's matrix becomes (1 - weight) * student + weight * teacher (the statistical teacher's soft
# matrix of the pair), the two directions are averaged and the decoder reads the links. The default
# reads the cells that hold RELATIVE_RATIO of their row's and column's largest weight, above the
# threshold: chosen on halves of the three test sets (one rule for every pair, never significantly
# worse than the teacher alone on a held-out half) by bench/blend_halves.py (docs/benchmarks.md,
# "Choosing the blend on halves").
TEACHER_DECODING = {"weight": 0.6, "sym": "soft", "decoder": "relative", "threshold": 0.2}
# --decoder threshold with the teacher: the cells above a fixed cut, at the point the English-French
# trial set chose (bench/combine.py, "Combining student and teacher").
TEACHER_DECODING_FIXED = {"weight": 0.9, "threshold": 0.45}
# From this many pairs in the teacher's corpus the student is nearly as good as its teacher and the
# blend gives it more weight, with a fixed cut: selected on the English-French trial set by
# bench/blend_scale.py --choose over 40k-310k pairs (docs/benchmarks.md, "The blend as the corpus grows").
TEACHER_DECODING_LARGE = {"pairs": 40_000, "decoder": "threshold", "weight": 0.6, "threshold": 0.4}


def teacher_decoding(pairs: int, decoder: str = "auto") -> dict:
    """How a blend with a teacher trained on ``pairs`` pairs (its corpus, and the pairs of the counts
    it went on from) is decoded, for ``decoder`` (``auto``: the default's): :data:`TEACHER_DECODING`;
    from ``TEACHER_DECODING_LARGE["pairs"]`` on, :data:`TEACHER_DECODING_LARGE`'s fixed cut; the
    ``threshold`` decoder below that, :data:`TEACHER_DECODING_FIXED`'s."""
    large = {k: v for k, v in TEACHER_DECODING_LARGE.items() if k != "pairs"}
    if pairs >= TEACHER_DECODING_LARGE["pairs"] and decoder in ("auto", large["decoder"]):
        return {**TEACHER_DECODING, **large}
    if decoder == "threshold":
        return {**TEACHER_DECODING, "decoder": decoder, **TEACHER_DECODING_FIXED}
    return {**TEACHER_DECODING, "decoder": TEACHER_DECODING["decoder"] if decoder == "auto" else decoder}


def joined_index(aligned: Sequence[int], learned: Sequence[int]) -> tuple[list[int], list[int]]:
    """Where the pairs being aligned (keys ``aligned``) stand in the teacher's corpus when they join a
    corpus of pairs keyed ``learned`` (the model's training corpus): a pair ``learned`` holds is not
    added again (its n-th occurrence in ``aligned`` is its n-th in ``learned``, or the last there), the
    others are added after ``learned`` as they come (a text's own repeats are evidence, as in any
    corpus). Returns the positions in ``aligned`` of the pairs added, and each aligned pair's position in
    the joined corpus."""
    occurrences: dict[int, list[int]] = {}
    for k, key in enumerate(learned):
        occurrences.setdefault(int(key), []).append(k)
    seen: Counter = Counter()
    added: list[int] = []
    index = []
    for k, key in enumerate(map(int, aligned)):
        at = occurrences.get(key)
        if at is None:
            index.append(len(learned) + len(added))
            added.append(k)
        else:
            index.append(at[min(seen[key], len(at) - 1)])
            seen[key] += 1
    return added, index


class JoinedCorpus:
    """The teacher's corpus: ``learned`` (the model's training corpus as train read it), if given,
    followed by the pairs being aligned that it does not hold (:func:`joined_index`); ``index[k]``: pair
    k being aligned's position in it (None: the pairs being aligned are the corpus, in order). Iterates
    the pairs in that order."""

    def __init__(self, pairs, learned=None):
        if learned is None:
            self.learned, self.added, self.index = (), pairs, None
            return
        added, self.index = joined_index(pair_keys(pairs), pair_keys(learned))
        wanted = set(added)
        self.learned, self.added = learned, [p for k, p in enumerate(pairs) if k in wanted]

    def __len__(self) -> int:
        return len(self.learned) + len(self.added)

    def __iter__(self) -> Iterator:
        yield from self.learned
        yield from self.added


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


# --teacher auto combines only where the teacher's corpus is at least this large: EM on a few hundred
# pairs learns little.
TEACHER_MIN_PAIRS = 1000
TEACHER_CHOICES = ("auto", "on", "off")  # --teacher
# --teacher-corpus: what the teacher is trained on (each distinct pair once: JoinedCorpus). aligned: the
# pairs being aligned; training: the model's own training corpus (the files train recorded) and the
# pairs being aligned that it does not hold, so that a few new sentences get a teacher that has seen as
# much data as the student; kept: the pairs being aligned, going on from the counts the teacher of
# train --guide auto kept in the model directory (what it learned of the training corpus, at the cost
# of the new pairs alone); auto: training where those files are unchanged and hold at most
# TEACHER_CORPUS_MAX_PAIRS pairs (the teacher's time grows with them), else kept where the model
# directory keeps the counts, else aligned.
TEACHER_CORPUS_CHOICES = ("auto", "aligned", "training", "kept")
TEACHER_CORPUS_MAX_PAIRS = 100_000


def blend(student: np.ndarray, teacher: np.ndarray, weight: float) -> np.ndarray:
    """``(1 - weight) * student + weight * teacher``, both ``[T, S]``."""
    if student.shape != teacher.shape:
        raise ValueError(f"the student's matrix is {student.shape} but the teacher's {teacher.shape}")
    return (1 - weight) * student + weight * teacher
