"""A Bayesian HMM word aligner with fertility, sampled by Gibbs sampling (in the spirit of eflomal,
Östling and Tiedemann 2016), vectorised over sentences in NumPy. Torch-free.

One direction: target word j (0-based, of T) is linked to a source position a_j in 0..S-1 or to NULL.
Resampling a_j given every other link of the corpus weighs source position i by

    (1 - p0) * lex(f_j | e_i) * J(i - prev) * J(next - i) / J(next - prev) * fert(e_i, phi_i)

and NULL by ``p0 * lex(f_j | NULL)``, where

- ``lex(f | e) = (n(e, f) + alpha) / (n(e) + alpha * V_f)``: the link counts of the whole corpus
  (collapsed Dirichlet-multinomial, updated after every step);
- ``prev``/``next``: the nearest non-NULL links before and after j (-1 and S at the sentence ends), so
  that NULL links do not break the jump chain; J is a jump distribution over distances clipped to
  ``[-max_jump, max_jump]`` (a clipped bucket's mass is shared among the positions it covers);
- ``fert(e, phi) = P(phi + 1 | e) / P(phi | e)``: how much more likely source word type e is to have
  one more linked target word than its current ``phi`` (the other target words linked to position i).

J and the fertility tables are re-estimated from the current links before every sweep (with Dirichlet
pseudo-counts ``beta`` and ``gamma``); the first ``fertility_from`` sweeps leave fertility out (an HMM
burn-in). Each step resamples word j of every sentence at once (a sentence-parallel sweep). The result
is the marginal link frequencies of the last ``collect`` sweeps, ``[T, S + 1]`` per pair (NULL last),
which :func:`.links.posterior_links` and :func:`.links.viterbi_links` decode like
posteriors. Deterministic for a given ``seed``.

Why it is here: fertility lets a model prefer that a content word be linked (and a word be linked to
several words when its type usually is), which the agreement-trained HMMs of :mod:`.hmm` cannot say;
their errors differ, and the union of the two models' confident links is the default teacher
(``hmm-agree+fertility``, :func:`.align.combined_links`).

Shapes, per bucket of sentences of similar source length: source type ids ``e [B, Sm + 1]`` (column
Sm is NULL), links ``a [B, Tm]`` (value Sm = NULL), cell pair ids ``pid [B, Tm, Sm + 1]``, fertilities
``phi [B, Sm + 1]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..data.corpus import Pairs
from .ibm2 import train_posteriors

_BUCKET = 3000  # at most this many sentences resampled together


@dataclass
class _Bucket:
    rows: list[int]  # corpus indices of the sentences
    e: np.ndarray  # [B, Sm + 1] source type ids, NULL in column Sm and in padding
    S: np.ndarray  # [B] source lengths
    T: np.ndarray  # [B] target lengths
    a: np.ndarray  # [B, Tm] current links (Sm = NULL)
    pid: np.ndarray  # [B, Tm, Sm + 1] (source type, target type) pair id of every cell
    phi: np.ndarray | None = None  # [B, Sm + 1] fertilities

    @property
    def width(self) -> int:  # Sm
        return self.e.shape[1] - 1


def _buckets(pairs: Pairs, init: Sequence[np.ndarray]) -> tuple[list[_Bucket], int, int, int]:
    """Sentences grouped by source length (padding stays small); returns the buckets, the number of
    source types (NULL included, last), of target types and of pair ids."""
    src_ids: dict[str, int] = {}
    tgt_ids: dict[str, int] = {}
    E = [np.array([src_ids.setdefault(w, len(src_ids)) for w in s], dtype=np.int64) for s, _ in pairs]
    F = [np.array([tgt_ids.setdefault(w, len(tgt_ids)) for w in t], dtype=np.int64) for _, t in pairs]
    n_src, n_tgt = len(src_ids) + 1, len(tgt_ids)
    null = n_src - 1
    order = sorted((k for k in range(len(pairs)) if len(E[k]) and len(F[k])),
                   key=lambda k: (len(E[k]), len(F[k])))
    groups, cur = [], []
    for k in order:
        if cur and (len(E[k]) > 1.25 * len(E[cur[0]]) + 2 or len(cur) >= _BUCKET):
            groups.append(cur)
            cur = []
        cur.append(k)
    if cur:
        groups.append(cur)
    buckets, keys = [], []
    for g in groups:
        S = np.array([len(E[k]) for k in g])
        T = np.array([len(F[k]) for k in g])
        Sm, Tm = int(S.max()), int(T.max())
        e = np.full((len(g), Sm + 1), null, dtype=np.int64)
        f = np.zeros((len(g), Tm), dtype=np.int64)
        a = np.zeros((len(g), Tm), dtype=np.int64)
        for r, k in enumerate(g):
            e[r, :S[r]] = E[k]
            f[r, :T[r]] = F[k]
            start = np.asarray(init[k], dtype=np.int64).copy()
            start[start >= S[r]] = Sm
            a[r, :T[r]] = start
        keys.append((e[:, None, :] * n_tgt + f[:, :, None]).ravel())  # [B * Tm * (Sm + 1)]
        buckets.append(_Bucket(g, e, S, T, a, np.zeros(0, np.int64)))
    if not buckets:
        return [], n_src, n_tgt, 0
    uniq, inv = np.unique(np.concatenate(keys), return_inverse=True)
    off = 0
    for b in buckets:
        n = b.a.shape[0] * b.a.shape[1] * (b.width + 1)
        b.pid = inv[off: off + n].reshape(b.a.shape[0], b.a.shape[1], b.width + 1)
        off += n
    return buckets, n_src, n_tgt, len(uniq)


def _tail_count(d: np.ndarray, real: np.ndarray, max_jump: int) -> np.ndarray:
    """Per cell of ``d [R, Sm]`` (jump distances): 1, or for a distance in a clipped bucket the number
    of real positions of its row in that bucket, which share the bucket's probability."""
    hi = np.maximum(((d >= max_jump) & real).sum(1, keepdims=True), 1)
    lo = np.maximum(((d <= -max_jump) & real).sum(1, keepdims=True), 1)
    return np.where(d >= max_jump, hi, np.where(d <= -max_jump, lo, 1)).astype(np.float64)


