#!/usr/bin/env python3
"""Several students read as one: each model's two directions averaged over the models, on every pair.

For each pair, reads the protocol corpus and the models that ``python bench/quality.py --pair PAIR
--config NAME`` trained for each ``--models NAME``, and scores, on the test sentences and
(English-French) the trial sentences:

* each model alone and the mean of every set of two or more of them (each direction's word matrices
  ``[T, S]`` averaged over the models, then the two directions averaged: ``--sym soft``), read with
  ``--decoder argmax`` and with thresholds;
* each of those blended with the kept teacher of the first model (``teacher.npz``, what ``align
  corpus`` combines with on the training corpus) at ``align corpus``'s default weight and threshold
  (``TEACHER_DECODING``) and on combine.py's grid; on English-French the grid point with the lowest
  trial AER is marked (ties to the smaller weight); the other pairs report the same point.

    python bench/quality.py --pair enfr --config agree-fert-head-sp-e5-b2k-d0
    python bench/quality.py --pair enfr --config agree-fert-head-sp-e5-b2k-d0-seed2
    python bench/ensemble.py --pair enfr --models agree-fert-head-sp-e5-b2k-d0 \\
        agree-fert-head-sp-e5-b2k-d0-seed2 --results ensemble_enfr_preset2

Writes bench/results/ensemble_<pair>.csv and .json (``--results NAME``: NAME.csv and .json). A
benchmark: it prints numbers and asserts nothing.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
from combine import THRESHOLDS, WEIGHTS, aer, gold_spans  # noqa: E402
from quality import RESULTS, build  # noqa: E402

from attnalign.data.corpus import read_corpus  # noqa: E402
from attnalign.decoding import TEACHER_DECODING, decode_pair, threshold_links  # noqa: E402
from attnalign.nmt.aligner import Aligner, AlignOptions  # noqa: E402
from attnalign.statistical.saved import FILE, SavedTeacher  # noqa: E402


def read(model: Path, pairs) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Each pair's forward ``[T, S]``, reverse ``[T, S]`` (turned around) and forward EOS ``[T]``, as
    ``model``'s alignment head gives them."""
    aligner = Aligner(model, AlignOptions(sym="soft", teacher="off", device="cpu"))
    return [(p.forward, p.reverse, p.eos) for p in aligner.align_pairs(pairs)]


def run(pair: str, names: list[str]) -> list[dict] | None:
    info = build(pair)
    dirs = [info["dir"] / n for n in names]
    missing = [d for d in dirs if not (d / "forward.pt").exists()]
    if missing:
        print(f"SKIPPED {pair}: no model in {missing[0]}; train it with python bench/quality.py "
              f"--pair {pair} --config {missing[0].name}", file=sys.stderr)
        return None
    pairs = read_corpus(info["dir"] / "corpus.src", info["dir"] / "corpus.tgt")
    spans, golds = gold_spans(info, pairs)
    teacher = SavedTeacher(dirs[0] / FILE)
    kept = {name: teacher.matrices(span.start, span.stop) for name, span in spans.items()}
    sets = {n: [d] for n, d in zip(names, dirs, strict=True)}
    for k in range(2, len(dirs) + 1):
        for combo in itertools.combinations(range(len(dirs)), k):
            sets[" + ".join(names[i] for i in combo)] = [dirs[i] for i in combo]
    cache = {d: {name: read(d, [pairs[k] for k in span]) for name, span in spans.items()} for d in dirs}
    rows = []
    for label, ds in sets.items():
        mats = {name: [tuple(sum(cache[d][name][k][i] for d in ds) / len(ds) for i in range(3))
                       for k in range(len(span))] for name, span in spans.items()}
        reads = [("alone, soft argmax", None, None,
                  {name: [decode_pair(f, e, r, None, "argmax", "soft")[0] for f, r, e in mats[name]]
                   for name in spans})]
        reads += [("alone, soft threshold", None, t,
                   {name: [threshold_links((f + r) / 2, t) for f, r, _ in mats[name]] for name in spans})
                  for t in (0.3, 0.4, 0.5)]
        reads += [("with the teacher", w, t,
                   {name: [threshold_links((1 - w) * (f + r) / 2 + w * m, t)
                           for (f, r, _), m in zip(mats[name], kept[name], strict=True)] for name in spans})
                  for w, t in itertools.product(WEIGHTS, THRESHOLDS)]
        for how, w, t, links in reads:
            row = {"pair": pair, "students": label, "n": len(ds), "read": how, "w": w, "threshold": t,
                   "chosen": False}
            for name in spans:
                c = aer(links[name], golds[name])
                row.update({f"{name}_aer": c.aer, f"{name}_precision": c.precision,
                            f"{name}_recall": c.recall})
            rows.append(row)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pair", default="all", help="enfr, roen, esen or all")
    ap.add_argument("--models", nargs="+", required=True, help="bench/quality.py configuration names")
    ap.add_argument("--results", help="the results file's name in bench/results (default ensemble_<pair>)")
    common.add_data_option(ap)
    a = ap.parse_args()
    common.use_data(a.data)
    rows = []
    for pair in (["enfr", "roen", "esen"] if a.pair == "all" else [a.pair]):
        rows += run(pair, a.models) or []
    if not rows:
        return
    default = (TEACHER_DECODING["weight"], TEACHER_DECODING["threshold"])
    for label in dict.fromkeys(r["students"] for r in rows):
        mine = [r for r in rows if r["students"] == label]
        grid = [r for r in mine if r["read"] == "with the teacher"]
        on_trial = [r for r in grid if r["pair"] == "enfr" and r.get("trial_aer") is not None]
        best = min(on_trial, key=lambda r: (round(r["trial_aer"], 6), r["w"])) if on_trial else None
        chosen = (best["w"], best["threshold"]) if best else None
        print(f"\n{label}")
        for r in mine:
            point = (r["w"], r["threshold"])
            if r["read"] != "with the teacher" or point in (default, chosen):
                tag = " (default)" if point == default and r["w"] is not None else ""
                tag += " (trial's choice)" if point == chosen and r["w"] is not None else ""
                r["chosen"] = point == chosen and r["w"] is not None
                trial = f"  trial {100 * r['trial_aer']:.2f}" if r.get("trial_aer") is not None else ""
                print(f"  {r['pair']} {r['read']:<22} w={r['w']} t={r['threshold']}: test "
                      f"{100 * r['test_aer']:.2f}{trial}{tag}")
    name = a.results or f"ensemble_{a.pair}"
    common.write_rows(name, rows)
    print(f"\nwrote {RESULTS / name}.csv")


if __name__ == "__main__":
    main()
