"""The ``attnalign`` command line: thin Typer commands over library functions.

Each command parses its options, makes one library call that returns data, and renders it
(:mod:`.render`); the options several commands share are declared once in :mod:`.common`. One module
per command group: :mod:`.train`, :mod:`.align` (corpus, sentence, statistical), :mod:`.plot`,
:mod:`.report`, :mod:`.score`; the application that holds them is :mod:`.root`. ``attnalign --help``
and ``attnalign score`` never import torch.

This module stays light: :func:`main` puts its signal handlers in place before anything heavy is
imported (building the command line imports numpy, numba and Typer, about a second), so that a SIGTERM
at any moment ends the run as Ctrl-C does, and a machine without the memory to load those libraries
gets one error line.
"""

from __future__ import annotations

import os
import signal
import sys

from ..errors import EXIT_ERROR, EXIT_INTERRUPTED, out_of_memory
from .lines import say


def _stop_cleanly(signum, frame) -> None:
    """SIGTERM and SIGHUP end a run as Ctrl-C does: temporary files and staged folders are removed, the
    old outputs are kept, exit 130."""
    raise KeyboardInterrupt(f"stopped by {signal.Signals(signum).name}: no output was written")


# Under an address-space limit below this, the compiled loops and OpenBLAS keep to one thread: a thread's
# start reserves memory, and where the limit forbids it the C library aborts the whole process ("cannot
# allocate memory for thread-local data", no message of ours) instead of failing in a way we can report.
LOW_ADDRESS_SPACE = 1 << 30


def _address_space_limit() -> int | None:
    """The process's address-space limit in bytes (``ulimit -v``), None where there is none."""
    try:
        import resource

        limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    except (ImportError, OSError, ValueError, AttributeError):  # not on this platform
        return None
    return None if limit == resource.RLIM_INFINITY else limit


def _fit_threads_to(limit: int | None) -> None:
    """One thread for numba and OpenBLAS under a low :data:`LOW_ADDRESS_SPACE` limit (a user's own
    setting stays); set before they are imported."""
    if limit is not None and limit < LOW_ADDRESS_SPACE:
        for var in ("NUMBA_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
            os.environ.setdefault(var, "1")


def main() -> None:
    """Entry point of the ``attnalign`` console script."""
    try:  # from the handlers' first instant: a signal anywhere before a command runs is an interruption
        for sig in (signal.SIGTERM, getattr(signal, "SIGHUP", None)):
            if sig is not None:
                signal.signal(sig, _stop_cleanly)
        limit = _address_space_limit()
        _fit_threads_to(limit)
        try:
            from .root import run

            run()  # a command's own errors end inside it; what is left is Typer's parsing and imports
        except (MemoryError, ImportError, OSError) as e:
            # under a limit, a library that does not load has most likely not found the memory to map it
            if not (out_of_memory(e) or (limit is not None and not isinstance(e, ModuleNotFoundError))):
                raise
            where = "" if limit is None else f" within the memory limit of {limit / 2**20:,.0f} MiB"
            say("error", f"out of memory loading attnalign's libraries (numpy, numba, Typer){where}",
                "raise the memory limit (ulimit -v), or run on a machine with more memory")
            sys.exit(EXIT_ERROR)
    except KeyboardInterrupt as e:  # a signal before a command runs (while Typer builds it, too)
        say("interrupted", str(e.args[0]) if e.args else "no output was written")
        sys.exit(EXIT_INTERRUPTED)


def __getattr__(name: str):
    if name == "app":  # the Typer application, built on first use
        from .root import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
