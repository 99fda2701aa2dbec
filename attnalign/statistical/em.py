"""The EM cells shared by the IBM2 and HMM aligners, in padded batches of sentences of similar shape;
the E-step posteriors and the M-step (relative frequencies or variational Bayes) over the
:class:`.ids.LexTable`. Torch-free.

A cell is one (sentence, target word, source word or NULL) triple. A :class:`CellBatch` holds, for a
group of sentences of similar (S, T), the index of every cell's (source type, target type) entry in
the table, ``idx [B, Tm, Sm + 1]`` (column Sm is NULL; padding points one past the table's end, where
the probabilities are 0). EM passes over a corpus batch by batch: memory holds one batch's cells,
plus a cache of batches' indices up to :func:`cache_cells` cells, never every pair's matrices.

With ``identical > 0`` every pair of identical source and target types (names, numbers, shared
loanwords and cognates cut to the same prefix) gets that many extra counts in every M-step: a prior
that a word seen once aligns to its identical twin, which frequent words' counts outweigh.
"""

from __future__ import annotations

import contextlib
import ctypes
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from ..data.npz import machine_memory
from ..dist import local_processes
from . import count_kernels, decode_kernels, kernels
from .ids import IdCorpus, LexTable
from .learned import OnTable
from .processes import all_reduce, world
from .progress import report

IBM2_CELLS = 1_000_000  # cells of an IBM2 batch
# A direction's EM keeps its batches' cell indices (4 bytes a cell) between passes up to this share of
# the machine's memory (divided among the processes torchrun started on it) and rebuilds the rest every
# pass, which costs about three times the pass itself; CACHE_CELLS cells where the system does not say
# how much memory it has.
CACHE_SHARE = 0.1
CACHE_CELLS = 60_000_000


def cache_cells(memory: int | None = None) -> int:
    """The cells one direction's EM keeps between passes in one process on a machine of ``memory``
    bytes (None: this machine's, :func:`~attnalign.data.npz.machine_memory`)."""
    memory = machine_memory() if memory is None else memory
    return int(CACHE_SHARE * memory / local_processes()) // 4 if memory else CACHE_CELLS


def digamma(x: np.ndarray) -> np.ndarray:
    """Digamma for x > 0 (any shape; :func:`.count_kernels.digamma`)."""
    x = np.asarray(x, dtype=np.float64)
    return count_kernels.digamma(np.ascontiguousarray(x).ravel()).reshape(x.shape)


def trim_heap() -> None:
    """Give the memory freed by a model's training back to the system. glibc keeps freed blocks of a
    few megabytes (batches' cells) in the process's heap, where the next model's peak would come on
    top of them; elsewhere this does nothing."""
    with contextlib.suppress(OSError, AttributeError, TypeError):  # not glibc
        ctypes.CDLL(None).malloc_trim(0)


