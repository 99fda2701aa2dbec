"""The ``attnalign`` command line: thin Typer commands over library functions.

Data goes to stdout; messages, warnings and progress go to stderr. A user-fixable error
(:class:`~attnalign.errors.AttnAlignError`, an unreadable or unwritable file) prints one clear message
and exits with code 1, never a traceback.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import time
import warnings
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from . import __version__
from .decode import DECODER_CHOICES, HEAD_DECODING
from .errors import AttnAlignError, AttnAlignWarning
from .statistical import IDENTICAL, PREFIX
from .statistical import MODELS as GUIDE_MODELS
from .statistical import SYMS as GUIDE_SYMS
from .symmetrize import METHODS

app = typer.Typer(
    name="attnalign",
    help="Word alignment from the attention of NMT models: train, align, plot, score.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def out() -> Console:
    """Console for data (stdout); wide when piped, so tables are never folded."""
    return Console(width=None if sys.stdout.isatty() else 200)


def err() -> Console:
    """Console for messages and progress (stderr)."""
    return Console(stderr=True, soft_wrap=True)


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    prefix = "warning" if issubclass(category, AttnAlignWarning) else category.__name__
    err().print(f"[yellow]{prefix}:[/yellow] {message}", highlight=False, markup=True)


def handle_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn user-fixable errors into a message on stderr and exit code 1; show warnings on stderr."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("always", AttnAlignWarning)
            warnings.showwarning = _show_warning
            try:
                return fn(*args, **kwargs)
            except AttnAlignError as e:
                err().print(f"[red]error:[/red] {e.format()}", highlight=False, markup=True)
                raise typer.Exit(1) from None
            except BrokenPipeError:  # `attnalign ... | head`: the reader has what it wanted
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, sys.stdout.fileno())  # no second error when Python flushes stdout
                raise typer.Exit(0) from None
            except OSError as e:
                where = f"{e.filename}: " if e.filename else ""
                err().print(f"[red]error:[/red] {where}{e.strerror or e}", highlight=False)
                raise typer.Exit(1) from None
            except KeyboardInterrupt:
                err().print("[red]interrupted[/red]")
                raise typer.Exit(130) from None

    return wrapper


def _version(value: bool) -> None:
    if value:
        print(f"attnalign {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    """Word alignment from the attention of NMT models."""


class GoldFormat(str, Enum):
    auto = "auto"
    pharaoh = "pharaoh"
    naacl = "naacl"


# Options shared by every command that reads a gold file.
GoldFormatOpt = Annotated[
    GoldFormat,
    typer.Option(
        "--gold-format",
        help="Gold format: pharaoh/talp (one line per sentence), naacl (sentid i j [S|P]) or auto.",
    ),
]
GoldBaseOpt = Annotated[
    bool | None,
    typer.Option(
        "--gold-one-based/--gold-zero-based",
        help="Index base of the gold file [default: 0-based for pharaoh, 1-based for naacl].",
        show_default=False,
    ),
]
ReverseGoldOpt = Annotated[
    bool, typer.Option("--reverse-gold", help="The gold lists target-source pairs; swap them.")
]
EncodingOpt = Annotated[str, typer.Option("--encoding", help="Encoding of the input files.")]

# Options shared by every command that reads a parallel corpus.
SrcOpt = Annotated[
    Path | None, typer.Option("--src", help="Source side: one whitespace-tokenized sentence a line.")
]
TgtOpt = Annotated[Path | None, typer.Option("--tgt", help="Target side, line-parallel to --src.")]
CorpusOpt = Annotated[
    Path | None,
    typer.Option("--corpus", help="One file of 'source ||| target' (or TAB-separated) pairs."),
]


@app.command()
@handle_errors
def score(
    gold: Annotated[Path, typer.Argument(help="Gold alignment file (pharaoh/talp or naacl).")],
    pred: Annotated[
        list[Path], typer.Argument(help="Predicted alignments (Pharaoh, 0-based); several allowed.")
    ],
    gold_format: GoldFormatOpt = GoldFormat.auto,
    gold_one_based: GoldBaseOpt = None,
    reverse_gold: ReverseGoldOpt = False,
    pred_format: Annotated[
        GoldFormat, typer.Option("--pred-format", help="Format of the predictions.")
    ] = GoldFormat.auto,
    pred_one_based: Annotated[
        bool | None,
        typer.Option(
            "--pred-one-based/--pred-zero-based",
            help="Index base of the predictions [default: as for the gold formats].",
            show_default=False,
        ),
    ] = None,
    reverse_pred: Annotated[
        bool, typer.Option("--reverse-pred", help="Predictions list target-source pairs.")
    ] = False,
    src: SrcOpt = None,
    tgt: TgtOpt = None,
    corpus: CorpusOpt = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON object per prediction file.")
    ] = False,
    per_sentence: Annotated[
        Path | None, typer.Option("--per-sentence", help="Write per-sentence scores to this CSV.")
    ] = None,
    encoding: EncodingOpt = "utf-8",
) -> None:
    """Score predicted alignments against a gold alignment: AER, precision, recall, F1.

    Give the gold's text (--src/--tgt or --corpus) to range-check every link. A prediction with more
    lines than the gold has sentences is scored on its first lines (the standard protocol).

    Example: attnalign score sample_data/test.gold.naacl sample_data/test.diagonal.align
    """
    from .fileio import atomic_open, check_writable
    from .scoring import GoldOptions, score_files
    from .tables import score_table

    if per_sentence is not None:
        check_writable(per_sentence, "per-sentence CSV")
    options = GoldOptions(gold_format.value, gold_one_based, reverse_gold, encoding)
    report = score_files(
        gold,
        pred,
        options,
        src=src,
        tgt=tgt,
        corpus=corpus,
        pred_format=pred_format.value,
        pred_one_based=pred_one_based,
        reverse_pred=reverse_pred,
    )
    if as_json:
        for s in report.systems:
            row = {"system": s.name, **s.total.as_dict(), "signature": report.signature}
            sys.stdout.write(json.dumps(row) + "\n")
    else:
        out().print(score_table(report))
    if per_sentence is not None:
        with atomic_open(per_sentence) as f:
            report.per_sentence_frame().to_csv(f, index=False)
        err().print(f"per-sentence scores written to {per_sentence}", highlight=False)


class ModelType(str, Enum):
    rnn = "rnn"
    transformer = "transformer"


class AttentionType(str, Enum):
    additive = "additive"
    dot = "dot"
    general = "general"
    scaled_dot = "scaled-dot"


def _choices(name: str, values) -> type[Enum]:
    """A str Enum for Typer from a library's tuple of names (one source of truth for the choices)."""
    return Enum(name, {v.replace("-", "_").replace("+", "_"): v for v in values}, type=str)


