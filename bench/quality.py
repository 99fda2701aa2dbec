#!/usr/bin/env python3
"""Alignment quality on the real gold sets in ../shared/data, beside the statistical aligners.

For each pair, builds the corpus as the standard protocol does (lower-cased; the gold test sentences
first, then the training pairs; the test side tokenized exactly as its gold; training sides tokenized
to match), trains the configuration under test in both directions, extracts and decodes the test
sentences with every symmetrization, scores them, and prints one table (also written as CSV and JSON
to bench/results/).

    python bench/quality.py --pair enfr --config default
    python bench/quality.py --pair all --config default

Only the trial/dev sets are used for selection (English-French: the 37 trial sentences choose the
checkpoint); the test gold is for reporting only. Work files (corpora, models) go to bench/work/.
A benchmark, not a test: it prints numbers and asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import unicodedata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
from common import ROOT, shared  # noqa: E402

from attnalign.data.alignments import Alignment, read_alignments  # noqa: E402
from attnalign.data.corpus import read_corpus, read_lines  # noqa: E402
from attnalign.decoding import SYMMETRIZATIONS  # noqa: E402
from attnalign.eval.metrics import Counts, corpus_counts  # noqa: E402
from attnalign.nmt.aligner import Aligner, AlignOptions  # noqa: E402
from attnalign.statistical import DEFAULT  # noqa: E402
from attnalign.training import DevSet, TrainOptions, preset_options, train  # noqa: E402

WORK = ROOT / "bench" / "work"
RESULTS = ROOT / "bench" / "results"

# Peers' test AER (%) printed beside each row for reference: eflomal's reruns, best symmetrization per
# pair (bench/results/quality_all_eflomal.csv, --config eflomal).
PEERS = {"enfr": {"eflomal": 8.7}, "roen": {"eflomal": 30.4}, "esen": {"eflomal": 27.5}}

# Configurations under test: training options (both directions always) and decoding variants. The
# configurations measured before the teacher saw word prefixes pin prefix 0 (whole words), those
# measured before the identical-word prior identical 0.
WORDS = {"guide_prefix": 0, "guide_identical": 0.0}  # the teacher of the earliest configurations


def _teacher(model: str, sym: str = "posterior", prefix: int = 0, identical: float = 0.0) -> dict:
    return {"guide_model": model, "guide_sym": sym, "guide_prefix": prefix, "guide_identical": identical}


def _agree_head(guide_model: str = "hmm-agree", prefix: int = 0, identical: float = 0.0,
                **more) -> TrainOptions:
    """Both directions, 8 epochs, an alignment head guided by the agreement HMMs' posterior links (or
    ``guide_model``'s) seeing ``prefix``-character words with ``identical`` counts for identical words;
    ``more``: other options (the student's subword size)."""
    return TrainOptions.of(direction="both", epochs=8, batch_tokens=1000, guide="auto", align_head=True,
                           **_teacher(guide_model, "posterior", prefix, identical), **more)


def _preset(**changes) -> TrainOptions:
    """``agree-fert-head-sp`` (the teacher and network of ``--preset align``, in 8 epochs of 1,000-token
    batches with dropout 0.2, the preset until it took the -e5-b2k-d0 variant below) with ``changes``."""
    return _agree_head(guide_model="hmm-agree+fertility", prefix=5, identical=1.0, subword=4000).updated(
        **changes)


B2K = {"epochs": 3, "batch_tokens": 2000, "lr": 2e-3}  # align-fast before its dropout 0
ALIGN, ALIGN_FAST = preset_options("align"), preset_options("align-fast")  # train --preset NAME
# --preset align before its CPU student moved to the frontier's point (docs/benchmarks.md, "The
# student's cost on 2 CPU cores: a frontier"): 256-wide GRUs with input feeding that also translate,
# guided by one sampler chain, with a decoder
BEFORE = {"hidden": 256, "emb_dim": 256, "translation": True, "input_feeding": True, "lr": 2e-3,
          "guide_samplers": 1, "head_only": False}
ALIGN_BEFORE, ALIGN_FAST_BEFORE = ALIGN.updated(**BEFORE), ALIGN_FAST.updated(**BEFORE)

CONFIGS = {
    # the ablation ladder (docs/benchmarks.md, "Configurations, one change at a time")
    "default": TrainOptions.of(direction="both", epochs=8, batch_tokens=1000, min_freq=1),
    "guided-8": TrainOptions.of(direction="both", epochs=8, batch_tokens=1000, guide="auto", **WORDS),
    "align-head-ibm2": TrainOptions.of(direction="both", epochs=8, batch_tokens=1000, guide="auto",
                                       align_head=True, **_teacher("ibm2", "posterior")),
    "align-head": TrainOptions.of(direction="both", epochs=8, batch_tokens=1000, guide="auto",
                                  align_head=True, **_teacher("hmm", "grow-diag-final-and")),
    "agree-head-words": _agree_head(),
    # the agreement HMMs seeing words cut to 5 characters; then with one extra count for identical words
    "agree-head-prefix": _agree_head(prefix=5, identical=0),
    "agree-head": _agree_head(prefix=5, identical=1.0),
    # the student reading 4,000 sentencepiece pieces per side (the teacher still sees words)
    "agree-head-sp": _agree_head(prefix=5, identical=1.0, subword=4000),
    # guided by the union of the agreement HMMs' links and the fertility HMMs' (statistical.COMBINED)
    "agree-fert-head-sp": _preset(),
    "align-head-transformer": TrainOptions.of(model_type="transformer", direction="both", epochs=8,
                                              batch_tokens=2000, guide="auto", align_head=True, **WORDS),
    # how --preset align was chosen: 3 passes; in 2,000-token batches at twice the rate; without dropout
    # (= --preset align-fast); in 5 passes (= --preset align)
    "agree-fert-head-sp-e3": _preset(epochs=3),
    "agree-fert-head-sp-e3-b2k": _preset(**B2K),
    "agree-fert-head-sp-e3-b2k-d0": ALIGN_FAST_BEFORE,
    "agree-fert-head-sp-e5-b2k-d0": ALIGN_BEFORE,
    # --preset align and align-fast as they are: on a CPU 96-wide GRUs without translation at --lr 8e-3,
    # guided by three sampler chains
    "align": ALIGN,
    "align-fast": ALIGN_FAST,
    # the same with the two directions one after the other (train --parallel-directions off)
    "agree-fert-head-sp-e3-seq": _preset(epochs=3, parallel_directions="off"),
    # --preset align --self-train 1; and --self-train-epochs 1.5 (the second round goes on from the first)
    "agree-fert-head-sp-e5-b2k-d0-st1": ALIGN_BEFORE.updated(self_train=1),
    "agree-fert-head-sp-e5-b2k-d0-st1e15": ALIGN_BEFORE.updated(self_train=1, self_train_epochs=1.5),
    # --preset align --guide-samplers 3: a teacher of 3 fertility chains, for the guide and align corpus
    "agree-fert-head-sp-e5-b2k-d0-s3": ALIGN_BEFORE.updated(guide_samplers=3),
    # --preset align with the attention family's unguided best (bench/attention_family.py): the cosine
    # score, or Luong's local-m attention of window 5
    "agree-fert-head-sp-e5-b2k-d0-cosine": ALIGN_BEFORE.updated(attention="cosine"),
    "agree-fert-head-sp-e5-b2k-d0-local-m-5": ALIGN_BEFORE.updated(attention_span="local-m", window=5),
    # --preset align --no-input-feeding: the decoder reads the whole target in one recurrent call
    "agree-fert-head-sp-e5-b2k-d0-nif": ALIGN_BEFORE.updated(input_feeding=False),
    "statistical": None,  # the built-in aligners alone (the guide's teachers), no NMT
    "hmm": None,
    "hmm-agree": None,
    "fertility": None,
    "hmm-agree-fert": None,
    "eflomal": None,  # the peer itself, when installed (pip install eflomal; builds with a C compiler)
}
EFLOMAL = {"eflomal": 3}  # eflomal's --model
# the statistical configurations: (model, prefix length (0 = whole words), extra counts for identical
# words); "hmm-agree-fert" is the default teacher (= attnalign align statistical)
STATISTICAL = {"statistical": ("ibm2", 0, 0), "hmm": ("hmm", 0, 0),
               "hmm-agree": ("hmm-agree", DEFAULT.prefix, DEFAULT.identical),
               "fertility": ("fertility", 0, 0),
               "hmm-agree-fert": (DEFAULT.model, DEFAULT.prefix, DEFAULT.identical)}
# Every symmetrization of the registry (none, the link methods, soft); the hard ones (no soft) also
# combine the statistical aligners' and eflomal's two directions.
SYMS = list(SYMMETRIZATIONS)
HARD_SYMS = [s for s in SYMS if s == "none" or SYMMETRIZATIONS[s].hard]
# Decodings tried on every model: (sym, decoder, threshold). One is selected per configuration on the
# English-French trial set and that one is reported for every pair (marked "selected").
DECODINGS = [(sym, "argmax", None) for sym in SYMS] + [("soft", "threshold", t) for t in (0.3, 0.4, 0.5)]

_PUNCT = re.compile(r"""([.,!?;:"()\[\]«»“”„%])""")


def fold(text: str) -> str:
    """Strip diacritics (the Romanian test set has none): ă â î ș ț -> a a i s t."""
    return "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")


