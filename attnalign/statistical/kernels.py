"""Compiled inner loops of the statistical aligners' EM (numba): the cells' table entries, IBM2's
E-step, the HMM's forward-backward and agreement; and the number of cores every compiled loop runs on
(:func:`set_threads`; the count collection and the M-step's digamma are in :mod:`.count_kernels`, the
sampler's loops in :mod:`.gibbs`). Torch-free.
"""

from __future__ import annotations

import functools

import numba
import numpy as np
from numba import njit, prange

from ..dist import local_processes


def set_threads(threads: int | None = None) -> None:
    """Run the parallel loops on ``threads`` cores (None: every core, or under torchrun the cores
    divided among the machine's processes, as torch's threads are)."""
    most = numba.config.NUMBA_NUM_THREADS
    if threads is None:
        threads = most // max(1, local_processes())
    numba.set_num_threads(max(1, min(threads, most)))


def threads() -> int:
    """The cores the parallel loops run on (:func:`set_threads`)."""
    return numba.get_num_threads()


@functools.cache
def thread_safe() -> bool:
    """Whether two threads may run parallel loops at once: numba's OpenMP and TBB threading layers
    allow it; its workqueue layer (where neither library is found) ends the process instead."""
    agree(np.ones((1, 1, 2)), np.ones((1, 1, 2)))  # the layer is chosen at the first parallel loop
    return numba.threading_layer() in ("omp", "tbb")


@njit(cache=True)
def _sentence_fb(emit_w, emit_n, trans, init, s, t, p0, g_w, g_n, xi):
    """The HMM's scaled forward-backward (:mod:`.hmm`) of one sentence: emissions ``emit_w [t, s]``
    (source words) and ``emit_n [t]`` (NULL), word-to-word transitions ``trans [s, s]`` (times 1 - p0),
    the start ``init [s]`` (from position -1). Adds its word and NULL posteriors to ``g_w [t, s]``,
    ``g_n [t]`` and its expected moves to ``xi [s, s]`` (all zero before)."""
    a_w, a_n = np.zeros((t, s)), np.zeros((t, s))
    scale = np.ones(t)
    for j in range(t):
        c = 0.0
        for i in range(s):
            if j == 0:
                a_w[0, i] = init[i] * emit_w[0, i]
                a_n[0, i] = p0 * emit_n[0] if i == 0 else 0.0
            else:
                acc = 0.0
                for k in range(s):
                    acc += (a_w[j - 1, k] + a_n[j - 1, k]) * trans[k, i]
                a_w[j, i] = acc * emit_w[j, i]
                a_n[j, i] = p0 * (a_w[j - 1, i] + a_n[j - 1, i]) * emit_n[j]
            c += a_w[j, i] + a_n[j, i]
        c = max(c, 1e-300)
        scale[j] = c
        for i in range(s):
            a_w[j, i] /= c
            a_n[j, i] /= c
    beta = np.ones(s)
    nxt = np.empty(s)
    m = np.zeros((s, s))  # sum over steps of at_pos[t, k] * nxt[t, i]
    for i in range(s):
        g_w[t - 1, i] = a_w[t - 1, i]
        g_n[t - 1] += a_n[t - 1, i]
    for j in range(t - 2, -1, -1):
        for i in range(s):
            nxt[i] = emit_w[j + 1, i] * beta[i] / scale[j + 1]
        new_beta = np.empty(s)
        for k in range(s):
            acc = 0.0
            for i in range(s):
                acc += trans[k, i] * nxt[i]
            new_beta[k] = acc + p0 * (emit_n[j + 1] * beta[k] / scale[j + 1])  # a NULL successor
        for k in range(s):
            at = a_w[j, k] + a_n[j, k]
            for i in range(s):
                m[k, i] += at * nxt[i]
        beta = new_beta
        for i in range(s):
            g_w[j, i] = a_w[j, i] * beta[i]
            g_n[j] += a_n[j, i] * beta[i]
    for k in range(s):
        for i in range(s):
            xi[k, i] = trans[k, i] * m[k, i]


