"""The teacher's blend policy, in one place: when ``align corpus`` combines the student's attention with
the statistical teacher's soft matrices, on what the teacher trains, and how the blend is decoded.
Torch-free, so that the CLI's help quotes it; :mod:`attnalign.nmt.aligner` applies it, and
``--teacher``, ``--teacher-weight`` and ``--teacher-corpus`` read it.
"""

from __future__ import annotations

import numpy as np

# What combining with the teacher means (``align corpus --teacher``; see nmt.aligner): each
# direction's matrix becomes (1 - weight) * student + weight * teacher (the statistical teacher's soft
# matrix of the pair), the two directions are averaged and every cell above the threshold is a link.
# Selected on the English-French trial set by bench/combine.py (README, "Alignment quality").
TEACHER_DECODING = {"weight": 0.9, "sym": "soft", "decoder": "threshold", "threshold": 0.45}
# From this many pairs in the teacher's corpus the student is nearly as good as its teacher and the
# blend gives it more weight: TEACHER_DECODING with this weight and threshold. Selected on the
# English-French trial set by bench/blend_scale.py --choose over 40k-310k pairs (docs/benchmarks.md).
TEACHER_DECODING_LARGE = {"pairs": 40_000, "weight": 0.6, "threshold": 0.4}


def teacher_decoding(pairs: int) -> dict:
    """:data:`TEACHER_DECODING` for a teacher trained on ``pairs`` pairs (its corpus, and the pairs of
    the counts it went on from): from ``TEACHER_DECODING_LARGE["pairs"]`` on, its weight and
    threshold."""
    if pairs < TEACHER_DECODING_LARGE["pairs"]:
        return TEACHER_DECODING
    return {**TEACHER_DECODING, "weight": TEACHER_DECODING_LARGE["weight"],
            "threshold": TEACHER_DECODING_LARGE["threshold"]}


# --teacher auto combines only where the teacher's corpus is at least this large: EM on a few hundred
# pairs learns little.
TEACHER_MIN_PAIRS = 1000
TEACHER_CHOICES = ("auto", "on", "off")  # --teacher
# --teacher-corpus: what the teacher is trained on. aligned: the pairs being aligned; training: those
# followed by the model's own training corpus (the files train recorded), so that a few new sentences
# get a teacher that has seen as much data as the student; kept: the pairs being aligned, going on from
# the counts the teacher of train --guide auto kept in the model directory (what it learned of the
# training corpus, at the cost of the new pairs alone); auto: training where those files are unchanged
# and hold at most TEACHER_CORPUS_MAX_PAIRS pairs (the teacher's time grows with them), else kept where
# the model directory keeps the counts, else aligned.
TEACHER_CORPUS_CHOICES = ("auto", "aligned", "training", "kept")
TEACHER_CORPUS_MAX_PAIRS = 100_000


def blend(student: np.ndarray, teacher: np.ndarray, weight: float) -> np.ndarray:
    """``(1 - weight) * student + weight * teacher``, both ``[T, S]``."""
    if student.shape != teacher.shape:
        raise ValueError(f"the student's matrix is {student.shape} but the teacher's {teacher.shape}")
    return (1 - weight) * student + weight * teacher
