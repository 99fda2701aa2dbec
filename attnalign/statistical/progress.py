"""Progress of the statistical aligner's long passes, reported to whoever listens. Torch-free.

The models call :func:`report` after each batch of a pass (an EM iteration, a sampler sweep, the
decoding of the links) with the pairs done so far of this process's share; :func:`reporting` installs
a listener for the calls made inside it (the CLI's progress bar). Without a listener a report costs
two lookups. Inside :func:`stopping`, a report raises :class:`Stopped` once its event is set: the way
a pass running in another thread (:mod:`.threads`) is ended early.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from threading import Event

Listener = Callable[[str, str, int, int], None]  # (stage, step, pairs done, pairs in the pass)
_LISTENER: ContextVar[Listener | None] = ContextVar("attnalign_statistical_progress", default=None)
_STOP: ContextVar[Event | None] = ContextVar("attnalign_statistical_stop", default=None)


class Stopped(Exception):
    """A pass ended early because the run was interrupted or a job beside it failed."""


def report(stage: str, step: str, done: int, total: int) -> None:
    """``stage``: the model and direction (``"hmm-agree"``, ``"fertility forward"``, ``"links"``);
    ``step``: the pass within it (``"iteration 2/5"``)."""
    stop = _STOP.get()
    if stop is not None and stop.is_set():
        raise Stopped
    listener = _LISTENER.get()
    if listener is not None:
        listener(stage, step, done, total)


@contextmanager
def reporting(listener: Listener | None) -> Iterator[None]:
    """Send the reports of the calls made inside the block to ``listener`` (None: to nobody)."""
    token = _LISTENER.set(listener)
    try:
        yield
    finally:
        _LISTENER.reset(token)


@contextmanager
def stopping(event: Event) -> Iterator[None]:
    """Inside the block, :func:`report` raises :class:`Stopped` once ``event`` is set."""
    token = _STOP.set(event)
    try:
        yield
    finally:
        _STOP.reset(token)
