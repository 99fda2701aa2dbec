"""What every command shares: the consoles, the error handler, and the option declarations written
once (gold files, corpora, models, decoding, the statistical teacher).

Data goes to stdout; messages, warnings and progress go to stderr. A user-fixable error
(:class:`~attnalign.errors.AttnAlignError`, an unreadable or unwritable file) prints one clear message,
never a traceback, and exits 2 for an :class:`~attnalign.errors.OptionError` (like click's usage errors),
else 1. Nothing here imports torch.
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.text import Text

from ..decoding import DECODERS, HEAD_DECODING, SYMMETRIZATIONS
from ..errors import AttnAlignError, AttnAlignWarning, OptionError
from ..nmt.limits import BATCH_TOKENS
from ..statistical.options import DEFAULT as TEACHER
from ..statistical.options import SYMS as TEACHER_SYMS
from ..statistical.registry import MODELS as TEACHER_MODELS


# Both consoles read no markup: what they print holds user text (words, file names) that may contain
# "[...]"; styles are given as Text objects.
def out() -> Console:
    """Console for data (stdout); wide when piped, so tables are never folded."""
    return Console(width=None if sys.stdout.isatty() else 300, markup=False, highlight=False)


def err() -> Console:
    """Console for messages and progress (stderr)."""
    return Console(stderr=True, soft_wrap=True, markup=False, highlight=False)


def message(label: str, style: str, text: str) -> Text:
    """``label: text`` with the label styled and the text taken literally."""
    return Text.assemble((f"{label}:", style), " ", text)


def _show_warning(message_, category, filename, lineno, file=None, line=None) -> None:
    prefix = "warning" if issubclass(category, AttnAlignWarning) else category.__name__
    err().print(message(prefix, "yellow", str(message_)))


EXIT_ERROR, EXIT_USAGE, EXIT_INTERRUPTED = 1, 2, 130


def handle_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn user-fixable errors into a message on stderr and exit code 1 or 2; show warnings on stderr."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("always", AttnAlignWarning)
            warnings.showwarning = _show_warning
            try:
                return fn(*args, **kwargs)
            except AttnAlignError as e:
                err().print(message("error", "red", e.format()))
                raise typer.Exit(EXIT_USAGE if isinstance(e, OptionError) else EXIT_ERROR) from None
            except BrokenPipeError:  # `attnalign ... | head`: the reader has what it wanted
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, sys.stdout.fileno())  # no second error when Python flushes stdout
                raise typer.Exit(0) from None
            except OSError as e:
                where = f"{e.filename}: " if e.filename else ""
                err().print(message("error", "red", f"{where}{e.strerror or e}"))
                raise typer.Exit(EXIT_ERROR) from None
            except (KeyboardInterrupt, SystemError) as e:
                stop = interruption(e)
                if stop is None:
                    raise
                what = str(stop.args[0]) if stop.args else "no output was written"
                err().print(message("interrupted", "red", what))
                raise typer.Exit(EXIT_INTERRUPTED) from None

    return wrapper


def interruption(e: BaseException) -> KeyboardInterrupt | None:
    """The Ctrl-C (or SIGTERM/SIGHUP) behind ``e``, if any: a signal that lands inside a compiled
    (numba) loop surfaces as a SystemError caused by the KeyboardInterrupt its handler raised."""
    while isinstance(e, SystemError) and e.__cause__ is not None:  # one SystemError per compiled frame
        e = e.__cause__
    return e if isinstance(e, KeyboardInterrupt) else None


@dataclass(frozen=True)
class Group:
    """Options declared once and given to a command as one parameter, ``name``: typer sees every option
    of ``params`` (name, ``Annotated`` type, default); the command receives ``build(**values)``."""

    name: str
    params: tuple
    build: Callable[..., Any] = dict


def takes(*groups: Group) -> Callable:
    """Let a command take each of ``groups`` as the one parameter of that name, its options declared
    once in the group: the command line is the same, the function's signature short."""

    def decorate(fn: Callable) -> Callable:
        sig = inspect.signature(fn, eval_str=True)
        by_name = {g.name: g for g in groups}
        params = []
        for p in sig.parameters.values():
            g = by_name.get(p.name)
            params += ([inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=d, annotation=t)
                        for n, t, d in g.params] if g else [p.replace(kind=inspect.Parameter.KEYWORD_ONLY)])

        @functools.wraps(fn)
        def wrapper(**values: Any) -> Any:
            for g in groups:
                values[g.name] = g.build(**{n: values.pop(n) for n, _, _ in g.params})
            return fn(**values)

        wrapper.__signature__ = sig.replace(parameters=params)  # what typer reads
        wrapper.__annotations__ = {p.name: p.annotation for p in params}
        return wrapper

    return decorate


def choices(name: str, values) -> type[Enum]:
    """A str Enum for Typer from a library's names (the registries stay the one source of choices)."""
    return Enum(name, {v.replace("-", "_").replace("+", "_"): v for v in values}, type=str)