def tok(text: str, english: bool = False) -> str:
    """Lower-case, split punctuation (and English 's) off words: the Romanian test set's style."""
    text = _PUNCT.sub(r" \1 ", text.lower())
    if english:
        text = re.sub(r"(\w)'s\b", r"\1 's", text)
    return " ".join(text.split())


def two(a: Path, b: Path) -> list[tuple[str, str]]:
    return list(zip(read_lines(a), read_lines(b), strict=True))


def build(pair: str) -> dict:
    """Write the protocol corpus for a pair; return paths and sizes."""
    out = WORK / pair
    out.mkdir(parents=True, exist_ok=True)
    if pair == "enfr":
        d = shared("enfr-hansards")
        test = [(s.lower(), t.lower()) for s, t in two(d / "test.en", d / "test.fr")]
        trial = [(s.lower(), t.lower()) for s, t in two(d / "trial.en", d / "trial.fr")]
        rest = two(d / "train10k.en", d / "train10k.fr")
        gold, dev_gold = d / "test.gold.naacl", d / "trial.gold.naacl"
        body = test + trial + rest
        dev = (len(test), len(trial))
    elif pair == "roen":
        d = shared("roen-wpt03")
        test = []
        for line in read_lines(d / "test.ro-en"):
            ro, en = line.split("|||")
            test.append((ro.lower(), en.lower()))
        rest = []
        for split in ("train", "dev"):
            rest += [(tok(fold(ro)), tok(en, english=True))
                     for ro, en in two(d / f"rosts.{split}.ro", d / f"rosts.{split}.en")]
        gold, dev_gold, body, dev = d / "test.gold.talp", None, test + rest, None
    elif pair == "esen":
        d = shared("esen-europarl")
        test = two(d / "dev.en", d / "dev.es")
        rest = two(d / "train.en", d / "train.es")
        gold, dev_gold, body, dev = d / "dev.gold.key", None, test + rest, None
    else:
        raise SystemExit(f"unknown pair {pair!r}")
    (out / "corpus.src").write_text("".join(" ".join(s.split()) + "\n" for s, _ in body), encoding="utf-8")
    (out / "corpus.tgt").write_text("".join(" ".join(t.split()) + "\n" for _, t in body), encoding="utf-8")
    return {"dir": out, "n_test": len(test), "n": len(body), "gold": gold, "dev_gold": dev_gold, "dev": dev,
            "gold_one_based": True if pair == "roen" else None}


