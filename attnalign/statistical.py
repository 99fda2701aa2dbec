"""A fast statistical word aligner: IBM Model 2 with a diagonal prior (the model of fast_align, Dyer et
al. 2013), trained with EM, vectorized over the whole corpus in NumPy. Torch-free.

It serves as a baseline, as the initialisation of the HMM aligner (:mod:`.hmm`, the default teacher
for guided-alignment training, ``attnalign train --guide auto``) and as a teacher itself
(``--guide-model ibm2``): symmetrized Viterbi links supervise the NMT model's attention.

Model, for target word j (1-based) of a target sentence of length n and a source sentence of length m:

    p(a_j = 0)          = p0                                    (NULL)
    p(a_j = i), i >= 1  = (1 - p0) * exp(lambda * h(i, j)) / Z,   h(i, j) = -|i/m - j/n|
    p(f_j | a_j = i)    = t(f_j | e_i)

EM re-estimates t; with ``alpha > 0`` the M-step is variational Bayes with a symmetric Dirichlet prior
(fast_align's ``-v``), which keeps rare words from collecting probability mass. With ``identical > 0``
every pair of identical source and target types (names, numbers, shared loanwords and cognates cut to
the same prefix) gets that many extra counts in every M-step: a prior that a word seen once aligns to
its identical twin, which frequent words' counts outweigh.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .alignments import Link
from .errors import AttnAlignError
from .symmetrize import METHODS, symmetrize

Pairs = Sequence[tuple[Sequence[str], Sequence[str]]]


def _digamma(x: np.ndarray) -> np.ndarray:
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
class _Cells:
    """Every (sentence, target word, source word or NULL) cell of the corpus, flattened."""

    unique: np.ndarray  # [cells] index of the (source word, target word) type pair
    pair_src: np.ndarray  # [pairs] source word id of each type pair (0 = NULL)
    row: np.ndarray  # [cells] index of the (sentence, target word) row
    prior: np.ndarray  # [cells] distortion probability
    shapes: list[tuple[int, int]]  # (T, S) per sentence; rows have S + 1 cells (NULL last)
    n_tgt: int = 0  # target vocabulary size
    bonus: np.ndarray | None = None  # [pairs] extra counts of each type pair in every M-step


def _cells(pairs: Pairs, p0: float, tension: float, identical: float = 0.0) -> _Cells:
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
        return _Cells(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0),
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
    return _Cells(unique, pair_src, row, np.concatenate(prior_parts), shapes, len(tgt_ids), bonus)


def _posteriors(c: _Cells, t: np.ndarray) -> np.ndarray:
    score = t[c.unique] * c.prior
    z = np.bincount(c.row, weights=score)
    return score / np.maximum(z[c.row], 1e-300)


def m_step(c: _Cells, counts: np.ndarray, alpha: float) -> np.ndarray:
    """Translation table t(f | e) per type pair from expected counts: relative frequencies, or with
    ``alpha > 0`` variational Bayes under a symmetric Dirichlet prior; ``c.bonus`` (identical types)
    is added to the counts."""
    if c.bonus is not None:
        counts = counts + c.bonus
    n_src = int(c.pair_src.max()) + 1 if c.pair_src.size else 1
    total = np.bincount(c.pair_src, weights=counts, minlength=n_src)
    if alpha > 0:
        return np.exp(_digamma(counts + alpha) - _digamma(total + alpha * c.n_tgt)[c.pair_src])
    return counts / np.maximum(total[c.pair_src], 1e-300)


def em(c: _Cells, iterations: int, alpha: float) -> np.ndarray:
    """The translation table after ``iterations`` EM steps of the IBM2 model, from uniform."""
    n_pairs = int(c.unique.max()) + 1 if c.unique.size else 0
    t = np.ones(n_pairs)
    for _ in range(iterations):
        t = m_step(c, np.bincount(c.unique, weights=_posteriors(c, t), minlength=n_pairs), alpha)
    return t


def train_posteriors(pairs: Pairs, iterations: int = 5, p0: float = 0.08, tension: float = 4.0,
                     alpha: float = 0.01, identical: float = 0.0) -> list[np.ndarray]:
    """EM-train the model on ``pairs`` and return each pair's posteriors ``[T, S + 1]`` (NULL last)."""
    c = _cells(pairs, p0, tension, identical)
    post = _posteriors(c, em(c, iterations, alpha))
    out, k = [], 0
    for T, S in c.shapes:
        if S == 0 or T == 0:
            out.append(np.zeros((T, S + 1)))
            continue
        n = T * (S + 1)
        out.append(post[k:k + n].reshape(T, S + 1))
        k += n
    return out