@njit(cache=True)
def transitions(jump, s, p0, max_jump):
    """The HMM's word-to-word transitions ``[s, s]`` (row: from position k, over the real positions i,
    times 1 - p0) and its initial distribution ``[s]`` (from position -1) in a sentence of ``s`` source
    words, from the jump table ``jump [2 max_jump + 1]`` (:mod:`.hmm`). A clipped end bucket's mass is
    shared among the positions it covers."""
    trans = np.empty((s, s))
    for k in range(s):
        far = max(s - (k + max_jump), 1)  # positions k + max_jump and beyond
        back = max(k - max_jump + 1, 1)  # positions k - max_jump and before
        total = 0.0
        for i in range(s):
            d = i - k
            w = jump[min(max(d, -max_jump), max_jump) + max_jump]
            if d >= max_jump:
                w /= far
            elif d <= -max_jump:
                w /= back
            trans[k, i] = w
            total += w
        total = max(total, 1e-300)
        for i in range(s):
            trans[k, i] = (1 - p0) * trans[k, i] / total
    init = np.empty(s)
    far = max(s - max_jump + 1, 1)  # from -1: positions max_jump - 1 and beyond
    total = 0.0
    for i in range(s):
        w = jump[min(i + 1, max_jump) + max_jump]
        if i + 1 >= max_jump:
            w /= far
        init[i] = w
        total += w
    total = max(total, 1e-300)
    for i in range(s):
        init[i] = (1 - p0) * init[i] / total
    return trans, init


@njit(cache=True, nogil=True, parallel=True)
def hmm_posteriors(idx, emit, jump, S, T, p0, max_jump):
    """The HMM's E-step on a batch of cells (:class:`.em.Batch`'s ``idx [B, Tm, Sm + 1]``, lengths
    ``S``, ``T [B]``), sentence by sentence in parallel: each cell's emission is ``emit[idx]`` (the
    table's t, then a 0 for the padding), the transitions come from ``jump`` (:func:`transitions`).
    Returns the posteriors ``[B, Tm, Sm + 1]`` (NULL in column Sm, 0 in the padding) and the expected
    counts of the jumps ``[2 max_jump + 1]``."""
    B, Tm, Sm1 = idx.shape
    Sm = Sm1 - 1
    post = np.zeros((B, Tm, Sm1))
    moves = np.zeros((B, 2 * max_jump + 1))
    for b in prange(B):
        s, t = S[b], T[b]
        emit_w, emit_n = np.empty((t, s)), np.empty(t)
        for j in range(t):
            for i in range(s):
                emit_w[j, i] = emit[idx[b, j, i]]
            emit_n[j] = emit[idx[b, j, Sm]]
        trans, init = transitions(jump, s, p0, max_jump)
        g_w, g_n, xi = np.zeros((t, s)), np.zeros(t), np.zeros((s, s))
        _sentence_fb(emit_w, emit_n, trans, init, s, t, p0, g_w, g_n, xi)
        for j in range(t):
            for i in range(s):
                post[b, j, i] = g_w[j, i]
            post[b, j, Sm] = g_n[j]
        for k in range(s):
            for i in range(s):
                moves[b, min(max(i - k, -max_jump), max_jump) + max_jump] += xi[k, i]
    return post, moves.sum(axis=0)


@njit(cache=True, nogil=True, parallel=True)
def agree(fwd, rev):
    """The agreement of two directions' posteriors on a batch, in place: forward cell (b, j, i) and
    reverse cell (b, i, j) both become their product, for every word-word cell (``fwd [B, Tm, Sm + 1]``,
    ``rev [B, Sm, Tm + 1]``); the NULL columns keep their own."""
    B, Tm, Sm1 = fwd.shape
    for b in prange(B):
        for j in range(Tm):
            for i in range(Sm1 - 1):
                v = fwd[b, j, i] * rev[b, i, j]
                fwd[b, j, i] = v
                rev[b, i, j] = v