def run(pair: str, config: str, retrain: bool, threads: int, protocol: str = "standard") -> list[dict]:
    import torch

    torch.set_num_threads(threads)
    info = build(pair)
    pairs = read_corpus(info["dir"] / "corpus.src", info["dir"] / "corpus.tgt")
    n_test = info["n_test"]
    test_pairs = pairs[:n_test]
    gold, _ = read_alignments(info["gold"], one_based=info["gold_one_based"],
                              src_lengths=[len(s) for s, _ in test_pairs],
                              tgt_lengths=[len(t) for _, t in test_pairs])
    dev = None
    if info["dev_gold"] is not None:
        start, n = info["dev"]
        dev_pairs = pairs[start:start + n]
        dev_gold, _ = read_alignments(info["dev_gold"], src_lengths=[len(s) for s, _ in dev_pairs],
                                      tgt_lengths=[len(t) for _, t in dev_pairs])
        dev = DevSet(dev_pairs, dev_gold)
    if config in EFLOMAL:
        return run_eflomal(pair, config, info["dir"], pairs, gold, dev, info["dev"])
    if CONFIGS[config] is None:
        return run_statistical(pair, config, pairs, gold, dev, info["dev"])
    model_dir = info["dir"] / (config if protocol == "standard" else f"{config}-{protocol}")
    opts = CONFIGS[config].updated(threads=threads, device="cpu")
    train_pairs = pairs
    if protocol == "inductive":  # the gold sentences (test and trial) left out of training
        held = set(range(n_test)) | (set(range(start, start + n)) if dev is not None else set())
        train_pairs = [x for k, x in enumerate(pairs) if k not in held]
    wall_s = None  # the whole train() call, teacher included, when this run trains
    if retrain or not (model_dir / "forward.pt").exists() or not (model_dir / "reverse.pt").exists():
        t0 = time.perf_counter()
        train(train_pairs, model_dir, opts, dev=dev, overwrite=True)
        wall_s = round(time.perf_counter() - t0)
        print(f"{pair} {config}: trained in {wall_s} s (wall, teacher included)", file=sys.stderr)
    train_s = training_seconds(model_dir)
    rows = []
    shifts = (0,) if opts.network.config.get("align_head") else (0, 1)  # the head has no Shift-Att
    for shift in shifts:
        for sym, decoder, threshold in DECODINGS:
            t1 = time.perf_counter()
            aligner = Aligner(model_dir, AlignOptions(sym=sym, decoder=decoder, threshold=threshold,
                                                      shift=shift, device="cpu"))
            hyps = [Alignment.from_links(p.links) for p in aligner.align_pairs(test_pairs)]
            c = sum(corpus_counts(hyps, gold), Counts())
            dev_aer = None
            if dev is not None:
                dh = [Alignment.from_links(p.links) for p in aligner.align_pairs(list(dev.pairs))]
                dev_aer = sum(corpus_counts(dh, dev.gold), Counts()).aer
            rows.append({"pair": pair, "config": config, "protocol": protocol, "shift": shift, "sym": sym,
                         "decoder": aligner.decoding.decoder,
                         "threshold": aligner.decoding.threshold if decoder == "threshold" else None,
                         "aer": c.aer,
                         "precision": c.precision, "recall": c.recall, "f1": c.f1, "dev_aer": dev_aer,
                         "train_s": round(train_s), "extract_s": round(time.perf_counter() - t1, 1),
                         "train_pairs": len(train_pairs), "wall_s": wall_s})
    if protocol == "inductive" and opts.guide == "auto":
        for extra, going_on in ((None, False), (train_pairs, False), (None, True)):
            rows.append(_teacher_on_new_pairs(pair, config, model_dir, test_pairs, gold, train_s,
                                              len(train_pairs), extra, going_on))
    return rows


