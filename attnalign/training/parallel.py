"""Both directions of a run trained at the same time, each in a process of its own.

An RNN decoder with input feeding takes one small step per target position, and steps that small
leave a second thread mostly idle; two processes with one thread each do more work on two cores than
one process with two threads. Each worker (:mod:`.worker`) trains one direction exactly as a sequential
run would (its own seed, checkpoints and log rows); the parent gathers their progress into one display
and their summaries into one result. A worker dies with its parent (SIGKILL included), so an
interrupted run leaves no process behind and ``--resume`` continues both directions; a worker that dies
ends the parent's wait at once (its socket closes).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import warnings
from collections.abc import Callable
from multiprocessing.connection import Connection, wait
from pathlib import Path

import torch

from .. import dist
from ..errors import AttnAlignError, OptionError
from .options import PARALLEL_MIN_PAIRS
from .worker import Events


def wanted(choice: str, directions: list[str], device: torch.device, threads: int | None,
           n_pairs: int) -> bool:
    """Whether to train the directions in processes of their own: ``on``, or ``auto`` with both
    directions and PARALLEL_MIN_PAIRS pairs, on a CUDA GPU (which one process's launches leave idle
    between kernels) or on a CPU with at least 2 threads; never under torchrun (DDP runs the directions
    there)."""
    if len(directions) < 2 or choice == "off":
        return False
    if dist.launched():
        if choice == "on":
            raise OptionError("--parallel-directions on does not go with torchrun",
                              hint="under torchrun every process trains both directions with DDP; "
                                   "leave the option out")
        return False
    if choice == "on":
        return True
    shared = device.type == "cuda" or (device.type == "cpu" and (threads or torch.get_num_threads()) >= 2)
    return shared and n_pairs >= PARALLEL_MIN_PAIRS


def threads_each(threads: int | None) -> int:
    """The CPU threads of each direction's process: half of the run's (at least 1)."""
    return max(1, (threads or torch.get_num_threads()) // 2)


class _Display:
    """The directions' progress as one run: a bar over the steps of both, the mean of their latest
    losses, the sum of their rates; validation lines as they come."""

    def __init__(self, reporter, directions: list[str]):
        self.reporter, self.directions, self.waiting = reporter, directions, set(directions)
        self.total: dict[str, int] = {}
        self.resumed_at: dict[str, int] = {}
        self.steps: dict[str, int] = {}
        self.loss: dict[str, float] = {}
        self.rate: dict[str, float] = {}
        self.held: list[dict] = []
        self.started = False

    def event(self, kind: str, direction: str, *data) -> None:
        if kind == "start":
            self.total[direction], self.resumed_at[direction] = data
            self.steps[direction] = self.resumed_at[direction]
            self._ready(direction)
        elif kind == "step":
            self.steps[direction], self.loss[direction], self.rate[direction] = data
            if self.started and self.loss:
                self.reporter.step(sum(self.steps.values()), sum(self.loss.values()) / len(self.loss),
                                   sum(self.rate.values()))
        elif kind == "validation":
            self.held.append(data[0])
            if self.started:
                self._flush()

    def finished(self, direction: str) -> None:
        self.rate.pop(direction, None)
        self._ready(direction)

    def _ready(self, direction: str) -> None:
        self.waiting.discard(direction)
        if not self.waiting and not self.started:
            self.started = True
            self.reporter.start("+".join(self.directions), sum(self.total.values()),
                                sum(self.resumed_at.values()))
            self._flush()

    def _flush(self) -> None:
        for row in self.held:
            self.reporter.validation(row)
        self.held = []

    def end(self) -> None:
        if self.started:
            self.reporter.end()


def train_in_processes(jobs: list, resume: bool, threads: int, reporter,
                       on_done: Callable[[str], None]) -> dict[str, dict]:
    """Train each ``(run, dev)`` of ``jobs`` in a worker process of its own (:mod:`.worker`) with
    ``threads`` threads; call ``on_done(direction)`` as each finishes; return each direction's summary.
    The first error, or a worker's death, stops the others and is raised here."""
    workers: dict[str, _Worker] = {}
    display = _Display(reporter, [run.direction for run, _ in jobs])
    summaries: dict[str, dict] = {}
    try:
        for run, _ in jobs:
            workers[run.direction] = _Worker.start(run.direction)
        for run, dev in jobs:
            workers[run.direction].send((run, dev, resume, threads))
        while len(summaries) < len(workers):
            listening = {w.events.conn: w for d, w in workers.items() if d not in summaries}
            for conn in wait(list(listening), timeout=1.0):
                kind, direction, *data = listening[conn].receive()
                if kind == "done":
                    summaries[direction] = data[0]
                    display.finished(direction)
                    on_done(direction)
                elif kind == "error":
                    raise data[0]
                elif kind == "crash":
                    last = data[0].strip().splitlines()[-1]
                    raise RuntimeError(f"training the {direction} direction failed: {last}\n"
                                       f"the worker's traceback:\n{data[0]}")
                elif kind == "warning":
                    warnings.warn(data[0], data[1], stacklevel=1)
                else:
                    display.event(kind, direction, *data)
    finally:
        display.end()
        for w in workers.values():
            w.stop()
    return summaries


class _Worker:
    """One worker process and its end of the socket."""

    def __init__(self, direction: str, proc: subprocess.Popen, events: Events):
        self.direction, self.proc, self.events = direction, proc, events

    @classmethod
    def start(cls, direction: str) -> _Worker:
        """Start ``python -m attnalign.training.worker`` (the package found where this one was loaded
        from, whatever the caller's path), its socket passed as an inherited descriptor."""
        ours, theirs = socket.socketpair()
        root = str(Path(__file__).resolve().parents[2])
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            p for p in (root, os.environ.get("PYTHONPATH")) if p)}
        try:
            proc = subprocess.Popen([sys.executable, "-m", "attnalign.training.worker", str(theirs.fileno())],
                                    pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL,
                                    stdout=subprocess.DEVNULL, env=env)
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        return cls(direction, proc, Events(Connection(ours.detach())))

    def send(self, job: tuple) -> None:
        try:
            self.events.put(job)
        except OSError:  # the worker died before it read its job
            raise self._died() from None

    def receive(self) -> tuple:
        try:
            return self.events.get()
        except (EOFError, OSError):  # the worker exited without its last word: killed, out of memory
            raise self._died() from None

    def _died(self) -> AttnAlignError:
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        how = (f"was killed by {signal.Signals(-code).name}" if code is not None and code < 0
               else f"stopped (exit code {code})")
        return AttnAlignError(
            f"the process training the {self.direction} direction {how}",
            hint="out of memory? lower --batch-tokens; the checkpoints written so far are kept: continue "
                 "with attnalign train --model DIR --resume")

    def stop(self) -> None:
        """End the worker (if it still runs) and wait for it: SIGTERM, then SIGKILL after 5 s."""
        self.events.conn.close()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