GuideModel = _choices("GuideModel", GUIDE_MODELS)
GuideSym = _choices("GuideSym", GUIDE_SYMS)
ALIGNERS_HELP = ("hmm-agree+fertility (the union of two models' confident links: hmm-agree's posterior "
                 "links and those of fertility; takes --sym posterior only), hmm-agree (two HMMs trained "
                 "jointly by agreement), fertility (Bayesian HMMs with fertility, Gibbs-sampled, like "
                 "eflomal), hmm, or ibm2 (fast_align's model).")


class Direction(str, Enum):
    forward = "forward"
    reverse = "reverse"
    both = "both"


ModelDirOpt = Annotated[Path, typer.Option("--model", help="Model directory.")]
LowercaseOpt = Annotated[bool, typer.Option("--lowercase", help="Lower-case the text.")]


def _read_gold(gold: Path, gold_format, gold_one_based, reverse_gold, encoding, pairs=None) -> list:
    """The gold alignments as the shared gold options say; range-checked against ``pairs`` if given."""
    from .alignments import read_alignments

    return read_alignments(
        gold,
        fmt=gold_format.value,
        one_based=gold_one_based,
        reverse=reverse_gold,
        src_lengths=None if pairs is None else [len(s) for s, _ in pairs],
        tgt_lengths=None if pairs is None else [len(t) for _, t in pairs],
        encoding=encoding,
    )[0]