def _teacher_on_new_pairs(pair, config, model_dir, test_pairs, gold, train_s, n, extra=None,
                          going_on: bool = False) -> dict:
    """``align corpus --teacher on`` over the new sentences: the teacher fit on them alone
    (``--teacher-corpus aligned``), on them and the model's training pairs ``extra`` (``--teacher-corpus
    training``), or on them going on from the counts the model's teacher kept (``going_on``:
    ``--teacher-corpus kept``, what ``auto`` does for a model trained with ``--guide auto``)."""
    from dataclasses import asdict

    from attnalign.combine import combine_fitted, teacher_options
    from attnalign.statistical import teacher_file

    t1 = time.perf_counter()
    aligner = Aligner(model_dir, AlignOptions(teacher="on", device="cpu"))
    kept = teacher_file.load_kept(model_dir, asdict(teacher_options(aligner.meta))) if going_on else None
    if going_on and kept is None:
        raise SystemExit(f"{model_dir} keeps no teacher counts: train it again (--retrain)")
    combined = combine_fitted(aligner, test_pairs, extra, kept)
    links = [Alignment.from_links(p.links) for p in combined.align(test_pairs)]
    c = sum(corpus_counts(links, gold), Counts())
    o = combined.decoding
    fit = ("the test pairs, going on from the kept teacher" if going_on else
           "the test pairs" if extra is None else "the test and training pairs")
    return {"pair": pair, "config": config, "protocol": "inductive", "shift": 0,
            "sym": f"{o.sym} + teacher {o.teacher_weight} (fit on {fit})", "decoder": o.decoder,
            "threshold": o.threshold, "aer": c.aer, "precision": c.precision, "recall": c.recall, "f1": c.f1,
            "dev_aer": None, "train_s": round(train_s), "extract_s": round(time.perf_counter() - t1, 1),
            "train_pairs": n}


