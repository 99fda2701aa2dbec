"""Compiled loops of the EM's M-step side (numba): the expected counts collected from a batch's
posteriors, one direction or two at once, and digamma (variational Bayes). Torch-free.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(cache=True, inline="always")
def _add_part(total, idx, w, p, parts):
    """Part ``p`` of ``parts`` of :func:`add_counts`: the cells whose entry is in the p-th range."""
    n = len(total)
    lo, hi = p * n // parts, (p + 1) * n // parts
    for k in range(len(idx)):
        x = idx[k]
        if lo <= x < hi:
            total[x] += w[k]


@njit(cache=True, nogil=True, parallel=True)
def add_counts(total, idx, w, parts, total2, idx2, w2, parts2):
    """``total[idx[k]] += w[k]`` for every k, in order of k for each entry, as ``np.add.at`` would
    give it; and the same of ``total2``, ``idx2``, ``w2`` (another direction's; ``parts2`` 0: none).
    ``parts`` threads split the first's entries and ``parts2`` the second's, not the cells: each reads
    every index of its direction and adds the cells of its own range of entries, so no two threads
    write the same entry and the sums do not depend on the threads."""
    for p in prange(parts + parts2):
        if p < parts:
            _add_part(total, idx, w, p, parts)
        else:
            _add_part(total2, idx2, w2, p - parts, parts2)


@njit(cache=True, nogil=True, parallel=True)
def digamma(x):
    """Digamma of every ``x > 0`` (recurrence up to 6, then the asymptotic series)."""
    out = np.empty(len(x))
    for k in prange(len(x)):
        v, acc = x[k], 0.0
        while v < 6:
            acc -= 1.0 / v
            v += 1.0
        inv = 1.0 / v
        inv2 = inv * inv
        out[k] = acc + np.log(v) - 0.5 * inv - inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 / 252))
    return out