def padded(ids: np.ndarray, off: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sentences ``rows`` of one side as ``[B, Lm]`` int64 ids (0 in the padding) and their lengths."""
    lengths = (off[rows + 1] - off[rows]).astype(np.int64)
    width = int(lengths.max()) if len(rows) else 0
    pos = off[rows][:, None] + np.arange(width)[None, :]
    inside = np.arange(width)[None, :] < lengths[:, None]
    if not len(ids):
        return np.zeros(pos.shape, np.int64), lengths
    return np.where(inside, ids[np.minimum(pos, len(ids) - 1)], 0).astype(np.int64), lengths


@dataclass
class CellBatch:
    """The cells of a group of sentences, padded: shapes as in the module's docstring."""

    rows: np.ndarray  # [B] corpus indices of the pairs
    S: np.ndarray  # [B] source lengths
    T: np.ndarray  # [B] target lengths
    idx: np.ndarray  # [B, Tm, Sm + 1] table entry of each cell (padding: len(table))

    @property
    def cells(self) -> int:
        return self.idx.size



def make_batch(corpus: IdCorpus, table: LexTable, rows: np.ndarray) -> CellBatch:
    """The padded cells of pairs ``rows`` (each with both sides non-empty; :func:`.kernels.batch_cells`)."""
    idx, S, T = kernels.batch_cells(corpus.src, corpus.src_off, corpus.tgt, corpus.tgt_off,
                                    np.asarray(rows, np.int64), table.keys, table.starts, table.width)
    return CellBatch(rows, S, T, idx)


def plan(corpus: IdCorpus, rows: np.ndarray, limit: int, cost: Callable[[int, int, int], int]
         ) -> list[np.ndarray]:
    """Pairs ``rows`` (those with both sides non-empty) grouped by similar (S, T) so that padding stays
    small, each group's ``cost(B, Sm, Tm)`` at most ``limit`` (or a single pair)."""
    S_all, T_all = np.diff(corpus.src_off)[rows], np.diff(corpus.tgt_off)[rows]
    keep = (S_all > 0) & (T_all > 0)
    rows, S_all, T_all = rows[keep], S_all[keep], T_all[keep]
    order = np.lexsort((T_all, S_all))
    out, start, s_max, t_max = [], 0, 0, 0
    for n, k in enumerate(order.tolist()):
        ns, nt = max(s_max, int(S_all[k])), max(t_max, int(T_all[k]))
        if n > start and cost(n - start + 1, ns, nt) > limit:
            out.append(rows[order[start:n]])
            start, ns, nt = n, int(S_all[k]), int(T_all[k])
        s_max, t_max = ns, nt
    if start < len(order):
        out.append(rows[order[start:]])
    return out


def my_groups(corpus: IdCorpus, limit: int, cost: Callable[[int, int, int], int]) -> list[np.ndarray]:
    """This process's groups of the corpus's pairs (:func:`plan`): all of them, or every N-th under
    torchrun (:mod:`.processes`)."""
    rank, procs = world()
    return plan(corpus, np.arange(len(corpus)), limit, cost)[rank::procs]


def ibm2_cost(B: int, S: int, T: int) -> int:
    return B * T * (S + 1)


class Batches:
    """This process's batches of a corpus for EM passes: all of them, or every N-th under torchrun
    (:mod:`.processes`). Cell indices are kept between passes up to ``cache`` cells and rebuilt beyond."""

    def __init__(self, corpus: IdCorpus, table: LexTable, limit: int = IBM2_CELLS,
                 cost: Callable[[int, int, int], int] = ibm2_cost, cache: int | None = None,
                 groups: list[np.ndarray] | None = None):
        """``cache``: the cells kept between passes (None: :func:`cache_cells`); ``groups``: this
        process's groups of pairs, as another direction's :attr:`groups` (the same pairs batch by
        batch)."""
        self.groups = my_groups(corpus, limit, cost) if groups is None else groups
        self.pairs = sum(map(len, self.groups))  # this process's share
        self.corpus, self.table = corpus, table
        self.room = cache_cells() if cache is None else cache
        self.cached: dict[int, CellBatch] = {}

    def release(self) -> None:
        """Drop the cached cell indices (training is over)."""
        self.cached.clear()
        trim_heap()

    def __iter__(self) -> Iterator[CellBatch]:
        for k, rows in enumerate(self.groups):
            b = self.cached.get(k)
            if b is None:
                b = make_batch(self.corpus, self.table, rows)
                if b.cells <= self.room:
                    self.room -= b.cells
                    b.idx = b.idx.astype(np.int32)
                    self.cached[k] = b
            yield b


def ibm2_posteriors(b: CellBatch, t_ext: np.ndarray, p0: float, tension: float) -> np.ndarray:
    """IBM2 posteriors ``[B, Tm, Sm + 1]`` of a batch under ``t_ext`` (the table's t, then a 0), with
    the diagonal prior of ``p0`` and ``tension`` (:func:`.kernels.ibm2_posteriors`)."""
    return kernels.ibm2_posteriors(b.idx, b.S, b.T, t_ext, p0, tension)


class EMCounts:
    """Expected counts per table entry, summed from batches' posteriors (the last entry takes the
    padding)."""

    def __init__(self, n: int):
        self.total = np.zeros(n + 1)

    def add(self, b: CellBatch, post: np.ndarray,
            also: tuple[EMCounts, CellBatch, np.ndarray] | None = None) -> None:
        """Add a batch's posteriors ``[B, Tm, Sm + 1]``; ``also``: another direction's counts, batch and
        posteriors, added in the same parallel loop: each direction on half the threads, so that a thread
        reads one direction's cells, where two calls would have every thread read both directions'."""
        first = self.total, b.idx.ravel(), np.ascontiguousarray(post).ravel()
        n = kernels.threads()
        if also is None:
            count_kernels.add_counts(*first, n, *first, 0)
            return
        other, ob, opost = also
        half = max(1, n // 2)
        second = other.total, ob.idx.ravel(), np.ascontiguousarray(opost).ravel()
        count_kernels.add_counts(*first, half, *second, max(1, n - half))

    def summed(self) -> np.ndarray:
        """The counts ``[K]`` of every batch added, summed across processes (:mod:`.processes`)."""
        return all_reduce(self.total[:-1])


def m_step(table: LexTable, counts: np.ndarray, alpha: float, bonus: np.ndarray | None = None,
           base: OnTable | None = None) -> np.ndarray:
    """Translation table t(f | e) per table entry from expected counts ``[K]``: relative frequencies,
    or with ``alpha > 0`` variational Bayes under a symmetric Dirichlet prior; ``bonus`` (identical
    types) is added to the counts; ``base``: counts kept from training on another corpus
    (:mod:`.learned`), added to the entries' counts and the source types' totals, the prior over both
    corpora's target types."""
    n_tgt = table.n_tgt
    if base is not None:
        counts, n_tgt = counts + base.counts, base.n_tgt
    if bonus is not None:
        counts = counts + bonus
    total = np.bincount(table.pair_src, weights=counts, minlength=table.n_src)
    if base is not None:
        total = total + base.outside
    if alpha > 0:
        return np.exp(digamma(counts + alpha) - digamma(total + alpha * n_tgt)[table.pair_src])
    return counts / np.maximum(total[table.pair_src], 1e-300)


def em(batches: Batches, iterations: int, alpha: float, p0: float, tension: float,
       bonus: np.ndarray | None = None, t: np.ndarray | None = None, stage: str = "ibm2",
       base: OnTable | None = None) -> np.ndarray:
    """The translation table after ``iterations`` EM steps of the IBM2 model from ``t`` (None:
    uniform). Under torchrun each process passes over its batches and the counts are summed across
    processes (:mod:`.processes`). ``stage``: the name progress reports give. ``base``: counts kept from
    another corpus (:mod:`.learned`), added in every M-step."""
    table = batches.table
    t = np.ones(len(table)) if t is None else t
    for it in range(iterations):
        counts = EMCounts(len(table))
        t_ext = np.append(t, 0.0)
        done = 0
        for b in batches:
            counts.add(b, ibm2_posteriors(b, t_ext, p0, tension))
            done += len(b.rows)
            report(stage, f"IBM2 iteration {it + 1}/{iterations}", done, batches.pairs)
        t = m_step(table, counts.summed(), alpha, bonus, base)
    return t


def in_order(corpus: IdCorpus, table: LexTable, lo: int, hi: int,
             posteriors: Callable[[CellBatch], np.ndarray], limit: int = IBM2_CELLS,
             cost: Callable[[int, int, int], int] = ibm2_cost) -> list[np.ndarray]:
    """``posteriors(batch) -> [B, Tm, Sm + 1]`` over pairs ``lo..hi`` in batches (:func:`plan`), one
    ``[T, S + 1]`` array per pair in corpus order (zeros for a pair with an empty side): views of
    :func:`in_order_flat`'s cells."""
    cells, at = in_order_flat(corpus, table, lo, hi, posteriors, limit, cost)
    S, T = np.diff(corpus.src_off[lo:hi + 1]).tolist(), np.diff(corpus.tgt_off[lo:hi + 1]).tolist()
    return [cells[at[k]:at[k + 1]].reshape(t, s + 1) for k, (s, t) in enumerate(zip(S, T, strict=True))]


def in_order_flat(corpus: IdCorpus, table: LexTable, lo: int, hi: int,
                  posteriors: Callable[[CellBatch], np.ndarray], limit: int = IBM2_CELLS,
                  cost: Callable[[int, int, int], int] = ibm2_cost) -> tuple[np.ndarray, np.ndarray]:
    """:func:`in_order`'s arrays end to end: the cells of pairs ``lo..hi``, each pair's ``[T, S + 1]``
    row-major (NULL last; zeros for a pair with an empty side), and where each pair starts
    ``[hi - lo + 1]``."""
    S, T = np.diff(corpus.src_off[lo:hi + 1]), np.diff(corpus.tgt_off[lo:hi + 1])
    at = np.concatenate([[0], np.cumsum(T * (S + 1))]).astype(np.int64)
    cells = np.zeros(int(at[-1]))
    for rows in plan(corpus, np.arange(lo, hi), limit, cost):
        b = make_batch(corpus, table, rows)
        decode_kernels.unpad_into(posteriors(b), b.S, b.T, at[rows - lo], cells)
    return cells, at
