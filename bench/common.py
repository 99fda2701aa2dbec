"""Shared helpers for the benchmarks: where the shared data is, and skipping clearly without it."""

from __future__ import annotations

import csv
import json
import os
import resource
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The benchmark data folder: --data DIR, else $ATTNALIGN_SHARED_DATA, else ../shared/data beside the checkout.
SHARED = Path(os.environ.get("ATTNALIGN_SHARED_DATA", ROOT.parent / "shared" / "data"))


def add_data_option(ap) -> None:
    """``--data DIR``: the folder holding enfr-hansards/, roen-wpt03/, esen-europarl/."""
    ap.add_argument("--data", type=Path, default=None,
                    help="benchmark data folder (default: $ATTNALIGN_SHARED_DATA, else ../shared/data)")


def use_data(folder: Path | None) -> None:
    """Read the benchmark data from ``folder`` (None: the default), here and in worker processes."""
    global SHARED
    if folder is not None:
        SHARED = folder.resolve()
        os.environ["ATTNALIGN_SHARED_DATA"] = str(SHARED)


def shared(*parts: str) -> Path:
    """A path under the shared benchmark data, or exit 0 with a clear message if it is absent."""
    p = SHARED.joinpath(*parts)
    if not p.exists():
        print(f"SKIPPED: benchmark data not found: {p}\n(set ATTNALIGN_SHARED_DATA to the folder that "
              "holds enfr-hansards/, roen-wpt03/, esen-europarl/)", file=sys.stderr)
        sys.exit(0)
    return p


def write_rows(name: str, rows: list[dict]) -> None:
    """bench/results/NAME.csv and NAME.json, one row per measurement (nothing for no row)."""
    if not rows:
        return
    res = ROOT / "bench" / "results"
    res.mkdir(parents=True, exist_ok=True)
    with open(res / f"{name}.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    (res / f"{name}.json").write_text(json.dumps(rows, indent=1) + "\n")


def peak_rss_mb() -> float:
    """Peak resident memory of this process in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def emit(record: dict) -> None:
    """A worker's result: one JSON line on stdout."""
    print("RESULT " + json.dumps(record), flush=True)


def parse_result(stdout: str) -> dict:
    for line in stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError("worker printed no RESULT line:\n" + stdout[-2000:])
