"""User-facing errors and warnings.

Library code raises :class:`AttnAlignError` for anything a user can fix (a bad file, a bad option).
It carries the file, the 1-based line and a hint, so the CLI can print one clear ``error:`` line
instead of a traceback; a notebook user gets the same message from the exception. The CLI's exit codes:
2 for :class:`OptionError` (the command line is wrong: a value out of range, options that do not go
together, an output that would overwrite an input; Typer's own usage errors exit 2 too), 1 for every
other error (an input file missing, unreadable or malformed, a model that does not load, a failed
run), 130 when interrupted.

Recoverable oddities (empty sides, a gold file that looks 1-based, ...) are reported with
``warnings.warn(..., AttnAlignWarning)``: the CLI prints them on stderr, a notebook shows them.
"""

from __future__ import annotations

import os
import warnings

EXIT_ERROR, EXIT_USAGE, EXIT_INTERRUPTED = 1, 2, 130  # the CLI's exit codes (see above)


def path_text(path: str | os.PathLike) -> str:
    """A path as text that can be written anywhere (a CSV, a page, a plot, a terminal, an error line):
    the bytes of a name that are not UTF-8 (which Python keeps as surrogate escapes) shown as ``\\xNN``."""
    return str(path).encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


class AttnAlignError(Exception):
    """An error the user can fix: bad input, a bad option, a missing file."""

    def __init__(
        self,
        message: str,
        *,
        path: str | os.PathLike | None = None,
        line: int | None = None,
        hint: str | None = None,
    ) -> None:
        self.message = message
        self.path = None if path is None else path_text(path)
        self.line = line
        self.hint = hint
        super().__init__(self.format())

    def format(self) -> str:
        where = ""
        if self.path is not None:
            where = self.path + (f":{self.line}" if self.line is not None else "") + ": "
        text = where + self.message
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text


class OptionError(AttnAlignError, ValueError):
    """An option's value is invalid, or options conflict (the CLI exits 2, like a usage error); from the
    Python API, a ValueError too."""


class CorpusError(AttnAlignError):
    """A parallel corpus file cannot be read as given."""


class FormatError(AttnAlignError):
    """An alignment or gold file cannot be parsed as given."""


class AttnAlignWarning(UserWarning):
    """Something odd but recoverable in the user's data or options."""


def warn(message: str) -> None:
    """Emit an :class:`AttnAlignWarning` (printed by the CLI on stderr)."""
    warnings.warn(message, AttnAlignWarning, stacklevel=3)


def require(flag: str, value, *, low=None, high=None, low_open: bool = False, high_open: bool = False,
            choices=None, optional: bool = False) -> None:
    """Raise :class:`OptionError` unless ``value`` (the option ``flag``) lies in the range or the choices;
    ``optional``: None is allowed (the default applies). NaN is never in a range."""
    if value is None and optional:
        return
    if choices is not None:
        if value not in choices:
            raise OptionError(f"{flag} must be one of {', '.join(map(str, choices))}, not {value!r}")
        return
    if not isinstance(value, int | float) or isinstance(value, bool):  # a hand-edited file's "16", true
        raise OptionError(f"{flag} must be a number, not {value!r}")
    bad = value != value or value in (float("inf"), float("-inf"))  # NaN, inf
    bad = bad or (low is not None and (value <= low if low_open else value < low))
    bad = bad or (high is not None and (value >= high if high_open else value > high))
    if bad:
        lo = "" if low is None else f"{'>' if low_open else '>='} {low}"
        hi = "" if high is None else f"{'<' if high_open else '<='} {high}"
        raise OptionError(f"{flag} must be {' and '.join(x for x in (lo, hi) if x)}, not {value}")


def out_of_memory(e: BaseException) -> bool:
    """Whether ``e`` says the process ran out of memory: a MemoryError, torch's allocator failing, or a
    shared library that could not be mapped (an address-space limit, ``ulimit -v``)."""
    if isinstance(e, MemoryError):
        return True
    text = str(e).lower()
    return isinstance(e, ImportError | OSError | RuntimeError) and any(
        w in text for w in ("can't allocate memory", "cannot allocate memory", "out of memory",
                            "failed to map segment"))
