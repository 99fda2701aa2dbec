"""Decoding one pair: its forward matrix (and the reverse model's, turned to ``[T, S]``) -> links.
Pure numpy, no torch.

:data:`SYMMETRIZATIONS` is the registry behind ``--sym``; each entry reads the pair's matrices and
returns its links, their scores and the matrix they were decoded from (what a plot must draw under
them):

* ``none``: the forward matrix ``[T, S]`` with the decoder;
* every link method of :mod:`.symmetrize` (``intersection`` ... ``grow-diag-final-and``): forward
  links by the decoder on the forward matrix, reverse links by the column argmax of the turned reverse
  matrix (each source word to its best target word), then the link method; a link's score is the mean
  of its two weights, and the forward matrix is the one drawn;
* ``soft``: the mean of the forward and the turned reverse matrix, decoded with the decoder.

A new symmetrization is one function and one :func:`register_symmetrization` line; ``--sym``, the
report's sweep and ``plot sentence`` then know it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..data.alignments import Link
from .decoders import THRESHOLD, argmax_src_links, decode_matrix
from .symmetrize import LINK_METHODS, symmetrize

Decoded = tuple[list[Link], dict[Link, float], np.ndarray]
# (fwd [T, S], fwd_eos [T] | None, rev [T, S], rev_eos [S] | None, decoder, threshold) -> Decoded
SymFn = Callable[..., Decoded]


@dataclass(frozen=True)
class Symmetrization:
    """A registered way to read a pair. ``both``: it needs the reverse direction; ``hard``: it
    combines two link sets (the forward matrix is the one its links are drawn on)."""

    name: str
    fn: SymFn
    help: str
    both: bool = True
    hard: bool = False


SYMMETRIZATIONS: dict[str, Symmetrization] = {}


def register_symmetrization(name: str, help: str, both: bool = True, hard: bool = False
                            ) -> Callable[[SymFn], SymFn]:
    def add(fn: SymFn) -> SymFn:
        SYMMETRIZATIONS[name] = Symmetrization(name, fn, help, both, hard)
        return fn

    return add


@register_symmetrization("none", "the forward direction alone", both=False)
def _forward(fwd, fwd_eos, rev, rev_eos, decoder, threshold) -> Decoded:
    links = decode_matrix(fwd, decoder, fwd_eos, threshold)
    return links, {(i, j): float(fwd[j, i]) for i, j in links}, fwd


def _hard(method: str) -> SymFn:
    def read(fwd, fwd_eos, rev, rev_eos, decoder, threshold) -> Decoded:
        forward = decode_matrix(fwd, decoder, fwd_eos, threshold)
        reverse = argmax_src_links(rev, rev_eos)
        links = sorted(symmetrize(forward, reverse, method))
        return links, {(i, j): float((fwd[j, i] + rev[j, i]) / 2) for i, j in links}, fwd

    return read


for _method in LINK_METHODS:
    register_symmetrization(_method, f"{_method} of the two directions' links", hard=True)(_hard(_method))


@register_symmetrization("soft", "the mean of the two directions' matrices, then the decoder")
def _soft(fwd, fwd_eos, rev, rev_eos, decoder, threshold) -> Decoded:
    m = (fwd + rev) / 2
    links = decode_matrix(m, decoder, fwd_eos, threshold)
    return links, {(i, j): float(m[j, i]) for i, j in links}, m


def decode_pair(fwd: np.ndarray, fwd_eos: np.ndarray | None, rev: np.ndarray | None,
                rev_eos: np.ndarray | None, decoder: str = "argmax", sym: str = "none",
                threshold: float = THRESHOLD) -> Decoded:
    """Links, their scores and the matrix they were read from, for one pair (see the module doc).

    ``fwd`` and ``rev`` are ``[T, S]``; ``fwd_eos`` is ``[T]``, ``rev_eos`` ``[S]`` (per source word).
    Without ``rev`` every symmetrization reads the forward direction alone.
    """
    if sym not in SYMMETRIZATIONS:
        raise ValueError(f"unknown symmetrization {sym!r}; choose one of {', '.join(SYMMETRIZATIONS)}")
    entry = SYMMETRIZATIONS["none"] if rev is None else SYMMETRIZATIONS[sym]
    return entry.fn(fwd, fwd_eos, rev, rev_eos, decoder, threshold)