@app.command()
@handle_errors
def train(
    model: ModelDirOpt,
    src: SrcOpt = None,
    tgt: TgtOpt = None,
    corpus: CorpusOpt = None,
    model_type: Annotated[ModelType, typer.Option("--model-type", help="Network.")] = ModelType.rnn,
    attention: Annotated[
        AttentionType | None, typer.Option("--attention", help="RNN attention [default: general].")
    ] = None,
    cell: Annotated[str | None, typer.Option("--cell", help="RNN cell: gru or lstm [default: gru].")] = None,
    hidden: Annotated[int | None, typer.Option("--hidden", help="RNN hidden size [default: 256].")] = None,
    emb_dim: Annotated[
        int | None, typer.Option("--emb-dim", help="RNN embedding size [default: 256].")
    ] = None,
    d_model: Annotated[
        int | None, typer.Option("--d-model", help="Transformer width [default: 256].")
    ] = None,
    heads: Annotated[int | None, typer.Option("--heads", help="Transformer heads [default: 4].")] = None,
    layers: Annotated[
        int | None,
        typer.Option("--layers", help="Encoder and decoder layers [default: rnn 1, transformer 3]."),
    ] = None,
    dropout: Annotated[
        float | None, typer.Option("--dropout", help="Dropout [default: rnn 0.2, transformer 0.1].")
    ] = None,
    epochs: Annotated[int, typer.Option("--epochs", help="Passes over the training data.")] = 8,
    max_steps: Annotated[
        int | None, typer.Option("--max-steps", help="Stop after this many updates.")
    ] = None,
    batch_tokens: Annotated[int, typer.Option("--batch-tokens", help="Padded tokens per batch.")] = 1000,
    lr: Annotated[
        float | None, typer.Option("--lr", help="Peak learning rate [default: rnn 1e-3, transformer 5e-4].")
    ] = None,
    warmup: Annotated[int, typer.Option("--warmup", help="Warm-up steps (at most 10% of training).")] = 200,
    clip: Annotated[float, typer.Option("--clip", help="Gradient norm clipping.")] = 1.0,
    label_smoothing: Annotated[float, typer.Option("--label-smoothing")] = 0.1,
    seed: Annotated[int, typer.Option("--seed", help="Same seed, data and device: same model.")] = 1,
    device: Annotated[str, typer.Option("--device", help="auto, cpu or cuda.")] = "auto",
    threads: Annotated[int | None, typer.Option("--threads", help="CPU threads for torch.")] = None,
    min_freq: Annotated[int, typer.Option("--min-freq", help="Words seen fewer times are <unk>.")] = 1,
    max_vocab: Annotated[int | None, typer.Option("--max-vocab", help="Largest vocabulary per side.")] = None,
    lowercase: LowercaseOpt = False,
    direction: Annotated[
        Direction | None,
        typer.Option("--direction", help="Train src->tgt, tgt->src or both [default: forward]."),
    ] = None,
    dev_src: Annotated[Path | None, typer.Option("--dev-src", help="Dev source text.")] = None,
    dev_tgt: Annotated[Path | None, typer.Option("--dev-tgt", help="Dev target text.")] = None,
    dev_gold: Annotated[
        Path | None, typer.Option("--dev-gold", help="Dev gold alignment: select by dev AER.")
    ] = None,
    gold_format: GoldFormatOpt = GoldFormat.auto,
    gold_one_based: GoldBaseOpt = None,
    reverse_gold: ReverseGoldOpt = False,
    guide: Annotated[
        str | None,
        typer.Option(
            "--guide",
            help="Guided alignment: 'auto' (the built-in statistical aligner, see --guide-model and "
            "--guide-sym) or a Pharaoh file of links for the training corpus.",
        ),
    ] = None,
    guide_weight: Annotated[float, typer.Option("--guide-weight", help="Weight of the guide loss.")] = 1.0,
    guide_model: Annotated[
        GuideModel, typer.Option("--guide-model", help="The statistical aligner behind --guide auto: "
                                 + ALIGNERS_HELP)
    ] = GuideModel.hmm_agree_fertility,
    guide_sym: Annotated[
        GuideSym, typer.Option("--guide-sym", help="How --guide auto combines its two directions: "
                               "posterior (links both directions give posterior >= 0.2) or a symmetrization "
                               "of the Viterbi links.")
    ] = GuideSym.posterior,
    guide_prefix: Annotated[
        int, typer.Option("--guide-prefix", min=0, help="--guide auto sees every word cut to its first N "
                          "characters, pooling a word's inflected forms; 0: whole words.")
    ] = PREFIX,
    guide_identical: Annotated[
        float, typer.Option("--guide-identical", min=0.0, help="--guide auto adds this many counts to "
                            "identical source and target words (names, numbers, cognates) in every EM "
                            "step; 0: no such prior.")
    ] = IDENTICAL,
    align_head: Annotated[
        bool | None,
        typer.Option(
            "--align-head/--no-align-head",
            help="Add an alignment head (sees the whole target sentence; trained by --guide only) "
            "and align with it.",
        ),
    ] = None,
    preset: Annotated[
        str | None,
        typer.Option(
            "--preset",
            help="Named options; others given beside it override it. align: --direction both --guide "
            "auto --align-head --subword 4000 (the benchmarked aligner).",
        ),
    ] = None,
    subword: Annotated[
        int | None,
        typer.Option("--subword", help="Sentencepiece vocabulary size per side; 0: whole words "
                     "[default: whole words; 4000 with --preset align]."),
    ] = None,
    subword_type: Annotated[str, typer.Option("--subword-type", help="unigram or bpe.")] = "unigram",
    save_every: Annotated[
        int | None, typer.Option("--save-every", help="Resumable checkpoint every N steps.")
    ] = None,
    resume: Annotated[bool, typer.Option("--resume", help="Continue an interrupted run in --model.")] = False,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace the model in --model.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress display.")] = False,
    encoding: EncodingOpt = "utf-8",
) -> None:
    """Train an attention NMT model (one or both directions) into a model directory.

    Example: attnalign train --src sample_data/train.en --tgt sample_data/train.fr --model runs/sample
    """
    from .corpus import read_corpus
    from .progress import RichTrainReporter
    from .train import DevSet, preset_options
    from .train import train as train_model

    given = {
        "attention": attention.value if attention else None,
        "cell": cell,
        "hidden": hidden,
        "emb_dim": emb_dim,
        "d_model": d_model,
        "heads": heads,
        "dropout": dropout,
        "align_head": align_head,
    }
    if layers is not None:
        given.update(enc_layers=layers, dec_layers=layers)
    rnn_only, tf_only = {"attention", "cell", "hidden", "emb_dim"}, {"d_model", "heads"}
    wrong = {k for k, v in given.items() if v is not None} & (
        tf_only if model_type == ModelType.rnn else rnn_only
    )
    if wrong:
        raise AttnAlignError(
            f"--{', --'.join(sorted(w.replace('_', '-') for w in wrong))} do not apply to --model-type "
            f"{model_type.value}"
        )
    pairs = read_corpus(src, tgt, corpus, encoding=encoding, lowercase=lowercase)
    dev = None
    if dev_src or dev_tgt:
        dev_pairs = read_corpus(dev_src, dev_tgt, encoding=encoding, lowercase=lowercase)
        gold = None
        if dev_gold is not None:
            gold = _read_gold(dev_gold, gold_format, gold_one_based, reverse_gold, encoding, dev_pairs)
        dev = DevSet(dev_pairs, gold)
    elif dev_gold is not None:
        raise AttnAlignError("--dev-gold needs the dev text: --dev-src and --dev-tgt")
    options = preset_options(
        preset,
        model_type=model_type.value,
        model_config={k: v for k, v in given.items() if v is not None},
        epochs=epochs,
        max_steps=max_steps,
        batch_tokens=batch_tokens,
        lr=lr,
        warmup=warmup,
        clip=clip,
        label_smoothing=label_smoothing,
        seed=seed,
        device=device,
        threads=threads,
        min_freq=min_freq,
        max_vocab=max_vocab,
        lowercase=lowercase,
        direction=direction.value if direction else None,
        save_every=save_every,
        subword=subword,
        subword_type=subword_type,
        guide=guide,
        guide_weight=guide_weight,
        guide_model=guide_model.value,
        guide_sym=guide_sym.value,
        guide_prefix=guide_prefix,
        guide_identical=guide_identical,
    )
    guide = options.guide
    guide_links = None
    if guide not in (None, "auto"):
        from .alignments import read_alignments

        lengths = [len(s) for s, _ in pairs], [len(t) for _, t in pairs]
        guide_links = [
            sorted(a.links)
            for a in read_alignments(
                guide, fmt="pharaoh", src_lengths=lengths[0], tgt_lengths=lengths[1], encoding=encoding
            )[0]
        ]
    reporter = None if quiet else RichTrainReporter(err())
    summary = train_model(
        pairs,
        model,
        options,
        dev=dev,
        guide=guide_links,
        overwrite=overwrite,
        resume=resume,
        reporter=reporter,
    )
    from rich.table import Table

    t = Table(title=f"Trained {model}", title_justify="left")
    for col in ("direction", "best step", "dev loss", "dev AER (%)", "steps", "time (s)"):
        t.add_column(col, justify="right")
    for d, r in summary["directions"].items():
        aer = "-" if r.get("dev_aer") is None else f"{100 * r['dev_aer']:.2f}"
        loss = "-" if r.get("dev_loss") is None else f"{r['dev_loss']:.3f}"
        t.add_row(d, str(r["best_step"]), loss, aer, str(r["steps"]), f"{r['elapsed_s']:.1f}")
    out().print(t)


