"""Symmetrization of a forward and a reverse alignment. Pure Python, no torch.

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

from collections.abc import Iterable

from .alignments import Link

NEIGHBOURS = ((1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (-1, 1), (1, -1), (-1, -1))
METHODS = ("intersection", "union", "grow-diag", "grow-diag-final", "grow-diag-final-and")


def symmetrize(forward: Iterable[Link], reverse: Iterable[Link], method: str) -> set[Link]:
    """Combine two directional alignments with one of :data:`METHODS`."""
    a, b = set(forward), set(reverse)
    if method == "intersection":
        return a & b
    if method == "union":
        return a | b
    if method not in METHODS:
        raise ValueError(f"unknown symmetrization {method!r}; choose one of {', '.join(METHODS)}")
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
    if method == "grow-diag":
        return result
    both = method == "grow-diag-final-and"
    for side in (a, b):
        for i, j in sorted(side - result):
            unaligned_i, unaligned_j = i not in src_aligned, j not in tgt_aligned
            if (unaligned_i and unaligned_j) if both else (unaligned_i or unaligned_j):
                add((i, j))
    return result
