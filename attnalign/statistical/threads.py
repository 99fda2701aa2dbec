"""Independent jobs (a model's two directions) at once, in threads that share the cores; and a
sequence of jobs (the chunks' decoding) one ahead of its consumer. Torch-free.

numba's compiled loops release the GIL and its thread count is per thread, so two directions' EM can
run side by side, each on its share of the cores, with the same results as one after the other. Only
where that is safe: one process (under torchrun each direction's counts are summed across processes,
and two threads' collectives would interleave), two cores or more, and a numba threading layer that
two threads may enter at once (:func:`.kernels.thread_safe`).
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from typing import TypeVar

from . import kernels
from .processes import world
from .progress import stopping

R = TypeVar("R")


def possible() -> bool:
    """Whether :func:`at_once` runs its jobs at once here."""
    return world()[1] == 1 and kernels.threads() >= 2 and kernels.thread_safe()


def shares(cores: int, jobs: int) -> list[int]:
    """``cores`` split among ``jobs`` threads (at least one each; the first ones take the rest)."""
    return [max(1, cores // jobs + (k < cores % jobs)) for k in range(jobs)]


def _submit(pool: ThreadPoolExecutor, job: Callable[[], R], cores: int, stop: threading.Event | None = None
            ) -> Future[R]:
    """``job`` run in ``pool`` on ``cores`` cores (inside :func:`.progress.stopping` of ``stop``, if
    given), in a copy of this context: its progress reports reach this context's listener."""

    def run() -> R:
        kernels.set_threads(cores)
        with stopping(stop) if stop is not None else contextlib.nullcontext():
            return job()

    return pool.submit(contextvars.copy_context().run, run)


def at_once(jobs: Sequence[Callable[[], R]], together: bool | None = None) -> list[R]:
    """Each job's result, in order: the jobs run at once in threads, each on its share of this
    thread's cores, where ``together`` (None: where :func:`possible`); else one after the other. An
    exception in one (or Ctrl-C) stops the others at their next progress report
    (:func:`.progress.stopping`) and is raised."""
    if len(jobs) < 2 or not (possible() if together is None else together):
        return [job() for job in jobs]
    stop = threading.Event()
    with ThreadPoolExecutor(len(jobs)) as pool:
        futures = [_submit(pool, job, cores, stop)
                   for job, cores in zip(jobs, shares(kernels.threads(), len(jobs)), strict=True)]
        try:
            wait(futures, return_when=FIRST_EXCEPTION)
            failed = [f for f in futures if f.done() and f.exception() is not None]
            return [f.result() for f in failed or futures]  # a failure raises without waiting for the rest
        except BaseException:
            stop.set()
            raise


def ahead(jobs: Iterable[Callable[[], R]]) -> Iterator[R]:
    """Each job's result, in order, the next job running in a thread (on this thread's cores) while the
    caller uses the last one's result, where :func:`possible` (a chunk's links decoded while the last
    chunk's are written); else each job when its result is wanted. At most two results are held."""
    if not possible():
        yield from (job() for job in jobs)
        return
    cores, pool = kernels.threads(), ThreadPoolExecutor(1)
    try:
        last = None
        for job in jobs:
            nxt = _submit(pool, job, cores)
            if last is not None:
                yield last.result()
            last = nxt
        if last is not None:
            yield last.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
