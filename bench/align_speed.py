#!/usr/bin/env python3
"""Extraction throughput and memory of ``attnalign align corpus`` on the raw ISI Hansards corpus.

For each default model (RNN, Transformer) and the ``--preset align`` model, trains a model briefly on
the first 20,000 raw pairs (the weights do not change the cost of extraction; in a process of its
own), then, in a fresh process, aligns a prefix of the 310k-pair corpus with ``align_corpus_files``
(the library behind the CLI: streaming, output written as it goes), on CPU with the given threads,
and prints pairs/s and the peak resident memory after 10%, 50% and 100% of
the pairs (flat memory: the three stay close).

    python bench/align_speed.py --pairs 310661 --threads 2

A benchmark, not a test: it prints numbers and asserts nothing.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from itertools import islice
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
from common import emit, parse_result, peak_rss_mb, shared  # noqa: E402


def worker(args) -> None:
    import torch

    from attnalign.data.corpus import open_corpus
    from attnalign.nmt.aligner import AlignOptions
    from attnalign.training import TrainOptions, preset_options, train
    from attnalign.workflows.align_files import align_corpus_files

    torch.set_num_threads(args.threads)
    tmp = Path(args.tmp)
    d = shared("enfr-hansards")
    src, tgt = d / "isi310k.raw.en", d / "isi310k.raw.fr"
    model = tmp / f"model_{args.worker}"
    preset = args.worker == "preset"
    if args.train_only:  # in its own process, so the alignment's peak memory is its own
        pairs = list(islice(open_corpus(src, tgt, lowercase=True), 20000))
        if preset:  # train --preset align: both directions, 4,000 pieces, the teacher's guide, the head
            opts = preset_options("align", max_steps=args.train_steps, epochs=100, lowercase=True,
                                  device="cpu")
        else:
            opts = TrainOptions.of(model_type=args.worker, max_steps=args.train_steps, epochs=100,
                                   lowercase=True, device="cpu", max_vocab=30000)
        train(pairs, model, opts)
        return
    if args.pairs < 310661:
        for side, path in (("en", src), ("fr", tgt)):
            with open(path, "rb") as f, open(tmp / f"prefix.{side}", "wb") as g:
                g.writelines(islice(f, args.pairs))
        src, tgt = tmp / "prefix.en", tmp / "prefix.fr"
    marks = {}

    def progress(done: int, total: int) -> None:
        for frac in (0.1, 0.5, 1.0):
            if frac not in marks and done >= frac * total:
                marks[frac] = round(peak_rss_mb())

    t = time.perf_counter()
    s = align_corpus_files(model, src=src, tgt=tgt, output=tmp / f"out_{args.worker}.align",
                           options=AlignOptions(sym="auto" if preset else "none", teacher="off",
                                                batch_tokens=args.batch_tokens, device="cpu"),
                           progress=progress)
    emit({"system": f"attnalign {args.worker}", "pairs": s.pairs, "skipped": s.skipped,
          "pairs_per_s": round(s.pairs_per_s), "seconds": round(time.perf_counter() - t, 1),
          "peak_mb": [marks.get(f) for f in (0.1, 0.5, 1.0)]})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=310661, help="corpus prefix to align")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch-tokens", type=int, default=4000)
    ap.add_argument("--train-steps", type=int, default=100)
    ap.add_argument("--models", default="rnn,transformer,preset",
                    help="rnn, transformer (one direction, forward argmax) and preset (train --preset align: "
                         "both directions through the alignment head, soft, argmax; without the teacher)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--tmp", help=argparse.SUPPRESS)
    ap.add_argument("--train-only", action="store_true", help=argparse.SUPPRESS)
    common.add_data_option(ap)
    args = ap.parse_args()
    common.use_data(args.data)
    if args.worker:
        worker(args)
        return
    shared("enfr-hansards", "isi310k.raw.en")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for kind in args.models.split(","):
            cmd = [sys.executable, __file__, "--worker", kind, "--tmp", tmp, "--pairs", str(args.pairs),
                   "--threads", str(args.threads), "--batch-tokens", str(args.batch_tokens),
                   "--train-steps", str(args.train_steps)]
            for extra in (["--train-only"], []):
                p = subprocess.run(cmd + extra, capture_output=True, text=True)
                if p.returncode:
                    sys.exit(f"{kind} failed:\n{p.stderr[-3000:]}")
            rows.append(parse_result(p.stdout))
    print(f"\nalign corpus on the raw ISI Hansards ({args.pairs} pairs, lower-cased, whitespace tokens), "
          f"{args.threads} CPU threads, {args.batch_tokens}-token batches; rnn and transformer: forward "
          "argmax; preset: both directions, soft, argmax, --teacher off")
    print(f"{'system':<24}{'pairs/s':>9}{'time s':>9}{'skipped':>9}   peak MiB at 10% / 50% / 100%")
    for r in rows:
        peaks = " / ".join(str(x) for x in r["peak_mb"])
        print(f"{r['system']:<24}{r['pairs_per_s']:>9}{r['seconds']:>9}{r['skipped']:>9}   {peaks}")


if __name__ == "__main__":
    main()
