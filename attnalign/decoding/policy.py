"""How ``align corpus`` turns a model's matrices into links, decided in one place.

Two frozen records say it, each chosen once by a pure function of what the user gave and what the
model (and the corpus) hold:

* :class:`Decoding`: the symmetrization, the decoder, its threshold and, where the statistical teacher
  joins the student, the teacher's weight in the blend (:func:`choose_decoding`);
* :class:`TeacherPlan`: whether a teacher joins, and which: the one ``train --guide auto`` kept, read
  for the pairs being aligned, or one trained now, on what (:func:`plan_teacher`, from
  :class:`TeacherFacts`).

Their ``describe()`` is what ``--help``, the summary line and the report print. Torch-free and
statistical-free; :mod:`attnalign.combine` gathers the facts and carries the plan out. How each default
was measured is in docs/benchmarks.md ("Choosing the blend on halves", "The blend as the corpus grows",
"Configurations, one change at a time").
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..errors import AttnAlignError, OptionError, require
from .decoders import DECODERS, THRESHOLD
from .pair import SYMMETRIZATIONS

AUTO = "auto"  # --sym / --decoder / --teacher / --teacher-corpus: chosen here
THRESHOLDED = ("threshold", "relative")  # the decoders that read --threshold


@dataclass(frozen=True)
class Decoding:
    """How a pair's matrices become links (the conventions of :mod:`attnalign.decoding.pair`).

    ``sym``: a name of ``SYMMETRIZATIONS``; ``decoder``: of ``DECODERS``; ``threshold``: the floor of the
    decoders in :data:`THRESHOLDED`; ``teacher_weight``: with a teacher, each direction's matrix is
    ``(1 - w) * student + w * teacher`` before it is read (None: no teacher). As the user gives it,
    ``sym`` and ``decoder`` may be ``auto`` and the numbers None: :func:`choose_decoding` fills them."""

    sym: str = AUTO
    decoder: str = AUTO
    threshold: float | None = None
    teacher_weight: float | None = None

    def check(self) -> Decoding:
        """Raise an OptionError naming the option (``--sym``, ``--decoder``, ``--threshold``,
        ``--teacher-weight``) whose value is unknown or out of range; ``self`` otherwise."""
        require("--sym", self.sym, choices=(AUTO, *SYMMETRIZATIONS))
        require("--decoder", self.decoder, choices=(AUTO, *DECODERS))
        require("--threshold", self.threshold, low=0, high=1, optional=True)
        require("--teacher-weight", self.teacher_weight, low=0, high=1, optional=True)
        return self

    @classmethod
    def from_json(cls, data) -> Decoding:
        """A decoding as :func:`dataclasses.asdict` wrote it, checked as the command line's options are
        (a hand-edited file: an OptionError naming the key)."""
        if not isinstance(data, dict) or set(data) != set(cls.__dataclass_fields__):
            raise OptionError(f"a decoding has the keys {', '.join(cls.__dataclass_fields__)}, not {data!r}")
        try:
            return cls(**data).check()
        except OptionError as e:  # named as the file's key
            key = e.message.replace("--teacher-weight", "teacher_weight").replace("--", "")
            raise OptionError(key) from None

    def describe(self) -> str:
        """The decoding as the options that give it: ``--sym soft --decoder relative --threshold 0.2``."""
        words = [f"--sym {self.sym}", f"--decoder {self.decoder}"]
        if self.decoder in THRESHOLDED and self.threshold is not None:
            words.append(f"--threshold {self.threshold:g}")
        if self.teacher_weight is not None:
            words.append(f"--teacher-weight {self.teacher_weight:g}")
        return " ".join(words)


# A bidirectional model with an alignment head (train --preset align), read without a teacher:
# selected on the English-French trial set by bench/quality.py.
HEAD_DECODING = Decoding("soft", "argmax", THRESHOLD)
# The student with its teacher: the cells that hold RELATIVE_RATIO of their row's and column's
# largest weight, above the threshold; chosen on halves of the three test sets by bench/blend_halves.py
# (one rule for every pair, never significantly worse than the teacher alone on a held-out half).
TEACHER_DECODING = Decoding("soft", "relative", 0.2, 0.6)
# --decoder threshold with the teacher: the fixed cut the English-French trial set chose (bench/combine.py).
TEACHER_DECODING_FIXED = Decoding("soft", "threshold", 0.45, 0.9)
# From this many pairs in the teacher's corpus (kept counts included) the student is nearly as good as
# its teacher: more of it, with a fixed cut (bench/blend_scale.py --choose, English-French trial set).
TEACHER_LARGE_PAIRS = 40_000
TEACHER_DECODING_LARGE = Decoding("soft", "threshold", 0.4, 0.6)


def teacher_decoding(pairs: int, decoder: str = AUTO) -> Decoding:
    """The default decoding of a blend with a teacher of ``pairs`` pairs, for the ``decoder`` given
    (``auto``: the default's): :data:`TEACHER_DECODING_LARGE` from :data:`TEACHER_LARGE_PAIRS` pairs
    (unless another decoder is given), :data:`TEACHER_DECODING_FIXED` for ``threshold`` below that,
    else :data:`TEACHER_DECODING` with the decoder given."""
    if pairs >= TEACHER_LARGE_PAIRS and decoder in (AUTO, TEACHER_DECODING_LARGE.decoder):
        return TEACHER_DECODING_LARGE
    if decoder == TEACHER_DECODING_FIXED.decoder:
        return TEACHER_DECODING_FIXED
    return TEACHER_DECODING if decoder == AUTO else replace(TEACHER_DECODING, decoder=decoder)


def choose_decoding(given: Decoding, *, both: bool, head: bool, teacher_pairs: int | None = None,
                    tuned: Decoding | None = None) -> Decoding:
    """The decoding of a run: what ``given`` leaves ``auto`` (or None) filled in.

    ``both``: the model reads both directions; ``head``: it is read through an alignment head;
    ``teacher_pairs``: a teacher of that many pairs joins the student (None: none). With a teacher:
    ``tuned`` (the blend ``--tune-gold`` chose and the model directory keeps) where given, else
    :func:`teacher_decoding`. Without one: :data:`HEAD_DECODING` for a bidirectional head, else
    grow-diag-final-and (both directions) or none, with argmax and :data:`THRESHOLD`."""
    if teacher_pairs is not None:
        base = tuned if tuned is not None and given.decoder in (AUTO, tuned.decoder) \
            else teacher_decoding(teacher_pairs, given.decoder)
        return Decoding(
            (base.sym if both else "none") if given.sym == AUTO else given.sym,
            base.decoder if given.decoder == AUTO else given.decoder,
            base.threshold if given.threshold is None else given.threshold,
            base.teacher_weight if given.teacher_weight is None else given.teacher_weight)
    head = head and both
    sym = given.sym
    if sym == AUTO:
        sym = HEAD_DECODING.sym if head else ("grow-diag-final-and" if both else "none")
    decoder = given.decoder
    if decoder == AUTO:
        decoder = HEAD_DECODING.decoder if head and sym == HEAD_DECODING.sym else "argmax"
    threshold = THRESHOLD if given.threshold is None else given.threshold
    return Decoding(sym, decoder, threshold)


def recorded_decoding(meta: dict, given: Decoding = Decoding()) -> Decoding:
    """The decoding a saved attention file's ``meta`` records (``sym``, ``decoder``, ``threshold``,
    ``teacher``: what ``align corpus`` decoded with), with each value ``given`` sets (not ``auto`` or
    None) in its place: how ``plot sentence --attention`` reads the file's links again."""
    sym, decoder = meta.get("sym") or "none", meta.get("decoder") or "argmax"
    threshold, weight = meta.get("threshold"), meta.get("teacher")
    return Decoding(sym if given.sym == AUTO else given.sym,
                    decoder if given.decoder == AUTO else given.decoder,
                    (THRESHOLD if threshold is None else threshold) if given.threshold is None
                    else given.threshold, weight if given.teacher_weight is None else given.teacher_weight)