align_app = typer.Typer(
    help="Align a corpus or one sentence pair with a trained model.", no_args_is_help=True
)
app.add_typer(align_app, name="align")


Decoder = _choices("Decoder", DECODER_CHOICES)
Sym = _choices("Sym", ("auto", "none", *METHODS, "soft"))


def _layer_head(value: str | None, what: str) -> int | str | None:
    if value is None or value == "mean" or (what == "layer" and value == "align"):
        return value
    try:
        return int(value)
    except ValueError:
        choices = "an integer, 'mean' or 'align'" if what == "layer" else "an integer or 'mean'"
        raise AttnAlignError(f"--{what} must be {choices}, not {value!r}") from None


DecoderOpt = Annotated[
    Decoder,
    typer.Option("--decoder", help=f"How a matrix becomes links [auto: {HEAD_DECODING['decoder']} for a "
                 f"bidirectional model with an alignment head (with --sym {HEAD_DECODING['sym']}: the En-Fr "
                 "trial's choice), else argmax]."),
]
SymOpt = Annotated[
    Sym,
    typer.Option(
        "--sym",
        help=f"Combine both directions (model trained with --direction both) [auto: {HEAD_DECODING['sym']} "
        "for a model with both and an alignment head (the trial's choice), grow-diag-final-and for other "
        "models with both, else none].",
    ),
]
ThresholdOpt = Annotated[
    float | None,
    typer.Option("--threshold", help="Weight cut for --decoder threshold [default: " + (
        "0.5]." if HEAD_DECODING["threshold"] == 0.5 else
        f"{HEAD_DECODING['threshold']} for the alignment head's auto decoding, else 0.5].")),
]
LayerOpt = Annotated[
    str | None,
    typer.Option("--layer", help="align (the alignment head of a model trained with --align-head), or a "
                 "Transformer layer: index (negative from the end) or mean [default: align if the model "
                 "has the head, else -2]."),
]
HeadOpt = Annotated[str, typer.Option("--head", help="Transformer head: index or mean.")]
ShiftOpt = Annotated[
    int, typer.Option("--shift", help="1: read word t's attention where t is the decoder input (Shift-Att).")
]
DeviceOpt = Annotated[str, typer.Option("--device", help="auto, cpu or cuda.")]
ModelLowercaseOpt = Annotated[
    bool | None,
    typer.Option(
        "--lowercase/--no-lowercase", help="[default: as the model was trained]", show_default=False
    ),
]