class GoldFormat(str, Enum):
    auto = "auto"
    pharaoh = "pharaoh"
    naacl = "naacl"


# Gold files.
GoldFormatOpt = Annotated[
    GoldFormat,
    typer.Option("--gold-format",
                 help="Gold format: pharaoh/talp (one line per sentence), naacl (sentid i j [S|P]) or auto."),
]
GoldBaseOpt = Annotated[
    bool | None,
    typer.Option("--gold-one-based/--gold-zero-based",
                 help="Index base of the gold file [default: 0-based for pharaoh, 1-based for naacl].",
                 show_default=False),
]
ReverseGoldOpt = Annotated[
    bool, typer.Option("--reverse-gold", help="The gold lists target-source pairs; swap them.")]
EncodingOpt = Annotated[str, typer.Option("--encoding", help="Encoding of the input files.")]


def gold_options(gold_format: GoldFormat, gold_one_based: bool | None, reverse_gold: bool, encoding: str):
    from ..eval.scoring import GoldOptions

    return GoldOptions(gold_format.value, gold_one_based, reverse_gold, encoding)


# Parallel corpora.
SrcOpt = Annotated[
    Path | None, typer.Option("--src", help="Source side: one whitespace-tokenized sentence a line.")]
TgtOpt = Annotated[Path | None, typer.Option("--tgt", help="Target side, line-parallel to --src.")]
CorpusOpt = Annotated[
    Path | None, typer.Option("--corpus", help="One file of 'source ||| target' (or TAB-separated) pairs.")]
LowercaseOpt = Annotated[bool, typer.Option("--lowercase", help="Lower-case the text.")]
OutputOpt = Annotated[
    Path | None, typer.Option("--output", "-o", help="Pharaoh output file; - for stdout [default: stdout].")]
GoldOpt = Annotated[Path | None, typer.Option("--gold", help="Score against this gold at the end.")]
QuietOpt = Annotated[bool, typer.Option("--quiet", help="No progress display.")]

# Models.
MODEL_HELP = ("Model directory (attnalign train's, or a Hugging Face translation model saved with "
              "save_pretrained), or hf:NAME from the local Hugging Face cache.")
ModelDirOpt = Annotated[Path, typer.Option("--model", help=MODEL_HELP)]
OptionalModelOpt = Annotated[Path | None, typer.Option("--model", help=MODEL_HELP)]
ReverseModelOpt = Annotated[Path | None, typer.Option(
    "--reverse-model", help="Hugging Face models: the target-to-source model (directory or hf:NAME), so "
    "that both directions can be symmetrized.")]
SrcLangOpt = Annotated[str | None, typer.Option(
    "--src-lang", help="Multilingual Hugging Face models (M2M-100, NLLB): the source language code.")]
TgtLangOpt = Annotated[str | None, typer.Option(
    "--tgt-lang", help="Multilingual Hugging Face models: the target language code.")]
DeviceOpt = Annotated[str, typer.Option("--device", help="auto, cpu or cuda.")]
ThreadsOpt = Annotated[int | None, typer.Option("--threads", help="CPU threads for torch.")]
ModelLowercaseOpt = Annotated[
    bool | None,
    typer.Option("--lowercase/--no-lowercase", help="[default: as the model was trained]",
                 show_default=False),
]

# Decoding (the choices come from the registries of attnalign.decoding).
Decoder = choices("Decoder", ("auto", *DECODERS))
Sym = choices("Sym", ("auto", *SYMMETRIZATIONS))
DecoderOpt = Annotated[
    Decoder,
    typer.Option("--decoder", help=f"How a matrix becomes links [auto: {HEAD_DECODING['decoder']} for a "
                 f"bidirectional model with an alignment head (with --sym {HEAD_DECODING['sym']}), else "
                 "argmax]."),
]
SymOpt = Annotated[
    Sym,
    typer.Option("--sym", help=f"Combine both directions (model trained with --direction both) [auto: "
                 f"{HEAD_DECODING['sym']} for a model with both and an alignment head, "
                 "grow-diag-final-and for other models with both, else none]."),
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
    int, typer.Option("--shift", help="1: read word t's attention where t is the decoder input (Shift-Att).")]


def _layer_head(value: str | None, what: str) -> int | str | None:
    if value is None or value == "mean" or (what == "layer" and value == "align"):
        return value
    try:
        return int(value)
    except ValueError:
        choices = "an integer, 'mean' or 'align'" if what == "layer" else "an integer or 'mean'"
        raise OptionError(f"--{what} must be {choices}, not {value!r}") from None


