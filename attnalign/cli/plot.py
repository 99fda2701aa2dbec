"""``attnalign plot sentence``: one pair's attention heatmap with its links."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..errors import OptionError
from .common import (
    PRETRAINED,
    CorpusOpt,
    DeviceOpt,
    EncodingOpt,
    GoldGiven,
    Group,
    ModelLowercaseOpt,
    OptionalModelOpt,
    align_options,
    decoding_group,
    err,
    gold_group,
    handle_errors,
    out,
    takes,
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
PlotPredOpt = Annotated[list[Path] | None, typer.Option(
    "--pred", help="An alignment file (Pharaoh, 0-based, one line per pair of the corpus; any aligner's): "
    "its links of pair --index, titled with the file, beside the model's panel over its attention or, with "
    "no model, on the pair's grid. Repeat for several files, side by side.")]


def _style(title: str | None, width: float | None, font_size: float | None):
    from ..eval.plot import FigureStyle

    return FigureStyle(title, width, font_size).check()


STYLE = Group("style", (("title", TitleOpt, None), ("width", WidthOpt, None),
                        ("font_size", FontSizeOpt, None)), _style)


@app.command("sentence")
@handle_errors
@takes(decoding_group(GridLayerOpt, GridHeadOpt), gold_group(PlotGoldOpt), PRETRAINED, STYLE)
def plot_sentence(
    output: ImageOpt = None, model: OptionalModelOpt = None, src: PlotSrcOpt = None, tgt: PlotTgtOpt = None,
    corpus: CorpusOpt = None, index: IndexOpt = None, attention: AttentionFileOpt = None,
    gold: GoldGiven = None, decoding: dict = None, compare: CompareOpt = False, eos: EosOpt = False,
    terminal: TerminalOpt = False, lowercase: ModelLowercaseOpt = None, device: DeviceOpt = "auto",
    encoding: EncodingOpt = "utf-8", pretrained: dict = None, style=None, pred: PlotPredOpt = None,
) -> None:
    """Draw one pair's attention heatmap with its links (and the gold's, if given), or the links of
    alignment files (--pred) side by side.

    Example: attnalign plot sentence --model runs/sample --src "the red car ." --tgt "la voiture rouge ."
    -o pair.png

    Other aligners' output: attnalign plot sentence --pred eflomal.align --pred ours.align --src test.en
    --tgt test.fr --index 3 --gold test.gold -o pair3.png
    """
    from ..data.fileio import check_distinct, check_writable
    from ..eval.plot import save_figure, terminal_view
    from ..workflows.views import sentence_figure, sentence_panels

    if output is None and not terminal:
        raise OptionError("give --output FILE (.png, .svg, .pdf) or --terminal")
    if output is not None:
        files = {"--src": src, "--tgt": tgt} if index is not None else {}
        models = {}
        if model is not None:  # the models' module imports torch
            from ..nmt.checkpoint import model_files

            models = {**model_files(model), **model_files(pretrained["reverse_model"], "--reverse-model")}
        check_distinct({"--output": output}, {**files, "--corpus": corpus, "--attention": attention,
                                              "--gold": gold.path, **models,
                                              **{f"--pred {p}": p for p in pred or ()}})
        check_writable(output, "image file")
        if output.suffix.lower() not in IMAGE_TYPES:
            raise OptionError(f"unknown image type {output.suffix!r}", hint="use .png, .svg or .pdf")
    grid_layers, grid_heads = decoding["layer"] == "all", decoding["head"] == "all"
    if grid_layers:
        decoding["layer"] = None
    if grid_heads:
        decoding["head"] = "mean"
    reads = model is not None or attention is not None  # else only alignment files (--pred): no torch
    options = (align_options(**decoding, device=device, resolve=attention is None, **pretrained) if reads
               else None)
    panels = sentence_panels(
        options, model=model, src=src, tgt=tgt, corpus=corpus, index=index, attention=attention,
        gold=gold.path, gold_options=gold.options(encoding), compare=compare,
        all_layers=grid_layers, all_heads=grid_heads, show_eos=eos, lowercase=lowercase, encoding=encoding,
        preds=pred or ())
    if terminal:
        console = out()
        for p in panels:  # colours are lost in a file or a pipe: print the weights as digits there
            console.print(terminal_view(p, plain=not console.is_terminal))
    if output is not None:
        figure = sentence_figure(panels, grid_layers or grid_heads, style)
        save_figure(figure, output, exact=style.width is not None)
        err().print(f"figure written to {output}")
