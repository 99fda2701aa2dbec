"""Decoders: one soft attention matrix -> links. Pure numpy, no torch.

A matrix is ``[T_tgt, S_src]`` (row j: target word j's attention over the source words). Links are
``(src_i, tgt_j)``, 0-based, returned sorted in Pharaoh order (by source index, then target index).
``eos`` is the optional ``[T_tgt]`` attention mass each target word put on the source EOS (and no
word): an argmax that lands there means "no link".

:data:`DECODERS` is the registry: ``--decoder``'s choices, ``plot sentence --compare`` and the
report's sweep all read it, so a new decoder is one function and one :func:`register_decoder` line.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..data.alignments import Link

# (matrix [T, S], eos [T] or None, threshold) -> links
DecodeFn = Callable[[np.ndarray, "np.ndarray | None", float], list[Link]]


@dataclass(frozen=True)
class Decoder:
    """A registered decoder. ``sweep``: the report scores it among the configurations it tries (a
    decoder that needs a tuned parameter, like ``threshold``, is left to the user)."""

    name: str
    fn: DecodeFn
    help: str
    sweep: bool = True


THRESHOLD = 0.5  # --decoder threshold's cut where no decoding policy sets another
RELATIVE_RATIO = 0.7  # --decoder relative: the share of its row's and column's largest weight a link holds
DECODERS: dict[str, Decoder] = {}


def register_decoder(name: str, help: str, sweep: bool = True) -> Callable[[DecodeFn], DecodeFn]:
    """Register ``fn(matrix, eos, threshold) -> links`` under ``name``."""

    def add(fn: DecodeFn) -> DecodeFn:
        DECODERS[name] = Decoder(name, fn, help, sweep)
        return fn

    return add


def argmax_links(m: np.ndarray, eos: np.ndarray | None = None) -> list[Link]:
    """Each target word to its most attended source word (none when EOS gets more)."""
    if m.size == 0:
        return []
    best = m.argmax(axis=1)
    keep = np.ones(len(best), dtype=bool) if eos is None else m.max(axis=1) >= eos
    return sorted((int(i), int(j)) for j, i in enumerate(best) if keep[j])


def argmax_src_links(m: np.ndarray, eos: np.ndarray | None = None) -> list[Link]:
    """Each source word to its most attended-from target word (column argmax of ``[T, S]``).

    ``eos`` here is per source word ``[S]`` (e.g. a reverse model's EOS mass): more mass there means
    no link for that source word.
    """
    if m.size == 0:
        return []
    best = m.argmax(axis=0)
    keep = np.ones(len(best), dtype=bool) if eos is None else m.max(axis=0) >= eos
    return sorted((int(i), int(j)) for i, j in enumerate(best) if keep[i])


def inter_links(m: np.ndarray, eos: np.ndarray | None = None) -> list[Link]:
    """Links where the row argmax and the column argmax agree (within one matrix)."""
    cols = set(argmax_src_links(m))
    return [link for link in argmax_links(m, eos) if link in cols]


def threshold_links(m: np.ndarray, threshold: float) -> list[Link]:
    """Every (source, target) cell whose weight exceeds ``threshold``."""
    tj, si = np.nonzero(m > threshold)
    return sorted((int(i), int(j)) for j, i in zip(tj, si, strict=True))


register_decoder("argmax", "each target word to its best source word")(
    lambda m, eos, threshold: argmax_links(m, eos))
register_decoder("argmax-src", "each source word to its best target word")(
    lambda m, eos, threshold: argmax_src_links(m))  # a target word's EOS mass says nothing per source word
register_decoder("inter", "the links where both argmaxes agree")(
    lambda m, eos, threshold: inter_links(m, eos))
def relative_links(m: np.ndarray, threshold: float, ratio: float = RELATIVE_RATIO) -> list[Link]:
    """Every cell above ``threshold`` holding at least ``ratio`` of the largest weight in its row (its
    target word's) and in its column (its source word's): a cut that follows the matrix's own scale, so
    that a flatter matrix keeps its links."""
    if m.size == 0:
        return []
    keep = ((m >= ratio * m.max(axis=1, keepdims=True))
            & (m >= ratio * m.max(axis=0, keepdims=True)) & (m > threshold))
    tj, si = np.nonzero(keep)
    return sorted((int(i), int(j)) for j, i in zip(tj, si, strict=True))


register_decoder("threshold", "every cell above --threshold", sweep=False)(
    lambda m, eos, threshold: threshold_links(m, threshold))
register_decoder("relative", f"every cell above --threshold holding {RELATIVE_RATIO:g} of the largest weight "
                 "in its row and in its column", sweep=False)(
    lambda m, eos, threshold: relative_links(m, threshold))


def decode_matrix(m: np.ndarray, decoder: str = "argmax", eos: np.ndarray | None = None,
                  threshold: float = THRESHOLD) -> list[Link]:
    """Decode one ``[T, S]`` matrix with a registered decoder (see :data:`DECODERS`)."""
    if decoder not in DECODERS:
        raise ValueError(f"unknown decoder {decoder!r}; choose one of {', '.join(DECODERS)}")
    return DECODERS[decoder].fn(m, eos, threshold)
