"""Test helpers: paths to the project's sample data and the optional shared benchmark data."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample_data"
SHARED = ROOT.parent / "shared" / "data"


def shared_or_skip(*parts: str) -> Path:
    """A path under ../shared/data, or skip the test with a reason when it is absent."""
    p = SHARED.joinpath(*parts)
    if not p.exists():
        pytest.skip(f"shared benchmark data not found: {p} (only present on the team's machines)")
    return p


def write(path: Path, text: str | bytes) -> Path:
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path