def reads_reverse(sym: str, both: bool) -> bool:
    """Whether the decoding of ``--sym sym`` reads the reverse direction, for a model of ``both``
    directions (``auto`` chooses a symmetrization of two directions wherever the model has them):
    known before :func:`choose_decoding` runs, so that the reverse model is loaded only where read."""
    return both if sym == AUTO else SYMMETRIZATIONS[sym].both


# align corpus --tune-gold: the blends scored on the user's gold (both decoders of the teacher's
# defaults over these weights and cuts; w 1 reads the teacher's matrix alone), the fewest sentences
# that may choose, and the paired test's level below which the gold's best replaces the default.
TUNE_WEIGHTS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
TUNE_FLOORS = (0.1, 0.2, 0.3)  # --decoder relative
TUNE_THRESHOLDS = (0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6)  # --decoder threshold
TUNE_MIN_SENTENCES = 20
TUNE_P = 0.05
# The gain of the gold's best is measured on sentences that did not choose it: each of this many folds
# of the gold (every TUNE_FOLDS-th sentence) is scored with the candidate the other folds chose.
TUNE_FOLDS = 5


def check_tunable(given: Decoding) -> None:
    """``--tune-gold`` chooses every value of the blend: none of them may be given beside it."""
    if given != Decoding():
        raise OptionError("--tune-gold chooses the symmetrization, the decoder, the threshold and the "
                          "teacher's weight", hint="give --tune-gold, or --sym, --decoder, --threshold and "
                                                   "--teacher-weight, not both")


