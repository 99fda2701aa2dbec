#!/usr/bin/env python3
"""`attnalign align statistical --threads N` against one thread: wall seconds of the whole command
(process start, reading and writing included) and the aligner's own seconds (what the command reports:
training, decoding and writing the links, after reading the corpus), runs alternating between the thread
counts (and the checkouts compared) so that a machine's drift falls on all of them, and the ratios of
the medians.

    python bench/threads.py --src bench/work/enfr/corpus.src --tgt bench/work/enfr/corpus.tgt \\
        --threads 1 2 --runs 8 --results threads_amd_3
    python bench/threads.py ... --checkout /tmp/before --checkout /tmp/after   # two versions, alternating

Each run writes its links; they are compared with the first (the links must not depend on the
threads). Writes ``bench/results/<results>.csv`` (one row per run). Prints numbers and asserts nothing;
run it alone, never beside other work.
"""

from __future__ import annotations

import argparse
import csv
import filecmp
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", type=Path, required=True)
    ap.add_argument("--tgt", type=Path, required=True)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--runs", type=int, default=6, help="runs of each thread count")
    ap.add_argument("--checkout", action="append", type=Path, default=None,
                    help="run the attnalign of this checkout (repeat to compare; default: this one)")
    ap.add_argument("--results", default=None, help="write bench/results/RESULTS.csv")
    args = ap.parse_args()
    checkouts = [c.resolve() for c in args.checkout or [ROOT]]
    rows, first = [], None
    with tempfile.TemporaryDirectory() as tmp:
        for run in range(args.runs):
            for c, checkout in enumerate(checkouts):
                for n in args.threads:
                    out = Path(tmp) / f"links{run}_{c}_{n}.txt"
                    cmd = [sys.executable, "-m", "attnalign", "align", "statistical", "--src",
                           str(args.src.resolve()), "--tgt", str(args.tgt.resolve()), "--threads", str(n),
                           "-o", str(out)]
                    env = {**os.environ, "PYTHONPATH": str(checkout)}
                    t0 = time.perf_counter()
                    p = subprocess.run(cmd, check=True, cwd=checkout, env=env, stderr=subprocess.PIPE,
                                       text=True)
                    seconds = time.perf_counter() - t0
                    own = float(re.search(r"aligned \d+ pairs in ([\d.]+) s", p.stderr).group(1))
                    first = first or out
                    same = filecmp.cmp(first, out, shallow=False)
                    rows.append({"run": run, "checkout": str(checkout), "threads": n,
                                 "seconds": round(seconds, 2), "aligner_s": own, "same_links": same})
                    print(f"run {run} {checkout} threads {n}: {seconds:.2f} s (aligner {own:.1f} s), links "
                          f"{'same' if same else 'DIFFER'}", flush=True)
    for checkout in checkouts:
        mine = [r for r in rows if r["checkout"] == str(checkout)]
        for key, what in (("seconds", "wall"), ("aligner_s", "aligner")):
            medians = {n: statistics.median(r[key] for r in mine if r["threads"] == n) for n in args.threads}
            base = medians[args.threads[0]]
            for n, m in medians.items():
                print(f"{checkout} threads {n}: {what} median {m:.2f} s, {base / m:.2f}x threads "
                      f"{args.threads[0]}")
    if args.results:
        path = ROOT / "bench" / "results" / f"{args.results}.csv"
        with open(path, "w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