@njit(cache=True, inline="always")
def _find(keys, lo, hi, key):
    """Where ``key`` stands (or would stand) in the sorted ``keys[lo:hi]``, as an index of ``keys``."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if keys[mid] < key:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, inline="always")
def _gallop(keys, lo, hi, key):
    """:func:`_find` where ``key`` is likely near ``lo``: steps of 1, 2, 4, ... then a binary search."""
    step = 1
    while lo + step < hi and keys[lo + step - 1] < key:
        lo += step
        step *= 2
    return _find(keys, lo, min(lo + step, hi), key)


@njit(cache=True, inline="always")
def _pair_cells(src, s0, s, tgt, t0, t, keys, starts, width, out, base, row, null, within):
    """The table entries of one pair's cells: cell (j, i) to ``out[base + j * row + i]``, its NULL
    cell (j) to ``out[base + j * row + null]``; ``within``: each as its place in its source type's row
    (the entry less ``starts[e]``). The target words are looked up in order of type, each from where
    the last was found in the source type's sorted row of the table."""
    order = np.argsort(tgt[t0:t0 + t])
    for i in range(s + 1):
        e = np.int64(src[s0 + i]) if i < s else np.int64(0)  # NULL: source type 0
        col = i if i < s else null
        lo, hi = starts[e], starts[e + 1]
        less = lo if within else 0
        at = lo
        for j in order:
            at = _gallop(keys, at, hi, e * width + tgt[t0 + j])
            out[base + j * row + col] = at - less


@njit(cache=True, nogil=True, parallel=True)
def batch_cells(src, src_off, tgt, tgt_off, rows, keys, starts, width):
    """The cells of the pairs ``rows`` of an id corpus (:class:`.ids.IdCorpus`'s arrays) as the table
    entries ``idx [B, Tm, Sm + 1]`` of :class:`.em.Batch` (column Sm: NULL; padding: ``len(keys)``),
    with the source and target lengths ``S``, ``T [B]``. Every cell's key must be in the table
    (``keys``, ``starts``, ``width`` of :class:`.ids.LexTable` built from the same corpus)."""
    B = len(rows)
    S = src_off[rows + 1] - src_off[rows]
    T = tgt_off[rows + 1] - tgt_off[rows]
    Sm = S.max() if B else 0
    Tm = T.max() if B else 0
    idx = np.full((B, Tm, Sm + 1), len(keys), np.int64)
    flat = idx.reshape(-1)
    for b in prange(B):
        _pair_cells(src, src_off[rows[b]], S[b], tgt, tgt_off[rows[b]], T[b], keys, starts, width, flat,
                    b * Tm * (Sm + 1), Sm + 1, Sm, False)
    return idx, S, T


@njit(cache=True, nogil=True)
def flat_cells(src, src_off, tgt, tgt_off, rows, keys, starts, width, out):
    """The pairs ``rows``' cells, unpadded, into ``out`` (``sum(T * (S + 1))`` of them): pair b's
    ``[T, S + 1]`` (NULL last), row-major, from ``off[b]``; each cell as its place in its source type's
    row of the table (the entry is ``starts[e] + place``). Returns ``off [B + 1]``. Keys as
    :func:`batch_cells`'. One thread, without the GIL: the two sampler threads each call it (two threads
    may enter numba's parallel loops at once only in some threading layers: :func:`thread_safe`)."""
    B = len(rows)
    S = src_off[rows + 1] - src_off[rows]
    T = tgt_off[rows + 1] - tgt_off[rows]
    off = np.zeros(B + 1, np.int64)
    off[1:] = np.cumsum(T * (S + 1))
    for b in range(B):
        _pair_cells(src, src_off[rows[b]], S[b], tgt, tgt_off[rows[b]], T[b], keys, starts, width, out,
                    off[b], S[b] + 1, S[b], True)
    return off


@njit(cache=True, nogil=True, parallel=True)
def ibm2_posteriors(idx, S, T, t_ext, p0, tension):
    """IBM2's E-step on a batch of cells (:mod:`.em`, :mod:`.ibm2`), sentence by sentence in
    parallel: the posteriors ``[B, Tm, Sm + 1]`` (0 in the padding) of ``idx [B, Tm, Sm + 1]`` under
    the translation probabilities ``t_ext`` (the table's, then a 0 for the padding) and the diagonal
    prior of ``p0`` and ``tension``; ``S``, ``T [B]``: the real lengths."""
    B, Tm, Sm1 = idx.shape
    Sm = Sm1 - 1
    out = np.zeros((B, Tm, Sm1))
    for b in prange(B):
        s, t = S[b], T[b]
        h = np.empty(s)
        for j in range(t):
            norm = 0.0
            for i in range(s):
                h[i] = np.exp(-tension * abs((i + 1) / s - (j + 1) / t))
                norm += h[i]
            norm = max(norm, 1e-300)
            total = 0.0
            for i in range(s):
                v = t_ext[idx[b, j, i]] * ((1 - p0) * h[i] / norm)
                out[b, j, i] = v
                total += v
            v = t_ext[idx[b, j, Sm]] * p0
            out[b, j, Sm] = v
            total = max(total + v, 1e-300)
            for i in range(s):
                out[b, j, i] /= total
            out[b, j, Sm] /= total
    return out