def blend_candidates(both: bool) -> list[Decoding]:
    """Every blend ``--tune-gold`` scores, for a model read in ``both`` directions or one."""
    sym = TEACHER_DECODING.sym if both else "none"
    cuts = {"relative": TUNE_FLOORS, "threshold": TUNE_THRESHOLDS}
    return [Decoding(sym, decoder, t, w) for decoder, ts in cuts.items() for w in TUNE_WEIGHTS for t in ts]


# --teacher auto combines only where the teacher's corpus is at least this large: EM on a few hundred
# pairs learns little.
TEACHER_MIN_PAIRS = 1000
TEACHER_CHOICES = (AUTO, "on", "off")  # --teacher
# --teacher-corpus: what a teacher trained now learns from (each distinct pair once). aligned: the
# pairs being aligned; training: the model's own training corpus (the files train recorded) and the
# pairs being aligned that it does not hold; kept: the pairs being aligned, going on from the counts the
# teacher of train --guide auto kept in the model directory; auto: training where those files are
# unchanged and hold at most TEACHER_CORPUS_MAX_PAIRS pairs (the teacher's time grows with them), else
# kept where the model directory keeps the counts, else aligned. Wherever the training corpus holds
# every pair being aligned (all but aligned), the teacher train kept is read instead.
TEACHER_CORPUS_CHOICES = (AUTO, "aligned", "training", "kept")
TEACHER_CORPUS_MAX_PAIRS = 100_000


def may_want_teacher(teacher: str, guided: bool, launched: bool) -> bool:
    """Whether ``--teacher`` can combine for some corpus, before any data is read: ``on``; ``auto``: for
    a model ``guided`` by the built-in teacher, in one process (not ``launched`` under torchrun)."""
    return teacher == "on" or (teacher == AUTO and guided and not launched)


def reads_kept(corpus: str) -> bool:
    """Whether ``--teacher-corpus corpus`` reads the teacher train kept where it holds every pair."""
    return corpus != "aligned"


def reads_counts(corpus: str) -> bool:
    """Whether ``--teacher-corpus corpus`` goes on from the counts train's teacher kept."""
    return corpus in (AUTO, "kept")


def reads_training(corpus: str, recorded: int | None) -> bool:
    """Whether the model's training corpus (``recorded``: the pairs train recorded, None: no files) is
    worth reading for ``--teacher-corpus corpus``."""
    if recorded is None or corpus in ("aligned", "kept"):
        return False
    return corpus == "training" or recorded <= TEACHER_CORPUS_MAX_PAIRS


@dataclass(frozen=True)
class TeacherFacts:
    """What the model directory and the corpus hold for a teacher (gathered by
    :func:`attnalign.combine.gather_teacher`, only what the options can use).

    ``pairs``: the pairs being aligned. ``kept``: the pairs the teacher ``train`` kept learned from,
    where it holds every pair being aligned (None: it does not, or there is none). ``counts``: the pairs
    of the counts it kept to go on from (None: none). ``recorded``: the pairs of the training files train
    recorded (None: none recorded). ``training``: that corpus read again and unchanged: its pairs (None:
    not read, or unusable, ``problem`` saying why). ``added``: with ``training``, the pairs being aligned
    that it does not hold. ``new``: with ``counts``, the pairs being aligned that the kept teacher's
    corpus does not hold (None: not known, a file kept before pairs' keys were)."""

    pairs: int
    kept: int | None = None
    counts: int | None = None
    recorded: int | None = None
    training: int | None = None
    added: int = 0
    problem: str = ""
    new: int | None = None


