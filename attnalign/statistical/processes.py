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


def gather_chunks(mine: list[tuple[int, object]]) -> list[object] | None:
    """Rank 0: every process's ``(chunk start, result)`` pairs, results in corpus order; other ranks:
    None. One process: the results in order."""
    parts = gather(mine)
    if parts is None:
        return None
    return [r for _, r in sorted((x for p in parts for x in p), key=lambda x: x[0])]
