"""An HMM word aligner (Vogel et al. 1996, with the NULL states of Och and Ney 2003), trained with EM
over batches of sentences of similar length, the forward-backward compiled (:mod:`.kernels`).
Initialised from the IBM2-diagonal model of :mod:`.ibm2`; a stronger teacher for guided alignment
(``attnalign train --guide auto``).

Target word j (0-based, of T) is emitted from a hidden state: a source position i (0..S-1, emitting
with t(f | e_i)) or a NULL state that remembers the last source position i (emitting with
t(f | NULL)). From a state at position i' the next state is

    source position i   with (1 - p0) * J(i - i') / sum_{k=0..S-1} J(k - i')
    NULL at i'          with p0

J is a jump table over distances clipped to [-max_jump, max_jump], re-estimated by EM like t; the
first word jumps from the virtual position -1. Posteriors (forward-backward, scaled) are returned per
sentence as ``[T, S + 1]``: the source positions, then the total NULL mass, so that
:func:`.links.viterbi_links` decodes them (posterior decoding).

:class:`HMMAgreement` trains the two directions' HMMs jointly (Liang et al. 2006), the default
teacher of ``--guide auto``; :func:`.links.posterior_links` decodes the pair of posteriors.

Per sentence in the forward-backward: emissions ``[T, S]`` (words) and ``[T]`` (NULL), forward and
backward variables ``[T, S]`` for the words and for the NULLs, word-to-word transitions ``[S, S]`` (a
state's NULL successor is the NULL at its own position, with probability p0).
"""

from __future__ import annotations

import functools

import numpy as np

from ..data.corpus import Pairs
from . import kernels
from .em import Batches, CellBatch, EMCounts, em, in_order, in_order_flat, m_step, my_groups
from .ids import IdCorpus, LexTable
from .learned import KeptCounts
from .processes import all_reduce
from .progress import report
from .settings import EM
from .threads import at_once

_FLOOR = 1e-100  # the smallest emission probability the E-step uses


def hmm_cost(B: int, S: int, T: int) -> int:
    """About the largest number of floats a batch's forward-backward holds in one of its arrays, in
    either direction (forward and backward variables ``[B, T, 2S]``, transitions ``[B, S, S]``)."""
    return B * max(S, T) * (S + T)


