"""Symmetrization of a forward and a reverse link set. Pure Python, no torch.

Both inputs are link sets in the same (src_i, tgt_j) order: the reverse model's links are already
turned around. The grow rules follow fast_align's ``atools`` exactly:

* start from the intersection;
* **grow-diag**: candidates are the union's points not yet aligned, visited in (i, j) order, pass after
  pass until a pass adds nothing; a candidate is added (at once, so later candidates see it) when one
  of its 8 neighbours (horizontal, vertical, diagonal) is aligned and its source word or its target
  word (or both) is still unaligned;
* **grow-diag-final**: then every point of the forward alignment, then of the reverse alignment, in
  (i, j) order, is added if its source word or target word is unaligned;
* **grow-diag-final-and**: the same, but only if both its words are unaligned.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ..data.alignments import Link

NEIGHBOURS = ((1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (-1, 1), (1, -1), (-1, -1))
LinkMethod = Callable[[set[Link], set[Link]], set[Link]]
# The link-set symmetrizations by name: the hard choices of --sym and of the statistical aligner's
# --sym (:mod:`.pair` adds "none" and "soft", which need matrices).
LINK_METHODS: dict[str, LinkMethod] = {}


def symmetrize(forward: Iterable[Link], reverse: Iterable[Link], method: str) -> set[Link]:
    """Combine two directional alignments with one of :data:`LINK_METHODS`."""
    if method not in LINK_METHODS:
        raise ValueError(f"unknown symmetrization {method!r}; choose one of {', '.join(LINK_METHODS)}")
    return LINK_METHODS[method](set(forward), set(reverse))


def _grow(a: set[Link], b: set[Link], final: str | None) -> set[Link]:
    """grow-diag from the intersection, then (``final`` "or" / "and") the final step."""
    result = a & b
    src_aligned = {i for i, _ in result}
    tgt_aligned = {j for _, j in result}

    def add(link: Link) -> None:
        result.add(link)
        src_aligned.add(link[0])
        tgt_aligned.add(link[1])

    candidates = sorted((a | b) - result)
    added = True
    while added and candidates:
        added = False
        left = []
        for i, j in candidates:
            if (i not in src_aligned or j not in tgt_aligned) and any(
                (i + di, j + dj) in result for di, dj in NEIGHBOURS
            ):
                add((i, j))
                added = True
            else:
                left.append((i, j))
        candidates = left
    if final is None:
        return result
    both = final == "and"
    for side in (a, b):
        for i, j in sorted(side - result):
            unaligned_i, unaligned_j = i not in src_aligned, j not in tgt_aligned
            if (unaligned_i and unaligned_j) if both else (unaligned_i or unaligned_j):
                add((i, j))
    return result


LINK_METHODS.update({
    "intersection": lambda a, b: a & b,
    "union": lambda a, b: a | b,
    "grow-diag": lambda a, b: _grow(a, b, None),
    "grow-diag-final": lambda a, b: _grow(a, b, "or"),
    "grow-diag-final-and": lambda a, b: _grow(a, b, "and"),
})
