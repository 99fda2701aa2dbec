"""``attnalign plot sentence``: one pair's attention heatmap with its links."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..errors import OptionError
from .common import (
    CorpusOpt,
    Decoder,
    DecoderOpt,
    DeviceOpt,
    EncodingOpt,
    GoldBaseOpt,
    GoldFormat,
    GoldFormatOpt,
    ModelLowercaseOpt,
    OptionalModelOpt,
    ReverseGoldOpt,
    ReverseModelOpt,
    ShiftOpt,
    SrcLangOpt,
    Sym,
    SymOpt,
    TgtLangOpt,
    ThresholdOpt,
    align_options,
    err,
    gold_options,
    handle_errors,
    out,
)

app = typer.Typer(help="Draw attention heatmaps with their alignments.", no_args_is_help=True)
IMAGE_TYPES = (".png", ".svg", ".pdf")

ImageOpt = Annotated[Path | None, typer.Option("--output", "-o", help="Image file: .png, .svg or .pdf.")]
PlotSrcOpt = Annotated[
    str | None, typer.Option("--src", help="Source sentence; with --index: the source file.")]
PlotTgtOpt = Annotated[
    str | None, typer.Option("--tgt", help="Target sentence; with --index: the target file.")]
IndexOpt = Annotated[
    int | None, typer.Option("--index", help="0-based pair index into --corpus/--src/--tgt files.")]
AttentionFileOpt = Annotated[
    Path | None, typer.Option("--attention", help="Saved attention file (align corpus --save-attention).")]
PlotGoldOpt = Annotated[Path | None, typer.Option("--gold", help="Gold alignment (with --index).")]
GridLayerOpt = Annotated[
    str | None, typer.Option("--layer", help="Transformer layer: index, mean or all (a grid).")]
GridHeadOpt = Annotated[str, typer.Option("--head", help="Transformer head: index, mean or all (a grid).")]
CompareOpt = Annotated[bool, typer.Option("--compare", help="Decoders (or both directions) side by side.")]
EosOpt = Annotated[bool, typer.Option("--eos", help="Show the attention on the source EOS as a column.")]
TitleOpt = Annotated[str | None, typer.Option("--title", help="The figure's title ('' for none) "
                                              "[default: the settings and, with --gold, the scores].")]
WidthOpt = Annotated[float | None, typer.Option("--width", help="Figure width in inches, e.g. 3.3 for a "
                                                "paper's column [default: from the sentence length].")]
FontSizeOpt = Annotated[float | None, typer.Option("--font-size", help="Word labels in points [default: 8, "
                                                   "smaller where --width leaves small cells].")]
TerminalOpt = Annotated[bool, typer.Option("--terminal", help="Draw the matrix in the terminal.")]


@app.command("sentence")
@handle_errors
def plot_sentence(
    output: ImageOpt = None, model: OptionalModelOpt = None, src: PlotSrcOpt = None, tgt: PlotTgtOpt = None,
    corpus: CorpusOpt = None, index: IndexOpt = None, attention: AttentionFileOpt = None,
    gold: PlotGoldOpt = None,
    gold_format: GoldFormatOpt = GoldFormat.auto, gold_one_based: GoldBaseOpt = None,
    reverse_gold: ReverseGoldOpt = False, decoder: DecoderOpt = Decoder.auto, sym: SymOpt = Sym.auto,
    threshold: ThresholdOpt = None, layer: GridLayerOpt = None, head: GridHeadOpt = "mean",
    shift: ShiftOpt = 0,
    compare: CompareOpt = False, eos: EosOpt = False, terminal: TerminalOpt = False,
    lowercase: ModelLowercaseOpt = None, device: DeviceOpt = "auto", encoding: EncodingOpt = "utf-8",
    reverse_model: ReverseModelOpt = None, src_lang: SrcLangOpt = None, tgt_lang: TgtLangOpt = None,
    title: TitleOpt = None, width: WidthOpt = None, font_size: FontSizeOpt = None,
) -> None:
    """Draw one pair's attention heatmap with its links (and the gold's, if given).

    Example: attnalign plot sentence --model runs/sample --src "the red car ." --tgt "la voiture rouge ."
    -o pair.png
    """
    from ..data.fileio import check_distinct, check_writable
    from ..eval.plot import FigureStyle, save_figure, terminal_view
    from ..workflows.views import sentence_figure, sentence_panels

    if output is None and not terminal:
        raise OptionError("give --output FILE (.png, .svg, .pdf) or --terminal")
    style = FigureStyle(title, width, font_size).check()
    if output is not None:
        files = {"--src": src, "--tgt": tgt} if index is not None else {}
        from ..nmt.checkpoint import model_files

        check_distinct({"--output": output}, {**files, "--corpus": corpus, "--attention": attention,
                                              "--gold": gold, **model_files(model),
                                              **model_files(reverse_model, "--reverse-model")})
        check_writable(output, "image file")
        if output.suffix.lower() not in IMAGE_TYPES:
            raise OptionError(f"unknown image type {output.suffix!r}", hint="use .png, .svg or .pdf")
    grid_layers, grid_heads = layer == "all", head == "all"
    options = align_options(decoder, sym, threshold, None if grid_layers else layer,
                            "mean" if grid_heads else head, shift, device=device, resolve=attention is None,
                            reverse_model=reverse_model, src_lang=src_lang, tgt_lang=tgt_lang)
    panels = sentence_panels(
        options, model=model, src=src, tgt=tgt, corpus=corpus, index=index, attention=attention, gold=gold,
        gold_options=gold_options(gold_format, gold_one_based, reverse_gold, encoding), compare=compare,
        all_layers=grid_layers, all_heads=grid_heads, show_eos=eos, lowercase=lowercase, encoding=encoding)
    if terminal:
        console = out()
        for p in panels:  # colours are lost in a file or a pipe: print the weights as digits there
            console.print(terminal_view(p, plain=not console.is_terminal))
    if output is not None:
        figure = sentence_figure(panels, grid_layers or grid_heads, style)
        save_figure(figure, output, exact=width is not None)
        err().print(f"figure written to {output}")
