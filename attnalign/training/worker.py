"""The process that trains one direction for :mod:`.parallel`: ``python -m attnalign.training.worker FD``.

The parent starts it as a program of its own rather than through multiprocessing's spawn, which runs
the caller's main module again in every child: a script without an ``if __name__ == "__main__":`` guard
would then train again inside each child, and a script read from stdin or a notebook's cell cannot be
run again at all. Here nothing of the caller's is imported. The parent and the worker talk over the
socket ``FD``: the parent sends one job, the worker sends back events, each a pickled tuple
``(kind, direction, *data)``; when the worker exits, for any reason, the parent reads the end of the
stream and knows at once.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
import traceback
import warnings
from multiprocessing.connection import Connection


class Events:
    """One end of the socket, sending and receiving pickled tuples (plain pickle: tensors travel by value,
    never through multiprocessing's shared memory, which needs a multiprocessing child)."""

    def __init__(self, conn: Connection):
        self.conn = conn

    def put(self, event: tuple) -> None:
        self.conn.send_bytes(pickle.dumps(event, protocol=pickle.HIGHEST_PROTOCOL))

    def get(self) -> tuple:
        return pickle.loads(self.conn.recv_bytes())


class _Forward:
    """The worker's reporter: every event goes to the parent, tagged with the direction."""

    def __init__(self, events: Events, direction: str):
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
    leaves the worker to finish its direction."""
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            return
        if os.getppid() == 1:  # the parent died before the call
            os._exit(1)


def main(fd: int) -> int:
    """Receive ``(run, dev, resume, threads)`` on ``fd``, train ``run``'s direction and send its events;
    the exit code."""
    _die_with_parent()
    events = Events(Connection(fd))
    try:
        job = events.get()
    except (EOFError, OSError):  # the parent is gone
        return 1
    direction = getattr(job[0], "direction", "?")
    try:
        import torch

        from ..errors import AttnAlignError

        run, dev, resume, threads = job
        torch.set_num_threads(threads)
        warnings.showwarning = lambda message, category, *_a, **_k: events.put(
            ("warning", direction, str(message), category))
        try:
            summary = run.train(dev, resume, _Forward(events, direction))
        except AttnAlignError as e:
            events.put(("error", direction, e))
            return 1
        events.put(("done", direction, summary))
        return 0
    except KeyboardInterrupt:  # Ctrl-C reaches the whole process group: the parent reports it
        return 130
    except BaseException:  # a bug: the parent shows the worker's traceback
        events.put(("crash", direction, traceback.format_exc()))
        return 1


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1])))