class _HMM:
    """One direction's HMM over an :class:`.ids.IdCorpus`: the lexical table, the t table and the jump
    table. Its E-step passes over the corpus batch by batch (:class:`.em.Batches`) and returns the
    expected counts of the table's entries and of the jumps; an M-step re-estimates t and J from them."""

    def __init__(self, corpus: IdCorpus | Pairs, p0: float, max_jump: int, alpha: float, ibm2_iterations: int,
                 max_cells: int, ibm2: dict, identical: float = 0.0, groups: list[np.ndarray] | None = None,
                 stage: str = "hmm", kept: KeptCounts | None = None):
        """``kept``: counts kept from training on another corpus (:mod:`.learned`), added in every M-step
        (IBM2's included: this corpus's words start from nothing, as in training); J starts from its
        jumps."""
        self.corpus = corpus if isinstance(corpus, IdCorpus) else IdCorpus.encode(corpus)
        self.table = LexTable(self.corpus)
        self.bonus = self.table.bonus(identical)
        self.n = len(self.table)
        self.p0, self.max_jump, self.alpha, self.max_cells = p0, max_jump, alpha, max_cells
        self.batches = Batches(self.corpus, self.table, max_cells, hmm_cost, groups=groups)
        self.ibm2 = (ibm2.get("p0", 0.08), ibm2.get("tension", 4.0))
        self.stage = stage
        self.jump = np.ones(2 * max_jump + 1)
        self.base = kept.on(self.corpus, self.table) if kept is not None else None  # kept lexical counts
        jumps = kept.table("jump", self.jump.shape) if kept is not None else None
        self.base_jumps = np.zeros_like(self.jump) if jumps is None else jumps  # kept jump counts
        if jumps is not None:
            self.jump = (jumps + 1e-3) / (jumps + 1e-3).sum()
        # t from IBM2: its EM steps, then one more M-step on its final posteriors
        self.set_t(em(self.batches, ibm2_iterations + 1, alpha, *self.ibm2, self.bonus, stage=stage,
                      base=self.base)
                   if ibm2_iterations else m_step(self.table, np.ones(self.n), alpha, self.bonus, self.base))

    def set_t(self, t: np.ndarray) -> None:
        self.t = t
        # a floor keeps rows whose every emission underflowed (tiny VB alpha) from dividing by zero; it
        # must stay far below real values (VB with alpha 0.01 gives unseen pairs ~1e-49; a floor that
        # reaches them changes the model)
        self._emit = np.append(np.maximum(t, _FLOOR), 0.0)  # padding emits 0

    def e_batch(self, b: CellBatch) -> tuple[np.ndarray, np.ndarray]:
        """A batch's posteriors ``[B, Tm, Sm + 1]`` and expected jump counts
        (:func:`.kernels.hmm_posteriors`)."""
        return kernels.hmm_posteriors(b.idx, self._emit, self.jump, b.S, b.T, self.p0, self.max_jump)

    def e_step(self, step: str = "") -> tuple[np.ndarray, np.ndarray]:
        """Expected counts of the table's entries [K] and of the jumps, over the corpus (this
        process's batches, summed across processes)."""
        counts, jumps, done = EMCounts(self.n), np.zeros_like(self.jump), 0
        for b in self.batches:
            post, jump_counts = self.e_batch(b)
            counts.add(b, post)
            jumps += jump_counts
            done += len(b.rows)
            report(self.stage, step, done, self.batches.pairs)
        return counts.summed(), all_reduce(jumps)

    def m_step(self, counts: np.ndarray, jump_counts: np.ndarray) -> None:
        """Re-estimate t from expected counts per table entry [K] and J from expected jump counts
        (the kept ones added, if any)."""
        self.set_t(m_step(self.table, counts, self.alpha, self.bonus, self.base))
        jump_counts = jump_counts + self.base_jumps
        self.jump = (jump_counts + 1e-3) / (jump_counts + 1e-3).sum()

    def keep(self, counts: np.ndarray, jump_counts: np.ndarray) -> KeptCounts:
        """This corpus's expected counts (an E-step's) kept by word, to go on from (:mod:`.learned`)."""
        return KeptCounts.of(self.corpus, self.table, counts, jump=jump_counts)

    def posteriors(self, lo: int, hi: int) -> list[np.ndarray]:
        """Posteriors ``[T, S + 1]`` (NULL last) of pairs ``lo..hi``."""
        return in_order(self.corpus, self.table, lo, hi, lambda b: self.e_batch(b)[0], self.max_cells,
                        hmm_cost)

    def flat_posteriors(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`posteriors` end to end, and where each pair starts (:func:`.em.in_order_flat`)."""
        return in_order_flat(self.corpus, self.table, lo, hi, lambda b: self.e_batch(b)[0], self.max_cells,
                             hmm_cost)


def fit_hmm(corpus: IdCorpus, iterations: int = EM.iterations, p0: float = EM.hmm_p0,
            max_jump: int = EM.max_jump, alpha: float = EM.alpha, ibm2_iterations: int = EM.iterations,
            max_cells: int = EM.max_cells, identical: float = 0.0, stage: str = "hmm", **ibm2) -> _HMM:
    """One direction's HMM, EM-trained (after IBM2) on ``corpus``."""
    hmm = _HMM(corpus, p0, max_jump, alpha, ibm2_iterations, max_cells, ibm2, identical, stage=stage)
    for it in range(iterations):
        hmm.m_step(*hmm.e_step(f"HMM iteration {it + 1}/{iterations}"))
    hmm.batches.release()
    return hmm


class HMMAgreement:
    """The two directions' HMMs trained jointly, by agreement (Liang, Taskar and Klein 2006): each
    E-step's count of a word-word link is the *product* of the two models' posteriors for it, for
    both models (a NULL keeps its own model's posterior), so that a link only one direction wants
    gets little mass. Both directions pass over the same pairs batch by batch: forward cell (j, i) of a
    batch is reverse cell (i, j)."""

    def __init__(self, corpus: IdCorpus, iterations: int = EM.iterations, p0: float = EM.hmm_p0,
                 max_jump: int = EM.max_jump, alpha: float = EM.alpha, ibm2_iterations: int = EM.iterations,
                 max_cells: int = EM.max_cells, identical: float = 0.0,
                 kept: tuple[KeptCounts, KeptCounts] | None = None, keep: bool = False, **ibm2):
        """``kept``: both directions' counts kept from training on another corpus, to go on from
        (:mod:`.learned`); ``keep``: keep this training's last counts in :attr:`kept`."""
        fwd_kept, rev_kept = kept or (None, None)
        groups = my_groups(corpus, max_cells, hmm_cost)  # both directions batch the same pairs together
        self.fwd, self.rev = at_once([
            functools.partial(_HMM, side, p0, max_jump, alpha, ibm2_iterations, max_cells, ibm2, identical,
                              groups=groups, stage=f"hmm-agree {name}", kept=k)
            for side, name, k in ((corpus, "forward", fwd_kept), (corpus.swapped(), "reverse", rev_kept))])
        self.kept: tuple[KeptCounts, KeptCounts] | None = None
        for it in range(iterations):
            done = 0
            f_counts, r_counts = EMCounts(self.fwd.n), EMCounts(self.rev.n)
            f_jumps, r_jumps = np.zeros_like(self.fwd.jump), np.zeros_like(self.rev.jump)
            for fb, rb in zip(self.fwd.batches, self.rev.batches, strict=True):
                (fp, fj), (rp, rj) = self._joint(fb, rb)
                f_counts.add(fb, fp, also=(r_counts, rb, rp))
                f_jumps += fj
                r_jumps += rj
                done += len(fb.rows)
                report("hmm-agree", f"HMM iteration {it + 1}/{iterations}", done, self.fwd.batches.pairs)
            fc, fj, rc, rj = f_counts.summed(), all_reduce(f_jumps), r_counts.summed(), all_reduce(r_jumps)
            if keep and it == iterations - 1:
                self.kept = self.fwd.keep(fc, fj), self.rev.keep(rc, rj)
            at_once([functools.partial(self.fwd.m_step, fc, fj), functools.partial(self.rev.m_step, rc, rj)])
        self.fwd.batches.release()
        self.rev.batches.release()

    def _joint(self, fb: CellBatch, rb: CellBatch):
        """Both directions' E-step on one batch, word-word posteriors replaced by their product."""
        (fp, fj), (rp, rj) = self.fwd.e_batch(fb), self.rev.e_batch(rb)
        kernels.agree(fp, rp)
        return (fp, fj), (rp, rj)

    def posteriors(self, lo: int, hi: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Forward posteriors ``[T, S + 1]`` and reverse ones ``[S, T + 1]`` of pairs ``lo..hi``."""
        return self._both("posteriors", lo, hi)

    def flat_posteriors(self, lo: int, hi: int) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
        """Both directions' :meth:`_HMM.flat_posteriors`: (cells, starts) forward, then reverse."""
        return self._both("flat_posteriors", lo, hi)

    def _both(self, method: str, lo: int, hi: int) -> tuple:
        """Both directions' ``method`` of pairs ``lo..hi``, forward then reverse: at once where
        :func:`.threads.possible` (each direction's batching and unpadding between its compiled loops
        overlaps with the other's)."""
        return tuple(at_once([functools.partial(getattr(m, method), lo, hi) for m in (self.fwd, self.rev)]))
