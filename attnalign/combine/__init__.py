"""The student and its statistical teacher, combined: above both :mod:`attnalign.nmt` (the student's
attention) and :mod:`attnalign.statistical` (the teacher), neither of which imports the other.

:func:`find_teacher` carries out the plan of :func:`attnalign.decoding.policy.plan_teacher` (read the
teacher ``train`` kept, or train one), and :class:`Combined` blends the student's attention with the
teacher's matrices and decodes the blend. :func:`combined_aligner` does both for a model and a corpus, as
``align corpus`` (and ``align sentence``, ``plot sentence``, the report's default output) does, and is
where a run's decoding is decided, once (:func:`run_decoding`); :func:`tune_blend` chooses the blend on
the user's gold (``--tune-gold``).
"""

from __future__ import annotations

import os
from collections.abc import Callable

from ..data.corpus import Corpus, Pairs
from ..decoding.policy import AUTO, Decoding, TeacherPlan, choose_decoding
from ..nmt.aligner import Aligner
from .blend import Combined, blend
from .teacher import find_teacher, fit_teacher, gather_teacher, guided, teacher_options
from .tune import Tuning, kept_blend, kept_tuning, save_tuning, tune_blend
from .views import TeacherView


def combined_aligner(aligner: Aligner, model: str | os.PathLike, pairs: Pairs, teacher: str = AUTO,
                     teacher_corpus: str = AUTO, outputs: dict | None = None,
                     progress: Callable[[str, str, int, int], None] | None = None, kept: bool = True
                     ) -> tuple[Aligner | Combined, TeacherPlan]:
    """What aligns ``pairs`` with ``aligner`` (of the model ``model``) as ``align corpus`` does under
    ``--teacher teacher --teacher-corpus teacher_corpus``: the aligner itself, or the aligner combined
    with the teacher they and the model name (:func:`find_teacher`, whose ``outputs`` and ``progress``
    these are), decoded with the blend ``--tune-gold`` kept in the model directory where there is one
    (and ``kept``); and the plan."""
    plan, view = find_teacher(model, aligner.meta, pairs, teacher, teacher_corpus, outputs, progress)
    tuned = (kept_blend(model, aligner.reading.readout) if view is not None and kept
             and "train_options" in aligner.meta else None)
    decoding = run_decoding(aligner, plan if view is not None else None, tuned)
    if view is None:
        return aligner.with_decoding(decoding), plan
    return Combined(aligner, view, plan, decoding), plan


def run_decoding(aligner: Aligner, plan: TeacherPlan | None = None,
                 tuned: Decoding | None = None) -> Decoding:
    """How a run decodes: the decoding ``aligner``'s options give, its ``auto`` choices made for its model
    (both directions, an alignment head) and, where a teacher joins (``plan``), for the teacher's pairs or
    the blend ``--tune-gold`` kept (``tuned``). Decided once here and passed down."""
    return choose_decoding(aligner.given, both=aligner.both, head=aligner.head,
                           teacher_pairs=None if plan is None else plan.pairs, tuned=tuned)


def combine_fitted(aligner: Aligner, pairs: Pairs, extra: Pairs | None = None,
                   kept: tuple[dict, int] | None = None) -> Combined:
    """``aligner`` combined with a teacher (the model's: :func:`teacher_options`) trained now on
    ``extra`` (the model's training corpus) and the pairs of ``pairs`` it does not hold, going on from
    ``kept`` (counts, and their pairs) if given: what ``align corpus --teacher on`` does, whatever the
    model directory keeps (for studies and tests)."""
    corpus = Corpus(pairs).join(extra)
    view = fit_teacher(corpus, teacher_options(aligner.meta), kept)
    plan = TeacherPlan("train", training=corpus.learned, added=corpus.added,
                       going_on=kept[1] if kept else 0)
    return Combined(aligner, view, plan, run_decoding(aligner, plan))


__all__ = ["Combined", "TeacherView", "Tuning", "blend", "combine_fitted",
           "combined_aligner", "find_teacher", "fit_teacher", "gather_teacher", "guided",
           "kept_blend", "kept_tuning", "run_decoding", "save_tuning", "teacher_options", "tune_blend"]
