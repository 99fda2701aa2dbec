"""The statistical aligner across processes: under ``torchrun --nproc-per-node N -m attnalign align
statistical ...`` each process (rank) takes every N-th batch of pairs, the expected counts of every EM
iteration are summed across processes (``torch.distributed.all_reduce``; gloo, so CPUs suffice), and
rank 0 gathers the links and writes them in corpus order. Each process uses cores / processes-per-node
threads (:mod:`attnalign.dist`). One process: every function here is the identity and torch is not
imported.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from ..dist import cpu_group, gather, init, world
from .ids import CHUNK_PAIRS, chunks


def my_chunks(n: int, size: int = CHUNK_PAIRS) -> Iterator[tuple[int, int]]:
    """This process's chunks of ``n`` pairs: all of them, or every N-th under torchrun."""
    rank, procs = world()
    for k, c in enumerate(chunks(n, size)):
        if k % procs == rank:
            yield c


def all_reduce(x: np.ndarray) -> np.ndarray:
    """``x`` summed over all processes (float64; ``x`` itself with one process)."""
    dist = init()
    if dist is None:
        return x
    import torch

    t = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float64))
    dist.all_reduce(t, group=cpu_group())
    return t.numpy()


SLICE = 1 << 24  # elements summed at once by summed_in_place: their float64 copy takes 128 MiB


def summed_in_place(x: np.ndarray, step: int = SLICE) -> np.ndarray:
    """``x`` (1-D counts of any dtype that holds their sum) summed over all processes, in place, ``step``
    elements at a time: a float64 copy of the whole would take 8 bytes an element (gigabytes for the
    fertility model's link counts of a large corpus). ``x`` itself with one process."""
    if world()[1] == 1:
        return x
    for lo in range(0, len(x), step):
        x[lo:lo + step] = all_reduce(x[lo:lo + step].astype(np.float64))
    return x


def gather_chunks(mine: list[tuple[int, object]]) -> list[object] | None:
    """Rank 0: every process's ``(chunk start, result)`` pairs, results in corpus order; other ranks:
    None. One process: the results in order."""
    parts = gather(mine)
    if parts is None:
        return None
    return [r for _, r in sorted((x for p in parts for x in p), key=lambda x: x[0])]
