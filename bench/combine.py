#!/usr/bin/env python3
"""Combine rather than copy: the student's attention and its teacher's posteriors, averaged at decoding.

For English-French (the only pair with a trial gold): reads the protocol corpus and the model that
``python bench/quality.py --pair enfr --config agree-fert-head-sp`` trained (= ``train --preset
align``), computes the teacher's soft matrices on the same corpus (the agreement HMMs' posteriors on
5-character prefixes, and the fertility HMMs' sampled link frequencies on words, each direction
turned to ``[T, S]``), and decodes

    M = w * student + (1 - w) * teacher      (student: mean of the alignment head's two directions;
                                               teacher: mean of its four matrices)

into the links ``M >= threshold``. ``w`` and the threshold are chosen on the 37 trial sentences (the
lowest trial AER; ties to the larger ``w``) and the test AER of that choice is reported, beside the
teacher's own links, the student's default decoding, and ``w`` = 0 and 1 at their own best thresholds.

    python bench/quality.py --pair enfr --config agree-fert-head-sp    # trains the model (about 25 min)
    python bench/combine.py

Writes bench/results/combine_enfr.csv. A benchmark: it prints numbers and asserts nothing.
"""

from __future__ import annotations

import csv
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from quality import RESULTS, build  # noqa: E402

from attnalign.data.alignments import Alignment, read_alignments  # noqa: E402
from attnalign.data.corpus import read_corpus  # noqa: E402
from attnalign.eval.metrics import Counts, corpus_counts  # noqa: E402
from attnalign.nmt.aligner import Aligner, AlignOptions  # noqa: E402
from attnalign.statistical import align_statistical  # noqa: E402
from attnalign.statistical.align import directional_posteriors  # noqa: E402

CONFIG = "agree-fert-head-sp"
WEIGHTS = [0.0, 0.25, 0.4, 0.5, 0.6, 0.75, 1.0]
THRESHOLDS = [0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5]


def aer(links, gold) -> tuple[float, Counts]:
    c = sum(corpus_counts([Alignment.from_links(x) for x in links], gold), Counts())
    return c.aer, c


def threshold_links(m: np.ndarray, t: float) -> list[tuple[int, int]]:
    """Links (i, j) of the cells of ``m`` [T, S] at or above ``t``."""
    return sorted((int(i), int(j)) for j, i in zip(*np.nonzero(m >= t), strict=True))


def main() -> None:
    info = build("enfr")
    model = info["dir"] / CONFIG
    if not (model / "forward.pt").exists():
        print(f"SKIPPED: no model in {model}; train it with: python bench/quality.py --pair enfr "
              f"--config {CONFIG}", file=sys.stderr)
        return
    pairs = read_corpus(info["dir"] / "corpus.src", info["dir"] / "corpus.tgt")
    n_test, (d0, n_dev) = info["n_test"], info["dev"]
    spans = {"test": range(n_test), "trial": range(d0, d0 + n_dev)}
    golds = {}
    for name, path in (("test", info["gold"]), ("trial", info["dev_gold"])):
        sub = [pairs[k] for k in spans[name]]
        golds[name] = read_alignments(path, src_lengths=[len(s) for s, _ in sub],
                                      tgt_lengths=[len(t) for _, t in sub])[0]
    t0 = time.perf_counter()
    a_f, a_r = directional_posteriors(pairs, "hmm-agree", prefix=5, identical=1.0)
    f_f, f_r = directional_posteriors(pairs, "fertility", prefix=0)
    teacher_links = align_statistical(pairs, "posterior", model="hmm-agree+fertility")
    t_teacher = time.perf_counter() - t0
    wanted = [*spans["test"], *spans["trial"]]
    teacher = {k: (a_f[k][:, :-1] + a_r[k][:, :-1].T + f_f[k][:, :-1] + f_r[k][:, :-1].T) / 4 for k in wanted}
    t0 = time.perf_counter()
    aligner = Aligner(model, AlignOptions(device="cpu"))  # the model's default decoding
    default = {k: p for k, p in zip(wanted, aligner.align_pairs([pairs[k] for k in wanted]), strict=True)}
    student = {k: (p.forward + p.reverse) / 2 for k, p in default.items()}
    t_student = time.perf_counter() - t0

    def score(name, links_of):
        return aer([links_of(k) for k in spans[name]], golds[name])

    rows = []
    for w in WEIGHTS:
        for t in THRESHOLDS:
            links = {k: threshold_links(w * student[k] + (1 - w) * teacher[k], t) for k in wanted}
            trial, _ = score("trial", links.get)
            test, c = score("test", links.get)
            rows.append({"system": "combined", "w": w, "threshold": t, "trial_aer": trial, "aer": test,
                         "precision": c.precision, "recall": c.recall})
    for name, links_of in (("teacher (hmm-agree+fertility links)", lambda k: teacher_links[k]),
                           ("student (default decoding)", lambda k: default[k].links)):
        trial, _ = score("trial", links_of)
        test, c = score("test", links_of)
        rows.append({"system": name, "w": None, "threshold": None, "trial_aer": trial, "aer": test,
                     "precision": c.precision, "recall": c.recall})
    combined = [r for r in rows if r["system"] == "combined"]
    chosen = min(combined, key=lambda r: (round(r["trial_aer"], 6), -r["w"]))
    print(f"teacher matrices {t_teacher:.0f} s, student matrices {t_student:.0f} s; "
          f"{len(pairs)} pairs, test {n_test}, trial {n_dev}")
    print(f"{'system':40s} {'w':>5s} {'thr':>5s} {'trial AER':>10s} {'test AER':>9s} {'P':>6s} {'R':>6s}")

    def show(r, note=""):
        w = "-" if r["w"] is None else f"{r['w']:.2f}"
        t = "-" if r["threshold"] is None else f"{r['threshold']:.2f}"
        print(f"{r['system']:40s} {w:>5s} {t:>5s} {100 * r['trial_aer']:10.2f} {100 * r['aer']:9.2f} "
              f"{100 * r['precision']:6.2f} {100 * r['recall']:6.2f} {note}")

    for r in rows[len(combined):]:
        show(r)
    for w in (0.0, 1.0):
        best_w = min((r for r in combined if r["w"] == w), key=lambda r: r["trial_aer"])
        show(best_w, "(best threshold on trial)")
    show(chosen, "<- chosen on trial")
    RESULTS.mkdir(parents=True, exist_ok=True)
    with open(RESULTS / "combine_enfr.csv", "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=[*rows[0], "chosen"])
        wr.writeheader()
        for r in rows:
            wr.writerow({**r, "chosen": r is chosen})


if __name__ == "__main__":
    main()