def viterbi_links(post: np.ndarray) -> list[Link]:
    """Each target word to its most probable source word; NULL means no link. ``post`` is [T, S+1]."""
    if post.size == 0:
        return []
    best = post.argmax(axis=1)
    S = post.shape[1] - 1
    return sorted((int(i), j) for j, i in enumerate(best) if i < S)


MODELS = ("ibm2", "hmm", "hmm-agree", "fertility", "hmm-agree+fertility")
# "hmm-agree+fertility" (the default teacher): the union of the agreement HMMs' posterior links
# (threshold POSTERIOR_THRESHOLD, words cut to ``prefix``) and the links that the fertility HMMs of
# :mod:`.fertility` (whole words, FERTILITY_PREFIX) sample in at least FERTILITY_THRESHOLD of their
# sweeps in both directions. Their errors differ: test AER of the union En-Fr 6.3, Ro-En 28.3, Es-En
# 24.2 against 6.7 / 30.7 / 26.2 for hmm-agree alone (trial 6.7 against 7.2; bench/quality.py).
COMBINED = "hmm-agree+fertility"
FERTILITY_PREFIX = 0
FERTILITY_THRESHOLD = 0.5  # trial pick over the intersection of the max-marginal links (6.7 / 6.9)
# How align_statistical combines the two directions: a symmetrization of the Viterbi links, or
# "posterior": the links whose posterior is at least POSTERIOR_THRESHOLD in *both* directions.
SYMS = (*METHODS, "posterior")
POSTERIOR_THRESHOLD = 0.2  # chosen on the English-French trial set (bench/quality.py)
# The statistical models see every word cut to its first PREFIX characters (0: whole words): a crude
# stemmer that pools the counts of a word's inflected forms, so that rare forms borrow the statistics
# of frequent ones (an old trick for small corpora of inflected languages). Chosen on the English-
# French trial set (bench/quality.py); test AER, whole words -> 5 characters: hmm-agree En-Fr 9.1 ->
# 7.1, Ro-En 34.8 -> 31.1, Es-En 29.1 -> 26.5; hmm (posterior) En-Fr 10.7 -> 8.6, Ro-En 39.7 -> 32.7;
# ibm2 (intersection) En-Fr 15.2 -> 13.2, Ro-En 42.6 -> 36.1.
PREFIX = 5
# Extra counts for identical source and target types in every M-step (0: none; see the module doc).
# Chosen on the English-French trial set (hmm-agree: trial AER 7.22 -> 7.21; test 7.1 -> 6.7, Ro-En
# 31.1 -> 30.7, Es-En 26.5 -> 26.2; bench/quality.py).
IDENTICAL = 1.0


def check_choices(model: str, sym: str, syms: tuple[str, ...] = SYMS) -> None:
    """A clear error for an unknown statistical model or way of combining the directions."""
    if model not in MODELS or sym not in syms:
        raise AttnAlignError(f"unknown statistical model {model!r} or symmetrization {sym!r}",
                             hint=f"choose {', '.join(MODELS)} and {', '.join(syms)}")
    if model == COMBINED and sym != "posterior":
        raise AttnAlignError(f"{COMBINED} combines its two models' posterior links; it has no {sym!r}",
                             hint=f"use posterior (--sym / --guide-sym) with it, or another aligner "
                                  f"with {sym}")


def word_prefixes(pairs: Pairs, prefix: int) -> Pairs:
    """Every word cut to its first ``prefix`` characters (``prefix`` 0: the pairs unchanged); the
    sentences keep their lengths, so links found on the result are links of ``pairs``."""
    if prefix < 0:
        raise ValueError(f"prefix must be 0 (whole words) or a positive length, not {prefix}")
    if not prefix:
        return pairs
    return [([w[:prefix] for w in s], [w[:prefix] for w in t]) for s, t in pairs]


