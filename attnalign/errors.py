"""User-facing errors and warnings.

Library code raises :class:`AttnAlignError` for anything a user can fix (a bad file, a bad option).
It carries the file, the 1-based line and a hint, so the CLI can print one clear message and exit 1
instead of a traceback; a notebook user gets the same message from the exception.

Recoverable oddities (empty sides, a gold file that looks 1-based, ...) are reported with
``warnings.warn(..., AttnAlignWarning)``: the CLI prints them on stderr, a notebook shows them.
"""

from __future__ import annotations

import os
import warnings


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
        self.path = None if path is None else str(path)
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


class CorpusError(AttnAlignError):
    """A parallel corpus file cannot be read as given."""


class FormatError(AttnAlignError):
    """An alignment or gold file cannot be parsed as given."""


class AttnAlignWarning(UserWarning):
    """Something odd but recoverable in the user's data or options."""


def warn(message: str) -> None:
    """Emit an :class:`AttnAlignWarning` (printed by the CLI on stderr)."""
    warnings.warn(message, AttnAlignWarning, stacklevel=3)
