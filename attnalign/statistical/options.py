"""The teacher's options: which statistical aligner, how its directions combine, what it sees.

:class:`TeacherOptions` is the one statement of the built-in aligner's defaults; ``attnalign align
statistical`` (``--aligner``, ``--sym``, ``--prefix``, ``--identical``) and ``attnalign train --guide
auto`` (``--guide-model``, ``--guide-sym``, ``--guide-prefix``, ``--guide-identical``) both read it.
Torch-free. How each default was chosen (on the English-French trial set only) is in
docs/benchmarks.md, "Configurations, one change at a time", with the bench command that measures it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from ..decoding.symmetrize import LINK_METHODS
from ..errors import OptionError
from ..flags import opt
from .registry import COMBINED, MODELS
from .settings import MAX_SAMPLERS

SAMPLED = ("fertility", COMBINED)  # the models with a Gibbs sampler (TeacherOptions.samplers)

# How the two directions combine: a symmetrization of the Viterbi links, or "posterior": the links
# whose posterior is at least POSTERIOR_THRESHOLD in both directions.
SYMS = (*LINK_METHODS, "posterior")
POSTERIOR_THRESHOLD = 0.2
# COMBINED's fertility half sees whole words and keeps the links sampled in at least this share of
# the sweeps of both directions.
FERTILITY_PREFIX = 0
FERTILITY_THRESHOLD = 0.5


# The teacher of a model trained before --guide-prefix and --guide-identical existed, whose
# train_options lack them: it saw whole words, with no identical-word prior.
BEFORE_PREFIX = {"prefix": 0, "identical": 0.0}


@dataclass(frozen=True)
class TeacherOptions:
    """The built-in statistical aligner's settings.

    ``model``: one of :data:`MODELS`. ``sym``: one of :data:`SYMS` (``COMBINED`` takes ``posterior``
    only). ``prefix``: the EM models see every word cut to its first N characters, pooling a word's
    inflected forms (0: whole words). ``identical``: extra counts for each pair of identical source and
    target words in every EM step (0: none). ``samplers``: the fertility HMMs' independent Gibbs chains
    per direction, their counts pooled (:class:`.fertility.FertilityModel`); the models that do not
    sample take 1 only. ``seed``: the first chain's seed (the sampler's links differ by seed; the EM
    models are deterministic)."""

    model: str = opt(COMBINED, (
        "The statistical aligner: hmm-agree+fertility (the union of two models' confident links: "
        "hmm-agree's posterior links and those of fertility; takes posterior only), hmm-agree (two HMMs "
        "trained jointly by agreement), fertility (Bayesian HMMs with fertility, Gibbs-sampled, like "
        "eflomal), hmm, or ibm2 (fast_align's model)."), choices=lambda: list(MODELS))
    sym: str = opt("posterior", (
        f"How its directions combine: posterior (links both directions give a posterior of at least "
        f"{POSTERIOR_THRESHOLD}) or a symmetrization of the two directions' Viterbi links."), choices=SYMS)
    prefix: int = opt(5, "The statistical models see every word cut to its first N characters, pooling a "
                         "word's inflected forms; 0: whole words.")
    identical: float = opt(1.0, "Extra counts for identical source and target words (names, numbers, "
                                "cognates) in every EM step; 0: no such prior.")
    samplers: int = opt(1, "Independent Gibbs chains of the fertility HMMs per direction, their counts "
                           "pooled: the links vary less with the sampler's draws, for that many times the "
                           "sampling time.")
    seed: int = opt(1, "The fertility sampler's first seed (the EM models do not sample): another seed "
                       "shows how much the links vary with the sampler's draws.")

    @classmethod
    def from_saved(cls, train_options: dict) -> TeacherOptions:
        """The teacher a model directory's ``train_options`` (``config.json``) recorded: a ``teacher``
        record, or (before it was) flat ``guide_*`` keys; a run started before the teacher options
        existed saw whole words and had no identical-word prior (:data:`BEFORE_PREFIX`)."""
        teacher = train_options.get("teacher")
        if not isinstance(teacher, dict):
            teacher = {**BEFORE_PREFIX, **{k[len("guide_"):]: v for k, v in train_options.items()
                                           if k.startswith("guide_") and k != "guide_weight"}}
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in teacher.items() if k in known})

    def as_kwargs(self) -> dict:
        """Keyword arguments of :func:`attnalign.statistical.align_statistical`."""
        return asdict(self)

    def check(self, syms: tuple[str, ...] = SYMS, flags: str = "--") -> TeacherOptions:
        """A clear :class:`OptionError` for a choice the aligner cannot take; ``self`` otherwise.
        ``flags``: what the options' names start with in the messages (``train`` calls them
        ``--guide-*``)."""
        check_choices(self.model, self.sym, syms, flags)
        if not (isinstance(self.samplers, int) and 1 <= self.samplers <= MAX_SAMPLERS):
            raise OptionError(f"bad {flags}samplers {self.samplers}", hint=f"give 1 to {MAX_SAMPLERS} chains")
        if self.samplers > 1 and self.model not in SAMPLED:
            raise OptionError(f"{flags}samplers {self.samplers}: {self.model} does not sample",
                              hint=f"give it with {' or '.join(SAMPLED)}, or leave it at 1")
        if self.prefix < 0:
            raise OptionError(f"bad {flags}prefix {self.prefix}",
                              hint="give 0 (whole words) or a number of characters")
        if not 0 <= self.identical < float("inf"):  # NaN and inf too
            raise OptionError(f"bad {flags}identical {self.identical}",
                              hint="give 0 (no prior) or a finite positive number of counts")
        if not (isinstance(self.seed, int) and 0 <= self.seed < 2**31):
            raise OptionError(f"bad {flags}seed {self.seed}", hint="give a whole number from 0 to 2^31 - 1")
        return self


DEFAULT = TeacherOptions()
def check_choices(model: str, sym: str, syms: tuple[str, ...] = SYMS, flags: str = "--") -> None:
    """A clear error for an unknown statistical model or way of combining the directions, naming the
    option that is wrong (``flags``: what the options' names start with)."""
    if model not in MODELS:  # align statistical's --aligner, train's --guide-model
        model_flag = "--aligner" if flags == "--" else f"{flags}model"
        raise OptionError(f"unknown statistical model {model!r} ({model_flag})",
                          hint=f"choose {', '.join(MODELS)}")
    if sym not in syms:
        raise OptionError(f"unknown symmetrization {sym!r} ({flags}sym)", hint=f"choose {', '.join(syms)}")
    if model == COMBINED and sym != "posterior":
        raise OptionError(f"{COMBINED} combines its two models' posterior links; it has no {sym!r}",
                             hint=f"use posterior (--sym / --guide-sym) with it, or another aligner "
                                  f"with {sym}")
