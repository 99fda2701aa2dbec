"""``attnalign plot sentence``: one pair's attention heatmap with its links."""

from __future__ import annotations

from pathlib import Path

import typer

from ..data.fileio import check_distinct, check_writable, path_text
from ..errors import OptionError
from ..eval.plot import FigureStyle, save_figure, terminal_view
from ..nmt.options import DEVICE, ONE_PAIR_MAX_LENGTH, AlignOptions
from ..workflows.views import explorer_views, sentence_figure, sentence_panels
from .common import (
    DECODING,
    INPUT,
    OUTPUT,
    BlendDecoderOpt,
    BlendThresholdOpt,
    Command,
    CorpusOpt,
    DeviceOpt,
    EncodingOpt,
    GoldBaseOpt,
    GoldFormatOpt,
    Group,
    ModelLowercaseOpt,
    OptionalModelOpt,
    PredBaseOpt,
    PredFormatOpt,
    ReadoutOpt,
    ReverseGoldOpt,
    ReverseModelOpt,
    ReversePredOpt,
    ShiftOpt,
    SmoothgradOpt,
    SrcLangOpt,
    SymOpt,
    Teacher,
    TeacherCorpus,
    TeacherCorpusOpt,
    TeacherOpt,
    TeacherWeightOpt,
    TgtLangOpt,
    align_options,
    err,
    gold_options,
    handle_errors,
    option,
    out,
)

app = typer.Typer(help="Draw attention heatmaps with their alignments.", no_args_is_help=True,
                  cls=Group)
IMAGE_TYPES = (".png", ".svg", ".pdf")
ALIGN = AlignOptions()
FIGURE = "Figure"

ImageOpt = option(Path | None, "--output", "-o", panel=OUTPUT, help="Image file: .png, .svg or .pdf.")
PlotSrcOpt = option(str | None, "--src", panel=INPUT, help="Source sentence; with --index: the source file.")
PlotTgtOpt = option(str | None, "--tgt", panel=INPUT, help="Target sentence; with --index: the target file.")
IndexOpt = option(int | None, "--index", panel=INPUT,
                  help="0-based pair index into --corpus/--src/--tgt files.")
AttentionFileOpt = option(Path | None, "--attention", panel=INPUT,
                          help="Saved attention file (align corpus --save-attention).")
PlotGoldOpt = option(Path | None, "--gold", panel=INPUT, help="Gold alignment (with --index).")
PlotPredOpt = option(list[Path] | None, "--pred", panel=INPUT, help=(
    "An alignment file (any aligner's, in --pred-format): its links of pair "
    "--index, titled with the file, beside the model's panel over its attention or, with no model, on the "
    "pair's grid. Repeat for several files, side by side."))
GridLayerOpt = option(str | None, "--layer", panel=DECODING,
                      help="Transformer layer: index, mean or all (a grid).")
GridHeadOpt = option(str, "--head", panel=DECODING, help="Transformer head: index, mean or all (a grid).")
CompareOpt = option(bool, "--compare", panel=FIGURE, help="Decoders (or both directions) side by side.")
EosOpt = option(bool, "--eos", panel=FIGURE, help="Show the attention on the source EOS as a column.")
TitleOpt = option(str | None, "--title", panel=FIGURE, help="The figure's title ('' for none).",
                  show_default="the settings and, with --gold, the scores")
WidthOpt = option(float | None, "--width", panel=FIGURE,
                  help="Figure width in inches, e.g. 3.3 for a paper's column.",
                  show_default="from the sentence length")
FontSizeOpt = option(float | None, "--font-size", panel=FIGURE, help="Word labels in points.",
                     show_default="8, smaller where --width leaves small cells")
ThumbnailOpt = option(bool, "--thumbnail", panel=FIGURE, help=(
    "With -o x.png: a quick picture at a fixed size (the words, the cells, the marks and a colour bar, "
    "drawn without matplotlib's layout), as a report's large gallery draws them."))
TerminalOpt = option(bool, "--terminal", panel=OUTPUT, help="Draw the matrix in the terminal.")
HtmlOpt = option(Path | None, "--html", panel=OUTPUT, help=(
    "An attention explorer: one HTML page, opened from disk, in which to hover the words and cells and "
    "switch between every matrix of the pair (both directions, the symmetrized ones, a grid's layers and "
    "heads, the --pred files)."))


