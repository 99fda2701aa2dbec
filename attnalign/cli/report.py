"""``attnalign report``: an HTML report of a model (or a saved attention file) against a gold."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from ..data.fileio import path_text
from ..errors import OptionError
from ..nmt.options import DEVICE, AlignOptions, Reading
from ..report import GALLERY, ReportRequest, report_files
from .common import (
    INPUT,
    OUTPUT,
    CorpusOpt,
    DeviceOpt,
    EncodingOpt,
    GoldBaseOpt,
    GoldFormatOpt,
    ModelLowercaseOpt,
    OptionalModelOpt,
    PredBaseOpt,
    PredFormatOpt,
    ReadoutOpt,
    ReverseGoldOpt,
    ReverseModelOpt,
    ReversePredOpt,
    SmoothgradOpt,
    SrcLangOpt,
    SrcOpt,
    TgtLangOpt,
    TgtOpt,
    err,
    gold_options,
    handle_errors,
    option,
    out,
)


@handle_errors
def report(
    output: option(Path, "--output", "-o", panel=OUTPUT, help="Report directory (index.html + CSV + PNG)."),
    gold: option(Path, "--gold", panel=INPUT, help="Gold alignment of the corpus's first sentences."),
    model: OptionalModelOpt = None,
    reverse_model: ReverseModelOpt = None,
    src_lang: SrcLangOpt = None,
    tgt_lang: TgtLangOpt = None,
    src: SrcOpt = None,
    tgt: TgtOpt = None,
    corpus: CorpusOpt = None,
    lowercase: ModelLowercaseOpt = None,
    encoding: EncodingOpt = "utf-8",
    attention: option(Path | None, "--attention", panel=INPUT,
                      help="A saved attention file instead of a model.") = None,
    pred: option(list[Path] | None, "--pred", panel=INPUT, help=(
        "An alignment file of any aligner (in --pred-format) to compare: a "
        "row of the score table with its interval, its paired test against the first system, its breakdown "
        "and error tables, and the gallery of disagreements. Repeat for several; without --model the report "
        "compares the files alone (and needs no torch).")) = None,
    pred_name: option(list[str] | None, "--pred-name", panel=INPUT,
                      help="The name of each --pred file in the report, in order.",
                      show_default="the file name (with the folders that tell files apart)") = None,
    gold_format: GoldFormatOpt = "auto",
    gold_one_based: GoldBaseOpt = None,
    reverse_gold: ReverseGoldOpt = False,
    pred_format: PredFormatOpt = "auto",
    pred_one_based: PredBaseOpt = None,
    reverse_pred: ReversePredOpt = False,
    gallery: option(int, "--gallery", panel=OUTPUT, help="Worst and best sentences to draw.") = GALLERY,
    readout: ReadoutOpt = Reading.readout, smoothgrad: SmoothgradOpt = Reading.smoothgrad,
    device: DeviceOpt = DEVICE,
) -> None:
    """Write an HTML report of a model's alignments, or compare alignment files (--pred), against a gold.

    The report holds the scores of every configuration with intervals, plots, error tables, an error
    breakdown and galleries.

    Example: attnalign report --model runs/sample --src sample_data/test.en --tgt sample_data/test.fr
    --gold sample_data/test.gold.pharaoh -o report/

    Other aligners: attnalign report --pred eflomal.align --pred-name eflomal --pred ours.align
    --pred-name attnalign --src test.en --tgt test.fr --gold test.gold -o report/
    """
    if pred_name and not pred:
        raise OptionError("--pred-name names --pred files; give them", hint="--pred FILE --pred-name NAME")
    reading = None
    if model is not None or attention is not None:
        reading = AlignOptions(device=device, src_lang=src_lang, tgt_lang=tgt_lang,
                               reverse_model=None if reverse_model is None else str(reverse_model),
                               readout=readout, smoothgrad=smoothgrad).check()
    elif (readout, smoothgrad) != (Reading.readout, Reading.smoothgrad):
        raise OptionError("--readout and --smoothgrad read a model's matrices; --pred files are links",
                          hint="add --model, or leave them out")
    summary = report_files(ReportRequest(
        output, gold, gold_options(gold_format, gold_one_based, reverse_gold, encoding), model=model,
        attention=attention, src=src, tgt=tgt, corpus=corpus, lowercase=lowercase, options=reading,
        preds=tuple(pred or ()), pred_names=tuple(pred_name or ()),
        pred_options=gold_options(pred_format, pred_one_based, reverse_pred, encoding), gallery=gallery,
        command=shlex.join(["attnalign", *sys.argv[1:]])))
    out().print(
        f"best: {summary['best']}: AER {100 * summary['aer']:.2f}, P {100 * summary['precision']:.2f}, "
        f"R {100 * summary['recall']:.2f} ({summary['configurations']} "
        f"{'configurations' if model is not None or attention is not None else 'systems'})\n"
        f"{summary['signature']}",
        highlight=False,
    )
    err().print(f"report written to {path_text(summary['index'])}", highlight=False)
