"""IBM Model 2 with a diagonal prior (the model of fast_align, Dyer et al. 2013), trained with EM over
the cells of :mod:`.em`. Torch-free.

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

from .em import Batches, em, ibm2_posteriors, in_order
from .ids import IdCorpus, LexTable
from .learned import KeptCounts
from .settings import EM


class IBM2:
    """One direction's IBM2, EM-trained batch by batch on an :class:`.ids.IdCorpus`."""

    def __init__(self, corpus: IdCorpus, iterations: int = EM.iterations, p0: float = EM.ibm2_p0,
                 tension: float = EM.tension, alpha: float = EM.alpha, identical: float = 0.0,
                 stage: str = "ibm2", kept: KeptCounts | None = None, hold: bool = False):
        """``kept``: lexical counts kept from training on another corpus (:mod:`.learned`), added in every
        M-step; ``hold``: keep training's batches (their cached cells) for :meth:`viterbi`."""
        self.corpus, self.p0, self.tension = corpus, p0, tension
        self.table = LexTable(corpus)
        self.batches = Batches(corpus, self.table)
        self.t = em(self.batches, iterations, alpha, p0, tension, self.table.bonus(identical),
                    stage=stage, base=kept.on(corpus, self.table) if kept is not None else None)
        if not hold:
            self.batches.release()

    def posteriors(self, lo: int, hi: int) -> list[np.ndarray]:
        """Posteriors ``[T, S + 1]`` (NULL last) of pairs ``lo..hi``."""
        t_ext = np.append(self.t, 0.0)
        return in_order(self.corpus, self.table, lo, hi,
                        lambda b: ibm2_posteriors(b, t_ext, self.p0, self.tension))

    def viterbi(self) -> np.ndarray:
        """Each target word's most probable source position (S: NULL; the first of equals, as
        ``posteriors(0, len(corpus))[k].argmax(axis=1)`` gives), flat over the corpus's target words,
        over training's batches (cells cached there are not rebuilt), which it then releases. Under
        torchrun only this process's pairs are filled (0 elsewhere; the processes' sum is the whole)."""
        t_ext = np.append(self.t, 0.0)
        c = self.corpus
        out = np.zeros(len(c.tgt), dtype=np.int32)  # an empty source: NULL (0)
        for b in self.batches:
            Tm = b.idx.shape[1]
            # padded source columns hold 0, so they never win over a real one or NULL (column Sm)
            best = ibm2_posteriors(b, t_ext, self.p0, self.tension).argmax(axis=2)
            best = np.minimum(best, b.S[:, None])  # NULL -> S
            live = np.arange(Tm)[None, :] < b.T[:, None]
            at = c.tgt_off[b.rows][:, None] + np.arange(Tm)[None, :]
            out[at[live]] = best[live]
        self.batches.release()
        return out
