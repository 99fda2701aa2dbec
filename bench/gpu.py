#!/usr/bin/env python3
"""The ``--preset align`` pipeline end to end on a GPU: ``attnalign train --preset align``, then ``align
corpus`` with its default (the student and its teacher) and with ``--teacher off`` (the student alone),
on the En-Fr 10k protocol corpus of bench/quality.py and on the first 160k and 310k pairs of the raw
Hansards (bench/scale.py's corpora); the 10k row also on the CPU. One CSV row per (corpus, device):
seconds per stage (the teacher, the network's training, each align corpus), peak host and GPU memory,
and AER on the 447 En-Fr test sentences.

    python bench/gpu.py --plan                       # the measurement plan: its calls, rows and minutes
    python bench/gpu.py --call 1 --budget 420        # the plan's first call (a lent GPU's first command)
    python bench/gpu.py                              # every size with the preset (needs a CUDA GPU)
    python bench/gpu.py --sizes 10000 --devices cuda cpu
    python bench/gpu.py --devices cuda --sizes 10000 --variant "nif=--no-input-feeding" --variant "rnn="

``--variant LABEL=OPTIONS`` adds options to ``train --preset align`` (repeatable; the 10k rows also
report the 37 trial sentences, which choose between variants); ``--align-args`` adds options to each
``align corpus``. A row that fails is reported and the others go on; the CSV is rewritten after each
row, and the table is printed last. ``--budget S``: no row starts after S seconds (the rows done are
written).

Each stage is a fresh process (its peak memory is its own). Writes bench/results/gpu.{csv,json}
(``--results NAME``). A benchmark: it prints numbers and asserts nothing; rows whose device torch does
not see are skipped with a message.
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
from common import ROOT, emit, parse_result  # noqa: E402

WORK = ROOT / "bench" / "work" / "gpu"
SIZES = [10000, 160000, 310000]
# The plan for a lent GPU (one H100 or H200, 15 minutes of device time, at most 10 minutes a command):
# each call is one command, its rows in this order, so that a call cut short has measured the rows that
# matter most. (call, pairs, label, options added to train --preset align, predicted minutes.) The 10k
# rows of the preset (no input feeding, both directions at once: 47 s) are in gpu_h200_10k_nif.csv;
# the predictions: 212,000 target pieces/s at 16,000 tokens (gpu_steps_h200_nif.csv), the directions at
# once 17% faster, the teacher at 3,000 pairs/s, align corpus at 40 s per 100k pairs.
PLAN = [
    (1, 160000, "preset", "", 5.5),
    (1, 10000, "input-feeding", "--input-feeding", 2.0),
    (2, 310000, "preset", "", 9.0),
]
# the commands a call runs after its rows: the updates' parts and launches, and the GPU tests
CALL_AFTER = {1: ["python bench/gpu_steps.py --device cuda --batch-tokens 2000 16000 --precisions fp32 "
                  "--steps 5 --results gpu_steps_cuda",
                  "python -m pytest -m gpu -q -p no:cacheprovider"]}


def corpus(n: int) -> tuple[Path, Path]:
    """10,000: the En-Fr protocol corpus of bench/quality.py (test, trial, train10k: 10,484 pairs);
    larger: bench/scale.py's test pairs followed by the first ``n`` raw Hansards pairs."""
    if n == 10000:
        import quality

        d = quality.build("enfr")["dir"]
        return d / "corpus.src", d / "corpus.tgt"
    import scale

    return scale.build(n)


def worker(args) -> None:
    """Run one attnalign command in this process; report its wall time, peak host and GPU memory."""
    import torch

    from attnalign.cli import main as attnalign

    t0 = time.perf_counter()
    sys.argv = ["attnalign", *args.command]
    code = 0
    try:
        attnalign()
    except SystemExit as e:
        code = e.code or 0
    gpu = torch.cuda.max_memory_allocated() / 2**20 if torch.cuda.is_available() else 0.0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    emit({"seconds": time.perf_counter() - t0, "peak_rss_mb": rss, "peak_gpu_mb": gpu, "code": code})


def run(command: list[str]) -> tuple[dict, str]:
    p = subprocess.run([sys.executable, __file__, "--worker", "--", *map(str, command)],
                       capture_output=True, text=True)
    r = parse_result(p.stdout)
    if r["code"]:
        raise SystemExit(f"attnalign {' '.join(map(str, command[:2]))} failed:\n{p.stderr[-3000:]}")
    return r, p.stderr


def tokens_per_s(model: Path) -> float | None:
    """The training's mean target tokens per second over its epochs (log.csv, both directions)."""
    import csv

    with open(model / "log.csv") as f:
        rates = [float(r["tokens_per_s"]) for r in csv.DictReader(f) if r.get("tokens_per_s")]
    return round(sum(rates) / len(rates)) if rates else None


