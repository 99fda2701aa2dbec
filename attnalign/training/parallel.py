"""Both directions of a run trained at the same time, each in a process of its own.

An RNN decoder with input feeding takes one small step per target position, and steps that small
leave a second thread mostly idle; two processes with one thread each do more work on two cores than
one process with two threads (README, "Training throughput"). Each process trains one direction exactly
as a sequential run would (its own seed, checkpoints and log rows); the parent gathers their progress
into one display and their summaries into one result. A child dies with its parent (SIGKILL
included), so an interrupted run leaves no process behind and ``--resume`` continues both directions.
"""

from __future__ import annotations

import os
import queue
import signal
import sys
import traceback
import warnings
from collections.abc import Callable

import torch

from .. import dist
from ..errors import AttnAlignError, OptionError

# ``auto`` starts processes for corpora of this many pairs or more: below, the few seconds each process
# takes to start weigh more than what the processes save.
MIN_PAIRS = 1000


def wanted(choice: str, directions: list[str], device: torch.device, threads: int | None,
           n_pairs: int) -> bool:
    """Whether to train the directions in processes of their own: ``on``, or ``auto`` with both
    directions on a CPU with at least 2 threads and ``MIN_PAIRS`` pairs; never under torchrun (DDP runs
    the directions there)."""
    if len(directions) < 2 or choice == "off":
        return False
    if dist.launched():
        if choice == "on":
            raise OptionError("--parallel-directions on does not go with torchrun",
                              hint="under torchrun every process trains both directions with DDP; "
                                   "leave the option out")
        return False
    return choice == "on" or (device.type == "cpu" and (threads or torch.get_num_threads()) >= 2
                              and n_pairs >= MIN_PAIRS)


def threads_each(threads: int | None) -> int:
    """The CPU threads of each direction's process: half of the run's (at least 1)."""
    return max(1, (threads or torch.get_num_threads()) // 2)


class _Forward:
    """A child's reporter: every event goes to the parent's queue, tagged with the direction."""

    def __init__(self, events, direction: str):
        self.events, self.direction = events, direction

    def start(self, direction: str, total_steps: int, done_steps: int) -> None:
        self.events.put(("start", self.direction, total_steps, done_steps))

    def step(self, step: int, loss: float, tokens_per_s: float) -> None:
        self.events.put(("step", self.direction, step, loss, tokens_per_s))

    def validation(self, row: dict) -> None:
        self.events.put(("validation", self.direction, row))

    def end(self) -> None:
        pass


def _die_with_parent() -> None:
    """Have the kernel kill this process when its parent dies (Linux); elsewhere a parent that is killed
    leaves the child to finish its direction."""
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            return
        if os.getppid() == 1:  # the parent died before the call
            os._exit(1)


def _child(run, dev, resume: bool, threads: int, events) -> None:
    """One direction's training in a spawned process (``run`` is a :class:`~.run.DirectionRun`)."""
    _die_with_parent()
    torch.set_num_threads(threads)
    warnings.showwarning = lambda message, category, *_a, **_k: events.put(
        ("warning", run.direction, str(message), category))
    try:
        events.put(("done", run.direction, run.train(dev, resume, _Forward(events, run.direction))))
    except AttnAlignError as e:
        events.put(("error", run.direction, e))
    except BaseException:  # a bug: the parent shows the child's traceback
        events.put(("crash", run.direction, traceback.format_exc()))


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
    """Train each ``(run, dev)`` of ``jobs`` in its own spawned process with ``threads`` threads; call
    ``on_done(direction)`` as each finishes; return each direction's summary. The first error stops
    the others and is raised here."""
    ctx = torch.multiprocessing.get_context("spawn")
    events = ctx.Queue()
    procs = {run.direction: ctx.Process(target=_child, args=(run, dev, resume, threads, events),
                                        name=f"attnalign-train-{run.direction}", daemon=True)
             for run, dev in jobs}
    display = _Display(reporter, list(procs))
    summaries: dict[str, dict] = {}
    gone: set[str] = set()  # children seen dead before their last event arrived
    try:
        for p in procs.values():
            p.start()
        while len(summaries) < len(procs):
            try:
                kind, direction, *data = events.get(timeout=1.0)
            except queue.Empty:
                _check_alive(procs, summaries, gone)
                continue
            if kind == "done":
                summaries[direction] = data[0]
                display.finished(direction)
                on_done(direction)
            elif kind == "error":
                raise data[0]
            elif kind == "crash":
                raise RuntimeError(f"training the {direction} direction failed:\n{data[0]}")
            elif kind == "warning":
                warnings.warn(data[0], data[1], stacklevel=1)
            else:
                display.event(kind, direction, *data)
    finally:
        display.end()
        for p in procs.values():
            if p.pid is None:  # never started (the error being raised came from starting it)
                continue
            if p.is_alive():
                p.terminate()
            p.join()
    return summaries


def _check_alive(procs: dict, summaries: dict, gone: set[str]) -> None:
    """Raise if a child died without a last word (killed, out of memory); a child seen dead gets one
    more wait for the events it sent before it exited."""
    for direction, p in procs.items():
        if direction in summaries or p.is_alive():
            continue
        if direction in gone:
            raise AttnAlignError(
                f"the process training the {direction} direction stopped (exit code {p.exitcode})",
                hint="out of memory? lower --batch-tokens; the checkpoints written so far are kept: "
                     "continue with attnalign train --model DIR --resume")
        gone.add(direction)
