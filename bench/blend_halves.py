#!/usr/bin/env python3
"""Choose the blend of student and teacher on halves of all three gold sets, with the paired test.

``align corpus`` blends each cell as ``(1 - w) * student + w * teacher`` and keeps the cells above a
threshold; w 0.9 and threshold 0.45 were chosen on the 37 En-Fr trial sentences. Here every test gold set
is split into two halves (even and odd sentences). On one half, the candidates that are not significantly
worse than the teacher alone (its own links: what ``align statistical`` writes, the user's cheaper
alternative) on any of the three sets are eligible, and the one with the lowest mean AER over the sets
is chosen (one rule for every language pair, not a constant fitted to one); on the other half of each
set it is tested against the teacher alone and against the default by the paired bootstrap (1,000
resamples); then the halves swap. "The default" here is the fixed point the English-French trial set
chose (``TEACHER_DECODING_FIXED``, what ``--decoder threshold`` takes). Candidates:

* ``fixed``: the weight and threshold grid of bench/combine.py;
* ``relative``: a cell is linked when it holds at least ``r`` of the largest weight of its target word's
  row and of its source word's column, and at least ``floor``;
* ``calibrated``: as many links as the teacher's matrix has cells of at least ``c`` (the teacher decides
  how many), the blend's highest cells (the blend decides which), each above ``CALIBRATED_FLOOR``;
* ``agree``: the cells where the student and the teacher both hold at least ``a``, and the blend's cells
  above ``t``.

A default changes only where the candidate chosen on each half is, on the other half of every set, not
significantly worse than the teacher alone, and its mean over the sets is no worse than the default's.
The rule chosen so is ``align corpus``'s default (``TEACHER_DECODING``: ``--decoder relative``, whose
ratio is RELATIVE_RATIO).

    python bench/quality.py --pair all --config agree-fert-head-sp-e5-b2k-d0    # trains the models
    python bench/blend_halves.py

Writes bench/results/blend_halves.csv. A benchmark: it prints numbers and asserts nothing.
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
from combine import THRESHOLDS, WEIGHTS, teacher_links, with_teacher  # noqa: E402

from attnalign.data.alignments import Alignment  # noqa: E402
from attnalign.decoding import TEACHER_DECODING_FIXED, relative_links, threshold_links  # noqa: E402
from attnalign.eval.metrics import Counts, alignment_counts  # noqa: E402
from attnalign.eval.significance import Bootstrap, paired_test  # noqa: E402
from attnalign.nmt.aligner import Aligner, AlignOptions  # noqa: E402

RATIOS = [0.3, 0.5, 0.7, 0.9]  # relative: the share of the row's and the column's largest weight
FLOORS = [0.05, 0.1, 0.2]
CALIBRATIONS = [0.2, 0.3, 0.4, 0.5, 0.6]  # calibrated: the teacher's cells counted from this weight
CALIBRATED_FLOOR = 0.05
AGREE = [0.1, 0.2, 0.3]  # agree: the weight both must hold
AGREE_THRESHOLDS = [0.45, 0.55, 0.65, 0.8]


def calibrated_links(m: np.ndarray, teacher: np.ndarray, c: float) -> list[tuple[int, int]]:
    """The ``k`` highest cells of ``m`` [T, S] above CALIBRATED_FLOOR, ``k`` the teacher's cells >= ``c``."""
    k = int((teacher >= c).sum())
    if not k:
        return []
    cut = np.sort(m, axis=None)[-k]
    return _links((m >= cut) & (m > CALIBRATED_FLOOR))


def agree_links(m: np.ndarray, student: np.ndarray, teacher: np.ndarray, a: float, t: float
                ) -> list[tuple[int, int]]:
    return _links(((student >= a) & (teacher >= a)) | (m > t))


def _links(keep: np.ndarray) -> list[tuple[int, int]]:
    return sorted((int(i), int(j)) for j, i in zip(*np.nonzero(keep), strict=True))


def candidates() -> dict[str, tuple]:
    out = {f"fixed w{w} t{t}": ("fixed", w, t) for w, t in itertools.product(WEIGHTS, THRESHOLDS)}
    out |= {f"relative w{w} r{r} floor{f}": ("relative", w, r, f)
            for w, r, f in itertools.product(WEIGHTS, RATIOS, FLOORS)}
    out |= {f"calibrated w{w} c{c}": ("calibrated", w, c)
            for w, c in itertools.product(WEIGHTS, CALIBRATIONS)}
    out |= {f"agree w{w} a{a} t{t}": ("agree", w, a, t)
            for w, a, t in itertools.product(WEIGHTS, AGREE, AGREE_THRESHOLDS)}
    return out


