#!/usr/bin/env python3
"""The teacher's own settings, measured: more EM iterations for the agreement HMMs, longer or several
independent fertility samplers, the NULL probability p0 of either model (``--variants p0-A-F``: the
agreement HMMs' A, the fertility HMMs' F; 0.2 and 0.2 today), and the share of each model in the
teacher's soft matrix; each as the teacher's links alone, its soft matrices alone and ``align
corpus``'s default output with the ``--preset align`` student that ``bench/quality.py`` trained (the
student is not retrained: it shows what the teacher alone moves).

    python bench/quality.py --pair all --config agree-fert-head-sp-e5-b2k-d0    # trains the students
    python bench/teacher_grid.py --pair all

For each pair and variant, scores on the test gold (and the En-Fr trial gold):

* ``links``: the teacher's links (the agreement HMMs' posterior links united with the fertility
  samplers' links sampled in at least half of the sweeps of both directions, several samplers'
  frequencies averaged);
* ``soft``: the teacher's ``[T, S]`` matrix (the agreement model's share ``a`` of it, the fertility
  samplers' ``1 - a``) above the threshold, w 1;
* ``blend``: ``(1 - w) * student + w * teacher`` above the threshold, the default point (w 0.9,
  threshold 0.45) and a grid.

The En-Fr trial set chooses: the variant and point with the lowest trial AER (ties to the earlier
variant and the default point); the other pairs are read at the same choice, never tuned. Writes
bench/results/teacher_grid_<pair>.csv (``--results NAME``: teacher_grid_<pair>_NAME.csv). Prints
numbers and asserts nothing; run it alone on the machine (the samplers use every core).
"""

from __future__ import annotations

import argparse
import csv
import inspect
import itertools
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402, F401
from combine import CONFIG, aer, trained  # noqa: E402
from quality import RESULTS  # noqa: E402

from attnalign.decoding import threshold_links  # noqa: E402
from attnalign.statistical.align import both_directions, fit  # noqa: E402
from attnalign.statistical.fertility import FertilityModel, sample_marginals  # noqa: E402
from attnalign.statistical.hmm import HMMAgreement  # noqa: E402
from attnalign.statistical.ids import IdCorpus  # noqa: E402
from attnalign.statistical.links import mask_links, posterior_mask  # noqa: E402
from attnalign.statistical.options import DEFAULT, FERTILITY_THRESHOLD  # noqa: E402

# the NULL probability p0 the teacher's two models take today
P0 = (inspect.signature(HMMAgreement).parameters["p0"].default,
      inspect.signature(sample_marginals).parameters["p0"].default)
# name -> (agreement HMM iterations, fertility seeds, sweeps, collect, the agreement HMMs' and the
# fertility HMMs' p0); the first is the teacher today
VARIANTS = {
    "default": (5, (1,), 40, 20, *P0),
    "hmm-it10": (10, (1,), 40, 20, *P0),
    "fert-x3": (5, (1, 2, 3), 40, 20, *P0),
    "fert-s80": (5, (1,), 80, 40, *P0),
    "hmm-it10+fert-x3": (10, (1, 2, 3), 40, 20, *P0),
    **{f"p0-{a:g}-{b:g}": (5, (1,), 40, 20, a, b) for a, b in ((0.1, 0.1), (0.3, 0.3), (0.1, 0.2),
                                                               (0.2, 0.1), (0.2, 0.05))},
}
# the variants run when --variants is not given (the p0 ones are asked for by name)
FIRST = [v for v in VARIANTS if not v.startswith("p0-")]
SHARES = [0.5, 0.3, 0.7]  # the agreement model's share of the soft matrix; 0.5 is the teacher today
WEIGHTS = [0.9, 0.75, 1.0]  # the teacher's weight against the student; 0.9 is the default
THRESHOLDS = [0.35, 0.4, 0.45, 0.5, 0.55]
DEFAULT_POINT = (0.5, 0.9, 0.45)