def training_seconds(model_dir: Path, self_round: int | None = None) -> float:
    """Training time of both directions, from the model's log (also when the model was trained by an
    earlier run of this script): their sum, or the longer one where they were trained at the same
    time (``--parallel-directions``, on here for every run that recorded the option); ``self_round``:
    of that self-training round only."""
    import pandas as pd

    log = pd.read_csv(model_dir / "log.csv")
    if self_round is not None:
        log = log[log["round"].fillna(0) == self_round]
    per_direction = log.groupby("direction").elapsed_s.max()
    saved = json.loads((model_dir / "config.json").read_text())["train_options"]
    concurrent = saved.get("parallel_directions", "off") != "off"
    return float(per_direction.max() if concurrent else per_direction.sum())


def mark_selected(rows: list[dict], trial_rows: list[dict] | None = None) -> None:
    """Mark the decoding chosen on the English-French trial set: from these rows if they have trial
    AERs, else from ``trial_rows`` (En-Fr rows of the same run), else from
    bench/results/quality_enfr_<config>.json (a pair without a dev gold reuses it)."""
    if not rows:
        return
    source = rows if rows[0]["dev_aer"] is not None else trial_rows
    if source is None:
        saved = RESULTS / f"quality_enfr_{rows[0]['config']}.json"
        source = json.loads(saved.read_text()) if saved.exists() else []
    source = [r for r in source if r.get("dev_aer") is not None]
    if not source:
        return
    best = min(source, key=lambda r: r["dev_aer"])
    key = (best["shift"], best["sym"], best.get("decoder", "argmax"), best.get("threshold"))
    for r in rows:
        r["selected"] = (r["shift"], r["sym"], r.get("decoder", "argmax"), r.get("threshold")) == key


def _row(pair: str, config: str, sym: str, links, gold, dev, dev_span, train_s: float, n: int) -> dict:
    """One result row: the links of the whole corpus scored on the test (and trial) sentences."""
    c = sum(corpus_counts([Alignment.from_links(x) for x in links[: len(gold)]], gold), Counts())
    dev_aer = None
    if dev is not None:
        start, m = dev_span
        hyps = [Alignment.from_links(x) for x in links[start:start + m]]
        dev_aer = sum(corpus_counts(hyps, dev.gold), Counts()).aer
    return {"pair": pair, "config": config, "shift": 0, "sym": sym, "decoder": "argmax", "threshold": None,
            "aer": c.aer, "precision": c.precision, "recall": c.recall, "f1": c.f1, "dev_aer": dev_aer,
            "train_s": round(train_s), "extract_s": 0.0, "train_pairs": n}


def run_eflomal(pair: str, config: str, work: Path, pairs, gold, dev, dev_span) -> list[dict]:
    """The peer eflomal (Östling and Tiedemann 2016) with its default settings on the same corpus, each
    symmetrization of its two directions. It samples with a seed of its own: reruns differ a little."""
    try:
        import eflomal
    except ImportError:
        raise SystemExit("--config eflomal needs the eflomal package: pip install eflomal "
                         "(it builds a C extension)") from None
    from attnalign.decoding.symmetrize import symmetrize

    out = work / config
    out.mkdir(exist_ok=True)
    t = time.perf_counter()
    with open(work / "corpus.src", encoding="utf-8") as src, \
            open(work / "corpus.tgt", encoding="utf-8") as tgt:
        eflomal.Aligner(model=EFLOMAL[config]).align(src, tgt, links_filename_fwd=str(out / "forward.align"),
                                                     links_filename_rev=str(out / "reverse.align"))
    train_s = time.perf_counter() - t

    def read(name):
        return [sorted(tuple(map(int, x.split("-"))) for x in line.split())
                for line in (out / name).read_text().splitlines()]

    fwd, rev = read("forward.align"), read("reverse.align")  # both source first
    rows = []
    for sym in HARD_SYMS:
        links = fwd if sym == "none" else [sorted(symmetrize(f, r, sym))
                                           for f, r in zip(fwd, rev, strict=True)]
        rows.append(_row(pair, config, sym, links, gold, dev, dev_span, train_s, len(pairs)))
    return rows