def align_options(decoder, sym, threshold, layer, head, shift, batch_tokens=BATCH_TOKENS, device="auto",
                  max_length=10**6, resolve: bool = True, reverse_model=None, src_lang=None, tgt_lang=None):
    """The :class:`~attnalign.nmt.aligner.AlignOptions` of the parsed decoding options; ``resolve``:
    the device named for torch (imports torch)."""
    from ..nmt.aligner import AlignOptions

    if resolve:
        from ..nmt.device import resolve_device

        device = str(resolve_device(device))
    return AlignOptions(decoder=decoder.value, threshold=threshold, sym=sym.value,
                        layer=_layer_head(layer, "layer"), head=_layer_head(head, "head"), shift=shift,
                        batch_tokens=batch_tokens, device=device, max_length=max_length,
                        reverse_model=None if reverse_model is None else str(reverse_model),
                        src_lang=src_lang, tgt_lang=tgt_lang)


# The statistical teacher: the same options for `align statistical` (--aligner, --sym, --prefix,
# --identical, --samplers) and `train` (--guide-model, --guide-sym, --guide-prefix, --guide-identical,
# --guide-samplers).
TeacherModel = choices("TeacherModel", TEACHER_MODELS)
TeacherSym = choices("TeacherSym", TEACHER_SYMS)
ALIGNERS_HELP = ("hmm-agree+fertility (the union of two models' confident links: hmm-agree's posterior "
                 "links and those of fertility; takes posterior only), hmm-agree (two HMMs trained "
                 "jointly by agreement), fertility (Bayesian HMMs with fertility, Gibbs-sampled, like "
                 "eflomal), hmm, or ibm2 (fast_align's model).")
SYM_HELP = ("posterior (links both directions give a posterior of at least 0.2) or a symmetrization of the "
            "two directions' Viterbi links.")
PREFIX_HELP = ("The statistical models see every word cut to its first N characters, pooling a word's "
               "inflected forms; 0: whole words.")
IDENTICAL_HELP = ("Extra counts for identical source and target words (names, numbers, cognates) in every "
                  "EM step; 0: no such prior.")
SAMPLERS_HELP = ("Independent Gibbs chains of the fertility HMMs per direction, their counts pooled: the "
                 "links vary less with the sampler's draws, for that many times the sampling time.")


def _teacher_opts(model: str, sym: str, prefix: str, identical: str, samplers: str, context: str = ""):
    model_help = f"The statistical aligner: {ALIGNERS_HELP}"
    sym_help = f"How its directions combine: {SYM_HELP}"
    return (Annotated[TeacherModel, typer.Option(model, help=context + model_help)],
            Annotated[TeacherSym, typer.Option(sym, help=context + sym_help)],
            Annotated[int, typer.Option(prefix, min=0, help=context + PREFIX_HELP)],
            Annotated[float, typer.Option(identical, min=0.0, help=context + IDENTICAL_HELP)],
            Annotated[int, typer.Option(samplers, help=context + SAMPLERS_HELP)])


AlignerOpt, StatSymOpt, PrefixOpt, IdenticalOpt, SamplersOpt = _teacher_opts(
    "--aligner", "--sym", "--prefix", "--identical", "--samplers")
GuideModelOpt, GuideSymOpt, GuidePrefixOpt, GuideIdenticalOpt, GuideSamplersOpt = _teacher_opts(
    "--guide-model", "--guide-sym", "--guide-prefix", "--guide-identical", "--guide-samplers",
    "--guide auto: ")
TEACHER_MODEL, TEACHER_SYM = TeacherModel(TEACHER.model), TeacherSym(TEACHER.sym)


# Option groups shared by commands (see `takes`).
@dataclass(frozen=True)
class GoldGiven:
    """A gold file and how to read it, as given on the command line (the encoding is the command's)."""

    path: Path | None
    fmt: GoldFormat = GoldFormat.auto
    one_based: bool | None = None
    reverse: bool = False

    def options(self, encoding: str):
        return gold_options(self.fmt, self.one_based, self.reverse, encoding)


GOLD_READING = (("gold_format", GoldFormatOpt, GoldFormat.auto), ("gold_one_based", GoldBaseOpt, None),
                ("reverse_gold", ReverseGoldOpt, False))


def gold_group(gold_opt) -> Group:
    """``--gold FILE`` (declared by ``gold_opt``) with the options that say how to read it."""
    return Group("gold", (("gold", gold_opt, None), *GOLD_READING),
                 lambda gold, gold_format, gold_one_based, reverse_gold: GoldGiven(
                     gold, gold_format, gold_one_based, reverse_gold))


PRETRAINED = Group("pretrained", (("reverse_model", ReverseModelOpt, None), ("src_lang", SrcLangOpt, None),
                                  ("tgt_lang", TgtLangOpt, None)))


def decoding_group(layer_opt=LayerOpt, head_opt=HeadOpt) -> Group:
    """--decoder, --sym, --threshold, --layer, --head, --shift as ``align_options`` keywords."""
    return Group("decoding", (("decoder", DecoderOpt, Decoder.auto), ("sym", SymOpt, Sym.auto),
                              ("threshold", ThresholdOpt, None), ("layer", layer_opt, None),
                              ("head", head_opt, "mean"), ("shift", ShiftOpt, 0)))