def run(pair: str, config: str, variants: list[str]) -> list[dict] | None:
    from attnalign.nmt.aligner import Aligner, AlignOptions

    found = trained(pair, config)
    if found is None:
        return None
    model, pairs, spans, golds = found
    student = Aligner(model, AlignOptions(teacher="off", device="cpu"))
    stud = {name: [(p.forward + p.reverse) / 2 for p in student.align_pairs([pairs[k] for k in span])]
            for name, span in spans.items()}
    words = IdCorpus.encode(pairs)
    agree_cache, fert_cache, secs = {}, {}, {}
    rows = []
    for v in variants:
        iters, seeds, sweeps, collect, p0_agree, p0_fert = VARIANTS[v]
        t0 = time.perf_counter()
        if (iters, p0_agree) not in agree_cache:
            agree_cache[iters, p0_agree] = fit(words.cut(DEFAULT.prefix), "hmm-agree", iters, DEFAULT.prefix,
                                               DEFAULT.identical, p0=p0_agree)
        for s in seeds:
            if (s, sweeps, collect, p0_fert) not in fert_cache:
                fert_cache[s, sweeps, collect, p0_fert] = FertilityModel(words.cut(0), s, sweeps=sweeps,
                                                                         collect=collect, p0=p0_fert)
        secs[v] = time.perf_counter() - t0
        agree = agree_cache[iters, p0_agree]
        ferts = [fert_cache[s, sweeps, collect, p0_fert] for s in seeds]
        mats, links = {}, {}
        for name, span in spans.items():
            af, ar = agree.posteriors(span.start, span.stop)
            fert = [m.posteriors(span.start, span.stop) for m in ferts]
            ff = [sum(x) / len(fert) for x in zip(*(f for f, _ in fert), strict=True)]
            fr = [sum(x) / len(fert) for x in zip(*(r for _, r in fert), strict=True)]
            mats[name] = (both_directions(af, ar), both_directions(ff, fr))
            links[name] = [mask_links(posterior_mask(a, b) | (np.minimum(c[:, :-1].T, d[:, :-1])
                                                              >= FERTILITY_THRESHOLD))
                           for a, b, c, d in zip(af, ar, ff, fr, strict=True)]

        def add(kind: str, links_of, share=None, w=None, t=None, v=v) -> None:
            row = {"pair": pair, "variant": v, "kind": kind, "share": share, "w": w, "threshold": t,
                   "teacher_s": round(secs[v], 1)}
            for name in spans:
                c = aer(links_of(name), golds[name])
                row.update({f"{name}_aer": c.aer, f"{name}_precision": c.precision,
                            f"{name}_recall": c.recall})
            rows.append(row)

        add("links", links.get)
        for share, w, t in itertools.product(SHARES, WEIGHTS, THRESHOLDS):
            blend = {name: [(1 - w) * s + w * (share * a + (1 - share) * f)
                            for s, a, f in zip(stud[name], *mats[name], strict=True)] for name in spans}
            add("soft" if w == 1 else "blend", {name: [threshold_links(m, t) for m in blend[name]]
                                                for name in spans}.get, share, w, t)
        print(f"{pair} {v}: teacher fitted in {secs[v]:.0f} s", file=sys.stderr)
    return rows


def at(r: dict) -> tuple:
    """A row's grid point: (the agreement model's share, the teacher's weight, the threshold)."""
    return r["share"], r["w"], r["threshold"]


def show(rows: list[dict]) -> None:
    by = {}
    for r in rows:
        by.setdefault((r["pair"], r["variant"]), []).append(r)
    trial = [r for r in rows if r.get("trial_aer") is not None]
    order = list(VARIANTS)
    best = min(trial, key=lambda r: (round(r["trial_aer"], 6), order.index(r["variant"]),
                                     at(r) != DEFAULT_POINT)) if trial else None
    if best:
        print(f"\nthe trial set chooses {best['variant']}, share {best['share']}, w {best['w']}, threshold "
              f"{best['threshold']} (trial AER {100 * best['trial_aer']:.2f})")
    print(f"\n{'pair':5s} {'variant':18s} {'s':>5s} {'links':>13s} {'soft .45':>13s} {'default':>13s} "
          f"{'trial choice':>13s}   test AER % (trial)")
    for (pair, v), rs in by.items():
        def cell(pred, rs=rs) -> str:
            r = next((r for r in rs if pred(r)), None)
            if r is None:
                return "-"
            tr = f" ({100 * r['trial_aer']:.2f})" if r.get("trial_aer") is not None else ""
            return f"{100 * r['test_aer']:.2f}{tr}"
        print(f"{pair:5s} {v:18s} {rs[0]['teacher_s']:5.0f} {cell(lambda r: r['kind'] == 'links'):>13s} "
              f"{cell(lambda r: at(r) == (0.5, 1.0, 0.45)):>13s} "
              f"{cell(lambda r: at(r) == DEFAULT_POINT):>13s} "
              f"{cell(lambda r: best is not None and at(r) == at(best)):>13s}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pair", default="enfr", choices=["enfr", "roen", "esen", "all"])
    ap.add_argument("--config", default=CONFIG, help="the student's model directory under bench/work/PAIR")
    ap.add_argument("--variants", nargs="+", default=FIRST, choices=list(VARIANTS))
    ap.add_argument("--results", default=None, help="CSV name suffix")
    args = ap.parse_args()
    rows = []
    for pair in ["enfr", "roen", "esen"] if args.pair == "all" else [args.pair]:
        rows += run(pair, args.config, args.variants) or []
    if not rows:
        return
    show(rows)
    RESULTS.mkdir(parents=True, exist_ok=True)
    for pair in {r["pair"] for r in rows}:
        out = RESULTS / f"teacher_grid_{pair}{'_' + args.results if args.results else ''}.csv"
        keys = list(dict.fromkeys(k for r in rows for k in r))
        with open(out, "w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, keys)
            w.writeheader()
            w.writerows(r for r in rows if r["pair"] == pair)
        print(f"wrote {out}")


if __name__ == "__main__":
    main()
