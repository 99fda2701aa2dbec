#!/usr/bin/env python3
"""How far the teacher's sampler seed moves `align corpus`'s output: the same student blended with
teachers whose fertility HMMs were sampled with other seeds, and with their mean.

The teacher is built as ``align corpus --teacher on`` builds it (the agreement HMMs on 5-character
prefixes, the fertility HMMs on whole words, each pair's matrix the mean of their four directions),
once per ``--seeds`` value for the fertility HMMs (the agreement HMMs are EM: one fit serves every
seed); "mean" averages the fertility HMMs' matrices over the seeds before the mean with the agreement
HMMs'. Each is blended with the student as ``align corpus`` blends by default for a teacher of that
corpus size (``decoding.teacher_decoding``), and read alone (weight 1, threshold 0.45).

    python bench/teacher_seeds.py --pair enfr                      # bench/quality.py's 10k model
    python bench/teacher_seeds.py --model bench/work/scale/preset-corpus40000-eauto --size 40000

``--pair``: the model bench/quality.py trained (``--config``), scored on the test and, for En-Fr, the
trial sentences, both inside its corpus; ``--model`` and ``--size``: a model bench/scale.py trained,
scored on the 447 test sentences. Writes bench/results/teacher_seeds_<model>.{csv,json}
(``--results NAME``: NAME.{csv,json}). A benchmark: it prints numbers and asserts nothing.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
from combine import CONFIG, trained  # noqa: E402
from scale import N_TEST, WORK, links_aer  # noqa: E402

from attnalign.data.corpus import read_corpus  # noqa: E402
from attnalign.decoding import blend, teacher_decoding, threshold_links  # noqa: E402
from attnalign.nmt.aligner import Aligner, AlignOptions  # noqa: E402
from attnalign.statistical.align import both_directions, fit  # noqa: E402
from attnalign.statistical.ids import IdCorpus  # noqa: E402
from attnalign.statistical.options import DEFAULT, FERTILITY_PREFIX  # noqa: E402

ALONE = (1.0, 0.45)  # the teacher's matrices alone


def corpus_of(args) -> tuple:
    """The model directory, its corpus and {gold set: (span, scorer of one list of links per sentence)}."""
    if args.pair:
        from combine import aer

        found = trained(args.pair, args.config)
        if found is None:
            raise SystemExit(0)
        model, pairs, spans, golds = found
        return model, pairs, {n: (s, lambda links, n=n: 100 * aer(links, golds[n]).aer)
                              for n, s in spans.items()}
    model = Path(args.model)
    src, tgt = WORK / f"corpus{args.size}.en", WORK / f"corpus{args.size}.fr"
    if not (model / "config.json").exists() or not src.exists():
        raise SystemExit(f"no model {model} or corpus {src}: run python bench/scale.py --sizes {args.size} "
                         "--systems preset first")
    return model, read_corpus(src, tgt), {"test": (range(N_TEST), lambda links: links_aer(links, "test"))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pair", help="enfr, roen or esen: bench/quality.py's model of that pair")
    ap.add_argument("--config", default=CONFIG, help="with --pair: the bench/quality.py configuration")
    ap.add_argument("--model", help="a model directory bench/scale.py trained")
    ap.add_argument("--size", type=int, help="with --model: the raw pairs of its corpus")
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3], help="the fertility HMMs' seeds")
    ap.add_argument("--results", help="name of the results files in bench/results")
    common.add_data_option(ap)
    args = ap.parse_args()
    if not args.pair and not (args.model and args.size):
        ap.error("give --pair, or --model and --size")
    common.use_data(args.data)
    model, pairs, golds = corpus_of(args)
    words = IdCorpus.encode(pairs)
    t0 = time.perf_counter()
    agree = fit(words.cut(DEFAULT.prefix), "hmm-agree", 5, DEFAULT.prefix, DEFAULT.identical)
    ferts = {s: fit(words.cut(FERTILITY_PREFIX), "fertility", prefix=FERTILITY_PREFIX, seed=s)
             for s in args.seeds}
    print(f"{model.name}: {len(pairs)} pairs; the teachers trained in {time.perf_counter() - t0:.0f} s")
    student = Aligner(model, AlignOptions(teacher="off", device="cpu"))
    dflt = teacher_decoding(len(pairs))
    points = {"default": (dflt["weight"], dflt["threshold"]), "teacher alone": ALONE}
    rows = []
    for name, (span, score) in golds.items():
        lo, hi = span.start, span.stop
        stud = [(p.forward + p.reverse) / 2 for p in student.align_pairs(pairs[lo:hi])]
        a = both_directions(*agree.posteriors(lo, hi))
        f = {s: both_directions(*m.posteriors(lo, hi)) for s, m in ferts.items()}
        f["mean"] = [sum(ms) / len(ms) for ms in zip(*f.values(), strict=True)]
        for seed, fm in f.items():
            teacher = [(x + y) / 2 for x, y in zip(a, fm, strict=True)]
            for point, (w, t) in points.items():
                links = [threshold_links(blend(s, m, w), t) for s, m in zip(stud, teacher, strict=True)]
                rows.append({"model": model.name, "pairs": len(pairs), "gold": name, "seed": seed,
                             "point": point, "w": w, "threshold": t, "aer": round(score(links), 2)})
    print(f"{'gold':6s} {'point':14s} {'w':>4s} {'thr':>5s}  " + " ".join(f"{str(s):>6s}" for s in
                                                                       [*args.seeds, "mean"]))
    for name in golds:
        for point, (w, t) in points.items():
            got = [r["aer"] for r in rows if r["gold"] == name and r["point"] == point]
            print(f"{name:6s} {point:14s} {w:4.2f} {t:5.2f}  " + " ".join(f"{x:6.2f}" for x in got))
    common.write_rows(args.results or f"teacher_seeds_{model.name}", rows)


if __name__ == "__main__":
    main()
