#!/usr/bin/env python3
"""The fertility sampler's sweeps as the corpus grows: does a large corpus need all 40?

eflomal runs fewer sampler iterations on a larger corpus. The sampler's sweeps (40: 10 without the
fertility model, the last 20 counted) were the largest share of ``align statistical``'s time at 310k
pairs (bench/profile_statistical.py); this study chose ``SamplerSettings.for_pairs``. For each
size (``--sizes``) this runs ``align statistical``'s defaults on the corpus bench/scale.py builds with
the 37 trial sentences inside (``corpus{N}t``: the 447 test pairs, the trial pairs, then N raw
Hansards pairs), once per schedule (``--sweeps``: the sweeps, the fertility model from a quarter of
them, the last half counted) and seed (``--seeds``), each in a fresh process, and prints wall time, peak
RSS and AER on the trial sentences (which choose) and on the test sentences (which only report).

    python bench/sampler_sweeps.py --sizes 310000 --sweeps 40 20 12 --seeds 1 2

Writes bench/results/sampler_sweeps.csv (a run replaces its own rows and keeps the others). Run it
alone on the machine. A benchmark: it prints numbers and asserts nothing.
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
from scale import N_TEST, WORK, aer, build  # noqa: E402

from attnalign.statistical.settings import SAMPLER  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
N_TRIAL = 37


def schedule(sweeps: int) -> dict:
    """The sampler's settings for ``sweeps`` sweeps, in the default's proportions (40: 10, 20)."""
    s = SAMPLER.with_sweeps(sweeps)
    return {"sweeps": s.sweeps, "fertility_from": s.fertility_from, "collect": s.collect}


def worker(src: str, tgt: str, out: str, sweeps: int, seed: int) -> None:
    """One run in this process: the defaults of ``align statistical`` with the sampler's schedule."""
    import resource
    from dataclasses import replace

    from attnalign.statistical import fertility
    from attnalign.workflows.align_files import align_statistical_files

    # this schedule at every size (the library's own falls with the corpus: SamplerSettings.for_pairs)
    fertility.SAMPLER = replace(fertility.SAMPLER, full_pairs=10**12, **schedule(sweeps))
    t0 = time.perf_counter()
    align_statistical_files(src=src, tgt=tgt, output=out, seed=seed)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": round(time.perf_counter() - t0, 1), "peak_mib": round(peak)}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[310_000])
    ap.add_argument("--sweeps", type=int, nargs="+", default=[40, 20, 12])
    ap.add_argument("--seeds", type=int, nargs="+", default=[1])
    ap.add_argument("--worker", nargs=5, help=argparse.SUPPRESS)
    common.add_data_option(ap)
    args = ap.parse_args()
    if args.worker:
        src, tgt, out, sweeps, seed = args.worker
        worker(src, tgt, out, int(sweeps), int(seed))
        return
    common.use_data(args.data)
    rows = []
    for n in args.sizes:
        src, tgt = build(n, trial_inside=True)
        for sweeps in args.sweeps:
            for seed in args.seeds:
                out = WORK / f"sweeps{sweeps}-seed{seed}-{n}t.align"
                r = subprocess.run([sys.executable, __file__, "--worker", str(src), str(tgt), str(out),
                                    str(sweeps), str(seed)], capture_output=True, text=True)
                if r.returncode:
                    print(r.stderr[-2000:], file=sys.stderr)
                    continue
                run = json.loads(r.stdout.strip().splitlines()[-1])
                row = {"pairs": n + N_TEST + N_TRIAL, **schedule(sweeps), "seed": seed, **run,
                       "trial_aer": round(aer(out, "trial", N_TEST), 2), "test_aer": round(aer(out), 2)}
                print(row, flush=True)
                rows.append(row)
    if rows:  # the CSV keeps the other runs' rows: one row per corpus size, schedule and seed
        RESULTS.mkdir(parents=True, exist_ok=True)
        path = RESULTS / "sampler_sweeps.csv"
        new = {(r["pairs"], r["sweeps"], r["seed"]) for r in rows}
        old = list(csv.DictReader(path.read_text(encoding="utf-8").splitlines())) if path.exists() else []
        kept = [r for r in old if (int(r["pairs"]), int(r["sweeps"]), int(r["seed"])) not in new]
        rows = sorted(kept + rows, key=lambda r: (int(r["pairs"]), -int(r["sweeps"]), int(r["seed"])))
        with open(path, "w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)


if __name__ == "__main__":
    main()
