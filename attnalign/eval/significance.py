"""Confidence intervals and paired significance tests for alignment scores. NumPy, torch-free.

Both resample the gold's sentences with replacement (the bootstrap, Efron 1979): resample ``b`` takes
each sentence ``w[b, k]`` times, and every score of the resample is recomputed from its summed link
counts, micro-averaged as the metric itself is (:mod:`attnalign.eval.metrics`).

* :func:`intervals`: each score's percentile interval over the resamples.
* :func:`paired_test`: a system against a baseline on the *same* resamples (paired bootstrap, Koehn
  2004). The difference ``d_b = AER_b(system) - AER_b(baseline)`` gives the interval of the
  difference; the two-sided p-value asks how often a difference at least as large as the observed
  one arises when the resampled differences are shifted to mean zero (the null of no difference):
  ``p = (1 + #{b : |d_b - mean(d)| >= |d_obs|}) / (1 + B)``. Identical systems get p = 1.

Resampling weights come from :func:`bootstrap_weights` (a seeded generator: the same seed, samples
and sentence count give the same resamples on every machine), or from the caller, which lets a test
enumerate every resample of a tiny gold.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import require
from .metrics import Counts

SAMPLES = 1000  # bootstrap resamples
MIN_SAMPLES = 100  # fewer make a 95% interval of a few resamples' extremes: refused
BLOCK_BYTES = 64 << 20  # resamples are drawn and summed in blocks of at most this many bytes of weights
SEED = 12345  # the resamples' seed: fixed, so that a score and its interval are reproducible
LEVEL = 0.95  # the intervals' coverage
METHOD = "paired-bootstrap"  # the paired test (Koehn 2004)
METRICS = ("aer", "precision", "recall", "f1")
_FIELDS = ("hyp", "sure", "possible", "hyp_sure", "hyp_possible")


@dataclass(frozen=True)
class Bootstrap:
    """How to resample: ``samples`` resamples drawn with ``seed``."""

    samples: int = SAMPLES
    seed: int = SEED

    def check(self) -> Bootstrap:
        require("--samples", self.samples, low=MIN_SAMPLES, high=100_000)
        require("--seed", self.seed, low=0, high=2**63 - 1)
        return self

    def weights(self, n: int) -> np.ndarray:
        """[samples, n]: all the resamples at once (:func:`bootstrap_weights`)."""
        return bootstrap_weights(n, self.samples, self.seed)

    def resamples(self, n: int) -> np.ndarray | Bootstrap:
        """What :func:`intervals` and :func:`paired_test` take for ``n`` sentences: the weights at once
        where they fit one block (drawn once for every system), else this Bootstrap (drawn block by
        block each time, the same numbers)."""
        return self.weights(n) if self.samples * n * 8 <= BLOCK_BYTES else self

    def blocks(self, n: int) -> Iterator[np.ndarray]:
        """The rows of :meth:`weights`, the same numbers, in blocks of at most :data:`BLOCK_BYTES`:
        memory stays flat whatever the samples and sentences."""
        rng = np.random.default_rng(self.seed)
        rows = max(1, BLOCK_BYTES // (8 * max(1, n)))
        for start in range(0, self.samples, rows):
            size = min(rows, self.samples - start)
            yield rng.multinomial(n, np.full(n, 1.0 / n), size=size).astype(np.int64)


@dataclass(frozen=True)
class Interval:
    """A score's resampled interval, as fractions (``low <= high``)."""

    low: float
    high: float


@dataclass(frozen=True)
class PairedResult:
    """A system against the baseline: ``delta`` = its AER minus the baseline's (negative: better),
    the difference's interval over the resamples, and the two-sided p-value."""

    delta: float
    interval: Interval
    p_value: float


def bootstrap_weights(n: int, samples: int = SAMPLES, seed: int = SEED) -> np.ndarray:
    """[samples, n]: how often each of ``n`` sentences is drawn in each resample of ``n`` draws."""
    if n < 1 or samples < 1:
        raise ValueError(f"need at least one sentence and one sample, not {n} and {samples}")
    rng = np.random.default_rng(seed)
    return rng.multinomial(n, np.full(n, 1.0 / n), size=samples).astype(np.int64)


def count_matrix(per_sentence: Sequence[Counts]) -> np.ndarray:
    """[N, 5] int64: each sentence's hyp, sure, possible, hyp_sure, hyp_possible."""
    return np.array([[getattr(c, f) for f in _FIELDS] for c in per_sentence], dtype=np.int64).reshape(-1, 5)