@njit(cache=True)
def _lex_rows(src, src_off, tgt_off, n_src):
    """The pairs each source type occurs in (as often as it occurs), pairs with an empty side left out:
    type e's are ``pairs[first[e]:first[e + 1]]``; type 0 (NULL) occurs once in every pair. Also each
    type's work, the target words of those pairs (``[n_src]``)."""
    n = len(src_off) - 1
    count = np.zeros(n_src + 1, np.int64)
    for k in range(n):
        s0, s1 = src_off[k], src_off[k + 1]
        if s1 > s0 and tgt_off[k + 1] > tgt_off[k]:
            count[1] += 1  # NULL
            for p in range(s0, s1):
                count[src[p] + 1] += 1
    first = np.cumsum(count)
    pairs = np.empty(first[-1], np.int32)
    fill = first[:-1].copy()
    work = np.zeros(n_src, np.int64)
    for k in range(n):
        s0, s1 = src_off[k], src_off[k + 1]
        t = tgt_off[k + 1] - tgt_off[k]
        if s1 > s0 and t > 0:
            pairs[fill[0]] = k
            fill[0] += 1
            work[0] += t
            for p in range(s0, s1):
                e = src[p]
                pairs[fill[e]] = k
                fill[e] += 1
                work[e] += t
    return pairs, first, work


@njit(cache=True, inline="always")
def _type_row(e, pairs, first, tgt, tgt_off, seen, out, at, write):
    """How many distinct target types the pairs of source type e hold (``seen[f] == e`` marks those
    met); with ``write``, each also goes to ``out`` from ``at``, in order of first meeting."""
    c = 0
    for q in range(first[e], first[e + 1]):
        k = pairs[q]
        for x in range(tgt_off[k], tgt_off[k + 1]):
            f = tgt[x]
            if seen[f] != e:
                seen[f] = e
                if write:
                    out[at + c] = f
                c += 1
    return c


@njit(cache=True, nogil=True, parallel=True)
def lex_keys(src, src_off, tgt, tgt_off, n_src, width, parts):
    """The sorted distinct keys ``e * width + f`` of every (source type or NULL 0, target type)
    co-occurring in a pair with both sides non-empty, and ``starts [n_src + 1]``: type e's keys are
    ``keys[starts[e]:starts[e + 1]]``. ``parts`` runs of source types of about equal work go to the
    threads; each marks the target types it has seen for the current type instead of sorting every
    cell's key."""
    pairs, first, work = _lex_rows(src, src_off, tgt_off, n_src)
    # runs of types [bound[p], bound[p + 1]) of about equal work (a type is never split)
    bound = np.full(parts + 1, n_src, np.int64)
    bound[0] = 0
    done, p = 0, 1
    total = max(work.sum(), 1)
    for e in range(n_src):
        while p < parts and done >= p * total / parts:
            bound[p] = e
            p += 1
        done += work[e]
    count = np.zeros(n_src, np.int64)
    none = np.empty(0, np.int64)
    for p in prange(parts):  # first count each type's distinct target types, then write them
        seen = np.full(width, -1, np.int32)
        for e in range(bound[p], bound[p + 1]):
            count[e] = _type_row(e, pairs, first, tgt, tgt_off, seen, none, 0, False)
    starts = np.zeros(n_src + 1, np.int64)
    starts[1:] = np.cumsum(count)
    keys = np.empty(starts[-1], np.int64)
    for p in prange(parts):
        seen = np.full(width, -1, np.int32)
        for e in range(bound[p], bound[p + 1]):
            _type_row(e, pairs, first, tgt, tgt_off, seen, keys, starts[e], True)
            row = keys[starts[e]:starts[e + 1]]
            row.sort()
            for x in range(len(row)):
                row[x] += e * width
    return keys, starts
