"""The EM cells shared by the IBM2 and HMM aligners: every (sentence, target word, source word or NULL)
cell of a corpus, flattened, with the index of its (source type, target type) pair; the E-step
posteriors and the M-step (relative frequencies or variational Bayes) over them. Torch-free.

With ``identical > 0`` every pair of identical source and target types (names, numbers, shared
loanwords and cognates cut to the same prefix) gets that many extra counts in every M-step: a prior
that a word seen once aligns to its identical twin, which frequent words' counts outweigh.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..data.corpus import Pairs


def digamma(x: np.ndarray) -> np.ndarray:
    """Digamma for x > 0 (recurrence up to 6, then the asymptotic series)."""
    x = np.asarray(x, dtype=np.float64).copy()
    out = np.zeros_like(x)
    small = x < 6
    while small.any():
        out[small] -= 1.0 / x[small]
        x[small] += 1.0
        small = x < 6
    inv = 1.0 / x
    inv2 = inv * inv
    return out + np.log(x) - 0.5 * inv - inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 / 252))


@dataclass
class Cells:
    """Every (sentence, target word, source word or NULL) cell of the corpus, flattened."""

    unique: np.ndarray  # [cells] index of the (source word, target word) type pair
    pair_src: np.ndarray  # [pairs] source word id of each type pair (0 = NULL)
    row: np.ndarray  # [cells] index of the (sentence, target word) row
    prior: np.ndarray  # [cells] distortion probability
    shapes: list[tuple[int, int]]  # (T, S) per sentence; rows have S + 1 cells (NULL last)
    n_tgt: int = 0  # target vocabulary size
    bonus: np.ndarray | None = None  # [pairs] extra counts of each type pair in every M-step


def build_cells(pairs: Pairs, p0: float, tension: float, identical: float = 0.0) -> Cells:
    src_ids: dict[str, int] = {}
    tgt_ids: dict[str, int] = {}
    e_parts, f_parts, prior_parts, shapes = [], [], [], []
    for s, t in pairs:
        S, T = len(s), len(t)
        shapes.append((T, S))
        if S == 0 or T == 0:
            continue
        e = np.array([src_ids.setdefault(w, len(src_ids) + 1) for w in s] + [0], dtype=np.int64)
        f = np.array([tgt_ids.setdefault(w, len(tgt_ids)) for w in t], dtype=np.int64)
        i = np.arange(1, S + 1) / S
        j = np.arange(1, T + 1) / T
        h = np.exp(-tension * np.abs(i[None, :] - j[:, None]))  # [T, S]
        h = (1 - p0) * h / h.sum(axis=1, keepdims=True)
        prior_parts.append(np.concatenate([h, np.full((T, 1), p0)], axis=1).ravel())
        e_parts.append(np.tile(e, T))
        f_parts.append(np.repeat(f, S + 1))
    if not e_parts:
        return Cells(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0),
                      shapes, 0)
    e_all = np.concatenate(e_parts)
    f_all = np.concatenate(f_parts)
    key = e_all * (len(tgt_ids) + 1) + f_all
    uniq, unique = np.unique(key, return_inverse=True)
    row_len = np.concatenate([np.full(T, S + 1) for T, S in shapes if S and T])
    row = np.repeat(np.arange(len(row_len)), row_len)
    pair_src = uniq // (len(tgt_ids) + 1)
    bonus = None
    if identical:
        same = np.array([src_ids.get(w, -1) for w in tgt_ids], dtype=np.int64)  # target type -> its source id
        bonus = identical * (same[uniq % (len(tgt_ids) + 1)] == pair_src)
    return Cells(unique, pair_src, row, np.concatenate(prior_parts), shapes, len(tgt_ids), bonus)


def posteriors(c: Cells, t: np.ndarray) -> np.ndarray:
    score = t[c.unique] * c.prior
    z = np.bincount(c.row, weights=score)
    return score / np.maximum(z[c.row], 1e-300)


def m_step(c: Cells, counts: np.ndarray, alpha: float) -> np.ndarray:
    """Translation table t(f | e) per type pair from expected counts: relative frequencies, or with
    ``alpha > 0`` variational Bayes under a symmetric Dirichlet prior; ``c.bonus`` (identical types)
    is added to the counts."""
    if c.bonus is not None:
        counts = counts + c.bonus
    n_src = int(c.pair_src.max()) + 1 if c.pair_src.size else 1
    total = np.bincount(c.pair_src, weights=counts, minlength=n_src)
    if alpha > 0:
        return np.exp(digamma(counts + alpha) - digamma(total + alpha * c.n_tgt)[c.pair_src])
    return counts / np.maximum(total[c.pair_src], 1e-300)


def em(c: Cells, iterations: int, alpha: float) -> np.ndarray:
    """The translation table after ``iterations`` EM steps of the IBM2 model, from uniform."""
    n_pairs = int(c.unique.max()) + 1 if c.unique.size else 0
    t = np.ones(n_pairs)
    for _ in range(iterations):
        t = m_step(c, np.bincount(c.unique, weights=posteriors(c, t), minlength=n_pairs), alpha)
    return t
