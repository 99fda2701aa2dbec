#!/usr/bin/env python3
"""Where the statistical teacher's time goes: each stage's span (the first and last progress report of
the stage, seconds from the start) of `attnalign align statistical`'s default model on a corpus, with
N threads; or, with ``--sampler``, one fertility direction's sampler alone, timed ``--repeat`` times.

    python bench/teacher_stages.py --src bench/work/scale/corpus160000.en \\
        --tgt bench/work/scale/corpus160000.fr --threads 2 -o links.txt
    python bench/teacher_stages.py --src bench/work/enfr/corpus.src --tgt bench/work/enfr/corpus.tgt \\
        --sampler --threads 1 --repeat 2

Prints numbers and asserts nothing; the links written (``-o``) let two versions be compared with cmp.
Run it from each version's checkout (``PYTHONPATH``) one after the other, never beside other work.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from attnalign.data.corpus import read_corpus  # noqa: E402
from attnalign.statistical import kernels  # noqa: E402


def stages(pairs, out: Path | None) -> None:
    from attnalign.statistical.align import iter_links
    from attnalign.statistical.progress import reporting

    t0 = time.perf_counter()
    first: dict[str, float] = {}
    last: dict[str, float] = {}

    def listen(stage: str, step: str, done: int, total: int) -> None:
        key = f"{stage}: {step.split()[0]}"
        first.setdefault(key, time.perf_counter() - t0)
        last[key] = time.perf_counter() - t0

    with reporting(listen), open(out or "/dev/null", "w", encoding="utf-8") as f:
        for links in iter_links(pairs):
            f.write(" ".join(f"{i}-{j}" for i, j in links) + "\n")
    print(f"total {time.perf_counter() - t0:.2f} s")
    for key in first:
        print(f"{key:34s} {first[key]:8.2f} {last[key]:8.2f}")


def sampler(pairs, repeat: int) -> None:
    from attnalign.statistical.fertility import _ibm2_links, sample_marginals
    from attnalign.statistical.ids import CHUNK_PAIRS, IdCorpus

    corpus = IdCorpus.encode(pairs)
    init, table = _ibm2_links(corpus, "forward", CHUNK_PAIRS)
    for _ in range(repeat):
        t0 = time.perf_counter()
        sample_marginals(corpus, init, table=table)
        print(f"sampler (forward) {time.perf_counter() - t0:.2f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", type=Path, required=True)
    ap.add_argument("--tgt", type=Path, required=True)
    ap.add_argument("--threads", type=int, default=None, help="default: every core")
    ap.add_argument("-o", "--output", type=Path, default=None, help="write the links here")
    ap.add_argument("--sampler", action="store_true", help="time one direction's sampler alone")
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    kernels.set_threads(args.threads)
    t0 = time.perf_counter()
    pairs = read_corpus(args.src, args.tgt)
    print(f"read {time.perf_counter() - t0:.2f} s")
    if args.sampler:
        sampler(pairs, args.repeat)
    else:
        stages(pairs, args.output)


if __name__ == "__main__":
    main()
