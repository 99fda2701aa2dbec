"""Compiled loops of the decoding (numba): a batch's posteriors laid out pair by pair, and the default
teacher's links from both models' cells of many pairs at once (:func:`.align.union_links`). Torch-free.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def unpad_into(values, S, T, at, out):
    """A padded batch's values ``[B, Tm, Sm + 1]`` (NULL in column Sm) written pair by pair into ``out``:
    pair b's ``[T, S + 1]`` cells (NULL last), row-major from ``at[b]``."""
    Sm = values.shape[2] - 1
    for b in range(values.shape[0]):
        s, t = S[b], T[b]
        for j in range(t):
            row = at[b] + j * (s + 1)
            for i in range(s):
                out[row + i] = values[b, j, i]
            out[row + s] = values[b, j, Sm]


@njit(cache=True)
def union_cells(S, T, fwd, f_at, rev, r_at, f_count, fc_at, r_count, rc_at, collect, threshold,
                count_threshold):
    """The links (i, j) of pairs with ``S [P]`` and ``T [P]`` words whose two posteriors are both at
    least ``threshold`` (``fwd``: each pair's ``[T, S + 1]`` from ``f_at``, ``rev``: its ``[S, T + 1]``
    from ``r_at``), or whose two sampled counts out of ``collect`` are both at least ``count_threshold``
    (``f_count``, ``r_count``: the same layouts from ``fc_at``, ``rc_at``). Returns the links' i and j,
    in (i, j) order pair by pair, and where each pair starts ``[P + 1]``."""
    room = 0
    for k in range(len(S)):
        room += S[k] * T[k]
    li, lj = np.empty(room, np.int32), np.empty(room, np.int32)
    starts = np.zeros(len(S) + 1, np.int64)
    m = 0
    for k in range(len(S)):
        s, t = S[k], T[k]
        for i in range(s):
            for j in range(t):
                on = (fwd[f_at[k] + j * (s + 1) + i] >= threshold
                      and rev[r_at[k] + i * (t + 1) + j] >= threshold)
                if not on:
                    on = (f_count[fc_at[k] + j * (s + 1) + i] / collect >= count_threshold
                          and r_count[rc_at[k] + i * (t + 1) + j] / collect >= count_threshold)
                if on:
                    li[m], lj[m] = i, j
                    m += 1
        starts[k + 1] = m
    return li[:m], lj[:m], starts
