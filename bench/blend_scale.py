#!/usr/bin/env python3
"""`align corpus`'s blend of student and teacher as the corpus grows: for a model that bench/scale.py
trained, every teacher weight and threshold, each direction's matrices computed once.

The teacher is trained as ``align corpus --teacher on`` trains it (``attnalign.combine.combine_fitted``):
on the model's corpus (the 447 test sentences and N raw Hansards pairs) for the test sentences, and on the
corpus followed by the 37 trial sentences for those (``--teacher-corpus training``: each fit its own,
as the sampler's draws depend on the whole corpus); the student reads the test sentences (in its
corpus) and the trial sentences (new to it). Each grid point blends each sentence's matrices as
``align corpus`` does, ``(1 - w) * student + w * teacher`` with the student the mean of its two
directions, and keeps the cells above the threshold (``--decoder threshold``), or those above a floor
that hold RELATIVE_RATIO of their row's and column's largest weight (``--decoder relative``).
The trial sentences choose (lowest AER, ties to the smaller ``w``); the test sentences only report.
One ``align corpus`` run per weight would measure the same, without the threshold, in hours instead of
minutes beyond 40k pairs.

    python bench/scale.py --sizes 160000 --systems preset          # the model, first
    python bench/blend_scale.py --model bench/work/scale/preset-corpus160000-eauto --size 160000
    python bench/blend_scale.py --model bench/work/scale/preset-corpus160000-eauto --size 160000 \\
        --teacher-size 310000 --results blend_scale_160k_student_310k_teacher
    python bench/blend_scale.py --choose blend_scale_preset-corpus160000-eauto NAME ...   # one point

``--trial-inside`` reads a model that ``bench/scale.py --trial-inside`` trained on a corpus holding the
trial sentences after the test ones: both gold sets are then aligned alike, inside the corpus, by one
teacher.

``--teacher-size`` trains the teacher on a larger corpus of bench/scale.py (which begins with the same
pairs) than the student's: a stand-in for a student trained on that corpus, where none was trained.

Writes bench/results/blend_scale_<model>.{csv,json} (``--results NAME``: NAME.{csv,json}). A
benchmark: it prints numbers and asserts nothing.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
from combine import THRESHOLDS  # noqa: E402
from scale import N_TEST, RESULTS, WORK, links_aer, trial_files  # noqa: E402

from attnalign.combine import blend, combine_fitted  # noqa: E402
from attnalign.data.corpus import Corpus, read_corpus  # noqa: E402
from attnalign.decoding import relative_links, teacher_decoding, threshold_links  # noqa: E402
from attnalign.decoding.policy import TUNE_FLOORS  # noqa: E402
from attnalign.nmt.aligner import Aligner, AlignOptions  # noqa: E402

WEIGHTS = [0.0, 0.25, 0.5, 0.6, 0.7, 0.75, 0.8, 0.9, 1.0]  # the teacher's share
# each decoder's cuts: the fixed threshold, and the relative cut's floors (RELATIVE_RATIO of the row's and
# column's largest weight), as align corpus --tune-gold scores them
CUTS = {"threshold": THRESHOLDS, "relative": list(TUNE_FLOORS)}
DECODE = {"threshold": threshold_links, "relative": relative_links}


def choose(names: list[str]) -> None:
    """The grid point with the lowest trial AER over several results of this script: the mean over
    each teacher corpus size of the mean over its models (each size counts once), ties to the smaller
    ``w``; then each size's test AER there and at ``align corpus``'s point."""
    import pandas as pd

    rows = pd.concat([pd.read_csv(RESULTS / f"{n}.csv") for n in names])
    rows = rows.assign(decoder=rows["decoder"].fillna("threshold") if "decoder" in rows else "threshold")
    rows = rows[rows.decoder == "threshold"]  # the fixed point is chosen among fixed cuts
    cells = rows.groupby(["teacher_pairs", "w", "threshold"])
    by_size = cells[["trial_aer", "test_aer"]].mean().reset_index()
    pooled = by_size.groupby(["w", "threshold"])["trial_aer"].mean().reset_index()
    best = pooled.sort_values(["trial_aer", "w"]).iloc[0]
    print(f"chosen over {len(names)} results: w {best.w}, threshold {best.threshold} "
          f"(mean trial AER {best.trial_aer:.2f})")
    for n, g in by_size.groupby("teacher_pairs"):
        at = g[(g.w == best.w) & (g.threshold == best.threshold)].iloc[0]
        pt = teacher_decoding(int(n))  # align corpus's default for a teacher of n pairs
        dflt = g[(g.w == pt.teacher_weight) & (g.threshold == pt.threshold)].iloc[0]
        print(f"{n:>8d} pairs: trial {at.trial_aer:.2f} test {at.test_aer:.2f}; at align corpus's point "
              f"trial {dflt.trial_aer:.2f} test {dflt.test_aer:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--choose", nargs="+", metavar="NAME",
                    help="instead of measuring, choose one point over these results (bench/results/NAME.csv)")
    ap.add_argument("--model", help="a model directory bench/scale.py trained")
    ap.add_argument("--size", type=int, help="the raw pairs of its corpus (bench/scale.py --sizes)")
    ap.add_argument("--teacher-size", type=int,
                    help="train the teacher on the bench/scale.py corpus of this size (default: --size)")
    ap.add_argument("--trial-inside", action="store_true",
                    help="the model learned from bench/scale.py --trial-inside's corpus, the trial sentences "
                         "inside it: one teacher, both gold sets read from the corpus")
    ap.add_argument("--results", help="name of the results file in bench/results")
    common.add_data_option(ap)
    args = ap.parse_args()
    if args.choose:
        return choose(args.choose)
    if not (args.model and args.size):
        ap.error("give --model and --size (or --choose)")
    common.use_data(args.data)
    model = Path(args.model)
    size = args.teacher_size or args.size
    corpus = f"corpus{size}{'t' if args.trial_inside else ''}"
    src, tgt = WORK / f"{corpus}.en", WORK / f"{corpus}.fr"
    if not (model / "config.json").exists() or not src.exists():
        raise SystemExit(f"no model {model} or corpus {src}: run python bench/scale.py --sizes {size} "
                         f"--systems preset{' --trial-inside' if args.trial_inside else ''} first")
    pairs, trial = read_corpus(src, tgt), read_corpus(*trial_files())
    start = N_TEST if args.trial_inside else len(pairs)  # where the trial sentences are, or will be
    spans = {"test": range(N_TEST), "trial": range(start, start + len(trial))}
    t0 = time.perf_counter()
    student = Aligner(model, AlignOptions(teacher="off", device="cpu"))

    def teacher_of(extra):  # align corpus's teacher, fitted on the corpus followed by the extra pairs
        aligned = pairs if extra is None else Corpus(pairs, extra)
        return combine_fitted(Aligner(model, AlignOptions(teacher="on", device="cpu")), aligned).teacher

    teachers = {"test": teacher_of(None)}
    teachers["trial"] = teachers["test"] if args.trial_inside else teacher_of(trial)
    mats = {}
    for name, span in spans.items():
        sents = trial if span.start >= len(pairs) else pairs[span.start:span.stop]
        mats[name] = [((p.forward + p.reverse) / 2, m) for p, m in
                      zip(student.align_pairs(sents), teachers[name].matrices(span.start, span.stop),
                          strict=True)]
    t_teacher = time.perf_counter() - t0
    rows = []
    for decoder, cuts in CUTS.items():
        for w, t in itertools.product(WEIGHTS, cuts):
            row = {"model": model.name, "model_pairs": args.size + N_TEST, "teacher_pairs": len(pairs),
                   "decoder": decoder, "w": w, "threshold": t}
            for name, ms in mats.items():
                links = [DECODE[decoder](blend(s, m, w), t) for s, m in ms]
                row[f"{name}_aer"] = round(links_aer(links, name), 2)
            rows.append(row)
    chosen = min(rows, key=lambda r: (r["trial_aer"], r["w"]))
    print(f"{model.name}: {len(pairs)} pairs; the matrices computed in {t_teacher:.0f} s")
    print(f"{'decoder':>9s} {'w':>5s} {'best cut':>8s} {'trial':>6s} {'test':>6s}   (per weight, the trial's "
          "cut)")
    for decoder in CUTS:
        for w in WEIGHTS:
            best = min((r for r in rows if r["w"] == w and r["decoder"] == decoder),
                       key=lambda r: r["trial_aer"])
            print(f"{decoder:>9s} {w:5.2f} {best['threshold']:8.2f} {best['trial_aer']:6.2f} "
                  f"{best['test_aer']:6.2f}")
    for decoder in CUTS:  # align corpus's default for a teacher of this corpus, with this decoder
        point = teacher_decoding(len(pairs), decoder)
        r = next(r for r in rows if (r["decoder"], r["w"], r["threshold"])
                 == (point.decoder, point.teacher_weight, point.threshold))
        print(f"default with --decoder {decoder}: {point.describe()}: trial {r['trial_aer']:.2f}, "
              f"test {r['test_aer']:.2f}")
    print(f"chosen on the trial set: {chosen['decoder']}, w {chosen['w']}, cut {chosen['threshold']}: "
          f"trial {chosen['trial_aer']:.2f}, test {chosen['test_aer']:.2f}")
    common.write_rows(args.results or f"blend_scale_{model.name}", rows)


if __name__ == "__main__":
    main()