def run_statistical(pair: str, config: str, pairs, gold, dev, dev_span) -> list[dict]:
    from attnalign.decoding.symmetrize import symmetrize
    from attnalign.statistical import (
        COMBINED,
        align_statistical,
        directional_posteriors,
        posterior_links,
        viterbi_links,
    )

    rows = []
    t = time.perf_counter()
    model, prefix, identical = STATISTICAL[config]
    if model == COMBINED:  # one way of combining the directions: its own
        combined = align_statistical(pairs, "posterior", model=model, prefix=prefix, identical=identical)
    else:
        f_post, r_post = directional_posteriors(pairs, model, prefix=prefix, identical=identical)
        fwd = [viterbi_links(p) for p in f_post]
        rev = [[(i, j) for j, i in viterbi_links(p)] for p in r_post]
    train_s = time.perf_counter() - t
    for sym in ["posterior"] if model == COMBINED else [*HARD_SYMS, "posterior"]:
        if model == COMBINED:
            links = combined
        elif sym == "posterior":
            links = [posterior_links(f, r) for f, r in zip(f_post, r_post, strict=True)]
        elif sym == "none":
            links = fwd
        else:
            links = [sorted(symmetrize(f, r, sym)) for f, r in zip(fwd, rev, strict=True)]
        rows.append(_row(pair, config, sym, links, gold, dev, dev_span, train_s, len(pairs)))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pair", default="all", help="enfr, roen, esen or all")
    ap.add_argument("--config", default="default", choices=sorted(CONFIGS))
    ap.add_argument("--retrain", action="store_true", help="train even if a model is in bench/work")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--protocol", default="standard", choices=("standard", "inductive"),
                    help="standard: train on the corpus that holds the test sentences and align them; "
                         "inductive: train without the gold sentences (test and trial), then align them "
                         "as new data (NMT configurations only)")
    ap.add_argument("--results", help="the results files' name in bench/results (a rerun kept beside the "
                                      "first) [default: quality_PAIR_CONFIG, + _PROTOCOL if not standard]")
    common.add_data_option(ap)
    args = ap.parse_args()
    common.use_data(args.data)
    if args.protocol == "inductive" and CONFIGS.get(args.config) is None:
        raise SystemExit("the inductive protocol applies to NMT configurations: the statistical aligners "
                         "and eflomal must see the sentences they align")
    pairs = ["enfr", "roen", "esen"] if args.pair == "all" else [args.pair]
    RESULTS.mkdir(parents=True, exist_ok=True)
    rows = []
    trial_rows = None
    for p in pairs:
        pair_rows = run(p, args.config, args.retrain, args.threads, args.protocol)
        mark_selected(pair_rows, trial_rows)
        if p == "enfr":
            trial_rows = pair_rows
        rows += pair_rows
    name = args.results or (f"quality_{args.pair}_{args.config}"
                            + ("" if args.protocol == "standard" else f"_{args.protocol}"))
    (RESULTS / f"{name}.json").write_text(json.dumps(rows, indent=1))
    import pandas as pd

    pd.DataFrame(rows).to_csv(RESULTS / f"{name}.csv", index=False)
    print(f"\n{'pair':<6}{'config':<16}{'shift':>6} {'decoding':<34}{'AER':>7}{'P':>7}{'R':>7}{'F1':>7}"
          f"{'dev AER':>9}{'train s':>9}{'extract s':>10}   peers (AER)")
    for r in rows:
        dev = "-" if r["dev_aer"] is None else f"{100 * r['dev_aer']:.1f}"
        peers = ", ".join(f"{k} {v}" for k, v in PEERS[r["pair"]].items())
        decoding = f"{r['sym']}, {r['decoder']}"
        decoding += f" {r['threshold']}" if r["decoder"] == "threshold" else ""
        decoding += " *" if r.get("selected") else ""
        print(f"{r['pair']:<6}{r['config']:<16}{r['shift']:>6} {decoding:<34}{100 * r['aer']:>7.1f}"
              f"{100 * r['precision']:>7.1f}{100 * r['recall']:>7.1f}{100 * r['f1']:>7.1f}{dev:>9}"
              f"{r['train_s']:>9.0f}{r['extract_s']:>10}   {peers}")
    print("* the decoding selected on the English-French trial set (and used for every pair)")


if __name__ == "__main__":
    main()
