#!/usr/bin/env python3
"""Combine rather than copy: the student's attention and its teacher's soft matrices, on every pair.

For each pair, reads the protocol corpus and the model that ``python bench/quality.py --pair PAIR
--config agree-fert-head-sp-e5-b2k-d0`` trained (= ``train --preset align``; ``--config`` names
another), trains the teacher on the same corpus through the library path of ``align corpus --teacher
on`` (``attnalign.combine.combine_fitted``: the agreement HMMs on 5-character prefixes and the fertility
HMMs on whole words, each pair's matrix the mean of their four directions), and scores:

* the teacher's own links (its posterior links, from the same trained models);
* the student's default decoding without the teacher (``--teacher off``);
* ``align corpus``'s default with the teacher (``TEACHER_DECODING``: each cell
  ``(1 - w) * student + w * teacher``, the student being the mean of the alignment head's two
  directions, decoded by its decoder), run over the whole corpus as the command does;
* a grid of teacher weights ``w`` and thresholds (the cells above the threshold). Only English-French
  has a trial gold: the grid point with the lowest trial AER (ties to the smaller ``w``) is the
  selection, and it is what ``TEACHER_DECODING_FIXED`` holds (``--decoder threshold``); the other pairs
  are measured at that same point, never tuned;
* with ``--grow``, a second grid that grows the thresholded links: the cells above the threshold
  are the core, and cells above a lower threshold ``low`` join it by the grow-diag rule (next to a
  link, one of their words unaligned; ``grow-diag-final-and``: then any such cell whose two words are
  unaligned), the rules the statistical aligners use to symmetrize; selected on the trial set the
  same way, apart from the first grid;
* with ``--product``, a grid that multiplies instead of averaging: each cell
  ``student ** (1 - w) * teacher ** w`` (a weighted geometric mean), then the thresholds.

    python bench/quality.py --pair all --config agree-fert-head-sp-e5-b2k-d0    # trains the models
    python bench/combine.py --pair all
    python bench/combine.py --pair all --grow --product --results NAME    # + the other grids

Writes bench/results/combine_<pair>_<config>.csv (``--results NAME``: combine_<pair>_NAME.csv). A
benchmark: it prints numbers and asserts nothing.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
from quality import RESULTS, build  # noqa: E402

from attnalign.combine import combine_fitted  # noqa: E402
from attnalign.data.alignments import Alignment, read_alignments  # noqa: E402
from attnalign.data.corpus import read_corpus  # noqa: E402
from attnalign.decoding import TEACHER_DECODING_FIXED, symmetrize, threshold_links  # noqa: E402
from attnalign.eval.metrics import Counts, corpus_counts  # noqa: E402
from attnalign.nmt.aligner import Aligner, AlignOptions  # noqa: E402
from attnalign.statistical.align import union_links  # noqa: E402

CONFIG = "agree-fert-head-sp-e5-b2k-d0"  # = train --preset align
WEIGHTS = [0.0, 0.25, 0.5, 0.6, 0.75, 0.9, 1.0]  # the teacher's share
THRESHOLDS = [0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55]
LOWS = [0.05, 0.1, 0.15, 0.2, 0.25, 0.3]  # --grow: the lower threshold of the cells that may join
GROW_RULES = ["grow-diag", "grow-diag-final-and"]


def aer(links, gold) -> Counts:
    return sum(corpus_counts([Alignment.from_links(x) for x in links], gold), Counts())


def gold_spans(info: dict, pairs) -> tuple[dict, dict]:
    """The corpus positions of the test sentences and (English-French) the trial ones, by name, and
    their gold alignments."""
    spans = {"test": range(info["n_test"])}
    if info["dev"] is not None:
        d0, n_dev = info["dev"]
        spans["trial"] = range(d0, d0 + n_dev)
    golds = {}
    for name, span in spans.items():
        sub = [pairs[k] for k in span]
        golds[name] = read_alignments(info["gold"] if name == "test" else info["dev_gold"],
                                      one_based=info["gold_one_based"] if name == "test" else None,
                                      src_lengths=[len(s) for s, _ in sub],
                                      tgt_lengths=[len(t) for _, t in sub])[0]
    return spans, golds


def teacher_links(models, lo: int, hi: int) -> list[list[tuple[int, int]]]:
    """The teacher's own links (hmm-agree+fertility: agreement posterior links united with the
    fertility model's frequent links), from the models the aligner trained."""
    agree, fert = models
    return union_links(agree, fert, lo, hi)


