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
Sm is NULL), links ``a [B, Tm]`` (value Sm = NULL), fertilities ``phi [B, Sm + 1]``, and the cells
``pid`` unpadded (sentence r's ``[T, S + 1]``, NULL last, from ``poff[r]``), so that a bucket of mixed
target lengths holds no cells for its padding; a cell holds its place in its source type's row of the
lexical table, 2 bytes where every row is shorter than 65,536 entries (:func:`_cell_type`).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..data.corpus import Pairs
from ..data.npz import machine_memory
from ..errors import warn
from . import gibbs, kernels
from .em import cache_cells, padded, trim_heap
from .ibm2 import IBM2
from .ids import IdCorpus, LexTable
from .learned import KeptCounts
from .processes import all_reduce, summed_in_place, world
from .progress import report
from .settings import MAX_SAMPLERS, SAMPLER
from .threads import at_once, possible

_BUCKET = 3000  # at most this many sentences resampled together
# The two directions' samplers run at once (about half the wall time) where their state takes at most
# this share of the machine's memory, the rest left to the corpus's ids, the tables and the other
# process's work; PARALLEL_BYTES where the system does not say how much memory it has.
PARALLEL_SHARE = 0.4
PARALLEL_BYTES = 2 * 2**30


def parallel_budget(memory: int | None = None) -> int:
    """The bytes the two samplers' state may take at once on a machine of ``memory`` bytes (None: this
    machine's, :func:`~attnalign.data.npz.machine_memory`)."""
    memory = machine_memory() if memory is None else memory
    return int(PARALLEL_SHARE * memory) if memory else PARALLEL_BYTES


@dataclass
class _Bucket:
    rows: list[int]  # corpus indices of the sentences
    e: np.ndarray  # [B, Sm + 1] source type ids, NULL (0) in column Sm and in padding
    S: np.ndarray  # [B] source lengths
    T: np.ndarray  # [B] target lengths
    a: np.ndarray  # [B, Tm] current links (Sm = NULL)
    pid: np.ndarray  # each cell's place in its source type's table row: sentence r's [T, S + 1] from poff[r]
    poff: np.ndarray  # [B + 1]
    phi: np.ndarray | None = None  # [B, Sm + 1] fertilities

    @property
    def width(self) -> int:  # Sm
        return self.e.shape[1] - 1


def _groups(corpus: IdCorpus) -> list[list[int]]:
    """Sentences grouped by source length (padding stays small), at most _BUCKET a group."""
    S_all, T_all = np.diff(corpus.src_off), np.diff(corpus.tgt_off)
    keep = np.nonzero((S_all > 0) & (T_all > 0))[0]
    order = keep[np.lexsort((T_all[keep], S_all[keep]))].tolist()  # by (S, T), stable
    groups, cur = [], []
    for k in order:
        if cur and (S_all[k] > 1.25 * S_all[cur[0]] + 2 or len(cur) >= _BUCKET):
            groups.append(cur)
            cur = []
        cur.append(k)
    if cur:
        groups.append(cur)
    return groups


def _bucket(corpus: IdCorpus, table: LexTable, g: list[int], init: np.ndarray) -> _Bucket:
    """One group's padded arrays; ``init`` holds every target word's first link (flat, corpus order;
    S or more for NULL)."""
    rows = np.asarray(g, dtype=np.int64)
    src, S = padded(corpus.src, corpus.src_off, rows)
    T = np.diff(corpus.tgt_off)[rows]
    Sm = src.shape[1]
    e = np.concatenate([src, np.zeros((len(rows), 1), np.int64)], axis=1).astype(np.int32)  # NULL: column Sm
    a, _ = padded(init, corpus.tgt_off, rows)
    a = np.where(a >= S[:, None], Sm, a).astype(np.int32)
    pid = np.empty(int((T * (S + 1)).sum()), _cell_type(table))
    poff = kernels.flat_cells(corpus.src, corpus.src_off, corpus.tgt, corpus.tgt_off, rows, table.keys,
                              table.starts, table.width, pid)
    return _Bucket(g, e, S, T, a, pid, poff)


def _cell_type(table: LexTable) -> type:
    """The sampler's type for a cell's place in its source type's row: uint16 where every row fits."""
    return np.uint16 if len(table.starts) < 2 or np.diff(table.starts).max() <= 2**16 else np.int32


MIN_CELL_BYTES = 3  # the least a sampler's state takes per cell (:func:`_bytes_per_cell`)


def _bytes_per_cell(table: LexTable) -> int:
    """A sampler's state per cell: its place in the row and its link count (uint8, :class:`Marginals`)."""
    return np.dtype(_cell_type(table)).itemsize + 1


def _prepare(pairs: Pairs | IdCorpus, init: Sequence[np.ndarray] | np.ndarray, table: LexTable | None = None
             ) -> tuple[IdCorpus, LexTable, np.ndarray]:
    """The corpus as ids, its table (``table``, built from that corpus, if given), and ``init`` flat over
    its target words."""
    corpus = pairs if isinstance(pairs, IdCorpus) else IdCorpus.encode(pairs)
    flat = init if isinstance(init, np.ndarray) else (
        np.concatenate([np.asarray(x, dtype=np.int64) for x in init]) if len(init) else np.zeros(0, np.int64))
    return corpus, table if table is not None else LexTable(corpus), flat


def _buckets(pairs: Pairs | IdCorpus, init: Sequence[np.ndarray] | np.ndarray
             ) -> tuple[list[_Bucket], int, int, int]:
    """The sentences' buckets; returns them, the number of source ids (NULL 0 included), of target
    types, and of table entries."""
    corpus, table, flat = _prepare(pairs, init)
    buckets = [_bucket(corpus, table, g, flat) for g in _groups(corpus)]
    return buckets, corpus.n_src, corpus.n_tgt - 1, len(table)


def _tables(buckets: list[_Bucket], n_src: int, max_jump: int, max_fertility: int
            ) -> tuple[np.ndarray, np.ndarray]:
    """The jump counts ``[2 * max_jump + 1]`` and fertility counts ``[n_src, max_fertility + 1]`` of
    the current links; also (re)computes every bucket's ``phi``."""
    jumps = np.zeros(2 * max_jump + 1)
    fert = np.zeros((n_src, max_fertility + 1))
    for b in buckets:
        if b.phi is None:
            b.phi = np.zeros(b.e.shape, dtype=np.int32)
        gibbs.tables(b.e, b.S, b.T, b.a, b.phi, jumps, fert, max_jump, max_fertility)
    return all_reduce(jumps), all_reduce(fert)  # every process's links (torchrun)


class _Base:
    """Counts kept from training on another corpus (:mod:`.learned`), on this corpus's ids: added to
    the sampler's counts, they stay fixed while this corpus's links are sampled (all zero without)."""

    def __init__(self, corpus: IdCorpus, table: LexTable, kept: KeptCounts | None, max_jump: int,
                 max_fertility: int):
        self.n_tgt = corpus.n_tgt - 1
        self.pair, self.e = np.zeros(len(table)), np.zeros(corpus.n_src)
        self.jumps, self.fert = np.zeros(2 * max_jump + 1), np.zeros((corpus.n_src, max_fertility + 1))
        if kept is None:
            return
        on = kept.on(corpus, table)
        self.n_tgt, self.pair = on.n_tgt, on.counts
        self.e = kept.per_src(corpus, kept.src_totals)
        jumps, fert = kept.table("jump", self.jumps.shape), kept.table("fert", (max_fertility + 1,))
        if jumps is not None:
            self.jumps = jumps
        if fert is not None and fert.ndim == 2:
            self.fert = kept.per_src(corpus, fert)


class Marginals:
    """How often each (target word, source word or NULL) link was sampled: one uint8 per cell of the
    corpus (1 byte, where EM's posteriors would take 8), ``[T, S + 1]`` per pair, NULL last."""

    def __init__(self, corpus: IdCorpus, collect: int):
        if not 0 < collect <= 255:
            raise ValueError(f"collect must be in 1..255, not {collect}")
        sizes = np.diff(corpus.tgt_off) * (np.diff(corpus.src_off) + 1)
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self.counts = np.zeros(int(self.offsets[-1]), dtype=np.uint8)
        self.corpus, self.collect = corpus, collect
        self.kept: KeptCounts | None = None  # the sampler's counts at its last sweep

    def add(self, b: _Bucket) -> None:
        """Count the bucket's current links."""
        gibbs.count_links(self.counts, self.offsets[np.asarray(b.rows)], b.S, b.T, b.a)

    def flat(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        """The link counts of pairs ``lo..hi`` end to end (each pair's ``[T, S + 1]``, row-major) and
        where each pair starts ``[hi - lo + 1]``."""
        return self.counts[self.offsets[lo]:self.offsets[hi]], self.offsets[lo:hi + 1] - self.offsets[lo]

    def frequencies(self, lo: int, hi: int) -> list[np.ndarray]:
        """The sampled link frequencies ``[T, S + 1]`` of pairs ``lo..hi`` (rows sum to 1)."""
        out = []
        for k, (T, S) in enumerate(self.corpus.shapes_of(lo, hi), start=lo):
            cells = self.counts[self.offsets[k]:self.offsets[k + 1]]
            out.append(cells.reshape(T, S + 1) / self.collect if T and S else np.zeros((T, S + 1)))
        return out


def sample_marginals(pairs: Pairs | IdCorpus, init: Sequence[np.ndarray] | np.ndarray,
                     sweeps: int = SAMPLER.sweeps, fertility_from: int = SAMPLER.fertility_from,
                     collect: int = SAMPLER.collect,
                     p0: float = SAMPLER.p0, alpha: float = SAMPLER.alpha, beta: float = SAMPLER.beta,
                     gamma: float = SAMPLER.gamma, max_jump: int = SAMPLER.max_jump,
                     max_fertility: int = SAMPLER.max_fertility, seed: int = SAMPLER.seed,
                     stage: str = "fertility",
                     kept: KeptCounts | None = None, keep: bool = False, table: LexTable | None = None,
                     cores: _Cores | None = None) -> Marginals:
    """Gibbs-sample one direction's links (target words to source words) from ``init`` (per pair, a
    source position or S for NULL for every target word; or flat over the corpus's target words) and
    return the link counts of the last ``collect`` sweeps (:class:`Marginals`).

    Under torchrun each process samples its share of the buckets; the count tables are summed across
    processes after every sweep (within a sweep a process sees the others' counts of the sweep
    before: the approximation of distributed LDA samplers). Inside :func:`.progress.stopping`, setting
    its event ends the sampling (:class:`.progress.Stopped`) at the next bucket's report. ``kept``:
    link counts kept from sampling another corpus (:mod:`.learned`), added to this corpus's and fixed;
    ``keep``: the marginals' :attr:`Marginals.kept` keeps this corpus's counts of the last sweep.
    ``table``: the corpus's :class:`.ids.LexTable` where it is built already (IBM2's, for the start).
    ``cores``: shared with another sampler running at once (else this thread's
    :func:`.kernels.threads`); the links are the same whatever the cores."""
    if not 0 < collect <= sweeps:
        raise ValueError(f"collect must be in 1..sweeps, not {collect}")
    if cores is not None:
        cores.take()
    corpus, table, flat = _prepare(pairs, init, table)
    rank, procs = world()
    rng = np.random.default_rng(seed + 7919 * rank)
    buckets = [_bucket(corpus, table, g, flat) for k, g in enumerate(_groups(corpus)) if k % procs == rank]
    n_src = corpus.n_src
    base = _Base(corpus, table, kept, max_jump, max_fertility)
    n_pair = np.zeros(len(table))  # link counts per table entry (source type, target type)
    n_e = np.zeros(n_src)  # link counts per source type
    for b in buckets:
        gibbs.add_links(b.e, b.S, b.T, b.a, b.pid, b.poff, table.starts, n_pair, n_e)
    n_pair, n_e = all_reduce(n_pair) + base.pair, all_reduce(n_e) + base.e
    marg = Marginals(corpus, collect)
    for sweep in range(sweeps):
        jumps, fert = _tables(buckets, n_src, max_jump, max_fertility)
        J = (jumps + base.jumps + beta) / (jumps + base.jumps + beta).sum()
        fert = fert + base.fert + gamma
        grow = fert[:, 1:] / fert[:, :-1]  # [n_src, max_fertility]: P(phi + 1 | e) / P(phi | e)
        use_fert = sweep >= fertility_from
        start = (n_pair.copy(), n_e.copy()) if procs > 1 else None
        done, total = 0, sum(len(b.rows) for b in buckets)
        for b in buckets:
            many = (cores.take() if cores is not None else kernels.threads()) > 1
            (gibbs.sweep_parallel if many else gibbs.sweep)(
                b.e, b.S, b.T, b.a, b.pid, b.poff, table.starts, b.phi, n_pair, n_e, base.n_tgt, J, grow,
                use_fert, rng.random(int(b.T.sum())), p0, alpha, max_jump, max_fertility)
            done += len(b.rows)
            report(stage, f"sweep {sweep + 1}/{sweeps}", done, total)
        if start is not None:  # every process's changes, added to the counts all started from
            n_pair = start[0] + all_reduce(n_pair - start[0])
            n_e = start[1] + all_reduce(n_e - start[1])
        if sweep >= sweeps - collect:
            for b in buckets:
                marg.add(b)
    if procs > 1:
        summed_in_place(marg.counts)
    if keep:
        jumps, fert = _tables(buckets, n_src, max_jump, max_fertility)
        marg.kept = KeptCounts.of(corpus, table, n_pair - base.pair, jump=jumps, fert=fert)
    return marg


def _chains(samplers: int, pairs: IdCorpus, init: np.ndarray, seed: int = 1, keep: bool = False,
            **kw) -> Marginals:
    """:func:`sample_marginals` run ``samplers`` times from ``init``, with seeds ``seed``,
    ``seed + 1``, ...: the chains' counts summed into one :class:`Marginals` whose ``collect`` is
    their sum (the first chain keeps its counts with ``keep``)."""
    pooled = sample_marginals(pairs, init, seed=seed, keep=keep, **kw)
    for k in range(1, samplers):
        marg = sample_marginals(pairs, init, seed=seed + k, **kw)
        if pooled.collect + marg.collect > 255:
            raise ValueError(f"{samplers} samplers collect more than 255 sweeps; collect fewer")
        pooled.counts += marg.counts
        pooled.collect += marg.collect
    return pooled


class _Cores:
    """The cores of two samplers running at once: before each bucket a sampler takes an equal share of
    them for its thread (numba's thread count is per thread), so the one that ends last takes all the
    cores the other leaves."""

    def __init__(self, total: int, running: int):
        self.total, self.running, self.lock = total, running, threading.Lock()

    def take(self) -> int:
        # two threads may not enter parallel loops at once in every threading layer: then one core each
        n = max(1, self.total // max(1, self.running)) if self.running < 2 or kernels.thread_safe() else 1
        kernels.set_threads(n)
        return n

    def done(self) -> None:
        with self.lock:
            self.running -= 1


class FertilityModel:
    """Both directions' sampled links, each initialised with the Viterbi links of IBM2 (:mod:`.ibm2`).
    In one process with two cores or more, the two IBM2 models run at once (:mod:`.threads`) where
    their cells fit in one IBM2's cache, and the two samplers run at once in two threads (their loops
    release the GIL) where their state takes at most :func:`parallel_budget`, sharing the cores
    (:class:`_Cores`); else, and under torchrun (each direction exchanges counts with the other
    processes), one after the other on all of them."""

    def __init__(self, corpus: IdCorpus, seed: int = SAMPLER.seed,
                 kept: tuple[KeptCounts, KeptCounts] | None = None, keep: bool = False, samplers: int = 1,
                 **kw):
        """``kept``: both directions' link counts kept from sampling another corpus (:mod:`.learned`),
        to go on from; ``keep``: :attr:`kept` holds this corpus's (the first sampler's).
        ``samplers``: independent chains per direction (seeds ``seed``, ``seed + 1``, ...), one after
        the other from the same start, their counts pooled: a single chain's links depend on its
        draws, and the pool's vary less (eflomal samples several chains for the same reason)."""
        if not 1 <= samplers <= MAX_SAMPLERS:
            raise ValueError(f"samplers must be in 1..{MAX_SAMPLERS}, not {samplers}")
        schedule = SAMPLER.for_pairs(len(corpus))
        kw = {"sweeps": schedule.sweeps, "fertility_from": schedule.fertility_from,
              "collect": schedule.collect, **kw}
        fwd_kept, rev_kept = kept or (None, None)
        sides = ((corpus, "forward", fwd_kept), (corpus.swapped(), "reverse", rev_kept))
        cells = int((np.diff(corpus.tgt_off) * (np.diff(corpus.src_off) + 1)).sum())
        firsts = [functools.partial(_ibm2_links, side, name, k) for side, name, k in sides]
        # at once where both directions' cells fit in what one IBM2 may cache, or where the two samplers
        # will run at once: their state, which comes after, outweighs the two IBM2s' caches
        samplers_at_once = 2 * MIN_CELL_BYTES * cells <= parallel_budget()
        firsts = at_once(firsts, possible() and (2 * cells <= cache_cells() or samplers_at_once))
        starts = [(side, name, k, *first) for (side, name, k), first in zip(sides, firsts, strict=True)]
        jobs = [functools.partial(_chains, samplers, side, init, seed=seed, stage=f"fertility {name}", kept=k,
                                  keep=keep, table=table, **kw)
                for side, name, k, init, table in starts]
        state = sum(_bytes_per_cell(table) for *_, table in starts) * cells
        # at once with one core each even where parallel loops are not thread-safe (:class:`_Cores`)
        budget = parallel_budget()
        together = world()[1] == 1 and kernels.threads() >= 2 and state <= budget
        if world()[1] == 1 and kernels.threads() >= 2 and not together:
            warn(f"the fertility model's two directions need {state / 2**30:.1f} GiB of sampler state, more "
                 f"than {budget / 2**30:.1f} GiB ({PARALLEL_SHARE:.0%} of this machine's memory): they "
                 "sample one after the other, which takes about twice as long")
        cores = _Cores(kernels.threads(), len(jobs))

        def shared(job):
            try:
                return job(cores=cores)
            finally:
                cores.done()

        self.marginals = at_once([functools.partial(shared, job) for job in jobs] if together else jobs,
                                 together)

    @property
    def kept(self) -> tuple[KeptCounts, KeptCounts] | None:
        """Both directions' link counts at their last sweep (:mod:`.learned`; with ``keep``)."""
        fwd, rev = self.marginals[0].kept, self.marginals[1].kept
        return None if fwd is None or rev is None else (fwd, rev)

    def posteriors(self, lo: int, hi: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Forward link frequencies ``[T, S + 1]`` and reverse ones ``[S, T + 1]`` of pairs ``lo..hi``."""
        return self.marginals[0].frequencies(lo, hi), self.marginals[1].frequencies(lo, hi)


def _ibm2_links(side: IdCorpus, name: str, kept: KeptCounts | None = None) -> tuple[np.ndarray, LexTable]:
    """One direction's IBM2 Viterbi links, flat over the target words (S: NULL): the sampler's start
    (``kept``: link counts kept from another corpus join IBM2's counts); and IBM2's lexical table of
    ``side``, which the sampler reads too."""
    ibm2 = IBM2(side, 5, stage=f"fertility {name}", kept=kept, hold=True)
    init, table = ibm2.viterbi(), ibm2.table
    del ibm2
    trim_heap()  # before the samplers' state comes on top
    return summed_in_place(init), table