def directional_posteriors(pairs: Pairs, model: str = "ibm2", iterations: int = 5, prefix: int = PREFIX,
                           identical: float = IDENTICAL, **kw) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Train both directions on ``pairs``; return the forward posteriors ``[T, S + 1]`` and the reverse
    ones ``[S, T + 1]`` of every pair (NULL last).

    ``model``: ``ibm2`` (this module), ``hmm`` (:mod:`.hmm`, initialised with IBM2), ``hmm-agree`` (the
    two HMMs trained jointly by agreement, :func:`.hmm.train_hmm_agreement`) or ``fertility`` (the
    Gibbs-sampled HMMs with fertility of :mod:`.fertility`: marginal link frequencies instead of
    posteriors; ``iterations`` and ``identical`` do not apply). ``prefix``: the models see words cut to
    this many characters (:data:`PREFIX`; 0: whole words). ``identical``: extra counts
    for identical types (:data:`IDENTICAL`; 0: none)."""
    if model not in MODELS or model == COMBINED:
        raise ValueError(f"unknown statistical model {model!r}; choose "
                         f"{', '.join(m for m in MODELS if m != COMBINED)} "
                         f"({COMBINED} combines two of them: see align_statistical)")
    if identical < 0:
        raise ValueError(f"identical must be 0 (no prior) or a positive count, not {identical}")
    pairs = word_prefixes(pairs, prefix)
    if model == "fertility":
        from .fertility import train_fertility_posteriors

        return train_fertility_posteriors(pairs, **kw)  # no identical-word prior
    kw["identical"] = identical
    if model == "hmm-agree":
        from .hmm import train_hmm_agreement

        return train_hmm_agreement(pairs, iterations, **kw)
    if model == "hmm":
        from .hmm import train_hmm_posteriors as train
    else:
        train = train_posteriors
    return train(pairs, iterations, **kw), train([(t, s) for s, t in pairs], iterations, **kw)


def posterior_links(fwd: np.ndarray, rev: np.ndarray, threshold: float = POSTERIOR_THRESHOLD) -> list[Link]:
    """Links (i, j) whose posterior is at least ``threshold`` in both directions: ``fwd`` is the
    forward posteriors [T, S + 1], ``rev`` the reverse ones [S, T + 1] (NULL last)."""
    both = np.minimum(fwd[:, :-1], rev[:, :-1].T)  # [T, S]
    return sorted((int(i), int(j)) for j, i in zip(*np.nonzero(both >= threshold), strict=True))


def directional_links(pairs: Pairs, model: str = "ibm2", iterations: int = 5, prefix: int = PREFIX,
                      identical: float = IDENTICAL, **kw) -> tuple[list[list[Link]], list[list[Link]]]:
    """Train both directions on ``pairs``; return each direction's Viterbi links (both source first)."""
    fwd, rev = directional_posteriors(pairs, model, iterations, prefix, identical, **kw)
    return ([viterbi_links(p) for p in fwd],
            [[(i, j) for j, i in viterbi_links(p)] for p in rev])  # reverse: (tgt, src) -> (src, tgt)


def align_statistical(pairs: Pairs, sym: str = "grow-diag-final-and", iterations: int = 5,
                      model: str = "ibm2", prefix: int = PREFIX, identical: float = IDENTICAL,
                      **kw) -> list[list[Link]]:
    """Train both directions on ``pairs`` and return links per pair (source first), combined with
    ``sym``: one of :data:`SYMS`, or ``none`` for the forward direction alone. ``prefix``,
    ``identical``: see :func:`directional_posteriors`. ``model`` :data:`COMBINED` takes ``sym``
    "posterior" only (its own rule; ``prefix`` and ``identical`` apply to its agreement HMMs)."""
    if sym not in (*SYMS, "none"):
        raise ValueError(f"unknown symmetrization {sym!r}; choose one of {', '.join(SYMS)}")
    if model == COMBINED:
        if sym != "posterior":
            raise ValueError(f"{COMBINED} combines posterior links; it takes sym 'posterior', not {sym!r}")
        return combined_links(pairs, iterations, prefix, identical, **kw)
    if sym == "posterior":
        fwd, rev = directional_posteriors(pairs, model, iterations, prefix, identical, **kw)
        return [posterior_links(f, r) for f, r in zip(fwd, rev, strict=True)]
    fwd, rev = directional_links(pairs, model, iterations, prefix, identical, **kw)
    if sym == "none":
        return fwd
    return [sorted(symmetrize(f, r, sym)) for f, r in zip(fwd, rev, strict=True)]


def combined_links(pairs: Pairs, iterations: int = 5, prefix: int = PREFIX, identical: float = IDENTICAL,
                   **kw) -> list[list[Link]]:
    """The links of :data:`COMBINED`: the agreement HMMs' posterior links (words cut to ``prefix``,
    ``identical`` prior) united with the fertility HMMs' links sampled in at least
    :data:`FERTILITY_THRESHOLD` of the sweeps in both directions (whole words)."""
    af, ar = directional_posteriors(pairs, "hmm-agree", iterations, prefix, identical, **kw)
    ff, fr = directional_posteriors(pairs, "fertility", prefix=FERTILITY_PREFIX)
    return [sorted(set(posterior_links(a, b)) | set(posterior_links(c, d, FERTILITY_THRESHOLD)))
            for a, b, c, d in zip(af, ar, ff, fr, strict=True)]