@app.command("sentence", cls=Command)
@handle_errors
def plot_sentence(
    model: OptionalModelOpt = None, reverse_model: ReverseModelOpt = None, src_lang: SrcLangOpt = None,
    tgt_lang: TgtLangOpt = None,
    src: PlotSrcOpt = None, tgt: PlotTgtOpt = None, corpus: CorpusOpt = None, index: IndexOpt = None,
    attention: AttentionFileOpt = None, pred: PlotPredOpt = None, lowercase: ModelLowercaseOpt = None,
    encoding: EncodingOpt = "utf-8", gold: PlotGoldOpt = None, gold_format: GoldFormatOpt = "auto",
    gold_one_based: GoldBaseOpt = None, reverse_gold: ReverseGoldOpt = False,
    pred_format: PredFormatOpt = "auto", pred_one_based: PredBaseOpt = None,
    reverse_pred: ReversePredOpt = False,
    decoder: BlendDecoderOpt = "auto", sym: SymOpt = "auto",
    threshold: BlendThresholdOpt = ALIGN.threshold,
    layer: GridLayerOpt = ALIGN.layer, head: GridHeadOpt = ALIGN.head, shift: ShiftOpt = ALIGN.shift,
    readout: ReadoutOpt = ALIGN.readout, smoothgrad: SmoothgradOpt = ALIGN.smoothgrad,
    teacher: TeacherOpt = Teacher.auto, teacher_weight: TeacherWeightOpt = ALIGN.teacher_weight,
    teacher_corpus: TeacherCorpusOpt = TeacherCorpus.auto,
    compare: CompareOpt = False, eos: EosOpt = False, title: TitleOpt = None, width: WidthOpt = None,
    font_size: FontSizeOpt = None, thumbnail: ThumbnailOpt = False,
    output: ImageOpt = None, terminal: TerminalOpt = False, html: HtmlOpt = None, device: DeviceOpt = DEVICE,
) -> None:
    """Draw one pair's attention heatmap with its links, or the links of alignment files (--pred).

    A model's links are the line align corpus writes for the pair (of the corpus with --index, or of the
    pair alone), the teacher included; --compare and --layer/--head all show the student's attention
    alone; a saved attention file's links are read with the decoding it records. The gold's links are
    drawn over them with --gold; several panels stand side by side.

    Example: attnalign plot sentence --model runs/sample --src "the red car ." --tgt "la voiture rouge ."
    -o pair.png

    Other aligners' output: attnalign plot sentence --pred eflomal.align --pred ours.align --src test.en
    --tgt test.fr --index 3 --gold test.gold -o pair3.png
    """
    style = FigureStyle(title, width, font_size).check()
    if output is None and not terminal and html is None:
        raise OptionError("give --output FILE (.png, .svg, .pdf), --html FILE or --terminal")
    if output is not None or html is not None:
        files = {"--src": src, "--tgt": tgt} if index is not None else {}
        models = {}
        if model is not None:  # the models' module imports torch
            from ..nmt.checkpoint import model_files

            models = {**model_files(model), **model_files(reverse_model, "--reverse-model")}
        check_distinct({"--output": output, "--html": html},
                       {**files, "--corpus": corpus, "--attention": attention, "--gold": gold, **models,
                        **{f"--pred {p}": p for p in pred or ()}})
        for path, what in ((output, "image file"), (html, "explorer page")):
            if path is not None:
                check_writable(path, what)
        if output is not None and output.suffix.lower() not in IMAGE_TYPES:
            raise OptionError(f"unknown image type {output.suffix!r}", hint="use .png, .svg or .pdf")
    if thumbnail and (output is None or output.suffix.lower() != ".png"):
        raise OptionError("--thumbnail draws a PNG picture",
                          hint="give -o FILE.png, or leave --thumbnail out")
    if thumbnail and (width is not None or font_size is not None):
        raise OptionError("--thumbnail is drawn at a fixed size: --width and --font-size do not apply to it",
                          hint="leave out --thumbnail for a figure of your own size")
    grid_layers, grid_heads = layer == "all", head == "all"
    reads = model is not None or attention is not None  # else only alignment files (--pred): no torch
    options = None
    if reads:
        options = align_options(decoder, sym, threshold, None if grid_layers else layer,
                                "mean" if grid_heads else head, shift, device=device,
                                resolve=attention is None, reverse_model=reverse_model, src_lang=src_lang,
                                tgt_lang=tgt_lang, max_length=ONE_PAIR_MAX_LENGTH, teacher=teacher,
                                teacher_corpus=teacher_corpus, teacher_weight=teacher_weight,
                                readout=readout, smoothgrad=smoothgrad)
    request = dict(
        model=model, src=src, tgt=tgt, corpus=corpus, index=index, attention=attention,
        gold=gold, gold_options=gold_options(gold_format, gold_one_based, reverse_gold, encoding),
        all_layers=grid_layers, all_heads=grid_heads, show_eos=eos, lowercase=lowercase, encoding=encoding,
        preds=pred or (), pred_options=gold_options(pred_format, pred_one_based, reverse_pred, encoding),
        outputs={"--output": output, "--html": html})
    panels = sentence_panels(options, compare=compare, **request)
    if html is not None:
        from ..eval.explorer import ExplorerSentence, write_explorer

        views = explorer_views(options, panels, {**request, "compare": compare})
        write_explorer(html, [ExplorerSentence(index or 0, views)], " ".join(views[0].src))
        err().print(f"explorer written to {path_text(html)}")
    if terminal:
        console = out()
        for p in panels:  # colours are lost in a file or a pipe: print the weights as digits there
            console.print(terminal_view(p, plain=not console.is_terminal))
    if output is not None:
        if thumbnail:
            from ..eval.thumbnail import save_thumbnail

            save_thumbnail(panels, output, style.title)
        else:
            save_figure(sentence_figure(panels, grid_layers or grid_heads, style), output,
                        exact=style.width is not None)
        err().print(f"figure written to {path_text(output)}")
