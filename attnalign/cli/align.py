"""``attnalign align corpus | sentence | statistical``."""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

import typer
from rich.text import Text

from ..data.fileio import path_text
from ..decoding.policy import TUNE_FOLDS, TUNE_MIN_SENTENCES, TUNE_P
from ..dist import world
from ..errors import OptionError
from ..nmt.options import (
    BATCH_TOKENS,
    DEVICE,
    GRADIENT_BATCH_TOKENS,
    ONE_PAIR_MAX_LENGTH,
    THREADS_PER_CORE,
    AlignOptions,
)
from ..workflows.align_files import TuneGold, align_corpus_files, align_statistical_files, pair_json
from ..workflows.align_files import align_sentence as align_one
from .common import (
    INPUT,
    OUTPUT,
    RUNTIME,
    TEACHER,
    TEACHER_MODEL,
    TEACHER_PANEL,
    TEACHER_SYM,
    AlignerOpt,
    BlendDecoderOpt,
    BlendThresholdOpt,
    Command,
    CorpusOpt,
    DeviceOpt,
    EncodingOpt,
    GoldBaseOpt,
    GoldFormatOpt,
    GoldOpt,
    Group,
    HeadOpt,
    IdenticalOpt,
    LayerOpt,
    LowercaseOpt,
    ModelDirOpt,
    ModelLowercaseOpt,
    OutputOpt,
    PrefixOpt,
    QuietOpt,
    ReadoutOpt,
    ReverseGoldOpt,
    ReverseModelOpt,
    SamplersOpt,
    ShiftOpt,
    SmoothgradOpt,
    SrcLangOpt,
    SrcOpt,
    StatSeedOpt,
    StatSymOpt,
    SymOpt,
    Teacher,
    TeacherCorpus,
    TeacherCorpusOpt,
    TeacherOpt,
    TeacherWeightOpt,
    TgtLangOpt,
    TgtOpt,
    ThreadsOpt,
    align_options,
    err,
    gold_options,
    handle_errors,
    option,
    out,
)
from .render import align_summary_text, links_table, score_table

app = typer.Typer(help="Align a corpus or one sentence pair with a trained model.", no_args_is_help=True,
                  cls=Group)
ALIGN = AlignOptions()  # the library's defaults, which the options below show

ScoresOpt = option(bool, "--scores", panel=OUTPUT, help="Write links as i-j:weight.")
JsonLinesOpt = option(bool, "--json-lines", panel=OUTPUT, help="One JSON object per pair instead of Pharaoh.")
SaveAttentionOpt = option(Path | None, "--save-attention", panel=OUTPUT,
                          help="Save every soft matrix to this .npz file.")
BatchTokensOpt = option(int | None, "--batch-tokens", panel=RUNTIME, help="Padded tokens per batch.",
                        show_default=f"{BATCH_TOKENS}; {GRADIENT_BATCH_TOKENS} for --readout saliency on a "
                                     "CPU")
StatThreadsOpt = option(int | None, "--threads", panel=RUNTIME,
                        help=f"CPU cores for its compiled loops; at most {THREADS_PER_CORE} per core.",
                        show_default="every core")
SentenceSrcOpt = option(str, "--src", panel=INPUT, help="Source sentence (whitespace-tokenized).")
SentenceTgtOpt = option(str, "--tgt", panel=INPUT, help="Target sentence (whitespace-tokenized).")
SentenceJsonOpt = option(bool, "--json", panel=OUTPUT, help="Print one JSON object.")
MaxLengthOpt = option(int, "--max-length", panel=RUNTIME,
                      help="Longer pairs (model tokens) are skipped with a warning.")
TuneGoldOpt = option(Path | None, "--tune-gold", panel=TEACHER_PANEL, help=(
    "Choose the blend with the teacher on this gold (of the corpus's first lines, or of --tune-src/"
    f"--tune-tgt; at least {TUNE_MIN_SENTENCES} sentences, in --gold-format): every decoder, threshold and "
    "teacher weight is scored on it, and the best replaces the default where choosing beats the default "
    f"on sentences that did not choose ({TUNE_FOLDS} folds, each scored with the best of the others; the "
    f"paired bootstrap, p < {TUNE_P}); the choice is kept in the model directory (blend.json) for later "
    "runs."))
TuneSrcOpt = option(Path | None, "--tune-src", panel=TEACHER_PANEL, help="Source side of --tune-gold's text.")
TuneTgtOpt = option(Path | None, "--tune-tgt", panel=TEACHER_PANEL, help="Target side of --tune-gold's text.")


