#!/usr/bin/env python3
"""New sentences with the teacher kept from training (``align corpus --teacher-corpus kept``): the
default teacher trained on N raw Hansards pairs keeps its counts (as ``train --guide auto`` does), then
goes on from them over the 447 En-Fr test sentences alone; beside it (``--both``), the teacher trained
anew on the test sentences and the N pairs (``--teacher-corpus training``). Seconds, peak memory and the
teacher's AER on the test sentences, on the corpora of bench/scale.py.

    python bench/going_on.py --sizes 10000 310000
    python bench/going_on.py --sizes 10000 --both

Each size runs in its own process, two threads. Writes bench/results/going_on.{csv,json} (``--results
NAME``). A benchmark: it prints numbers and asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
from common import emit, parse_result, peak_rss_mb, write_rows  # noqa: E402
from scale import N_TEST, aer, build  # noqa: E402


def _write(teacher, n: int, path: Path) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for links in teacher.links(0, n):
            f.write(" ".join(f"{i}-{j}" for i, j in links) + "\n")


def worker(n: int, both: bool) -> None:
    from attnalign.data.corpus import read_corpus
    from attnalign.statistical import SoftTeacher, kernels

    kernels.set_threads(2)
    src, tgt = build(n)
    pairs = read_corpus(src, tgt)
    test, train = pairs[:N_TEST], pairs[N_TEST:]
    t0 = time.perf_counter()
    kept = SoftTeacher(train, keep=True).kept
    fit_s = time.perf_counter() - t0
    entries = sum(len(c.keys) for sides in kept.values() for c in sides)
    kept_mb = sum(a.nbytes for sides in kept.values() for c in sides for a in c.arrays("").values()) / 2**20
    out = Path(src).with_suffix(".going_on.align")
    t0 = time.perf_counter()
    _write(SoftTeacher(test, kept=kept), len(test), out)
    row = {"pairs": n, "train_teacher_s": round(fit_s, 1), "kept_entries": entries,
           "kept_mb": round(kept_mb, 1), "going_on_s": round(time.perf_counter() - t0, 1),
           "going_on_aer": round(aer(out), 2)}
    if both:
        t0 = time.perf_counter()
        _write(SoftTeacher(pairs), len(test), out)
        row.update(both_s=round(time.perf_counter() - t0, 1), both_aer=round(aer(out), 2))
    row["peak_mb"] = round(peak_rss_mb())
    emit(row)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 310_000])
    ap.add_argument("--both", action="store_true", help="also train the teacher on the test and N pairs")
    ap.add_argument("--results", default="going_on")
    ap.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    common.add_data_option(ap)
    args = ap.parse_args()
    common.use_data(args.data)
    if args.worker:
        worker(args.worker, args.both)
        return
    rows = []
    for n in args.sizes:
        build(n)
        cmd = [sys.executable, __file__, "--worker", str(n)] + (["--both"] if args.both else [])
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode:
            raise SystemExit(f"size {n} failed:\n{done.stderr[-2000:]}")
        rows.append(parse_result(done.stdout))
        print(json.dumps(rows[-1]))
    write_rows(args.results, rows)


if __name__ == "__main__":
    main()