def row(n: int, device: str, label: str = "preset", extra: list[str] = (),
        align_extra: list[str] = ()) -> dict:
    """One (corpus, device, variant) row: ``train --preset align`` with ``extra``, then ``align corpus``
    (default, and the student alone) with ``align_extra``."""
    import scale

    src, tgt = corpus(n)
    model = WORK / f"{device}{n}-{label}"
    train, log = run(["train", "--src", src, "--tgt", tgt, "--preset", "align", "--model", model,
                      "--overwrite", "--device", device, *extra])  # not --quiet: its notes time the teacher
    teacher = re.search(r"guide: \d+ links in (\d+) s", log)
    auto = re.search(r"--batch-tokens auto on \S+: ([\d,]+) tokens a batch at --lr (\S+), (\w+)", log)
    out = {"pairs": len(src.read_text(encoding="utf-8").splitlines()), "device": device, "variant": label,
           "train_args": " ".join(extra), "batch_tokens": auto.group(1).replace(",", "") if auto else None,
           "lr": auto.group(2) if auto else None, "precision": auto.group(3) if auto else None,
           "train_s": round(train["seconds"], 1), "teacher_s": int(teacher.group(1)) if teacher else None,
           "train_tokens_per_s": tokens_per_s(model),
           "train_peak_rss_mb": round(train["peak_rss_mb"]),
           "train_peak_gpu_mb": round(train["peak_gpu_mb"])}
    for name, more in (("default", []), ("student", ["--teacher", "off"])):
        pred = WORK / f"{device}{n}-{label}.{name}.align"
        r, _ = run(["align", "corpus", "--model", model, "--src", src, "--tgt", tgt, "-o", pred, "--device",
                    device, "--quiet", *align_extra, *more])
        out.update({f"align_{name}_s": round(r["seconds"], 1),
                    f"align_{name}_peak_rss_mb": round(r["peak_rss_mb"]),
                    f"align_{name}_peak_gpu_mb": round(r["peak_gpu_mb"]),
                    f"aer_{name}": round(scale.aer(pred), 2)})
        if n == 10000:  # the 37 trial sentences follow the 447 test ones: they choose, the test reports
            out[f"trial_aer_{name}"] = round(scale.aer(pred, "trial", start=447), 2)
    out["end_to_end_s"] = round(out["train_s"] + out["align_default_s"], 1)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=SIZES, help="10000: the En-Fr protocol corpus")
    ap.add_argument("--devices", nargs="+", default=["cuda", "cpu"], choices=["cuda", "cpu"],
                    help="cpu runs the 10k row only unless --sizes asks for more")
    ap.add_argument("--results", default="gpu", help="name of the results files in bench/results")
    ap.add_argument("--variant", action="append", default=[], metavar="LABEL=ARGS",
                    help="a variant of train --preset align: a label and the options added (repeatable; "
                         "default: the preset alone)")
    ap.add_argument("--align-args", default="", help="options added to each align corpus")
    ap.add_argument("--budget", type=float, default=None,
                    help="seconds after which no further row starts (the rows done are written)")
    ap.add_argument("--plan", action="store_true",
                    help="print the plan's calls, rows and minutes; run nothing")
    ap.add_argument("--call", type=int, default=None, help="run the rows of this call of the plan")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("command", nargs="*", help=argparse.SUPPRESS)
    common.add_data_option(ap)
    args = ap.parse_args()
    common.use_data(args.data)
    if args.worker:
        return worker(args)
    if args.plan:
        return print_plan()
    import shlex

    import torch

    WORK.mkdir(parents=True, exist_ok=True)
    variants = [v.split("=", 1) if "=" in v else (v, "") for v in args.variant] or [("preset", "")]
    todo = [(device, n, label, extra) for device in args.devices for n in args.sizes
            for label, extra in variants
            if device == "cuda" or n == 10000 or args.sizes != SIZES]  # the CPU takes hours beyond 10k
    if args.call is not None:
        todo = [("cuda", n, label, extra) for call, n, label, extra, _ in PLAN if call == args.call]
    rows, t0 = [], time.perf_counter()
    # the teacher's loops are compiled once per installation (numba caches them): not inside a row's time
    run(["align", "statistical", "--src", ROOT / "sample_data" / "train.en", "--tgt",
         ROOT / "sample_data" / "train.fr", "-o", WORK / "warm-up.align", "--quiet"])
    if not torch.cuda.is_available() and any(device == "cuda" for device, *_ in todo):
        print("SKIPPED: the cuda rows: torch sees no CUDA GPU", file=sys.stderr)
        todo = [t for t in todo if t[0] != "cuda"]
    for device, n, label, extra in todo:
        if args.budget is not None and time.perf_counter() - t0 > args.budget:
            print(f"SKIPPED: {device} {n} {label}: past --budget", file=sys.stderr)
            continue
        try:
            rows.append(row(n, device, label, shlex.split(extra), shlex.split(args.align_args)))
        except SystemExit as e:  # one failed variant does not lose the others' rows
            print(f"FAILED: {device} {n} {label}: {e}", file=sys.stderr, flush=True)
            continue
        print(json.dumps(rows[-1]), flush=True)
        common.write_rows(args.results, rows)
    common.write_rows(args.results, rows)
    table(rows)


def table(rows: list[dict]) -> None:
    """The rows as a short table (what a lent GPU's reply shows last)."""
    cols = ["pairs", "device", "variant", "batch_tokens", "teacher_s", "train_s", "train_tokens_per_s",
            "align_default_s", "end_to_end_s", "aer_student", "aer_default", "trial_aer_student",
            "trial_aer_default"]
    print("\t".join(cols))
    for r in rows:
        print("\t".join(str(r.get(c, "")) for c in cols))


def print_plan() -> None:
    """The plan: each call's command and rows with their predicted minutes."""
    for call in sorted({c for c, *_ in PLAN}):
        rows = [r for r in PLAN if r[0] == call]
        after = ", then bench/gpu_steps.py and the GPU tests (about 2 minutes)" * (call in CALL_AFTER)
        print(f"call {call}: about {sum(r[-1] for r in rows):.1f} minutes of rows{after}")
        print(f"  python bench/gpu.py --call {call} --results gpu_call{call} --budget SECONDS")
        for _, n, label, extra, minutes in rows:
            print(f"    {n:>7,} pairs  {label:<13} {minutes:4.1f} min  train --preset align {extra}".rstrip())
        for command in CALL_AFTER.get(call, []):
            print(f"  {command}")


if __name__ == "__main__":
    main()
