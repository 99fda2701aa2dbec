"""Symmetrization: hand-worked cases of every method (fast_align atools semantics)."""

from __future__ import annotations

import pytest

from attnalign.decoding.symmetrize import symmetrize

# forward: 0-0 1-1 2-1 0-3; reverse: 0-0 1-1 1-2 3-3
#   intersection {00, 11}; union adds 03 12 21 33.
#   grow-diag, pass 1 in (i, j) order: 03 has no aligned neighbour yet; 12 (next to 11, target 2
#   unaligned) added; 21 (next to 11, source 2 unaligned) added; 33 has no aligned neighbour.
#   pass 2: 03 is now diagonal to 12 and target 3 is unaligned: added; 33 still isolated. pass 3: none.
#   final: 33 (source 3 unaligned, target 3 aligned by 03) is added by -final, not by -final-and.
FWD = {(0, 0), (1, 1), (2, 1), (0, 3)}
REV = {(0, 0), (1, 1), (1, 2), (3, 3)}
GD = {(0, 0), (1, 1), (1, 2), (2, 1), (0, 3)}


@pytest.mark.parametrize(
    ("method", "expected"),
    [
        ("intersection", {(0, 0), (1, 1)}),
        ("union", FWD | REV),
        ("grow-diag", GD),
        ("grow-diag-final", GD | {(3, 3)}),
        ("grow-diag-final-and", GD),
    ],
)
def test_methods(method, expected):
    assert symmetrize(FWD, REV, method) == expected


def test_final_and_adds_points_whose_words_are_both_unaligned():
    assert symmetrize({(0, 0), (5, 5)}, {(0, 0)}, "grow-diag-final-and") == {(0, 0), (5, 5)}
    assert symmetrize({(0, 0), (5, 5)}, {(0, 0)}, "grow-diag") == {(0, 0)}


def test_empty_and_unknown():
    assert symmetrize([], [], "grow-diag-final-and") == set()
    with pytest.raises(ValueError, match="unknown symmetrization"):
        symmetrize([], [], "grow")