def _live(b: _Bucket) -> np.ndarray:
    return np.arange(b.a.shape[1])[None, :] < b.T[:, None]  # [B, Tm]


def _tables(buckets: list[_Bucket], n_src: int, max_jump: int, max_fertility: int, beta: float,
            gamma: float) -> tuple[np.ndarray, np.ndarray]:
    """The jump distribution ``[2 * max_jump + 1]`` and fertility pseudo-count table ``[n_src,
    max_fertility + 1]`` from the current links; also (re)computes every bucket's ``phi``."""
    jumps = np.zeros(2 * max_jump + 1)
    fert = np.zeros((n_src, max_fertility + 1))
    for b in buckets:
        B, Sm = b.e.shape[0], b.width
        live = _live(b)
        linked = live & (b.a < Sm)
        b.phi = np.zeros((B, Sm + 1), dtype=np.int64)
        np.add.at(b.phi, (np.nonzero(linked)[0], b.a[linked]), 1)
        real = np.arange(Sm)[None, :] < b.S[:, None]
        np.add.at(fert, (b.e[:, :Sm][real], np.minimum(b.phi[:, :Sm][real], max_fertility)), 1)
        prev = np.full(B, -1)
        for j in range(b.a.shape[1]):
            m = linked[:, j]
            np.add.at(jumps, np.clip(b.a[m, j] - prev[m], -max_jump, max_jump) + max_jump, 1)
            prev = np.where(m, b.a[:, j], prev)
        np.add.at(jumps, np.clip(b.S - prev, -max_jump, max_jump) + max_jump, 1)  # to the end
    return (jumps + beta) / (jumps + beta).sum(), fert + gamma


def sample_marginals(pairs: Pairs, init: Sequence[np.ndarray], sweeps: int = 40, fertility_from: int = 10,
                     collect: int = 20, p0: float = 0.2, alpha: float = 1e-3, beta: float = 0.5,
                     gamma: float = 0.5, max_jump: int = 10, max_fertility: int = 8, seed: int = 1
                     ) -> list[np.ndarray]:
    """Gibbs-sample one direction's links (target words to source words) from ``init`` (per pair, a
    source position or S for NULL for every target word) and return the marginal link frequencies of
    the last ``collect`` sweeps, ``[T, S + 1]`` per pair (NULL last; rows sum to 1)."""
    if not 0 < collect <= sweeps:
        raise ValueError(f"collect must be in 1..sweeps, not {collect}")
    rng = np.random.default_rng(seed)
    buckets, n_src, n_tgt, n_pairs = _buckets(pairs, init)
    n_pair = np.zeros(n_pairs)  # link counts per (source type, target type)
    n_e = np.zeros(n_src)  # link counts per source type
    for b in buckets:
        live = _live(b)
        rows = np.arange(b.a.shape[0])[:, None]
        np.add.at(n_pair, b.pid[rows, np.arange(b.a.shape[1])[None, :], b.a][live], 1)
        np.add.at(n_e, b.e[rows, b.a][live], 1)
    marg = [np.zeros((len(t), len(s) + 1)) for s, t in pairs]
    for sweep in range(sweeps):
        J, fert = _tables(buckets, n_src, max_jump, max_fertility, beta, gamma)
        use_fert = sweep >= fertility_from
        for b in buckets:
            _sweep(b, n_pair, n_e, n_tgt, J, fert if use_fert else None, rng, p0, alpha, max_jump,
                   max_fertility)
        if sweep >= sweeps - collect:
            for b in buckets:
                for r, k in enumerate(b.rows):
                    T, S = b.T[r], b.S[r]
                    links = np.minimum(b.a[r, :T], S)  # NULL -> column S
                    marg[k][np.arange(T), links] += 1
    return [m / collect for m in marg]


