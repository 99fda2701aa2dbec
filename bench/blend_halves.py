#!/usr/bin/env python3
"""Choose the blend of student and teacher on halves of all three gold sets, with the paired test.

``align corpus`` blends each cell as ``(1 - w) * student + w * teacher`` and keeps the cells above a
threshold; w 0.9 and threshold 0.45 were chosen on the 37 En-Fr trial sentences, too few to tell
0.2 AER apart. Here every test gold set is split into two halves (even and odd sentences). A candidate
is chosen on one half by its mean AER over the three sets (one rule for every language pair, not a
constant fitted to one), and tested on the other half of each set against the default by the paired
bootstrap (1,000 resamples); then the halves swap. Candidates:

* ``fixed``: the weight and threshold grid of bench/combine.py;
* ``relative``: a threshold from the matrix itself: a cell is linked when it holds at least ``r`` of
  the largest weight of its target word's row and of its source word's column, and at least ``floor``
  (per-word agreement of the two directions' views of the blend).

A default changes only where the candidate chosen on each half beats the default on the other half of
every set, significantly (p < 0.05), both ways round.

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
from combine import THRESHOLDS, WEIGHTS, with_teacher  # noqa: E402

from attnalign.data.alignments import Alignment  # noqa: E402
from attnalign.decoding import TEACHER_DECODING, threshold_links  # noqa: E402
from attnalign.eval.metrics import Counts, alignment_counts  # noqa: E402
from attnalign.eval.significance import Bootstrap, paired_test  # noqa: E402
from attnalign.nmt.aligner import Aligner, AlignOptions  # noqa: E402

RATIOS = [0.3, 0.5, 0.7, 0.9]  # relative: the share of the row's and the column's largest weight
FLOORS = [0.05, 0.1, 0.2]


def relative_links(m: np.ndarray, r: float, floor: float) -> list[tuple[int, int]]:
    """Cells of ``m`` [T, S] holding ``r`` of their row's and their column's maximum, and ``floor``."""
    if not m.size:
        return []
    keep = (m >= r * m.max(axis=1, keepdims=True)) & (m >= r * m.max(axis=0, keepdims=True)) & (m >= floor)
    return sorted((int(i), int(j)) for j, i in zip(*np.nonzero(keep), strict=True))


def candidates() -> dict[str, tuple]:
    out = {f"fixed w{w} t{t}": ("fixed", w, t) for w, t in itertools.product(WEIGHTS, THRESHOLDS)}
    out |= {f"relative w{w} r{r} floor{f}": ("relative", w, r, f)
            for w, r, f in itertools.product(WEIGHTS, RATIOS, FLOORS)}
    return out


def decode(cand: tuple, student: np.ndarray, teacher: np.ndarray) -> list[tuple[int, int]]:
    m = (1 - cand[1]) * student + cand[1] * teacher
    return threshold_links(m, cand[2]) if cand[0] == "fixed" else relative_links(m, cand[2], cand[3])


def per_sentence(pair: str) -> dict[str, list[Counts]] | None:
    """Every candidate's counts on each test sentence of ``pair``."""
    found = with_teacher(pair)
    if found is None:
        return None
    model, pairs, test, gold, teacher = found
    student = Aligner(model, AlignOptions(teacher="off", device="cpu")).align_pairs([pairs[k] for k in test])
    s_mats = [(p.forward + p.reverse) / 2 for p in student]
    t_mats = teacher.teacher.matrices(test.start, test.stop)
    return {name: [alignment_counts(Alignment.from_links(decode(c, s, t)), g)
                   for s, t, g in zip(s_mats, t_mats, gold, strict=True)]
            for name, c in candidates().items()}


def main() -> None:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    common.add_data_option(ap)
    common.use_data(ap.parse_args().data)
    counts = {pair: per_sentence(pair) for pair in ("enfr", "roen", "esen")}
    counts = {p: c for p, c in counts.items() if c is not None}
    if not counts:
        return
    t = TEACHER_DECODING
    default = f"fixed w{t['weight']} t{t['threshold']}"
    rows = []
    def mean_aer(name: str, h: int) -> float:  # over the three sets, on half h
        return float(np.mean([sum(c[name][h::2], Counts()).aer for c in counts.values()]))

    for choose, test in ((0, 1), (1, 0)):
        chosen = min(counts[next(iter(counts))], key=lambda n: (round(mean_aer(n, choose), 6), n != default))
        print(f"\nchosen on the {'even' if choose == 0 else 'odd'} halves: {chosen} (mean AER "
              f"{100 * mean_aer(chosen, choose):.2f} against the default's "
              f"{100 * mean_aer(default, choose):.2f})")
        for pair, c in counts.items():
            base, other = c[default][test::2], c[chosen][test::2]
            r = paired_test(base, other, Bootstrap().weights(len(base)))
            rows.append({"chosen_on": "even" if choose == 0 else "odd", "candidate": chosen, "pair": pair,
                         "default_aer": sum(base, Counts()).aer, "candidate_aer": sum(other, Counts()).aer,
                         "delta": r.delta, "delta_low": r.interval.low, "delta_high": r.interval.high,
                         "p_value": r.p_value})
            print(f"  {pair} on the other half: default {100 * rows[-1]['default_aer']:.2f}, chosen "
                  f"{100 * rows[-1]['candidate_aer']:.2f}, delta {100 * r.delta:+.2f} "
                  f"[{100 * r.interval.low:+.2f}, {100 * r.interval.high:+.2f}] p={r.p_value:.4f}")
    common.write_rows("blend_halves", rows)


if __name__ == "__main__":
    main()