@dataclass(frozen=True)
class TeacherPlan:
    """Whether and which teacher joins the student. ``source``: ``none``; ``kept`` (the matrices train
    kept, read for the pairs being aligned, ``kept`` pairs); ``train`` (one trained now on ``training``
    pairs of the model's training corpus and ``added`` pairs being aligned, going on from kept counts of
    ``going_on`` pairs). ``warnings``: what the user should hear about it."""

    source: str = "none"
    kept: int = 0
    training: int = 0
    added: int = 0
    going_on: int = 0
    warnings: tuple[str, ...] = ()

    @property
    def pairs(self) -> int:
        """The pairs the teacher learned from (what selects its decoding)."""
        return self.kept if self.source == "kept" else self.training + self.added + self.going_on

    def describe(self) -> str | None:
        """What the teacher learned from, in words (None: no teacher)."""
        if self.source == "none":
            return None
        if self.source == "kept":
            return f"the one train kept, of the model's {self.kept:,} training pairs, read for these pairs"
        new = f"{self.added:,} distinct pairs being aligned"
        if self.training:
            return f"trained on the model's {self.training:,} training pairs and {new} that they do not hold"
        if self.going_on:
            return f"trained on {new}, going on from what train's teacher learned of {self.going_on:,} pairs"
        return f"trained on {new}"


NO_TEACHER = TeacherPlan()


def plan_teacher(teacher: str, corpus: str, *, guided: bool, launched: bool, facts: TeacherFacts,
                 model: str = "") -> TeacherPlan:
    """The teacher of a run, for ``--teacher teacher --teacher-corpus corpus`` and a model ``guided``
    by the built-in teacher or not, under torchrun (``launched``) or not (see the module doc and
    :data:`TEACHER_CORPUS_CHOICES`). ``auto`` combines from :data:`TEACHER_MIN_PAIRS` pairs; ``on``
    always (with a warning under that). ``model`` names the directory in errors."""
    if not may_want_teacher(teacher, guided, launched):
        return NO_TEACHER

    def enough(n: int) -> bool:
        return teacher == "on" or n >= TEACHER_MIN_PAIRS

    if reads_kept(corpus) and facts.kept is not None:
        return TeacherPlan("kept", kept=facts.kept) if enough(facts.kept) else NO_TEACHER
    if corpus == "kept" and facts.counts is None:
        raise OptionError("--teacher-corpus kept: the model directory keeps no teacher counts it can use "
                          "(none kept, kept with other teacher options, another model's, or damaged; train "
                          "--guide auto keeps them)", path=model or None,
                          hint="give --teacher-corpus auto, training or aligned, or train the model again")
    going_on = facts.counts if reads_counts(corpus) else None
    warnings = []
    if corpus == "training" and facts.training is None:
        why = facts.problem or "the model records no training files (attnalign train records them)"
        raise AttnAlignError(f"--teacher-corpus training: {why}", path=model or None,
                             hint="put the training files back where train read them, or give "
                                  "--teacher-corpus aligned")
    if facts.training is not None:
        plan = TeacherPlan("train", training=facts.training, added=facts.added)
    else:
        if facts.problem and corpus == AUTO:
            instead = ("going on from the counts the model directory keeps" if going_on
                       else "and only them (--teacher-corpus aligned)")
            warnings.append(f"{facts.problem}: the teacher trains on the pairs being aligned, {instead}")
        # going on from the kept counts, a pair they hold is not learned again
        added = facts.new if going_on and facts.new is not None else facts.pairs
        plan = TeacherPlan("train", added=added, going_on=going_on or 0)
    if not enough(plan.pairs):
        return NO_TEACHER
    if plan.pairs < TEACHER_MIN_PAIRS:
        warnings.append(f"the teacher is trained on {plan.pairs} pairs; under {TEACHER_MIN_PAIRS} pairs its "
                        "matrices are weak: align them inside a larger corpus, or give --teacher off")
    return replace(plan, warnings=tuple(warnings))