def _sweep(b: _Bucket, n_pair, n_e, n_tgt, J, fert, rng, p0, alpha, max_jump, max_fertility) -> None:
    """Resample every target position of the bucket's sentences, position by position."""
    Sm, Tm = b.width, b.a.shape[1]
    real = np.arange(Sm + 1)[None, :] < b.S[:, None]
    real[:, Sm] = True  # NULL is always a choice
    pos = np.arange(Sm)[None, :]
    for j in range(Tm):
        rows = np.nonzero(j < b.T)[0]
        if rows.size == 0:
            continue
        ar = np.arange(rows.size)
        old = b.a[rows, j]
        pid = b.pid[rows, j]  # [R, Sm + 1]
        # take word j's link out of the counts
        np.subtract.at(n_pair, pid[ar, old], 1)
        np.subtract.at(n_e, b.e[rows, old], 1)
        linked = old < Sm
        b.phi[rows[linked], old[linked]] -= 1
        # the nearest non-NULL links before and after j
        if j:
            lm = b.a[rows, :j] < Sm
            last = j - 1 - np.argmax(lm[:, ::-1], axis=1)
            prev = np.where(lm.any(1), b.a[rows, last], -1)
        else:
            prev = np.full(rows.size, -1)
        nxt = b.S[rows]
        if j + 1 < Tm:
            right = b.a[rows, j + 1:]
            rm = (np.arange(j + 1, Tm)[None, :] < b.T[rows, None]) & (right < Sm)
            nxt = np.where(rm.any(1), right[ar, np.argmax(rm, axis=1)], nxt)
        rp = real[rows, :Sm]
        d_in, d_out = pos - prev[:, None], nxt[:, None] - pos  # [R, Sm]
        in_share = _tail_count(d_in, rp, max_jump)
        into = J[np.clip(d_in, -max_jump, max_jump) + max_jump] / in_share
        out = J[np.clip(d_out, -max_jump, max_jump) + max_jump] / _tail_count(d_out, rp, max_jump)
        skip = nxt - prev  # the jump prev -> next shares its bucket as a jump from prev would
        share = np.where(np.abs(skip) >= max_jump, in_share[ar, np.clip(nxt, 0, Sm - 1)], 1.0)
        skip_p = J[np.clip(skip, -max_jump, max_jump) + max_jump] / share
        lex = (n_pair[pid] + alpha) / (n_e[b.e[rows]] + alpha * n_tgt)  # [R, Sm + 1]
        w = np.empty((rows.size, Sm + 1))
        w[:, :Sm] = (1 - p0) * lex[:, :Sm] * into * out / skip_p[:, None]
        w[:, Sm] = p0 * lex[:, Sm]
        if fert is not None:
            phi = np.minimum(b.phi[rows, :Sm], max_fertility - 1)
            types = b.e[rows, :Sm]
            w[:, :Sm] *= fert[types, phi + 1] / fert[types, phi]
        w *= real[rows]
        c = np.cumsum(w, axis=1)
        u = rng.random(rows.size) * c[:, -1]
        new = np.minimum((c < u[:, None]).sum(1), Sm)
        # put the new link into the counts
        b.a[rows, j] = new
        np.add.at(n_pair, pid[ar, new], 1)
        np.add.at(n_e, b.e[rows, new], 1)
        linked = new < Sm
        b.phi[rows[linked], new[linked]] += 1


def train_fertility_posteriors(pairs: Pairs, seed: int = 1, **kw
                               ) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Both directions, each initialised with the Viterbi links of IBM2 (:mod:`.ibm2`): the
    forward marginals ``[T, S + 1]`` and the reverse ones ``[S, T + 1]`` per pair (NULL last)."""
    out = []
    for side in (pairs, [(t, s) for s, t in pairs]):
        init = [p.argmax(axis=1) for p in train_posteriors(side, 5)]
        out.append(sample_marginals(side, init, seed=seed, **kw))
    return out[0], out[1]
