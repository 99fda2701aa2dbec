#!/usr/bin/env python3
"""Which attention aligns best, unguided: the RNN's own attention, no guide and no teacher, for each
score with global attention, for ``general`` with Luong's local-m and local-p attention (D 5 and 10),
and for Bahdanau's decoder with the additive score.

Each system trains both directions on the protocol corpus of bench/quality.py (En-Fr: the 447 test and
37 trial sentences first, then the 10k training pairs; lower-cased), reads its decoder's attention and
decodes it with grow-diag-final-and and with soft symmetrization (argmax); the trial set picks one of
the two per system and marks the best system. Test AER with its 95% interval (1,000 bootstrap
resamples of the test sentences), and the training time per update.

    python bench/attention_family.py --pair enfr [--epochs 3] [--only cosine,local-p-5]
    python bench/attention_family.py --pair enfr --paired    # then: each system against general

``--paired`` reads the systems trained before, writes each one's test links (the symmetrization the trial
set chose) to bench/work/<pair>/attention-links/NAME.align, and prints each system against ``general``
(the default score) by the paired bootstrap, as ``attnalign score GOLD general.align NAME.align --paired``.

A benchmark, not a test: it prints numbers and asserts nothing. Work files go to bench/work/.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
from quality import WORK, build  # noqa: E402

from attnalign.data.alignments import Alignment, read_alignments  # noqa: E402
from attnalign.data.corpus import read_corpus  # noqa: E402
from attnalign.eval.metrics import Counts, alignment_counts  # noqa: E402
from attnalign.eval.significance import Bootstrap, intervals  # noqa: E402
from attnalign.nmt.aligner import Aligner, AlignOptions  # noqa: E402
from attnalign.training import DevSet, TrainOptions, train  # noqa: E402

SYSTEMS = {
    **{score: {"attention": score} for score in ("additive", "dot", "general", "scaled-dot", "cosine")},
    **{f"{span}-{d}": {"attention": "general", "attention_span": span, "window": d}
       for span in ("local-m", "local-p") for d in (5, 10)},
    "bahdanau-additive": {"attention": "additive", "decoder_style": "bahdanau"},
}
SYMS = ("grow-diag-final-and", "soft")


def sentence_counts(aligner, pairs, gold) -> list[Counts]:
    """Each sentence's counts of ``aligner``'s links for ``pairs`` against ``gold``."""
    return [alignment_counts(Alignment.from_links(p.links), g)
            for p, g in zip(aligner.align_pairs(list(pairs)), gold, strict=True)]


def run(pair: str, name: str, epochs: float, threads: int) -> list[dict]:
    info = build(pair)
    pairs = read_corpus(info["dir"] / "corpus.src", info["dir"] / "corpus.tgt")
    test = pairs[:info["n_test"]]
    gold, _ = read_alignments(info["gold"], one_based=info["gold_one_based"],
                              src_lengths=[len(s) for s, _ in test], tgt_lengths=[len(t) for _, t in test])
    dev = None
    if info["dev_gold"] is not None:
        start, n = info["dev"]
        trial = pairs[start:start + n]
        dev = DevSet(trial, read_alignments(info["dev_gold"], src_lengths=[len(s) for s, _ in trial],
                                            tgt_lengths=[len(t) for _, t in trial])[0])
    model_dir = WORK / pair / f"attention-{name}-e{epochs:g}"
    opts = TrainOptions.of(direction="both", epochs=epochs, batch_tokens=2000, lr=2e-3, threads=threads,
                           device="cpu", **SYSTEMS[name])
    t0 = time.perf_counter()
    summary = train(pairs, model_dir, opts, dev=dev, overwrite=True)
    wall = time.perf_counter() - t0
    steps = sum(d["steps"] for d in summary["directions"].values())
    train_s = sum(d["train_s"] for d in summary["directions"].values())
    rows = []
    for sym in SYMS:
        aligner = Aligner(model_dir, AlignOptions(sym=sym, decoder="argmax", device="cpu"))
        per = sentence_counts(aligner, test, gold)
        total = sum(per, Counts())
        iv = intervals(per, Bootstrap().resamples(len(per)))["aer"]
        trial_aer = None if dev is None else sum(sentence_counts(aligner, dev.pairs, dev.gold), Counts()).aer
        rows.append({"pair": pair, "system": name, "epochs": epochs, "sym": sym, "aer": total.aer,
                     "aer_low": iv.low, "aer_high": iv.high, "precision": total.precision,
                     "recall": total.recall, "trial_aer": trial_aer, "wall_s": round(wall),
                     "ms_per_update": round(1000 * train_s / max(1, steps), 1), "updates": steps})
        print(f"{pair} {name:18} {sym:20} AER {100 * total.aer:5.2f} "
              f"[{100 * iv.low:.2f}, {100 * iv.high:.2f}]"
              f"  trial {'-' if trial_aer is None else f'{100 * trial_aer:.2f}'}"
              f"  {rows[-1]['ms_per_update']} ms/update", flush=True)
    return rows


def _key(row: dict) -> float:
    return row["trial_aer"] if row["trial_aer"] is not None else row["aer"]


def choose(rows: list[dict]) -> dict[str, dict]:
    """Per system, its row of the symmetrization the trial set prefers (without one: the test's)."""
    chosen: dict[str, dict] = {}
    for r in rows:
        if r["system"] not in chosen or _key(r) < _key(chosen[r["system"]]):
            chosen[r["system"]] = r
    return chosen


def paired(pair: str, epochs: float) -> None:
    """Each trained system against ``general`` on the same resamples of the test sentences."""
    import csv

    from attnalign.data.alignments import write_pharaoh
    from attnalign.eval.significance import paired_test

    info = build(pair)
    pairs = read_corpus(info["dir"] / "corpus.src", info["dir"] / "corpus.tgt")
    test = pairs[:info["n_test"]]
    gold, _ = read_alignments(info["gold"], one_based=info["gold_one_based"],
                              src_lengths=[len(s) for s, _ in test], tgt_lengths=[len(t) for _, t in test])
    results = common.ROOT / "bench" / "results" / f"attention_family_{pair}_e{epochs:g}.csv"
    with open(results, encoding="utf-8") as f:
        rows = [{**r, "aer": float(r["aer"]), "trial_aer": float(r["trial_aer"]) if r["trial_aer"] else None}
                for r in csv.DictReader(f)]
    chosen = choose(rows)
    out = WORK / pair / "attention-links"
    out.mkdir(exist_ok=True)
    per = {}
    for name, r in chosen.items():
        aligner = Aligner(WORK / pair / f"attention-{name}-e{epochs:g}",
                          AlignOptions(sym=r["sym"], decoder="argmax", device="cpu"))
        hyps = [Alignment.from_links(p.links) for p in aligner.align_pairs(test)]
        with open(out / f"{name}.align", "w", encoding="utf-8") as f:
            write_pharaoh(hyps, f)
        per[name] = [alignment_counts(h, g) for h, g in zip(hyps, gold, strict=True)]  # the links written
    weights = Bootstrap().resamples(len(test))
    for name in sorted(per, key=lambda n: sum(per[n], Counts()).aer):
        t = paired_test(per["general"], per[name], weights)
        print(f"{name:20} {chosen[name]['sym']:20} vs general: {100 * t.delta:+6.2f} "
              f"[{100 * t.interval.low:+.2f}, {100 * t.interval.high:+.2f}]  p {t.p_value:.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pair", default="enfr", choices=("enfr", "roen", "esen"))
    ap.add_argument("--epochs", type=float, default=3.0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--only", help="comma-separated systems (default: all)")
    ap.add_argument("--paired", action="store_true", help="compare the trained systems with general")
    common.add_data_option(ap)
    args = ap.parse_args()
    common.use_data(args.data)
    if args.paired:
        paired(args.pair, args.epochs)
        return
    names = args.only.split(",") if args.only else list(SYSTEMS)
    rows = []
    for name in names:
        rows += run(args.pair, name, args.epochs, args.threads)
        common.write_rows(f"attention_family_{args.pair}_e{args.epochs:g}", rows)  # each finished system
    chosen = choose(rows)
    best = min(chosen.values(), key=_key)["system"]
    print(f"\n{'system':20} {'sym':20} {'test AER [95%]':>22} {'trial':>7} {'ms/update':>10}")
    for r in sorted(chosen.values(), key=lambda x: x["aer"]):
        mark = " *" if r["system"] == best else ""
        trial = "-" if r["trial_aer"] is None else f"{100 * r['trial_aer']:.2f}"
        print(f"{r['system']:20} {r['sym']:20} {100 * r['aer']:6.2f} [{100 * r['aer_low']:5.2f}, "
              f"{100 * r['aer_high']:5.2f}] {trial:>7} {r['ms_per_update']:>10}{mark}")


if __name__ == "__main__":
    main()