def decode(cand: tuple, student: np.ndarray, teacher: np.ndarray) -> list[tuple[int, int]]:
    m = (1 - cand[1]) * student + cand[1] * teacher
    if cand[0] == "fixed":
        return threshold_links(m, cand[2])
    if cand[0] == "relative":
        return relative_links(m, cand[3], cand[2])  # floor, ratio
    if cand[0] == "calibrated":
        return calibrated_links(m, teacher, cand[2])
    return agree_links(m, student, teacher, cand[2], cand[3])


def per_sentence(pair: str) -> dict[str, list[Counts]] | None:
    """Every candidate's counts on each test sentence of ``pair``, and the teacher's own links'
    (TEACHER)."""
    found = with_teacher(pair)
    if found is None:
        return None
    model, pairs, test, gold, aligner = found
    student = Aligner(model, AlignOptions(teacher="off", device="cpu")).align_pairs([pairs[k] for k in test])
    s_mats = [(p.forward + p.reverse) / 2 for p in student]
    t_mats = aligner.teacher.matrices(test.start, test.stop)
    out = {name: [alignment_counts(Alignment.from_links(decode(c, s, t)), g)
                  for s, t, g in zip(s_mats, t_mats, gold, strict=True)]
           for name, c in candidates().items()}
    own = teacher_links(aligner.teacher.teacher.models, test.start, test.stop)
    out[TEACHER] = [alignment_counts(Alignment.from_links(x), g) for x, g in zip(own, gold, strict=True)]
    return out


TEACHER = "teacher"  # the teacher's own links


def main() -> None:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    common.add_data_option(ap)
    common.use_data(ap.parse_args().data)
    counts = {pair: per_sentence(pair) for pair in ("enfr", "roen", "esen")}
    counts = {p: c for p, c in counts.items() if c is not None}
    if not counts:
        return
    t = TEACHER_DECODING_FIXED  # the fixed point the En-Fr trial set chose
    default = f"fixed w{t.teacher_weight} t{t.threshold}"
    names = [n for n in next(iter(counts.values())) if n != TEACHER]
    rows = []

    def mean_aer(name: str, h: int) -> float:  # over the three sets, on half h
        return float(np.mean([sum(c[name][h::2], Counts()).aer for c in counts.values()]))

    def against(base: str, name: str, h: int, c: dict):
        b, o = c[base][h::2], c[name][h::2]
        return paired_test(b, o, Bootstrap().weights(len(b)))

    def safe(name: str, h: int) -> bool:  # on half h, no set significantly worse than the teacher
        return all(against(TEACHER, name, h, c).interval.low <= 0 for c in counts.values())

    for choose, test in ((0, 1), (1, 0)):
        ranked = sorted(names, key=lambda n: (round(mean_aer(n, choose), 6), n != default))
        chosen = next((n for n in ranked if safe(n, choose)), default)
        half = "even" if choose == 0 else "odd"
        print(f"\nchosen on the {half} halves: {chosen} (mean AER {100 * mean_aer(chosen, choose):.2f}; the "
              f"default's {100 * mean_aer(default, choose):.2f}, the teacher's "
              f"{100 * mean_aer(TEACHER, choose):.2f}; the best unconstrained {ranked[0]})")
        for pair, c in counts.items():
            row = {"chosen_on": half, "candidate": chosen, "pair": pair,
                   "candidate_aer": sum(c[chosen][test::2], Counts()).aer}
            for base in (TEACHER, default):
                r = against(base, chosen, test, c)
                key = "teacher" if base == TEACHER else "default"
                row |= {f"{key}_aer": sum(c[base][test::2], Counts()).aer, f"delta_{key}": r.delta,
                        f"delta_{key}_low": r.interval.low, f"delta_{key}_high": r.interval.high,
                        f"p_{key}": r.p_value}
            r = against(TEACHER, default, test, c)
            row |= {"default_vs_teacher": r.delta, "default_vs_teacher_low": r.interval.low,
                    "default_vs_teacher_high": r.interval.high, "default_vs_teacher_p": r.p_value}
            rows.append(row)
            print(f"  {pair} on the other half: chosen {100 * row['candidate_aer']:.2f}, teacher "
                  f"{100 * row['teacher_aer']:.2f} ({100 * row['delta_teacher']:+.2f} "
                  f"[{100 * row['delta_teacher_low']:+.2f}, {100 * row['delta_teacher_high']:+.2f}] "
                  f"p={row['p_teacher']:.3f}), default {100 * row['default_aer']:.2f} "
                  f"({100 * row['delta_default']:+.2f} [{100 * row['delta_default_low']:+.2f}, "
                  f"{100 * row['delta_default_high']:+.2f}] p={row['p_default']:.3f}); default - teacher "
                  f"{100 * r.delta:+.2f} [{100 * r.interval.low:+.2f}, {100 * r.interval.high:+.2f}]")
    common.write_rows("blend_halves", rows)


if __name__ == "__main__":
    main()
