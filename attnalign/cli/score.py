"""``attnalign score``: predicted alignments against a gold. Torch-free."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from ..data.fileio import atomic_open, check_distinct, check_writable, path_text
from ..eval.scoring import score_files
from ..eval.significance import LEVEL, SAMPLES, SEED, Bootstrap
from .common import (
    OUTPUT,
    CorpusOpt,
    EncodingOpt,
    GoldBaseOpt,
    GoldFormatOpt,
    PredBaseOpt,
    PredFormatOpt,
    ReverseGoldOpt,
    ReversePredOpt,
    SrcOpt,
    TgtOpt,
    err,
    gold_options,
    handle_errors,
    option,
    out,
)
from .render import breakdown_table, score_table

JsonOpt = option(bool, "--json", panel=OUTPUT, help="Print one JSON object per prediction file.")
PerSentenceOpt = option(Path | None, "--per-sentence", panel=OUTPUT,
                        help="Write per-sentence scores to this CSV.")
SIGNIFICANCE = "Significance"
ConfidenceOpt = option(bool, "--confidence", panel=SIGNIFICANCE, help=(
    f"Each score with its {round(100 * LEVEL)}% interval from bootstrap resampling of the gold's sentences "
    "(the percentile interval; every resample rescored from its summed counts)."))
PairedOpt = option(bool, "--paired", panel=SIGNIFICANCE, help=(
    f"Every system against the first (the baseline): the difference in AER, its {round(100 * LEVEL)}% "
    "interval and a two-sided p-value from the paired bootstrap (Koehn 2004) on the same resamples, the "
    "differences shifted to mean zero for the null."))
SamplesOpt = option(int, "--samples", panel=SIGNIFICANCE,
                    help="Bootstrap resamples for --confidence and --paired.")
SeedOpt = option(int, "--seed", panel=SIGNIFICANCE,
                 help="The resamples' seed (fixed: the same intervals on every run).")
BreakdownOpt = option(bool, "--breakdown", panel=SIGNIFICANCE, help=(
    "Each system's scores by the source word's frequency in the text, the gold link's type (1-1, 1-many, "
    "many-1, many-many; extra links on gold-unaligned words) and the distance from the diagonal; needs "
    "--src/--tgt or --corpus."))


@handle_errors
def score(
    gold: Annotated[Path, typer.Argument(help="Gold alignment file (pharaoh/talp or naacl).",
                                         metavar="GOLD")],
    pred: Annotated[
        list[Path], typer.Argument(help="Predicted alignments (Pharaoh, 0-based); several allowed.",
                                   metavar="PRED")],
    gold_format: GoldFormatOpt = "auto",
    gold_one_based: GoldBaseOpt = None,
    reverse_gold: ReverseGoldOpt = False,
    pred_format: PredFormatOpt = "auto",
    pred_one_based: PredBaseOpt = None,
    reverse_pred: ReversePredOpt = False,
    src: SrcOpt = None,
    tgt: TgtOpt = None,
    corpus: CorpusOpt = None,
    encoding: EncodingOpt = "utf-8",
    as_json: JsonOpt = False,
    per_sentence: PerSentenceOpt = None,
    confidence: ConfidenceOpt = False, paired: PairedOpt = False, samples: SamplesOpt = SAMPLES,
    seed: SeedOpt = SEED, breakdown: BreakdownOpt = False,
) -> None:
    """Score predicted alignments against a gold alignment: AER, precision, recall, F1.

    Give the gold's text (--src/--tgt or --corpus) to range-check every link. A prediction with more
    lines than the gold has sentences is scored on its first lines (the standard protocol).

    Example: attnalign score sample_data/test.gold.naacl sample_data/test.diagonal.align

    Compare two systems: attnalign score GOLD baseline.align new.align --paired --confidence
    """
    bootstrap = Bootstrap(samples, seed).check()
    check_distinct({"--per-sentence": per_sentence},
                   {"GOLD": gold, **{f"PRED {p}": p for p in pred}, "--src": src, "--tgt": tgt,
                    "--corpus": corpus})
    if per_sentence is not None:
        check_writable(per_sentence, "per-sentence CSV")
    report = score_files(gold, pred, gold_options(gold_format, gold_one_based, reverse_gold, encoding),
                         src=src, tgt=tgt, corpus=corpus, pred_format=pred_format,
                         pred_one_based=pred_one_based, reverse_pred=reverse_pred,
                         bootstrap=bootstrap if confidence or paired else None,
                         paired=paired, bands=breakdown)
    if as_json:
        for s in report.systems:
            sys.stdout.write(json.dumps({**s.as_dict(), "signature": report.signature}) + "\n")
    else:
        console = out()
        console.print(score_table(report, intervals=confidence, width=console.width))
        for s in report.systems if breakdown else []:
            console.print(breakdown_table(s))
    if per_sentence is not None:
        with atomic_open(per_sentence) as f:
            report.per_sentence_frame().to_csv(f, index=False)
        if str(per_sentence) != "-":
            err().print(f"per-sentence scores written to {path_text(per_sentence)}")