def grown(m, high: float, low: float, rule: str) -> list[tuple[int, int]]:
    """The cells of ``m`` [T, S] above ``high``, grown by ``rule`` with those above ``low``."""
    return sorted(symmetrize(threshold_links(m, low), threshold_links(m, high), rule))


def trained(pair: str, config: str) -> tuple | None:
    """The model directory that ``bench/quality.py --config config`` trained on ``pair``, the pair's
    protocol corpus, and its gold spans (:func:`gold_spans`); None (and a message) where it is absent."""
    info = build(pair)
    model = info["dir"] / config
    if not (model / "forward.pt").exists():
        print(f"SKIPPED {pair}: no model in {model}; train it with: python bench/quality.py --pair {pair} "
              f"--config {config}", file=sys.stderr)
        return None
    pairs = read_corpus(info["dir"] / "corpus.src", info["dir"] / "corpus.tgt")
    return model, pairs, *gold_spans(info, pairs)


def with_teacher(pair: str, config: str = CONFIG) -> tuple | None:
    """:func:`trained`'s model, corpus, test span and test gold, and the model's Aligner with its teacher
    fit on the whole corpus as ``align corpus --teacher on`` fits it; None where the model is absent."""
    found = trained(pair, config)
    if found is None:
        return None
    model, pairs, spans, golds = found
    combined = combine_fitted(Aligner(model, AlignOptions(teacher="on", device="cpu")), pairs)
    return model, pairs, spans["test"], golds["test"], combined


def run(pair: str, config: str = CONFIG, grow: bool = False, product: bool = False) -> list[dict] | None:
    found = trained(pair, config)
    if found is None:
        return None
    model, pairs, spans, golds = found
    t0 = time.perf_counter()
    combined = combine_fitted(Aligner(model, AlignOptions(teacher="on", device="cpu")), pairs)
    t_teacher = time.perf_counter() - t0
    t0 = time.perf_counter()
    default = list(combined.align(pairs))  # what align corpus writes with --teacher on
    t_align = time.perf_counter() - t0
    teacher = combined.teacher
    student = Aligner(model, AlignOptions(teacher="off", device="cpu"))
    rows = []

    def add(system: str, links_of, w=None, t=None, **extra) -> None:
        row = {"pair": pair, "system": system, "w": w, "threshold": t, **extra}
        for name, span in spans.items():
            c = aer([links_of(name)[k] for k in range(len(span))], golds[name])
            row.update({f"{name}_aer": c.aer, f"{name}_precision": c.precision, f"{name}_recall": c.recall})
        rows.append(row)

    mats, plain, own = {}, {}, {}
    for name, span in spans.items():
        ps = student.align_pairs([pairs[k] for k in span])
        plain[name] = [p.links for p in ps]
        mats[name] = ([(p.forward + p.reverse) / 2 for p in ps], teacher.matrices(span.start, span.stop))
        own[name] = teacher_links(teacher.teacher.models, span.start, span.stop)
    add("teacher (hmm-agree+fertility links)", own.get)
    add("student (--teacher off)", plain.get)
    add("align corpus default (--teacher on)", lambda name: [default[k].links for k in spans[name]],
        combined.decoding.teacher_weight, combined.decoding.threshold)
    blends = {w: {name: [(1 - w) * s + w * m for s, m in zip(*mats[name], strict=True)] for name in spans}
              for w in WEIGHTS}
    for w, t in itertools.product(WEIGHTS, THRESHOLDS):
        add("grid", {name: [threshold_links(m, t) for m in blends[w][name]] for name in spans}.get, w, t)
    for w in WEIGHTS if product else []:
        geo = {name: [s ** (1 - w) * m ** w for s, m in zip(*mats[name], strict=True)] for name in spans}
        for t in [0.1, 0.15, *THRESHOLDS]:  # a geometric mean is at most the arithmetic one
            links = {name: [threshold_links(m, t) for m in geo[name]] for name in spans}
            add("grid-product", links.get, w, t)
    for w, t, low, rule in itertools.product(WEIGHTS if grow else [], THRESHOLDS, LOWS, GROW_RULES):
        if low < t:
            links = {name: [grown(m, t, low, rule) for m in blends[w][name]] for name in spans}
            add("grid-grow", links.get, w, t, low=low, rule=rule)
    print(f"\n{pair}: {len(pairs)} pairs; teacher trained in {t_teacher:.0f} s, the corpus aligned with it "
          f"in {t_align:.0f} s")
    return rows


