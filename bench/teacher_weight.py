#!/usr/bin/env python3
"""`align corpus`'s teacher weight for a model trained by bench/scale.py on the 447 test sentences and N
raw Hansards pairs: for each weight, the 37 trial sentences as new sentences (the teacher trained on
the model's corpus and them, `--teacher-corpus training`; these choose) and the whole corpus (AER on
its 447 test sentences, which only report). A benchmark: it prints numbers and asserts nothing.

    python bench/scale.py --sizes 40000 --systems preset --epochs 5     # the model, first
    python bench/teacher_weight.py --size 40000 --epochs 5 --weights 0.5 0.7 0.8 0.9 1.0

Writes bench/results/teacher_weight_<N>.{csv,json} (``--results NAME``: NAME.{csv,json}).
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
from scale import N_TEST, WORK, aer, trial_files  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=40_000, help="the raw pairs of bench/scale.py's corpus")
    ap.add_argument("--epochs", default="5", help="the --epochs of bench/scale.py's preset model")
    ap.add_argument("--weights", type=float, nargs="+", default=[0.5, 0.7, 0.8, 0.9, 1.0])
    ap.add_argument("--results", help="name of the results files in bench/results")
    common.add_data_option(ap)
    args = ap.parse_args()
    common.use_data(args.data)
    model = WORK / f"preset-corpus{args.size}-e{args.epochs}"
    src, tgt = WORK / f"corpus{args.size}.en", WORK / f"corpus{args.size}.fr"
    if not (model / "config.json").exists():
        raise SystemExit(f"no model {model}: run python bench/scale.py --sizes {args.size} --systems preset "
                         f"--epochs {args.epochs} first")
    trial = trial_files()
    run = [sys.executable, "-m", "attnalign", "align", "corpus", "--model", str(model), "--teacher", "on",
           "--quiet"]
    rows = []
    for w in args.weights:
        t = time.perf_counter()
        out = WORK / f"weight{w}"
        subprocess.run([*run, "--src", str(trial[0]), "--tgt", str(trial[1]), "--teacher-weight", str(w),
                        "--teacher-corpus", "training", "-o", f"{out}.trial"],
                       check=True, capture_output=True)
        subprocess.run([*run, "--src", str(src), "--tgt", str(tgt), "--teacher-weight", str(w),
                        "-o", f"{out}.test"], check=True, capture_output=True)
        row = {"pairs": args.size + N_TEST, "epochs": args.epochs, "teacher_weight": w,
               "trial_aer": round(aer(Path(f"{out}.trial"), "trial"), 2),
               "test_aer": round(aer(Path(f"{out}.test")), 2), "seconds": round(time.perf_counter() - t, 1)}
        rows.append(row)
        print(json.dumps(row), flush=True)
    common.write_rows(args.results or f"teacher_weight_{args.size}", rows)


if __name__ == "__main__":
    main()
