"""The blend chosen on the user's gold (``align corpus --tune-gold``): every candidate of
:func:`~attnalign.decoding.policy.blend_candidates` scored on the gold's sentences, the best kept only
where choosing on the gold beats the default on sentences that did not choose (cross-validated over
:data:`~attnalign.decoding.policy.TUNE_FOLDS` folds; the paired bootstrap at
:data:`~attnalign.decoding.policy.TUNE_P`),
and the choice written to the model directory (``blend.json``), where later runs read it
(:func:`kept_blend`) and ``report`` shows it.
"""

from __future__ import annotations

import itertools
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from ..data.alignments import Alignment
from ..data.fileio import BLEND_FILE, model_file_open, path_text
from ..decoding.policy import AUTO, TUNE_FOLDS, TUNE_MIN_SENTENCES, TUNE_P, Decoding, blend_candidates
from ..errors import AttnAlignError, OptionError, require, warn
from ..eval.metrics import Counts, alignment_counts
from ..eval.significance import Bootstrap, Interval, PairedResult, paired_test, signed_percent
from ..nmt.checkpoint import read_model_config
from ..nmt.readouts import READOUT
from .blend import Combined


@dataclass(frozen=True)
class Tuning:
    """What ``--tune-gold`` found: each candidate's AER (fraction) on the gold's ``sentences``, best
    first; the ``default`` it was measured against; ``paired``: the paired test against the default of
    the choice made on sentences that did not choose it (``folds`` folds, each scored with the best of
    the others; 0: a file from before, which scored the best on its own sentences); and ``chosen``, what
    later runs use (the best where that test prefers it, else None: the default)."""

    gold: str
    sentences: int
    scores: list[tuple[Decoding, float]]
    default: Decoding
    default_aer: float
    best: Decoding
    paired: PairedResult
    folds: int = 0

    @property
    def chosen(self) -> Decoding | None:
        better = self.paired.delta < 0 and self.paired.p_value < TUNE_P
        return self.best if better and self.best != self.default else None

    def describe(self) -> str:
        """One paragraph for stderr and the report."""
        p = self.paired
        head = f"blend tuned on {self.gold} ({self.sentences} sentences, {len(self.scores)} candidates): "
        if self.best == self.default:
            return head + (f"the default, {self.default.describe()}, is already the best (AER "
                           f"{100 * self.default_aer:.2f}): it stays")
        gain = (f"{signed_percent(p.delta)} [{signed_percent(p.interval.low)}, "
                f"{signed_percent(p.interval.high)}], p "
                f"{p.p_value:.3f}")
        head += (f"the best, {self.best.describe()}, AER {100 * self.scores[0][1]:.2f} on them against the "
                 f"default's {100 * self.default_aer:.2f} ({self.default.describe()}); ")
        head += (f"chosen on {self.folds} folds, each scored with the best of the others (sentences that "
                 f"did not choose it): {gain} AER against the default" if self.folds else
                 f"{gain} on the sentences that chose it")
        if self.chosen is not None:
            return head + "; later runs of this model use it"
        return head + f"; not significantly better (p < {TUNE_P} wanted): the default stays"

    def as_json(self) -> dict:
        """The tuning's record (what it found; :attr:`chosen` follows from it, so it is not written)."""
        p = self.paired
        return {"gold": self.gold,
                "sentences": self.sentences, "default": asdict(self.default), "default_aer": self.default_aer,
                "best": asdict(self.best), "paired": {"delta": p.delta, "p_value": p.p_value,
                                                      "interval": [p.interval.low, p.interval.high]},
                "scores": [[asdict(d), aer] for d, aer in self.scores], "folds": self.folds}

    @classmethod
    def from_json(cls, data) -> Tuning:
        """A tuning as :meth:`as_json` wrote it, every value checked (a hand-edited ``blend.json``): a
        ValueError (an :class:`OptionError`) naming what is wrong."""
        def number(key: str, value, low: float | None = 0.0, high: float | None = 1.0) -> float:
            require(f"{BLEND_FILE}'s {key}", value, low=low, high=high)
            return float(value)

        def blend_of(d) -> Decoding:  # a blend names every number: none is left to choose_decoding
            d = Decoding.from_json(d)
            if AUTO in (d.sym, d.decoder) or d.threshold is None or d.teacher_weight is None:
                raise OptionError(f"{BLEND_FILE}'s blend {d.describe()} leaves a value unset")
            return d

        if not isinstance(data, dict):
            raise OptionError(f"{BLEND_FILE} holds no JSON object")
        p, scores = data["paired"], data["scores"]
        if not isinstance(p, dict) or not isinstance(scores, list) or not scores:
            raise OptionError(f"{BLEND_FILE}'s paired or scores are not what align corpus --tune-gold writes")
        interval = p["interval"]
        if not isinstance(interval, list) or len(interval) != 2:
            raise OptionError(f"{BLEND_FILE}'s paired interval is not two numbers")
        sentences = number("sentences", data["sentences"], low=1, high=None)
        if not isinstance(data["gold"], str) or sentences != int(sentences):
            raise OptionError(f"{BLEND_FILE}'s gold or sentences are not what --tune-gold writes")
        ranked = []
        for row in scores:
            if not isinstance(row, list) or len(row) != 2:
                raise OptionError(f"{BLEND_FILE}'s scores hold {row!r}, not [decoding, AER]")
            ranked.append((blend_of(row[0]), number("AER", row[1])))
        return cls(data["gold"], int(sentences), ranked, blend_of(data["default"]),
                   number("default_aer", data["default_aer"]), blend_of(data["best"]),
                   PairedResult(number("delta", p["delta"], -1.0),
                                Interval(*(number("interval", x, -1.0) for x in interval)),
                                number("p_value", p["p_value"])),
                   int(number("folds", data.get("folds", 0), high=None)))