def point(r: dict) -> tuple:
    return r["w"], r["threshold"], r.get("low"), r.get("rule")


def select(rows: list[dict], system: str) -> tuple | None:
    """The grid point of ``system`` with the lowest trial AER: ties to the smaller teacher weight, then
    to the least growth (the higher ``low``, grow-diag before its final step)."""
    grid = [r for r in rows if r["system"] == system]
    if not grid:
        return None
    best = min(grid, key=lambda r: (round(r["trial_aer"], 6), r["w"], -(r.get("low") or 0),
                                    r.get("rule") == "grow-diag-final-and"))
    return point(best)


def show(rows: list[dict], chosen: dict[str, tuple]) -> None:
    trial = "trial_aer" in rows[0]
    print(f"{'system':36s} {'w':>5s} {'thr':>5s} {'low':>5s} {'rule':>20s} {'trial AER':>10s} "
          f"{'test AER':>9s} {'P':>6s} {'R':>6s}")
    for r in rows:
        here = point(r) == chosen.get(r["system"])
        if r["system"] in ("grid-grow", "grid-product") and not here:
            continue
        if r["system"] == "grid" and not here and r["w"] not in (0.0, 1.0):
            continue
        w = "-" if r["w"] is None else f"{r['w']:.2f}"
        t = "-" if r["threshold"] is None else f"{r['threshold']:.2f}"
        low = "-" if r.get("low") is None else f"{r['low']:.2f}"
        ta = f"{100 * r['trial_aer']:10.2f}" if trial else f"{'-':>10s}"
        note = "<- chosen on the En-Fr trial" if here else ""
        rule = r.get("rule") or "-"
        print(f"{r['system']:36s} {w:>5s} {t:>5s} {low:>5s} {rule:>20s} {ta} {100 * r['test_aer']:9.2f} "
              f"{100 * r['test_precision']:6.2f} {100 * r['test_recall']:6.2f} {note}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pair", default="all", help="enfr, roen, esen or all")
    ap.add_argument("--config", default=CONFIG, help="the bench/quality.py configuration whose model to read")
    ap.add_argument("--grow", action="store_true", help="also the grid of grown thresholded links")
    ap.add_argument("--product", action="store_true", help="also the grid of weighted geometric means")
    ap.add_argument("--results", help="name the files combine_<pair>_NAME.csv (default: the config)")
    common.add_data_option(ap)
    args = ap.parse_args()
    common.use_data(args.data)
    t = TEACHER_DECODING_FIXED
    # pairs without trial gold: the fixed point
    chosen = {"grid": (t.teacher_weight, t.threshold, None, None)}
    RESULTS.mkdir(parents=True, exist_ok=True)
    for pair in ["enfr", "roen", "esen"] if args.pair == "all" else [args.pair]:
        rows = run(pair, args.config, args.grow, args.product)
        if rows is None:
            continue
        if "trial_aer" in rows[0]:
            chosen = {system: select(rows, system) for system in ("grid", "grid-grow", "grid-product")}
            print(f"chosen on the trial set: {chosen}; align corpus --decoder threshold's point: "
                  f"w {t.teacher_weight} threshold {t.threshold}")
        show(rows, chosen)
        fields = list(dict.fromkeys(k for r in rows for k in r))
        with open(RESULTS / f"combine_{pair}_{args.results or args.config}.csv", "w", newline="") as f:
            wr = csv.DictWriter(f, fieldnames=fields, restval="")
            wr.writeheader()
            wr.writerows(rows)


if __name__ == "__main__":
    main()
