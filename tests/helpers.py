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


def sample_texts(folder: Path, n: int) -> tuple[Path, Path]:
    """The first ``n`` sample training pairs as two line-parallel files in ``folder``."""
    lines = [(SAMPLE / f"train.{side}").read_text(encoding="utf-8").splitlines(True)[:n]
             for side in ("en", "fr")]
    return write(folder / "t.en", "".join(lines[0])), write(folder / "t.fr", "".join(lines[1]))


def write(path: Path, text: str | bytes) -> Path:
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path
