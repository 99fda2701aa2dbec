"""Alignment error rate, precision, recall and F1 (Och & Ney 2003). Pure Python, torch-free.

With a hypothesis A, sure gold links S and possible gold links P (S ⊆ P, enforced):

    precision = |A ∩ P| / |A|
    recall    = |A ∩ S| / |S|
    AER       = 1 - (|A ∩ S| + |A ∩ P|) / (|A| + |S|)
    F1        = 2 · precision · recall / (precision + recall)

Corpus scores sum the counts over all sentences first and divide once (micro average), as every
published AER does. Degenerate cases: a zero denominator gives 0, except that when both A and S are
empty (nothing to find, nothing found) precision, recall and F1 are 1 and AER is 0.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields

from ..data.alignments import Alignment, Link


@dataclass(frozen=True)
class Counts:
    """Link counts of one sentence or a whole corpus (sums of sentence counts)."""

    hyp: int = 0  # |A|
    sure: int = 0  # |S|
    possible: int = 0  # |P|, P ⊇ S
    hyp_sure: int = 0  # |A ∩ S|
    hyp_possible: int = 0  # |A ∩ P|
    sentences: int = 0

    def __add__(self, other: Counts) -> Counts:
        return Counts(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))

    @property
    def _nothing(self) -> bool:
        return self.hyp == 0 and self.sure == 0

    @property
    def precision(self) -> float:
        if self.hyp == 0:
            return 1.0 if self._nothing else 0.0
        return self.hyp_possible / self.hyp

    @property
    def recall(self) -> float:
        if self.sure == 0:
            return 1.0 if self._nothing else 0.0
        return self.hyp_sure / self.sure

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 0.0 if p + r == 0 else 2 * p * r / (p + r)

    @property
    def aer(self) -> float:
        if self._nothing:
            return 0.0
        return 1.0 - (self.hyp_sure + self.hyp_possible) / (self.hyp + self.sure)

    def as_dict(self) -> dict[str, float | int]:
        """Scores as fractions in [0, 1] and counts as integers (the ``--json`` keys)."""
        return {
            "aer": self.aer,
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "sentences": self.sentences,
            "links": self.hyp,
            "sure": self.sure,
            "possible": self.possible,
            "hits_sure": self.hyp_sure,
            "hits_possible": self.hyp_possible,
        }


def sentence_counts(
    hyp: Iterable[Link], sure: Iterable[Link], possible: Iterable[Link] = ()
) -> Counts:
    """Counts for one sentence; ``possible`` may omit the sure links (they are added)."""
    a, s = set(hyp), set(sure)
    p = set(possible) | s
    return Counts(len(a), len(s), len(p), len(a & s), len(a & p), 1)


def alignment_counts(hyp: Alignment, gold: Alignment) -> Counts:
    """Counts of a hypothesis (all its links) against a gold alignment."""
    return sentence_counts(hyp.links, gold.sure, gold.possible)


def corpus_counts(hyps: Sequence[Alignment], golds: Sequence[Alignment]) -> list[Counts]:
    """Per-sentence counts; sum them (``sum(counts, Counts())``) for the corpus score."""
    if len(hyps) != len(golds):
        raise ValueError(f"{len(hyps)} hypothesis sentences vs {len(golds)} gold sentences")
    return [alignment_counts(h, g) for h, g in zip(hyps, golds, strict=True)]
