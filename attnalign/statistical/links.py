"""Posteriors -> links, and the word-prefix view of a corpus. Torch-free.

Posteriors are ``[T, S + 1]`` per pair (NULL last) for the forward direction and ``[S, T + 1]`` for the
reverse one; links are ``(src_i, tgt_j)``, 0-based.
"""

from __future__ import annotations

import numpy as np

from ..data.alignments import Link
from ..data.corpus import Pairs
from .options import POSTERIOR_THRESHOLD


def viterbi_links(post: np.ndarray) -> list[Link]:
    """Each target word to its most probable source word; NULL means no link. ``post`` is [T, S+1]."""
    if post.size == 0:
        return []
    best = post.argmax(axis=1)
    S = post.shape[1] - 1
    return sorted((int(i), j) for j, i in enumerate(best) if i < S)


def posterior_links(fwd: np.ndarray, rev: np.ndarray, threshold: float = POSTERIOR_THRESHOLD) -> list[Link]:
    """Links (i, j) whose posterior is at least ``threshold`` in both directions: ``fwd`` is the
    forward posteriors [T, S + 1], ``rev`` the reverse ones [S, T + 1] (NULL last)."""
    return mask_links(posterior_mask(fwd, rev, threshold))


def posterior_mask(fwd: np.ndarray, rev: np.ndarray, threshold: float = POSTERIOR_THRESHOLD) -> np.ndarray:
    """:func:`posterior_links` as a mask ``[S, T]``: True where a link is."""
    return np.minimum(fwd[:, :-1].T, rev[:, :-1]) >= threshold


def mask_links(mask: np.ndarray) -> list[Link]:
    """The links of a mask ``[S, T]``, sorted (row-major order is (i, j) order)."""
    i, j = np.nonzero(mask)
    return list(zip(i.tolist(), j.tolist(), strict=True))


def word_prefixes(pairs: Pairs, prefix: int) -> Pairs:
    """Every word cut to its first ``prefix`` characters (``prefix`` 0: the pairs unchanged); the
    sentences keep their lengths, so links found on the result are links of ``pairs``."""
    if prefix < 0:
        raise ValueError(f"prefix must be 0 (whole words) or a positive length, not {prefix}")
    if not prefix:
        return pairs
    return [([w[:prefix] for w in s], [w[:prefix] for w in t]) for s, t in pairs]
