"""Progress of the statistical aligner's long passes, reported to whoever listens. Torch-free.

The models call :func:`report` after each batch of a pass (an EM iteration, a sampler sweep, the
decoding of the links) with the pairs done so far of this process's share; :func:`reporting` installs
a listener for the calls made inside it (the CLI's progress bar). Without a listener a report costs
one lookup.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

Listener = Callable[[str, str, int, int], None]  # (stage, step, pairs done, pairs in the pass)
_LISTENER: ContextVar[Listener | None] = ContextVar("attnalign_statistical_progress", default=None)


def report(stage: str, step: str, done: int, total: int) -> None:
    """``stage``: the model and direction (``"hmm-agree"``, ``"fertility forward"``, ``"links"``);
    ``step``: the pass within it (``"iteration 2/5"``)."""
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
