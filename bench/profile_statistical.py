#!/usr/bin/env python3
"""Where ``align statistical``'s time goes: its stages timed on one corpus, in one process.

Runs the library path of ``attnalign align statistical`` (defaults: ``hmm-agree+fertility``) on the
corpus bench/scale.py prepared (``--size``: 310,000 raw Hansards pairs and the 447 test pairs), and
times reading the text, turning it into token ids, each stage's passes as the models report them
(:mod:`attnalign.statistical.progress`: the agreement HMMs' EM iterations, the two fertility samplers'
sweeps, which run at once where they fit memory, and the decoding of the links) and formatting and
writing the output. A stage's span runs from its first report to its last (overlapping spans ran at
once); the passes before a stage's first report are counted in the gap before it.

    python bench/scale.py --sizes 310000 --systems attnalign    # prepares the corpus (once)
    python bench/profile_statistical.py --size 310000

Writes bench/results/profile_statistical_<size>.csv. Run it alone on the machine. A benchmark: it prints
numbers and asserts nothing.
"""

from __future__ import annotations

import argparse
import csv
import re
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402,F401  (the repository on the path)

from attnalign.data.alignments import Alignment, format_pharaoh_line  # noqa: E402
from attnalign.data.corpus import open_corpus  # noqa: E402
from attnalign.statistical import DEFAULT, iter_links  # noqa: E402
from attnalign.statistical.ids import IdCorpus  # noqa: E402
from attnalign.statistical.progress import reporting  # noqa: E402

WORK = Path(__file__).resolve().parent / "work" / "scale"
RESULTS = Path(__file__).resolve().parent / "results"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=310_000)
    args = ap.parse_args()
    src, tgt = WORK / f"corpus{args.size}.en", WORK / f"corpus{args.size}.fr"
    if not src.exists():
        print(f"SKIPPED: no {src}; prepare it with: python bench/scale.py --sizes {args.size} --systems "
              "attnalign", file=sys.stderr)
        return
    spans: dict[str, list[float]] = {}  # stage -> [first report, last report]
    t0 = time.perf_counter()

    def heard(stage: str, step: str, done: int, total: int) -> None:
        now = time.perf_counter() - t0
        span = spans.setdefault(f"{stage}: {re.sub(r' *[0-9]+/[0-9]+', '', step)}", [now, now])
        span[1] = now

    pairs = open_corpus(src, tgt)
    ids = IdCorpus.encode(pairs)
    t_ids = time.perf_counter() - t0
    writing = 0.0
    with reporting(heard), open("/dev/null", "w") as out:
        for links in iter_links(ids, **DEFAULT.as_kwargs()):
            t = time.perf_counter()
            out.write(format_pharaoh_line(Alignment.from_links(links)) + "\n")
            writing += time.perf_counter() - t
    total = time.perf_counter() - t0
    rows = [{"stage": "read the text and make token ids", "start_s": 0.0, "end_s": round(t_ids, 1)}]
    rows += [{"stage": s, "start_s": round(a, 1), "end_s": round(b, 1)} for s, (a, b) in spans.items()]
    rows.append({"stage": "format and write the links (inside the decoding's span)", "start_s": None,
                 "end_s": round(writing, 1)})
    rows.append({"stage": "total", "start_s": 0.0, "end_s": round(total, 1)})
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(f"{len(pairs):,} pairs, {DEFAULT.model}: {total:.0f} s, peak RSS {peak:.2f} GiB")
    for r in rows:
        start = "" if r["start_s"] is None else f"{r['start_s']:8.1f}"
        print(f"  {r['stage']:<60s} {start:>8s} {r['end_s']:8.1f}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    with open(RESULTS / f"profile_statistical_{args.size}.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=["stage", "start_s", "end_s"])
        w.writeheader()
        w.writerows(rows)


if __name__ == "__main__":
    main()