def tune_blend(combined: Combined, pairs, gold: list[Alignment], start: int, name: str) -> Tuning:
    """Score every blend candidate on ``pairs`` (the gold's text: pairs ``start...`` of the corpus the
    teacher was read for) against ``gold`` (named ``name``); see the module doc."""
    if len(gold) < TUNE_MIN_SENTENCES:
        raise OptionError(f"--tune-gold has {len(gold)} sentences; choosing the blend needs at least "
                          f"{TUNE_MIN_SENTENCES}", path=name,
                          hint="give a larger gold, or leave --tune-gold out")
    pairs = list(itertools.islice(pairs, len(gold)))  # the gold's sentences, not the whole corpus
    read = combined.aligner.extract(pairs, start)
    teacher = combined.teacher.matrices(start, start + len(read))
    candidates = blend_candidates(combined.aligner.both)
    default = combined.decoding
    if default not in candidates:
        candidates.append(default)
    per: dict[Decoding, list[Counts]] = {}
    for d in candidates:  # each read through the blend align corpus then decodes with
        blended = combined.with_decoding(d)
        per[d] = [alignment_counts(Alignment.from_links(blended.blended(p, t).links), g)
                  for p, t, g in zip(read, teacher, gold, strict=True)]
    aer = {d: sum(c, Counts()).aer for d, c in per.items()}
    ranked = sorted(candidates, key=lambda d: (aer[d], d != default))
    held_out = cross_validated(per, default, TUNE_FOLDS)
    paired = paired_test(per[default], held_out, Bootstrap().resamples(len(gold)))
    return Tuning(name, len(gold), [(d, aer[d]) for d in ranked], default, aer[default], ranked[0], paired,
                  TUNE_FOLDS)


def cross_validated(per: dict[Decoding, list[Counts]], default: Decoding, folds: int) -> list[Counts]:
    """Each sentence's counts under the candidate that the other folds chose (fold ``f``: sentences
    ``f, f + folds, ...``; the lowest AER on the rest, the default where it ties): what choosing on a
    gold gains on sentences that did not choose. ``per``: every candidate's counts per sentence."""
    n = len(per[default])
    out: list[Counts] = [Counts()] * n
    for f in range(folds):
        rest = [k for k in range(n) if k % folds != f]
        best = min(per, key=lambda d: (sum((per[d][k] for k in rest), Counts()).aer, d != default))
        for k in range(f, n, folds):
            out[k] = per[best][k]
    return out


def model_run(model: str | os.PathLike) -> str | None:
    """The training run that made the model directory's weights (``config.json``'s ``run_id``; None for
    a model trained before runs had one): the student a blend was tuned for."""
    try:
        return (read_model_config(model).get("data") or {}).get("run_id")
    except AttnAlignError:
        return None


def save_tuning(model: str | os.PathLike, tuning: Tuning, readout: str = READOUT) -> Path:
    """Write ``tuning`` to the model directory's ``blend.json`` (atomically), with the run whose student
    (and whose teacher) it was tuned for and the readout of the student's matrices; its path."""
    path = Path(model) / BLEND_FILE
    with model_file_open(path) as f:
        json.dump({"model": model_run(model), "readout": readout, **tuning.as_json()}, f, indent=1)
    return path


def kept_tuning(model: str | os.PathLike, readout: str = READOUT) -> Tuning | None:
    """The tuning ``--tune-gold`` kept in the model directory, if any, for matrices of ``readout``; a
    damaged file, one tuned for another model's matrices (copied from another model directory) or for
    another readout's: a warning, None."""
    path = Path(model) / BLEND_FILE
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        tuning = Tuning.from_json(data)
    except (OSError, ValueError, KeyError, TypeError, RecursionError, OptionError) as e:
        why = (e.strerror or str(e)) if isinstance(e, OSError) else (
            f"no {e}" if isinstance(e, KeyError) else e.message if isinstance(e, OptionError) else
            "nested too deeply" if isinstance(e, RecursionError) else str(e))
        warn(f"{path_text(path)} is damaged ({why}): the default blend is used; run align corpus "
             "--tune-gold again to choose one")
        return None
    tuned_for, ours = data.get("model"), model_run(model)
    if tuned_for is not None and tuned_for != ours:  # a file from before runs were recorded is this model's
        warn(f"{path_text(path)} was tuned for another model (training run {tuned_for!s:.40}; this "
             f"model's is {ours}): the default blend is used; run align corpus --tune-gold again to "
             "choose one")
        return None
    if data.get("readout", READOUT) != readout:  # a file from before readouts were recorded read attention
        warn(f"{path_text(path)} was tuned for --readout {data.get('readout', READOUT)!s:.40}: this run's "
             f"--readout {readout} uses the default blend; add --tune-gold to choose one for it")
        return None
    return tuning


def kept_blend(model: str | os.PathLike, readout: str = READOUT) -> Decoding | None:
    """The blend ``--tune-gold`` chose for the model's matrices of ``readout``, where it chose one."""
    tuning = kept_tuning(model, readout)
    return None if tuning is None else tuning.chosen
