"""The statistical aligner across processes: under ``torchrun --nproc-per-node N -m attnalign align
statistical ...`` each process (rank) takes every N-th batch of pairs, the expected counts of every EM
iteration are summed across processes (``torch.distributed.all_reduce``; gloo, so CPUs suffice), and
rank 0 gathers the links and writes them in corpus order. Each process uses cores / processes-per-node
threads. One process: every function here is the identity and torch is not imported.
"""

from __future__ import annotations

import atexit
import os
from collections.abc import Iterator

import numpy as np

from .ids import CHUNK_PAIRS, chunks


def _dist():
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return None
    import torch
    import torch.distributed as dist

    if not dist.is_initialized():
        dist.init_process_group("gloo")
        # a process that exits with gloo's threads still running aborts ("terminate called ...")
        atexit.register(lambda: dist.is_initialized() and dist.destroy_process_group())
        # the processes of one machine share its cores: more threads than cores / processes slow all
        local = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        torch.set_num_threads(max(1, cores // local))
    return dist


def world() -> tuple[int, int]:
    """``(rank, processes)``: ``(0, 1)`` outside torchrun."""
    dist = _dist()
    return (0, 1) if dist is None else (dist.get_rank(), dist.get_world_size())


def my_chunks(n: int, size: int = CHUNK_PAIRS) -> Iterator[tuple[int, int]]:
    """This process's chunks of ``n`` pairs: all of them, or every N-th under torchrun."""
    rank, procs = world()
    for k, c in enumerate(chunks(n, size)):
        if k % procs == rank:
            yield c


def all_reduce(x: np.ndarray) -> np.ndarray:
    """``x`` summed over all processes (float64; ``x`` itself with one process)."""
    dist = _dist()
    if dist is None:
        return x
    import torch

    t = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float64))
    dist.all_reduce(t)
    return t.numpy()


def gather_chunks(mine: list[tuple[int, object]]) -> list[object] | None:
    """Rank 0: every process's ``(chunk start, result)`` pairs, results in corpus order; other ranks:
    None. One process: the results in order."""
    dist = _dist()
    if dist is None:
        return [r for _, r in sorted(mine, key=lambda x: x[0])]
    rank, procs = world()
    parts = [None] * procs if rank == 0 else None
    dist.gather_object(mine, parts, dst=0)
    if rank != 0:
        return None
    return [r for _, r in sorted((x for p in parts for x in p), key=lambda x: x[0])]
