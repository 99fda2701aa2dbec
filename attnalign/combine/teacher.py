"""Finding the student's teacher: what the model directory and the corpus hold for it
(:func:`gather_teacher`), the plan :func:`~attnalign.decoding.policy.plan_teacher` makes of that, and
the teacher it names, read or trained (:func:`find_teacher`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace

from .. import dist
from ..data.corpus import Corpus, Pairs, is_piped, joined_index, open_corpus, pairs_fingerprint
from ..data.fileio import check_distinct, path_text
from ..decoding.policy import (
    NO_TEACHER,
    TeacherFacts,
    TeacherPlan,
    may_want_teacher,
    plan_teacher,
    reads_counts,
    reads_kept,
    reads_training,
)
from ..errors import AttnAlignError, OptionError, warn
from ..statistical import SoftTeacher, teacher_file
from ..statistical.options import DEFAULT, TeacherOptions
from ..statistical.progress import reporting
from .views import Stacked, TeacherView


def guided(meta: dict) -> bool:
    """Whether a model (its ``config.json``) was trained with ``--guide auto``, the built-in teacher."""
    return (meta.get("train_options") or {}).get("guide") == "auto"


def teacher_options(meta: dict) -> TeacherOptions:
    """The teacher a model combines with: the one that guided it (``train --guide auto``'s options, as
    its ``config.json`` records them), else the built-in default."""
    return TeacherOptions.from_saved(meta["train_options"]) if guided(meta) else DEFAULT


@dataclass
class TeacherSources:
    """What :func:`gather_teacher` found: the facts the plan reads and the things they describe (the
    kept teacher read for the pairs, the kept counts and their pairs, the training corpus joined with
    the pairs being aligned)."""

    facts: TeacherFacts
    kept: TeacherView | None = None
    counts: tuple[dict, int] | None = None
    joined: Corpus | None = None
    held: tuple | None = None  # the kept teacher, the positions of the pairs it lacks, every pair's index


def gather_teacher(model, meta: dict, pairs: Pairs, corpus: str, options: TeacherOptions) -> TeacherSources:
    """What the model directory ``model`` (its ``config.json``: ``meta``; none for a Hugging Face model)
    holds for a teacher of ``options`` on ``pairs``, looking only where ``--teacher-corpus corpus`` can
    use it."""
    if "train_options" not in meta:  # a pretrained Hugging Face model keeps nothing
        return TeacherSources(TeacherFacts(len(pairs)))
    opts = asdict(options)
    data = meta.get("data") or {}
    fingerprint = data.get("fingerprint")  # the kept teacher must be this model's own
    kept, held = _kept_view(model, pairs, opts, fingerprint) if reads_kept(corpus) else (None, None)
    if kept is not None:
        return TeacherSources(TeacherFacts(len(pairs), kept=kept.pairs), kept=kept)
    counts = teacher_file.load_kept(model, opts, fingerprint) if reads_counts(corpus) else None
    files = {k: v for k, v in (data.get("files") or {}).items() if k in ("src", "tgt", "corpus") and v}
    recorded = data.get("pairs", 0) if files and data.get("fingerprint") else None
    facts = TeacherFacts(len(pairs), counts=counts[1] if counts else None, recorded=recorded,
                         new=None if held is None or counts is None else len(held[1]))
    if not reads_training(corpus, recorded):
        return TeacherSources(facts, counts=counts, held=held)
    lowercase = bool(meta["train_options"].get("lowercase"))
    encoding = ((data.get("files") or {}).get("gold_options") or {}).get("encoding", "utf-8")
    if special := next((v for v in files.values() if is_piped(v)), None):  # a FIFO might never open
        problem = f"the model's training corpus is no longer a regular file ({path_text(special)})"
        return TeacherSources(replace(facts, problem=problem), counts=counts, held=held)
    try:
        training = open_corpus(files.get("src"), files.get("tgt"), files.get("corpus"), encoding=encoding,
                               lowercase=lowercase)
        same = pairs_fingerprint(training) == data["fingerprint"]
    except AttnAlignError as e:
        where = f"{e.path}: " if e.path else ""
        problem = f"the model's training corpus cannot be read ({where}{e.message})"
        return TeacherSources(replace(facts, problem=problem), counts=counts, held=held)
    if not same:
        problem = f"the model's training corpus ({training.name}) has changed since training"
        return TeacherSources(replace(facts, problem=problem), counts=counts, held=held)
    joined = Corpus(pairs).join(training)
    return TeacherSources(replace(facts, training=len(training), added=joined.added), counts=counts,
                          joined=joined)


def _kept_view(model, pairs: Pairs, options: dict, fingerprint: str | None) -> tuple:
    """The teacher ``train --guide auto`` kept, read for ``pairs``, if kept with ``options`` and its
    training corpus holds every pair of ``pairs`` (:mod:`attnalign.statistical.teacher_file`), else None;
    and where it holds some of them, ``held``: the kept teacher, the positions in ``pairs`` of those it
    lacks and every pair's index in the training corpus followed by those (:func:`joined_index`). A file
    kept before pairs' keys were (it holds the training corpus's fingerprint only) serves ``pairs`` that
    are the whole training corpus."""
    saved = teacher_file.load_keyed(model, options, fingerprint)
    if saved is not None:
        added, index = joined_index(Corpus(pairs).keys(), saved.keys)
        return (None, (saved, added, index)) if added else (TeacherView(saved, index), None)
    old = teacher_file.load_matching(model, options, len(pairs), lambda: pairs_fingerprint(pairs))
    return (None if old is None else TeacherView(old)), None


def find_teacher(model: str | os.PathLike, meta: dict, pairs: Pairs, teacher: str = "auto",
                 corpus: str = "auto", outputs: dict | None = None,
                 progress: Callable[[str, str, int, int], None] | None = None
                 ) -> tuple[TeacherPlan, TeacherView | None]:
    """The teacher for aligning ``pairs`` with the model ``model`` (its ``config.json``: ``meta``) under
    ``--teacher teacher --teacher-corpus corpus``: the plan, and the teacher's matrices read for the pairs
    (None: no teacher). A teacher trained now hears ``progress(stage, step, done, total)``; the training
    corpus it reads is an input that no path of ``outputs`` (``{option: path}``) may name."""
    if not may_want_teacher(teacher, guided(meta), dist.launched()):
        return NO_TEACHER, None
    options = teacher_options(meta)
    sources = gather_teacher(model, meta, pairs, corpus, options)
    plan = plan_teacher(teacher, corpus, guided=guided(meta), launched=dist.launched(), facts=sources.facts,
                        model=str(model))
    if plan.source != "none" and dist.launched():
        raise OptionError("combining with the teacher runs in one process, not under torchrun",
                          hint="give --teacher off, or align without torchrun")
    for line in plan.warnings:
        warn(line)
    if plan.source != "train":
        return plan, sources.kept if plan.source == "kept" else None
    if plan.training:
        extra = sources.joined.training
        check_distinct(outputs or {}, {"the training corpus": extra.src_path or extra.corpus_path,
                                       "the training corpus's target side": extra.tgt_path})
    if plan.going_on and sources.held is not None:  # the pairs the kept counts hold count once
        saved, added, index = sources.held
        wanted = set(added)
        lacking = [p for k, p in enumerate(pairs) if k in wanted]  # a corpus may be read, not indexed
        fitted = fit_teacher(Corpus(lacking), options, sources.counts, progress)
        return plan, TeacherView(Stacked(saved, fitted.teacher), index)
    corpus = sources.joined if plan.training else Corpus(pairs)
    return plan, fit_teacher(corpus, options, sources.counts if plan.going_on else None, progress)


def fit_teacher(corpus: Corpus, options: TeacherOptions = DEFAULT, kept: tuple[dict, int] | None = None,
                progress: Callable[[str, str, int, int], None] | None = None) -> TeacherView:
    """A statistical teacher of ``options`` trained on ``corpus``, going on from ``kept`` (counts, and the
    pairs they were learned from; :func:`attnalign.statistical.teacher_file.load_kept`) if given, read
    for the pairs being aligned."""
    with reporting(progress):
        soft = SoftTeacher(corpus, options.model, prefix=options.prefix, identical=options.identical,
                           samplers=options.samplers, seed=options.seed, kept=kept[0] if kept else None)
    return TeacherView(soft, corpus.index)
