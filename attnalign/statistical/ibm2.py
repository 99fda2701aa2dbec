"""IBM Model 2 with a diagonal prior (the model of fast_align, Dyer et al. 2013), trained with EM over
the cells of :mod:`.cells`. Torch-free.

A baseline, the initialisation of the HMM (:mod:`.hmm`) and of the fertility sampler
(:mod:`.fertility`), and a teacher itself (``--guide-model ibm2``).

Model, for target word j (1-based) of a target sentence of length n and a source sentence of length m:

    p(a_j = 0)          = p0                                    (NULL)
    p(a_j = i), i >= 1  = (1 - p0) * exp(lambda * h(i, j)) / Z,   h(i, j) = -|i/m - j/n|
    p(f_j | a_j = i)    = t(f_j | e_i)

EM re-estimates t; with ``alpha > 0`` the M-step is variational Bayes with a symmetric Dirichlet prior
(fast_align's ``-v``), which keeps rare words from collecting probability mass.
"""

from __future__ import annotations

import numpy as np

from ..data.corpus import Pairs
from .cells import build_cells, em, posteriors


def train_posteriors(pairs: Pairs, iterations: int = 5, p0: float = 0.08, tension: float = 4.0,
                     alpha: float = 0.01, identical: float = 0.0) -> list[np.ndarray]:
    """EM-train the model on ``pairs`` and return each pair's posteriors ``[T, S + 1]`` (NULL last)."""
    c = build_cells(pairs, p0, tension, identical)
    post = posteriors(c, em(c, iterations, alpha))
    out, k = [], 0
    for T, S in c.shapes:
        if S == 0 or T == 0:
            out.append(np.zeros((T, S + 1)))
            continue
        n = T * (S + 1)
        out.append(post[k:k + n].reshape(T, S + 1))
        k += n
    return out