def _settings_text(settings: dict) -> str:
    from .plot import settings_text

    return settings_text(settings)


def _model_lowercase(model: Path, lowercase: bool | None) -> bool:
    """The --lowercase choice, defaulting to the model's training setting."""
    from .checkpoint import read_model_config

    return bool(read_model_config(model).get("lowercase")) if lowercase is None else lowercase


def _align_options(decoder, sym, threshold, layer, head, shift, batch_tokens, device, max_length):
    from .align import AlignOptions
    from .train import resolve_device

    return AlignOptions(
        decoder=decoder.value,
        threshold=threshold,
        sym=sym.value,
        layer=_layer_head(layer, "layer"),
        head=_layer_head(head, "head"),
        shift=shift,
        batch_tokens=batch_tokens,
        device=str(resolve_device(device)),
        max_length=max_length,
    )


@align_app.command("corpus")
@handle_errors
def align_corpus(
    model: ModelDirOpt,
    src: SrcOpt = None,
    tgt: TgtOpt = None,
    corpus: CorpusOpt = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Pharaoh output file [default: stdout].")
    ] = None,
    decoder: DecoderOpt = Decoder.auto,
    sym: SymOpt = Sym.auto,
    threshold: ThresholdOpt = None,
    layer: LayerOpt = None,
    head: HeadOpt = "mean",
    shift: ShiftOpt = 0,
    scores: Annotated[bool, typer.Option("--scores", help="Write links as i-j:weight.")] = False,
    json_lines: Annotated[
        bool, typer.Option("--json-lines", help="One JSON object per pair instead of Pharaoh.")
    ] = False,
    save_attention: Annotated[
        Path | None, typer.Option("--save-attention", help="Save every soft matrix to this .npz file.")
    ] = None,
    gold: Annotated[Path | None, typer.Option("--gold", help="Score against this gold at the end.")] = None,
    gold_format: GoldFormatOpt = GoldFormat.auto,
    gold_one_based: GoldBaseOpt = None,
    reverse_gold: ReverseGoldOpt = False,
    lowercase: ModelLowercaseOpt = None,
    batch_tokens: Annotated[int, typer.Option("--batch-tokens", help="Padded tokens per batch.")] = 4000,
    max_length: Annotated[
        int, typer.Option("--max-length", help="Longer pairs (model tokens) are skipped with a warning.")
    ] = 250,
    device: DeviceOpt = "auto",
    threads: Annotated[int | None, typer.Option("--threads", help="CPU threads for torch.")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", help="No progress display.")] = False,
    encoding: EncodingOpt = "utf-8",
) -> None:
    """Align a parallel corpus: one Pharaoh line (0-based, source first) per input pair.

    Example: attnalign align corpus --model runs/sample --src sample_data/test.en --tgt sample_data/test.fr
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from .pipeline import align_corpus_files
    from .scoring import GoldOptions
    from .tables import score_table

    if threads:
        import torch

        torch.set_num_threads(threads)
    options = _align_options(decoder, sym, threshold, layer, head, shift, batch_tokens, device, max_length)
    gold_options = GoldOptions(gold_format.value, gold_one_based, reverse_gold, encoding)
    columns = (
        TextColumn("aligning"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]} pairs/s"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=err(), disable=quiet) as bar:
        task = bar.add_task("align", total=None, rate="-")
        start = time.perf_counter()

        def progress(done: int, total: int) -> None:
            if done % 100 == 0 or done == total:
                rate = done / max(1e-9, time.perf_counter() - start)
                bar.update(task, completed=done, total=total, rate=f"{rate:,.0f}")

        summary = align_corpus_files(
            model,
            src=src,
            tgt=tgt,
            corpus=corpus,
            output=output,
            options=options,
            scores=scores,
            json_lines=json_lines,
            save_attention=save_attention,
            gold=gold,
            gold_options=gold_options,
            lowercase=lowercase,
            encoding=encoding,
            progress=progress,
        )
    e = err()
    e.print(
        f"aligned {summary.pairs} pairs ({summary.skipped} skipped) in {summary.seconds:.1f} s "
        f"({summary.pairs_per_s:,.0f} pairs/s); {summary.links} links; "
        f"attention mass on EOS {100 * summary.eos_mass:.1f}% per target word, "
        f"{summary.eos_argmax} target words left unlinked by an EOS argmax",
        highlight=False,
    )
    e.print("settings: " + _settings_text(summary.settings), highlight=False)
    if output is not None:
        e.print(f"alignment written to {output}", highlight=False)
    if summary.report is not None:  # on stdout unless the alignment itself went there
        (out() if output is not None else e).print(score_table(summary.report))


@align_app.command("statistical")
@handle_errors
def align_statistical_cmd(
    src: SrcOpt = None,
    tgt: TgtOpt = None,
    corpus: CorpusOpt = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Pharaoh output file [default: stdout].")
    ] = None,
    model: Annotated[
        GuideModel, typer.Option("--aligner", help=ALIGNERS_HELP)
    ] = GuideModel.hmm_agree_fertility,
    sym: Annotated[
        GuideSym, typer.Option("--sym", help="posterior (links both directions give posterior >= 0.2) or "
                               "a symmetrization of the two directions' Viterbi links.")
    ] = GuideSym.posterior,
    prefix: Annotated[
        int, typer.Option("--prefix", min=0, help="The models see every word cut to its first N characters, "
                          "pooling a word's inflected forms; 0: whole words.")
    ] = PREFIX,
    identical: Annotated[
        float, typer.Option("--identical", min=0.0, help="Extra counts for identical source and target "
                            "words (names, numbers, cognates) in every EM step; 0: no such prior.")
    ] = IDENTICAL,
    gold: Annotated[Path | None, typer.Option("--gold", help="Score against this gold at the end.")] = None,
    gold_format: GoldFormatOpt = GoldFormat.auto,
    gold_one_based: GoldBaseOpt = None,
    reverse_gold: ReverseGoldOpt = False,
    lowercase: LowercaseOpt = False,
    encoding: EncodingOpt = "utf-8",
) -> None:
    """Align a parallel corpus with the built-in statistical aligner alone (no NMT model): the links
    that `train --guide auto` learns from, in about a minute for 10,000 pairs. One Pharaoh line
    (0-based) per pair.

    Example: attnalign align statistical --src sample_data/train.en --tgt sample_data/train.fr -o guide.align
    """
    from .pipeline import align_statistical_files
    from .scoring import GoldOptions
    from .tables import score_table

    with err().status("training the statistical aligner (both directions)"):
        summary = align_statistical_files(
            src=src, tgt=tgt, corpus=corpus, output=output, model=model.value, sym=sym.value, prefix=prefix,
            identical=identical, gold=gold,
            gold_options=GoldOptions(gold_format.value, gold_one_based, reverse_gold, encoding),
            lowercase=lowercase, encoding=encoding)
    e = err()
    e.print(f"aligned {summary.pairs} pairs in {summary.seconds:.1f} s; {summary.links} links "
            f"({model.value}, {sym.value}, prefix {prefix}, identical {identical:g})", highlight=False)
    if output is not None:
        e.print(f"alignment written to {output}", highlight=False)
    if summary.report is not None:
        (out() if output is not None else e).print(score_table(summary.report))


@align_app.command("sentence")
@handle_errors
def align_sentence(
    model: ModelDirOpt,
    src: Annotated[str, typer.Option("--src", help="Source sentence (whitespace-tokenized).")],
    tgt: Annotated[str, typer.Option("--tgt", help="Target sentence (whitespace-tokenized).")],
    decoder: DecoderOpt = Decoder.auto,
    sym: SymOpt = Sym.auto,
    threshold: ThresholdOpt = None,
    layer: LayerOpt = None,
    head: HeadOpt = "mean",
    shift: ShiftOpt = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    device: DeviceOpt = "auto",
) -> None:
    """Align one sentence pair typed on the command line and show its links.

    Example: attnalign align sentence --model runs/sample --src "the red car ." --tgt "la voiture rouge ."
    """
    from rich.table import Table

    from .align import Aligner
    from .corpus import tokenize

    aligner = Aligner(model, _align_options(decoder, sym, threshold, layer, head, shift, 4000, device, 10**6))
    s, t = tokenize(src, aligner.lowercase), tokenize(tgt, aligner.lowercase)
    if not s or not t:
        raise AttnAlignError("both --src and --tgt need at least one word")
    (pair,) = aligner.align_pairs([(s, t)])
    if as_json:
        from .pipeline import pair_json

        sys.stdout.write(json.dumps(pair_json(pair), ensure_ascii=False) + "\n")
        return
    table = Table(title="Links", caption=_settings_text(aligner.description), title_justify="left")
    for col in ("src", "source word", "tgt", "target word", "weight"):
        table.add_column(col, justify="right" if col in ("src", "tgt", "weight") else "left")
    for i, j in sorted(pair.links, key=lambda link: (link[1], link[0])):
        table.add_row(str(i), s[i], str(j), t[j], f"{pair.scores.get((i, j), 0.0):.3f}")
    out().print(table)
    out().print(" ".join(f"{i}-{j}" for i, j in pair.links), highlight=False)
    if pair.eos is not None and len(pair.eos):
        mass = 100 * float(pair.eos.mean())
        err().print(f"attention mass on EOS: {mass:.1f}% per target word", highlight=False)


plot_app = typer.Typer(help="Draw attention heatmaps with their alignments.", no_args_is_help=True)
app.add_typer(plot_app, name="plot")


@plot_app.command("sentence")
@handle_errors
def plot_sentence(
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Image file: .png, .svg or .pdf.")
    ] = None,
    model: Annotated[Path | None, typer.Option("--model", help="Model directory.")] = None,
    src: Annotated[
        str | None, typer.Option("--src", help="Source sentence; with --index: the source file.")
    ] = None,
    tgt: Annotated[
        str | None, typer.Option("--tgt", help="Target sentence; with --index: the target file.")
    ] = None,
    corpus: CorpusOpt = None,
    index: Annotated[
        int | None, typer.Option("--index", help="0-based pair index into --corpus/--src/--tgt files.")
    ] = None,
    attention: Annotated[
        Path | None, typer.Option("--attention", help="Saved attention file (align corpus --save-attention).")
    ] = None,
    gold: Annotated[Path | None, typer.Option("--gold", help="Gold alignment (with --index).")] = None,
    gold_format: GoldFormatOpt = GoldFormat.auto,
    gold_one_based: GoldBaseOpt = None,
    reverse_gold: ReverseGoldOpt = False,
    decoder: DecoderOpt = Decoder.auto,
    sym: SymOpt = Sym.auto,
    threshold: ThresholdOpt = None,
    layer: Annotated[
        str | None, typer.Option("--layer", help="Transformer layer: index, mean or all (a grid).")
    ] = None,
    head: Annotated[
        str, typer.Option("--head", help="Transformer head: index, mean or all (a grid).")
    ] = "mean",
    shift: ShiftOpt = 0,
    compare: Annotated[
        bool, typer.Option("--compare", help="Decoders (or both directions) side by side.")
    ] = False,
    eos: Annotated[
        bool, typer.Option("--eos", help="Show the attention on the source EOS as a column.")
    ] = False,
    terminal: Annotated[bool, typer.Option("--terminal", help="Draw the matrix in the terminal.")] = False,
    lowercase: ModelLowercaseOpt = None,
    device: DeviceOpt = "auto",
    encoding: EncodingOpt = "utf-8",
) -> None:
    """Draw one pair's attention heatmap with its links (and the gold's, if given).

    Example: attnalign plot sentence --model runs/sample --src "the red car ." --tgt "la voiture rouge ."
    -o pair.png
    """
    from .corpus import open_corpus, tokenize
    from .fileio import check_writable
    from .plot import figure_for, save_figure, settings_text, terminal_view
    from .views import model_panels, saved_panels

    if output is None and not terminal:
        raise AttnAlignError("give --output FILE (.png, .svg, .pdf) or --terminal")
    if output is not None:
        check_writable(output, "image file")
        if output.suffix.lower() not in (".png", ".svg", ".pdf"):
            raise AttnAlignError(f"unknown image type {output.suffix!r}", hint="use .png, .svg or .pdf")
    grid_layers, grid_heads = layer == "all", head == "all"
    options = _align_options(
        decoder,
        sym,
        threshold,
        None if grid_layers else layer,
        "mean" if grid_heads else head,
        shift,
        4000,
        device,
        10**6,
    )
    gold_pair = None
    if gold is not None:
        if index is None:
            raise AttnAlignError("--gold needs --index (which gold sentence to draw)")
        golds = _read_gold(gold, gold_format, gold_one_based, reverse_gold, encoding)
        if index >= len(golds):
            raise AttnAlignError(f"the gold has {len(golds)} sentences; --index {index} is past its end")
        gold_pair = golds[index]
    if attention is not None:
        if index is None:
            raise AttnAlignError("--attention needs --index (which pair to draw)")
        panels = saved_panels(attention, index, options, gold=gold_pair, compare=compare, show_eos=eos)
    else:
        if model is None:
            raise AttnAlignError("give --model DIR (or --attention FILE)")
        lower = _model_lowercase(model, lowercase)
        if index is not None:
            pairs = open_corpus(src, tgt, corpus, encoding=encoding, lowercase=lower)
            if index < 0 or index >= len(pairs):
                raise AttnAlignError(f"--index {index} is out of range: the corpus has {len(pairs)} pairs")
            s, t = next(p for k, p in enumerate(pairs) if k == index)
        else:
            if src is None or tgt is None:
                raise AttnAlignError('give the pair as --src "..." --tgt "..." (or --index N with files)')
            s, t = tokenize(src, lower), tokenize(tgt, lower)
        panels = model_panels(
            model,
            s,
            t,
            options,
            gold=gold_pair,
            compare=compare,
            all_layers=grid_layers,
            all_heads=grid_heads,
            show_eos=eos,
        )
    if terminal:
        for p in panels:
            out().print(terminal_view(p))
    if output is not None:
        grid = grid_layers or grid_heads
        cols = panels[0].settings.get("grid_cols") if grid else (2 if len(panels) == 4 else None)
        fig = figure_for(
            panels,
            cols=cols,
            compact=grid,
            suptitle=settings_text(panels[0].settings) if len(panels) > 1 else "",
        )
        save_figure(fig, output)
        err().print(f"figure written to {output}", highlight=False)


@app.command()
@handle_errors
def report(
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Report directory (index.html + CSV + PNG).")
    ],
    gold: Annotated[Path, typer.Option("--gold", help="Gold alignment of the corpus's first sentences.")],
    model: Annotated[Path | None, typer.Option("--model", help="Model directory.")] = None,
    src: SrcOpt = None,
    tgt: TgtOpt = None,
    corpus: CorpusOpt = None,
    attention: Annotated[
        Path | None, typer.Option("--attention", help="A saved attention file instead of a model.")
    ] = None,
    gold_format: GoldFormatOpt = GoldFormat.auto,
    gold_one_based: GoldBaseOpt = None,
    reverse_gold: ReverseGoldOpt = False,
    gallery: Annotated[int, typer.Option("--gallery", help="Worst and best sentences to draw.")] = 4,
    lowercase: ModelLowercaseOpt = None,
    device: DeviceOpt = "auto",
    encoding: EncodingOpt = "utf-8",
) -> None:
    """Write an HTML report (scores of every configuration, plots, error tables, a gallery).

    Example: attnalign report --model runs/sample --src sample_data/test.en --tgt sample_data/test.fr
    --gold sample_data/test.gold.pharaoh -o report/
    """
    from .report import build_report
    from .train import resolve_device

    if output.exists() and not output.is_dir():
        raise AttnAlignError("the report output must be a directory", path=output)
    golds = _read_gold(gold, gold_format, gold_one_based, reverse_gold, encoding)
    pairs = None
    if attention is None:
        if model is None:
            raise AttnAlignError("give --model DIR with a corpus, or --attention FILE")
        from .corpus import open_corpus

        lower = _model_lowercase(model, lowercase)
        it = iter(open_corpus(src, tgt, corpus, encoding=encoding, lowercase=lower))
        pairs = [p for _, p in zip(range(len(golds)), it, strict=False)]
    summary = build_report(
        output,
        golds,
        model=model,
        pairs=pairs,
        attention=attention,
        device=str(resolve_device(device)),
        gallery=gallery,
    )
    out().print(
        f"best: {summary['best']}: AER {100 * summary['aer']:.2f}, P {100 * summary['precision']:.2f}, "
        f"R {100 * summary['recall']:.2f} ({summary['configurations']} configurations)",
        highlight=False,
    )
    err().print(f"report written to {summary['index']}", highlight=False)


def main() -> None:
    """Entry point of the ``attnalign`` console script."""
    app()
