"""The statistical models' own settings, each stated once: the EM models' (:class:`EMSettings`) and the
fertility HMMs' Gibbs sampler's (:class:`SamplerSettings`). The model modules take them as their
defaults; what the user chooses (which aligner, how its directions combine) is
:class:`.options.TeacherOptions`. Torch-free, and imports nothing of the package.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

MAX_WORDS = 1000  # words on a side: a longer pair (a broken line, not a sentence) is left unaligned


@dataclass(frozen=True)
class EMSettings:
    """The EM-trained models' settings (ibm2; hmm and hmm-agree, which start from IBM2), each stated once:
    the functions of :mod:`.ibm2` and :mod:`.hmm` take them as their defaults."""

    iterations: int = 5  # EM iterations of each model
    alpha: float = 0.01  # the lexical table's smoothing (added to every count)
    ibm2_p0: float = 0.08  # IBM2's NULL probability
    tension: float = 4.0  # IBM2's pull towards the diagonal (fast_align's)
    hmm_p0: float = 0.2  # the HMM's NULL probability
    max_jump: int = 10  # the HMM's widest jump between source positions
    max_cells: int = 2_000_000  # trellis cells per batch (bounds memory)


@dataclass(frozen=True)
class SamplerSettings:
    """The fertility HMMs' Gibbs sampler (eflomal's model), each setting stated once."""

    sweeps: int = 40
    fertility_from: int = 10  # the sweep from which the fertility model applies
    collect: int = 20  # the last sweeps whose links are counted
    p0: float = 0.2  # the NULL probability
    alpha: float = 1e-3  # the lexical Dirichlet prior
    beta: float = 0.5  # the jump Dirichlet prior
    gamma: float = 0.5  # the fertility Dirichlet prior
    max_jump: int = 10
    max_fertility: int = 8
    seed: int = 1
    # a larger corpus's counts settle in fewer sweeps (eflomal's iterations also fall with the corpus):
    # beyond full_pairs pairs the sweeps fall as 1/sqrt(pairs), to min_sweeps at the least
    full_pairs: int = 28_000
    min_sweeps: int = 12

    def for_pairs(self, pairs: int) -> SamplerSettings:
        """The schedule for a corpus of ``pairs`` pairs: every sweep up to ``full_pairs``; beyond,
        ``sweeps * sqrt(full_pairs / pairs)``, at least ``min_sweeps`` (:meth:`with_sweeps`)."""
        if pairs <= self.full_pairs:
            return self
        return self.with_sweeps(max(self.min_sweeps, round(self.sweeps * math.sqrt(self.full_pairs / pairs))))

    def with_sweeps(self, sweeps: int) -> SamplerSettings:
        """``sweeps`` sweeps, the fertility model coming in and the counted sweeps beginning at the same
        shares of them as in this schedule."""
        share = sweeps / self.sweeps
        return replace(self, sweeps=sweeps, fertility_from=round(self.fertility_from * share),
                       collect=max(1, round(self.collect * share)))


EM, SAMPLER = EMSettings(), SamplerSettings()
MAX_SAMPLERS = 12  # the fertility HMMs' chains: their 20 collected sweeps each sum to at most 255 (uint8)