def _progress_bar(quiet: bool):
    """A rich progress bar on stderr and the callback that ``align_corpus_files`` calls."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("{task.fields[rate]} pairs/s"), TimeRemainingColumn(),
                   console=err(), disable=quiet)
    task = None
    start = time.perf_counter()

    def progress(done: int, total: int) -> None:
        nonlocal task, start
        if task is None:  # added at the first pair: the teacher's passes may come first
            task, start = bar.add_task("aligning", total=total, rate="-"), time.perf_counter()
        if done % 100 == 0 or done == total:
            rate = done / max(1e-9, time.perf_counter() - start)
            bar.update(task, completed=done, total=total, rate=f"{rate:,.0f}")

    return bar, progress


def _stage_bar(quiet: bool, bar=None):
    """A rich progress display on stderr for the statistical aligner's passes: one line per stage
    (model and direction), its bar restarting with every pass (iteration, sweep), pairs/s and ETA of
    the pass; and the callback that ``align_statistical_files`` calls. ``bar``: add the lines to this
    display (:func:`_progress_bar`'s) instead of a new one."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    if bar is None:
        bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                       TextColumn("{task.fields[rate]} pairs/s"), TimeRemainingColumn(),
                       console=err(), disable=quiet)
    stages: dict[str, dict] = {}  # per stage: its line, its pass, when the pass began, last shown
    lock = threading.Lock()  # stages may report from two threads at once (the fertility directions)
    last = [time.perf_counter()]  # the last report of any stage: where a new stage's first pass begins

    def progress(stage: str, step: str, done: int, total: int) -> None:
        now = time.perf_counter()
        with lock:
            st = stages.get(stage)
            if st is None:
                for other in stages.values():  # a new stage: those before it are done, unless running
                    if other["last"] < now - 1.0:
                        bar.update(other["task"], completed=bar.tasks[other["task"]].total)
                st = stages[stage] = {"step": None, "task": bar.add_task(stage, total=total, rate="-"),
                                      "start": last[0], "shown": 0.0, "last": last[0]}
            if step != st["step"]:  # a pass begins where the last report before it ended
                st.update(step=step, start=st["last"])
                bar.reset(st["task"], total=total, description=f"{stage}: {step}", rate="-")
            if now - st["shown"] > 0.2 or done == total:
                st["shown"] = now
                rate = done / max(1e-9, now - st["start"])
                bar.update(st["task"], completed=done, rate=f"{rate:,.0f}")
            st["last"] = last[0] = now

    return bar, progress


def _written(output: Path | None, report) -> None:
    """Say where the alignment went; the scores go to stdout unless the alignment itself went there."""
    to_file = output is not None and str(output) != "-"
    if to_file:
        err().print(Text(f"alignment written to {path_text(output)}"))
    if report is not None:
        console = out() if to_file else err()
        console.print(score_table(report, width=console.width))


@app.command("corpus", cls=Command)
@handle_errors
def align_corpus(
    model: ModelDirOpt,
    src: SrcOpt = None, tgt: TgtOpt = None, corpus: CorpusOpt = None, lowercase: ModelLowercaseOpt = None,
    encoding: EncodingOpt = "utf-8", gold: GoldOpt = None, gold_format: GoldFormatOpt = "auto",
    gold_one_based: GoldBaseOpt = None, reverse_gold: ReverseGoldOpt = False,
    reverse_model: ReverseModelOpt = None, src_lang: SrcLangOpt = None, tgt_lang: TgtLangOpt = None,
    decoder: BlendDecoderOpt = "auto", sym: SymOpt = "auto",
    threshold: BlendThresholdOpt = ALIGN.threshold,
    layer: LayerOpt = ALIGN.layer, head: HeadOpt = ALIGN.head, shift: ShiftOpt = ALIGN.shift,
    readout: ReadoutOpt = ALIGN.readout, smoothgrad: SmoothgradOpt = ALIGN.smoothgrad,
    teacher: TeacherOpt = Teacher.auto, teacher_weight: TeacherWeightOpt = ALIGN.teacher_weight,
    teacher_corpus: TeacherCorpusOpt = TeacherCorpus.auto,
    tune_gold: TuneGoldOpt = None, tune_src: TuneSrcOpt = None, tune_tgt: TuneTgtOpt = None,
    output: OutputOpt = None, scores: ScoresOpt = False, json_lines: JsonLinesOpt = False,
    save_attention: SaveAttentionOpt = None,
    batch_tokens: BatchTokensOpt = ALIGN.batch_tokens, max_length: MaxLengthOpt = ALIGN.max_length,
    device: DeviceOpt = DEVICE, threads: ThreadsOpt = None, quiet: QuietOpt = False,
) -> None:
    """Align a parallel corpus: one Pharaoh line (0-based, source first) per input pair.

    Example: attnalign align corpus --model runs/sample --src sample_data/test.en --tgt sample_data/test.fr
    """
    options = align_options(decoder, sym, threshold, layer, head, shift, batch_tokens=batch_tokens,
                            device=device, max_length=max_length, reverse_model=reverse_model,
                            src_lang=src_lang, tgt_lang=tgt_lang, teacher=teacher,
                            teacher_corpus=teacher_corpus, teacher_weight=teacher_weight, readout=readout,
                            smoothgrad=smoothgrad)
    if tune_gold is None and (tune_src or tune_tgt):
        raise OptionError("--tune-src and --tune-tgt are the text of --tune-gold", hint="add --tune-gold")
    rank = world()[0]  # under torchrun rank 0 writes and reports
    bar, progress = _progress_bar(quiet or rank != 0)
    with bar:
        summary = align_corpus_files(
            model, src=src, tgt=tgt, corpus=corpus, output=output, options=options, scores=scores,
            json_lines=json_lines, save_attention=save_attention, gold=gold,
            gold_options=gold_options(gold_format, gold_one_based, reverse_gold, encoding),
            lowercase=lowercase, encoding=encoding, progress=progress, threads=threads,
            teacher_progress=_stage_bar(quiet or rank != 0, bar)[1],
            tune=None if tune_gold is None else TuneGold(tune_gold, tune_src, tune_tgt))
    if rank:
        return
    e = err()
    if summary.tuning is not None:
        e.print(Text(summary.tuning.describe()))
    e.print(Text(align_summary_text(summary)))
    _written(output, summary.report)


