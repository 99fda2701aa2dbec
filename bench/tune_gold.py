#!/usr/bin/env python3
"""``align corpus --tune-gold``: the blend chosen on a few dozen gold sentences, against the default,
on the rest of the pair's gold.

For each pair, reads the model that ``python bench/quality.py --pair PAIR --config
agree-fert-head-sp-e5-b2k-d0`` trained (= ``train --preset align``) and trains its teacher on the whole
corpus, as ``align corpus --teacher on`` does. Tune sets: the first ``--tune`` (50) test sentences,
and for English-French also its 37 trial sentences; each is given to the library behind
``--tune-gold`` (:func:`attnalign.combine.tune_blend`), which keeps its best blend only where choosing on
the tune set beats the default on sentences that did not choose (5 folds, each scored with the best of
the others; the paired bootstrap, p < 0.05). On the held-out test sentences (all but the first
``--tune``) it scores the default, the blend kept (the default where none was), the tune set's best
whether kept or not, and the teacher's own links, each with its paired test against the default.

    python bench/tune_gold.py --pair all

Writes bench/results/tune_gold.csv. A benchmark: it prints numbers and asserts nothing.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
from combine import CONFIG, gold_spans, teacher_links, with_teacher  # noqa: E402
from quality import build  # noqa: E402
from significance import counts  # noqa: E402

from attnalign.combine import tune_blend  # noqa: E402
from attnalign.eval.metrics import Counts  # noqa: E402
from attnalign.eval.significance import Bootstrap, paired_test  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def run(pair: str, n_tune: int) -> list[dict] | None:
    found = with_teacher(pair, CONFIG)
    if found is None:
        return None
    model, pairs, test, gold, combined = found
    spans, golds = gold_spans(build(pair), pairs)
    held = range(test.start + n_tune, test.stop)
    held_gold = gold[n_tune:]
    tunes = {f"first {n_tune} test": (range(test.start, test.start + n_tune), gold[:n_tune])}
    if "trial" in spans:
        tunes[f"{len(spans['trial'])} trial"] = (spans["trial"], golds["trial"])
    held_pairs = [pairs[k] for k in held]
    default = [p.links for p in combined.align_pairs(held_pairs, held.start)]
    base = counts(default, held_gold)
    weights = Bootstrap().resamples(len(held_gold))
    teacher = counts(teacher_links(combined.teacher.teacher.models, held.start, held.stop), held_gold)
    rows = []
    for name, (span, tune_gold) in tunes.items():
        tuning = tune_blend(combined, [pairs[k] for k in span], tune_gold, span.start, name)
        systems = {"default": base, "teacher alone": teacher}
        for label, chosen in (("kept", tuning.chosen), ("best on the tune set", tuning.best)):
            d = combined if chosen is None else combined.with_decoding(chosen)
            systems[label] = base if chosen is None else counts(
                [p.links for p in d.align_pairs(held_pairs, held.start)], held_gold)
        print(f"{pair}, tuned on {name}: {tuning.describe()}")
        for label, per in systems.items():
            t = paired_test(base, per, weights)
            aer = 100 * sum(per, Counts()).aer
            print(f"  {label:<22s} held-out AER {aer:6.2f}  {100 * t.delta:+.2f} "
                  f"[{100 * t.interval.low:+.2f}, {100 * t.interval.high:+.2f}] p {t.p_value:.3f}")
            rows.append({"pair": pair, "tune": name, "system": label, "held_out": len(held_gold),
                         "decoding": (tuning.chosen or tuning.default).describe() if label == "kept" else
                         tuning.best.describe() if label.startswith("best") else "",
                         "aer": round(aer, 2), "delta": round(100 * t.delta, 2),
                         "low": round(100 * t.interval.low, 2), "high": round(100 * t.interval.high, 2),
                         "p": round(t.p_value, 4), "tune_delta": round(100 * tuning.paired.delta, 2),
                         "tune_low": round(100 * tuning.paired.interval.low, 2),
                         "tune_high": round(100 * tuning.paired.interval.high, 2),
                         "tune_p": round(tuning.paired.p_value, 4)})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pair", default="all", choices=["all", "enfr", "roen", "esen"])
    ap.add_argument("--tune", type=int, default=50, help="test sentences to tune on (the rest are held out)")
    common.add_data_option(ap)
    args = ap.parse_args()
    common.use_data(args.data)
    rows = []
    for pair in ["enfr", "roen", "esen"] if args.pair == "all" else [args.pair]:
        rows += run(pair, args.tune) or []
    if rows:
        RESULTS.mkdir(parents=True, exist_ok=True)
        with open(RESULTS / "tune_gold.csv", "w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)


if __name__ == "__main__":
    main()
