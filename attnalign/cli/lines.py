"""Lines on stderr that must get out whatever state the process is in (no rich, little memory)."""

from __future__ import annotations

import os
import sys


def say(kind: str, text: str, hint: str = "") -> None:
    """One line on stderr, written without allocating much (memory may be what ran out)."""
    line = f"{kind}: {text}\n" + (f"  hint: {hint}\n" if hint else "")
    try:
        sys.stderr.write(line)
        sys.stderr.flush()
    except (MemoryError, OSError, ValueError, AttributeError):  # no stderr object, or no memory for it
        os.write(2, line.encode("utf-8", "backslashreplace"))
