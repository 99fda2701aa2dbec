"""Where an aligner errs: its scores by band of the source word's frequency, of the gold link's type
and of the distance from the diagonal. Pure Python, torch-free.

Every link, predicted or gold, falls in one band of each dimension, decided by the link alone, so a
band's counts (:class:`~attnalign.eval.metrics.Counts`: the predicted links in the band, the gold's
sure and possible links in it, and their overlaps) give its precision, recall and AER as the corpus's
counts give the corpus's:

* **frequency**: how often the link's source word occurs in the whole text given (rare: at most
  :data:`RARE_MAX` times; frequent: at least :data:`FREQUENT_MIN`; middle: between);
* **type**: the gold's shape around the link, from its possible links: ``1-1`` (the source word and
  the target word have one gold link each), ``1-many`` (the source word has several, the target word
  one), ``many-1``, ``many-many``; a predicted link the gold lacks is ``extra: unaligned word`` when
  the gold leaves its source or target word unaligned, else ``extra: aligned words``;
* **distance**: ``|i - j * S / T|``, how many source words link ``(i, j)`` lies off the diagonal of
  the ``S x T`` grid, rounded.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..data.alignments import Alignment, Link
from .metrics import Counts

RARE_MAX = 5
FREQUENT_MIN = 100
FREQUENCY_BANDS = (f"rare (<= {RARE_MAX})", f"middle ({RARE_MAX + 1}-{FREQUENT_MIN - 1})",
                   f"frequent (>= {FREQUENT_MIN})")
TYPE_BANDS = ("1-1", "1-many", "many-1", "many-many", "extra: unaligned word", "extra: aligned words")
DISTANCE_EDGES = (0, 2, 4, 8)  # a band's lowest distance; the last band is open
DISTANCE_BANDS = ("0-1", "2-3", "4-7", "8+")
DIMENSIONS = {"frequency": FREQUENCY_BANDS, "type": TYPE_BANDS, "distance": DISTANCE_BANDS}


@dataclass(frozen=True)
class Band:
    """One band of one dimension and the counts of the links that fall in it."""

    dimension: str
    band: str
    counts: Counts

    @property
    def has_precision(self) -> bool:
        """Whether the band's precision says something: a type band is the gold's shape around the link,
        so its predicted links are all gold links (precision 100) or, in the extra bands, none (0)."""
        return self.dimension != "type"


def frequency_band(count: int) -> str:
    if count <= RARE_MAX:
        return FREQUENCY_BANDS[0]
    return FREQUENCY_BANDS[1] if count < FREQUENT_MIN else FREQUENCY_BANDS[2]


def distance_band(i: int, j: int, s_len: int, t_len: int) -> str:
    d = round(abs(i - j * s_len / t_len))
    return DISTANCE_BANDS[sum(d >= e for e in DISTANCE_EDGES) - 1]


def _type_band(link: Link, gold: Alignment, src_fan: Counter, tgt_fan: Counter) -> str:
    i, j = link
    if link not in gold.possible:
        return TYPE_BANDS[4] if src_fan[i] == 0 or tgt_fan[j] == 0 else TYPE_BANDS[5]
    many_src, many_tgt = src_fan[i] > 1, tgt_fan[j] > 1  # the source word links to several target words
    return TYPE_BANDS[(2 if many_tgt else 0) + (1 if many_src else 0)]


def breakdown(hyps: Sequence[Alignment], golds: Sequence[Alignment],
              pairs: Sequence[tuple[Sequence[str], Sequence[str]]],
              frequency: Mapping[str, int]) -> list[Band]:
    """Every dimension's bands (in :data:`DIMENSIONS`' order) with the counts of ``hyps`` against
    ``golds`` on the token ``pairs`` of the gold's sentences; ``frequency``: each source word's count
    in the whole text."""
    totals = {(dim, b): Counter() for dim, bands in DIMENSIONS.items() for b in bands}
    for hyp, gold, (src, tgt) in zip(hyps, golds, pairs, strict=True):
        src_fan = Counter(i for i, _ in gold.possible)
        tgt_fan = Counter(j for _, j in gold.possible)
        for link in hyp.links | gold.possible:
            i, j = link
            bands = (("frequency", frequency_band(frequency.get(src[i], 0))),
                     ("type", _type_band(link, gold, src_fan, tgt_fan)),
                     ("distance", distance_band(i, j, len(src), len(tgt))))
            predicted, sure, possible = link in hyp.links, link in gold.sure, link in gold.possible
            for key in bands:
                c = totals[key]
                c["hyp"] += predicted
                c["sure"] += sure
                c["possible"] += possible
                c["hyp_sure"] += predicted and sure
                c["hyp_possible"] += predicted and possible
    return [Band(dim, b, Counts(c["hyp"], c["sure"], c["possible"], c["hyp_sure"], c["hyp_possible"],
                                len(golds)))
            for (dim, b), c in totals.items()]