def scores(totals: np.ndarray) -> dict[str, np.ndarray]:
    """AER, precision, recall and F1 of each row of ``totals`` [B, 5] (summed counts), with the
    degenerate cases of :class:`~attnalign.eval.metrics.Counts`."""
    hyp, sure, _, hs, hp = (totals[:, k].astype(np.float64) for k in range(5))
    nothing = (hyp == 0) & (sure == 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = np.where(hyp > 0, hp / hyp, np.where(nothing, 1.0, 0.0))
        recall = np.where(sure > 0, hs / sure, np.where(nothing, 1.0, 0.0))
        pr = precision + recall
        f1 = np.where(pr > 0, 2 * precision * recall / pr, 0.0)
        aer = np.where(nothing, 0.0, 1.0 - (hs + hp) / (hyp + sure))
    return {"aer": aer, "precision": precision, "recall": recall, "f1": f1}


def _percentiles(values: np.ndarray, level: float) -> Interval:
    tail = 100 * (1 - level) / 2
    low, high = np.percentile(values, [tail, 100 - tail])
    return Interval(float(low), float(high))


def _resampled(counts: np.ndarray, weights: np.ndarray | Bootstrap) -> np.ndarray:
    """[B, 5]: the summed counts of each resample of the sentences' ``counts`` [N, 5]; ``weights``: the
    resamples [B, N], or a :class:`Bootstrap` that draws them block by block."""
    if isinstance(weights, Bootstrap):
        return np.concatenate([block @ counts for block in weights.blocks(len(counts))])
    return weights @ counts


def _around(iv: Interval, estimate: float) -> Interval:
    """An interval always holds its estimate (a few resamples may all fall to one side of it)."""
    return Interval(min(iv.low, estimate), max(iv.high, estimate))


def intervals(per_sentence: Sequence[Counts], weights: np.ndarray | Bootstrap,
              level: float = LEVEL) -> dict[str, Interval]:
    """Each score's ``level`` percentile interval over the resamples ``weights`` ([B, N], or a
    :class:`Bootstrap`), widened where needed to hold the score itself."""
    counts = count_matrix(per_sentence)
    resampled, observed = scores(_resampled(counts, weights)), scores(counts.sum(0, keepdims=True))
    return {m: _around(_percentiles(resampled[m], level), float(observed[m][0])) for m in METRICS}


def paired_test(baseline: Sequence[Counts], system: Sequence[Counts], weights: np.ndarray | Bootstrap,
                level: float = LEVEL) -> PairedResult:
    """``system``'s AER against ``baseline``'s on the same sentences and resamples ``weights`` ([B, N],
    or a :class:`Bootstrap`)."""
    if len(baseline) != len(system):
        raise ValueError(f"{len(system)} sentences against the baseline's {len(baseline)}")
    base, other = count_matrix(baseline), count_matrix(system)
    observed = float(scores(other.sum(0, keepdims=True))["aer"][0]
                     - scores(base.sum(0, keepdims=True))["aer"][0])
    d = scores(_resampled(other, weights))["aer"] - scores(_resampled(base, weights))["aer"]
    # a tolerance of rounding: identical systems' differences are exactly 0, near-ties count as ties
    extreme = np.abs(d - d.mean()) >= abs(observed) - 1e-12
    p = (1 + int(extreme.sum())) / (1 + len(d))
    return PairedResult(observed, _around(_percentiles(d, level), observed), p)


def signed_percent(x: float) -> str:
    """A difference (a fraction) in % with its sign, ``+0.21``: one that rounds to zero keeps the digits
    that tell its side (``-0.0031``), so that an interval's bound reads as what it is; zero is ``0.00``
    (never ``-0.00``, which would read as an interval that excludes it)."""
    v = 100 * x
    if abs(v) < 1e-9:
        return "0.00"
    return f"{v:+.2g}" if abs(v) < 0.005 else f"{v:+.2f}"


def signature(samples: int, seed: int, paired: bool, level: float = LEVEL) -> str:
    """The resampling settings a score's intervals depend on, for the score's signature."""
    text = f"ci:bootstrap-percentile-{round(100 * level)}|samples:{samples}|seed:{seed}"
    return text + (f"|test:{METHOD}" if paired else "")
