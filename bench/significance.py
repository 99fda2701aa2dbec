#!/usr/bin/env python3
"""The main results table with 95% intervals and paired tests: is attnalign's default output really
better than eflomal and than its own teacher?

For each pair, reads the model that ``python bench/quality.py --pair PAIR --config
agree-fert-head-sp-e5-b2k-d0`` trained (= ``train --preset align``), and on the pair's test sentences
scores, against the test gold:

* ``align corpus``'s default output (the student blended with its teacher, the teacher trained on the
  whole corpus as the command trains it);
* the student alone (``--teacher off``);
* the teacher's own links (hmm-agree+fertility);
* eflomal 2.0.0 with its defaults on the same corpus, each hard symmetrization of its two directions
  (the best one per pair is shown, as the README's table does: looked at on the test).

Every score gets its 95% interval from 1,000 bootstrap resamples of the test sentences, and every
system a paired bootstrap test (Koehn 2004) against the default output on the same resamples: the
library behind ``attnalign score --confidence --paired``. The links are written to
``bench/work/<pair>/systems/<system>.align`` (one line per test sentence), so that

    attnalign score GOLD bench/work/<pair>/systems/default.align bench/work/<pair>/systems/*.align --paired

gives the same numbers (the Ro-En gold is 1-based: ``--gold-one-based``).

    python bench/quality.py --pair all --config agree-fert-head-sp-e5-b2k-d0    # trains the models
    python bench/significance.py --pair all

Writes bench/results/significance_<pair>.csv. A benchmark: it prints numbers and asserts nothing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
from combine import CONFIG, teacher_links, with_teacher  # noqa: E402
from quality import EFLOMAL, HARD_SYMS  # noqa: E402

from attnalign.data.alignments import Alignment, write_pharaoh  # noqa: E402
from attnalign.decoding.symmetrize import symmetrize  # noqa: E402
from attnalign.eval.metrics import Counts, alignment_counts  # noqa: E402
from attnalign.eval.scoring import ScoreReport, SystemScore  # noqa: E402
from attnalign.eval.significance import Bootstrap  # noqa: E402
from attnalign.nmt.aligner import Aligner, AlignOptions  # noqa: E402


def eflomal_links(work: Path) -> dict[str, list]:
    """eflomal's links of the whole corpus, per hard symmetrization (run once, kept in work/eflomal)."""
    out = work / "eflomal"
    if not (out / "reverse.align").exists():
        try:
            import eflomal
        except ImportError:
            print("eflomal not installed (pip install eflomal): its rows are left out", file=sys.stderr)
            return {}
        out.mkdir(exist_ok=True)
        with open(work / "corpus.src", encoding="utf-8") as src, \
                open(work / "corpus.tgt", encoding="utf-8") as tgt:
            eflomal.Aligner(model=EFLOMAL["eflomal"]).align(
                src, tgt, links_filename_fwd=str(out / "forward.align"),
                links_filename_rev=str(out / "reverse.align"))

    def read(name):
        return [sorted(tuple(map(int, x.split("-"))) for x in line.split())
                for line in (out / name).read_text().splitlines()]

    fwd, rev = read("forward.align"), read("reverse.align")
    both = list(zip(fwd, rev, strict=True))
    return {sym: fwd if sym == "none" else [sorted(symmetrize(f, r, sym)) for f, r in both]
            for sym in HARD_SYMS}


def counts(links, gold) -> list[Counts]:
    return [alignment_counts(Alignment.from_links(x), g) for x, g in zip(links, gold, strict=True)]


def run(pair: str, config: str) -> list[dict] | None:
    found = with_teacher(pair, config)
    if found is None:
        return None
    model, pairs, test, gold, combined = found
    default = [p.links for p in combined.align(pairs)][: len(test)]  # as align corpus writes the corpus
    student = [p.links for p in Aligner(model, AlignOptions(teacher="off", device="cpu")).align_pairs(
        [pairs[k] for k in test])]
    systems = {"default": default, "student": student,
               "teacher": teacher_links(combined.teacher.teacher.models, test.start, test.stop)}
    efl = {sym: links[: len(test)] for sym, links in eflomal_links(model.parent).items()}
    if efl:  # its best symmetrization on the test, as the README's table shows it
        best = min(efl, key=lambda s: sum(counts(efl[s], gold), Counts()).aer)
        systems[f"eflomal-{best}"] = efl[best]
    out = model.parent / "systems"
    out.mkdir(exist_ok=True)
    scored = []
    for name, links in systems.items():
        with open(out / f"{name}.align", "w", encoding="utf-8") as f:
            write_pharaoh([Alignment.from_links(x) for x in links], f)
        per = counts(links, gold)
        scored.append(SystemScore(name, sum(per, Counts()), per))
    report = ScoreReport(None, scored).resample(Bootstrap(), paired=True)
    rows = []
    for s in report.systems:
        iv = s.intervals["aer"]
        row = {"pair": pair, "system": s.name, "aer": s.total.aer, "aer_low": iv.low, "aer_high": iv.high,
               "precision": s.total.precision, "recall": s.total.recall}
        t = s.paired  # the default output is the baseline: no test of its own
        row.update(delta_vs_default=t and t.delta, delta_low=t and t.interval.low,
                   delta_high=t and t.interval.high, p_value=t and t.p_value)
        rows.append(row)
        delta = "" if t is None else (f"  {100 * t.delta:+6.2f} [{100 * t.interval.low:+.2f}, "
                                      f"{100 * t.interval.high:+.2f}] p={t.p_value:.4f}")
        print(f"{pair} {s.name:22s} AER {100 * s.total.aer:6.2f} [{100 * iv.low:.2f}, {100 * iv.high:.2f}]"
              + delta)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pair", default="all", help="enfr, roen, esen or all")
    ap.add_argument("--config", default=CONFIG, help="the bench/quality.py configuration whose model to read")
    common.add_data_option(ap)
    args = ap.parse_args()
    common.use_data(args.data)
    for pair in ["enfr", "roen", "esen"] if args.pair == "all" else [args.pair]:
        rows = run(pair, args.config)
        if rows:
            common.write_rows(f"significance_{pair}", rows)


if __name__ == "__main__":
    main()