@app.command("statistical", cls=Command)
@handle_errors
def align_statistical_cmd(
    src: SrcOpt = None, tgt: TgtOpt = None, corpus: CorpusOpt = None, output: OutputOpt = None,
    model: AlignerOpt = TEACHER_MODEL, sym: StatSymOpt = TEACHER_SYM, prefix: PrefixOpt = TEACHER.prefix,
    identical: IdenticalOpt = TEACHER.identical, samplers: SamplersOpt = TEACHER.samplers,
    seed: StatSeedOpt = TEACHER.seed,
    gold: GoldOpt = None,
    gold_format: GoldFormatOpt = "auto", gold_one_based: GoldBaseOpt = None,
    reverse_gold: ReverseGoldOpt = False, lowercase: LowercaseOpt = False, encoding: EncodingOpt = "utf-8",
    quiet: QuietOpt = False,
    threads: StatThreadsOpt = None,
) -> None:
    """Align a parallel corpus with the built-in statistical aligner alone (no NMT model).

    Its links are those that `train --guide auto` learns from. One Pharaoh line (0-based) per pair.

    Example: attnalign align statistical --src sample_data/train.en --tgt sample_data/train.fr -o guide.align
    """
    rank = world()[0]  # under torchrun only rank 0 shows progress and reports
    bar, progress = _stage_bar(quiet or rank != 0)
    with bar:
        summary = align_statistical_files(
            src=src, tgt=tgt, corpus=corpus, output=output, model=model.value, sym=sym.value, prefix=prefix,
            identical=identical, samplers=samplers, seed=seed, gold=gold,
            gold_options=gold_options(gold_format, gold_one_based, reverse_gold, encoding),
            lowercase=lowercase, encoding=encoding, progress=progress, threads=threads)
    if rank:
        return
    e = err()
    e.print(Text(f"aligned {summary.pairs} pairs in {summary.seconds:.1f} s; {summary.links} links "
            f"({model.value}, {sym.value}, prefix {prefix}, identical {identical:g}"
            f"{f', samplers {samplers}' if samplers != 1 else ''}, seed {seed})"))
    _written(output, summary.report)


@app.command("sentence", cls=Command)
@handle_errors
def align_sentence(
    model: ModelDirOpt,
    src: SentenceSrcOpt, tgt: SentenceTgtOpt,
    reverse_model: ReverseModelOpt = None, src_lang: SrcLangOpt = None, tgt_lang: TgtLangOpt = None,
    decoder: BlendDecoderOpt = "auto", sym: SymOpt = "auto",
    threshold: BlendThresholdOpt = ALIGN.threshold,
    layer: LayerOpt = ALIGN.layer, head: HeadOpt = ALIGN.head, shift: ShiftOpt = ALIGN.shift,
    readout: ReadoutOpt = ALIGN.readout, smoothgrad: SmoothgradOpt = ALIGN.smoothgrad,
    teacher: TeacherOpt = Teacher.auto, teacher_weight: TeacherWeightOpt = ALIGN.teacher_weight,
    teacher_corpus: TeacherCorpusOpt = TeacherCorpus.auto,
    as_json: SentenceJsonOpt = False,
    device: DeviceOpt = DEVICE,
) -> None:
    """Align one sentence pair typed on the command line and show its links: the line align corpus
    writes for a file of that one pair, the teacher included.

    Example: attnalign align sentence --model runs/sample --src "the red car ." --tgt "la voiture rouge ."
    """
    pair, settings = align_one(model, src, tgt, align_options(
        decoder, sym, threshold, layer, head, shift, device=device, reverse_model=reverse_model,
        src_lang=src_lang, tgt_lang=tgt_lang, max_length=ONE_PAIR_MAX_LENGTH, teacher=teacher,
        teacher_corpus=teacher_corpus, teacher_weight=teacher_weight, readout=readout, smoothgrad=smoothgrad))
    if as_json:
        sys.stdout.write(json.dumps(pair_json(pair), ensure_ascii=False) + "\n")
        return
    out().print(links_table(pair, settings))
    out().print(" ".join(f"{i}-{j}" for i, j in pair.links), highlight=False)
    if pair.eos is not None and len(pair.eos):
        mass = 100 * float(pair.eos.mean())
        err().print(f"attention mass on EOS: {mass:.1f}% per target word", highlight=False)
