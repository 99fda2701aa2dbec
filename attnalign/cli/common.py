"""What every command shares: the consoles, the error handler, and the options several commands take,
declared once each as an ``Annotated`` alias in its help panel (input, model, decoding, teacher, output,
runtime).

Data goes to stdout; messages, warnings and progress go to stderr. A user-fixable error
(:class:`~attnalign.errors.AttnAlignError`, an unreadable or unwritable file) prints one clear message,
never a traceback, and exits 2 for an :class:`~attnalign.errors.OptionError` (like click's usage errors),
else 1. Nothing here imports torch.
"""

from __future__ import annotations

import functools
import os
import sys
import types
import typing
import warnings
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.text import Text

from ..data.alignments import ALIGNMENT_FORMATS
from ..decoding import (
    DECODERS,
    HEAD_DECODING,
    SYMMETRIZATIONS,
    TEACHER_CHOICES,
    TEACHER_CORPUS_CHOICES,
    TEACHER_CORPUS_MAX_PAIRS,
    TEACHER_DECODING,
    TEACHER_DECODING_FIXED,
    TEACHER_DECODING_LARGE,
    TEACHER_LARGE_PAIRS,
    TEACHER_MIN_PAIRS,
    THRESHOLD,
)
from ..decoding.policy import AUTO
from ..errors import (
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    AttnAlignError,
    AttnAlignWarning,
    OptionError,
    out_of_memory,
)
from ..eval.scoring import GoldOptions
from ..flags import flag_of
from ..nmt.options import DEVICE_HELP, THREADS_HELP, AlignOptions
from ..nmt.readouts import READOUTS
from ..statistical.options import DEFAULT as TEACHER
from ..statistical.options import SYMS as TEACHER_SYMS
from ..statistical.options import TeacherOptions
from ..statistical.registry import MODELS as TEACHER_MODELS
from ..training.options import Data, Network
from .lines import say


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
            except (MemoryError, RuntimeError, ImportError) as e:
                if not out_of_memory(e):
                    raise
                say("error", "out of memory: this machine (or its memory limit) cannot hold what this run "
                    "needs", "give less at once: a smaller network (--hidden, --emb-dim, --d-model, "
                    "--layers), smaller batches (--batch-tokens), a smaller corpus, fewer --samples")
                raise typer.Exit(EXIT_ERROR) from None
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


def choices(name: str, values) -> type[Enum]:
    """A str Enum for Typer from a fixed list of names (a registry's names are read when the command
    runs instead: :class:`Registered`)."""
    return Enum(name, {v.replace("-", "_").replace("+", "_"): v for v in values}, type=str)


class Registered:
    """An option's value: a name of a registry, read when the command runs (a name registered after
    attnalign was imported is a choice too). The parser checks the value; ``--help`` lists the names and
    says ``help()`` (:class:`_FlagHelp`)."""

    def __init__(self, names: Callable[[], Any], help: Callable[[], str]):
        self.names, self.help = names, help

    def choices(self) -> list[str]:
        return list(self.names())

    def __call__(self, value) -> str:
        value = value.value if isinstance(value, Enum) else value
        if value not in self.choices():
            raise typer.BadParameter(f"{value!r} is not one of {', '.join(map(repr, self.choices()))}.")
        return value


def _registered_help(p) -> None:
    """``p``'s help and metavar from its registry now (see :class:`Registered`), as :func:`option` writes
    a fixed choice's."""
    info = getattr(getattr(p, "type_descriptor", None), "parameter_info", None)
    reg = getattr(info, "parser", None)
    if not isinstance(reg, Registered):
        return
    names, text = reg.choices(), reg.help()
    if len("|".join(names)) > LONG_CHOICES:
        p.metavar, p.help = "NAME", f"{text} One of: {', '.join(names)}.".lstrip()
    else:
        p.metavar, p.help = f"[{'|'.join(names)}]", text


# The options several commands share, one alias each, every one in its help panel. Help text is read as
# rich markup (what the panels need): it holds no "[...]"; a computed default is Typer's show_default.
INPUT, MODEL, DECODING, TEACHER_PANEL, OUTPUT, RUNTIME = (
    "Input", "Model", "Decoding", "Teacher", "Output", "Runtime")


# what --help shows for a value of each type (a flag shows none); a choice shows its choices, and one of
# many long names a word, its help listing them, so that an 80-column terminal does not cut the table
METAVARS = {bool: "", int: "INT", float: "NUMBER", str: "TEXT", Path: "PATH"}
LONG_CHOICES = 12  # characters of "a|b|c" past which the choices are named in the help instead


class _FlagHelp:
    """What ``--help`` shows of a value's type, as METAVARS says: none for ``--help`` (a flag, as no flag
    shows one), and an argument's as an option's (``PATH``, where Typer would write ``<list[Path]>``)."""

    def get_help_option(self, ctx):
        help_option = super().get_help_option(ctx)
        if help_option is not None:
            help_option.metavar = ""
        return help_option

    def get_params(self, ctx):
        params = super().get_params(ctx)
        for p in params:
            _registered_help(p)
            if isinstance(p, typer.core.TyperArgument):
                label = METAVARS.get(_base(p.type_descriptor.annotation), "")
                p.display_type_rich = lambda ctx, label=label: label
        return params


class Command(_FlagHelp, typer.core.TyperCommand):
    """Every command's class (``app.command(cls=Command)``)."""


class Group(_FlagHelp, typer.core.TyperGroup):
    """Every command group's class (``typer.Typer(cls=Group)``)."""


def _base(kind):
    """``X`` of ``X``, ``X | None`` and ``list[X]``."""
    if isinstance(kind, types.UnionType):
        kind = next(k for k in typing.get_args(kind) if k is not type(None))
    return typing.get_args(kind)[0] if typing.get_origin(kind) is list else kind


def option(kind, *flags: str, panel: str, **kw):
    """``Annotated[kind, typer.Option(*flags, rich_help_panel=panel, **kw)]``: an option in its panel,
    its value shown as METAVARS says (a choice of long names as NAME, its help ending with them);
    ``kind`` a :class:`Registered`: a ``str`` of its registry's names, read when the command runs."""
    if isinstance(kind, Registered):
        kw["parser"], kw["help"] = kind, kind.help()
        return Annotated[str | None, typer.Option(*flags, rich_help_panel=panel, **kw)]
    base = _base(kind)
    if isinstance(base, type) and issubclass(base, Enum):
        names = [m.value for m in base]
        if len("|".join(names)) > LONG_CHOICES:
            kw.setdefault("metavar", "NAME")
            kw["help"] = f"{kw.get('help', '')} One of: {', '.join(names)}.".lstrip()
    else:
        kw.setdefault("metavar", METAVARS.get(base))
    return Annotated[kind, typer.Option(*flags, rich_help_panel=panel, **kw)]


# Input: a parallel corpus, and a gold alignment with how to read it.
SrcOpt = option(Path | None, "--src", panel=INPUT,
                help="Source side: one whitespace-tokenized sentence a line.")
TgtOpt = option(Path | None, "--tgt", panel=INPUT, help="Target side, line-parallel to --src.")
CorpusOpt = option(Path | None, "--corpus", panel=INPUT,
                   help="One file of 'source ||| target' (or TAB-separated) pairs.")
EncodingOpt = option(str, "--encoding", panel=INPUT, help="Encoding of the input files.")
LowercaseOpt = option(bool, "--lowercase", panel=INPUT, help=flag_of(Data, "lowercase").text())
ModelLowercaseOpt = option(bool | None, "--lowercase/--no-lowercase", panel=INPUT,
                           help=flag_of(Data, "lowercase").text(), show_default="as the model was trained")
GoldOpt = option(Path | None, "--gold", panel=INPUT, help="Score against this gold at the end.")
AUTO_FORMAT = "auto"  # --gold-format / --pred-format: detected from the first line


def _formats() -> list[str]:
    return [AUTO_FORMAT, *ALIGNMENT_FORMATS]


def _formats_help() -> str:
    return "; ".join(f.help for f in ALIGNMENT_FORMATS.values()) + "; or auto, by the first line"


GoldFormatOpt = option(Registered(_formats, lambda: f"Gold format: {_formats_help()}."), "--gold-format",
                       panel=INPUT)
GoldBaseOpt = option(bool | None, "--gold-one-based/--gold-zero-based", panel=INPUT,
                     help="Index base of the gold file.",
                     show_default="0-based for pharaoh, 1-based for naacl")
ReverseGoldOpt = option(bool, "--reverse-gold", panel=INPUT,
                        help="The gold lists target-source pairs; swap them.")

# Models.
MODEL_HELP = ("Model directory (attnalign train's, or a Hugging Face translation model saved with "
              "save_pretrained), or hf:NAME from the local Hugging Face cache.")
ModelDirOpt = option(Path, "--model", panel=MODEL, help=MODEL_HELP)
OptionalModelOpt = option(Path | None, "--model", panel=MODEL, help=MODEL_HELP)
ReverseModelOpt = option(Path | None, "--reverse-model", panel=MODEL, help=(
    "Hugging Face models: the target-to-source model (directory or hf:NAME), so that both directions can be "
    "symmetrized."))
SrcLangOpt = option(str | None, "--src-lang", panel=MODEL, help=flag_of(Network, "src_lang").text())
TgtLangOpt = option(str | None, "--tgt-lang", panel=MODEL, help=flag_of(Network, "tgt_lang").text())

# Output.
OutputOpt = option(Path | None, "--output", "-o", panel=OUTPUT, help="Pharaoh output file; - for stdout.",
                   show_default="stdout")

# Runtime.
DeviceOpt = option(str, "--device", panel=RUNTIME, help=DEVICE_HELP)
ThreadsOpt = option(int | None, "--threads", panel=RUNTIME, help=THREADS_HELP)
QuietOpt = option(bool, "--quiet", panel=RUNTIME, help="No progress display.")


PredFormatOpt = option(Registered(_formats, lambda: f"Format of the predictions: {_formats_help()}."),
                       "--pred-format", panel=INPUT)
PredBaseOpt = option(bool | None, "--pred-one-based/--pred-zero-based", panel=INPUT,
                     help="Index base of the predictions.", show_default="as for the gold formats")
ReversePredOpt = option(bool, "--reverse-pred", panel=INPUT, help="Predictions list target-source pairs.")


def gold_options(gold_format: str, gold_one_based: bool | None, reverse_gold: bool, encoding: str):
    return GoldOptions(gold_format, gold_one_based, reverse_gold, encoding)


# Decoding (the choices come from the registries of attnalign.decoding).
_AUTO_DECODER = ("argmax" if HEAD_DECODING.decoder == "argmax" else
                 f"{HEAD_DECODING.decoder} for a bidirectional model with an alignment head, else argmax")


def _decoders() -> list[str]:
    return [AUTO, *DECODERS]


DecoderOpt = option(Registered(_decoders, lambda: f"How a matrix becomes links; auto: {_AUTO_DECODER}."),
                    "--decoder", panel=DECODING)
SymOpt = option(Registered(lambda: [AUTO, *SYMMETRIZATIONS], lambda: (
    f"Combine both directions (model trained with --direction both); auto: {HEAD_DECODING.sym} for a "
    "model with both and an alignment head, grow-diag-final-and for other models with both, else "
    "none.")), "--sym", panel=DECODING)
ThresholdOpt = option(float | None, "--threshold", panel=DECODING,
                      help="Weight cut for --decoder threshold and relative.", show_default=str(THRESHOLD))
# align corpus's, which blends the student with its teacher (its --teacher says how that decodes)
BlendDecoderOpt = option(Registered(_decoders, lambda: (
    f"How a matrix becomes links; auto: {_AUTO_DECODER}; with the teacher, see --teacher.")), "--decoder",
                         panel=DECODING)
BlendThresholdOpt = option(float | None, "--threshold", panel=DECODING,
                           help="Weight cut for --decoder threshold and relative.",
                           show_default=f"{THRESHOLD}; with the teacher, see --teacher")
LayerOpt = option(str | None, "--layer", panel=DECODING, help=(
    "align (the alignment head of a model trained with --align-head), or a Transformer layer: index "
    "(negative from the end) or mean."), show_default="align if the model has the head, else -2")
HeadOpt = option(str, "--head", panel=DECODING, help="Transformer head: index or mean.")
ShiftOpt = option(int, "--shift", panel=DECODING,
                  help="1: read word t's attention where t is the decoder input (Shift-Att).")
ReadoutOpt = option(Registered(lambda: list(READOUTS), lambda: "What each matrix is read from: " + "; ".join(
    f"{r.name} ({r.help})" for r in READOUTS.values()) + "."), "--readout", panel=DECODING)
SmoothgradOpt = option(int, "--smoothgrad", panel=DECODING, help=(
    "--readout saliency: average over N copies of the source embeddings with Gaussian noise (SmoothGrad); "
    "0: none. Each copy costs one more saliency pass."))


def _layer_head(value: str | None, what: str) -> int | str | None:
    if value is None or value == "mean" or (what == "layer" and value == "align"):
        return value
    try:
        return int(value)
    except ValueError:
        choices = "an integer, 'mean' or 'align'" if what == "layer" else "an integer or 'mean'"
        raise OptionError(f"--{what} must be {choices}, not {value!r}") from None


# Whether and how the statistical teacher joins the student: align corpus, align sentence, plot sentence.
Teacher = choices("Teacher", TEACHER_CHOICES)
TeacherOpt = option(Teacher, "--teacher", panel=TEACHER_PANEL, help=(
    "Combine the attention with the statistical teacher's soft matrices, the teacher trained first (see "
    f"--teacher-corpus); auto: on for a model trained with --guide auto, where the teacher has at least "
    f"{TEACHER_MIN_PAIRS} pairs. Decoding then {TEACHER_DECODING.describe()}; from "
    f"{TEACHER_LARGE_PAIRS:,} pairs {TEACHER_DECODING_LARGE.describe()}; with --decoder threshold "
    f"below that {TEACHER_DECODING_FIXED.describe()}."))
TeacherCorpus = choices("TeacherCorpus", TEACHER_CORPUS_CHOICES)
TeacherCorpusOpt = option(TeacherCorpus, "--teacher-corpus", panel=TEACHER_PANEL, help=(
    "What the teacher trains on: aligned (the pairs being aligned), training (those and the model's "
    "training corpus, read again from the files train recorded), kept (the pairs being aligned, going on "
    "from what the teacher of train --guide auto learned, kept in the model directory); auto: training "
    f"where those files are unchanged and hold at most {TEACHER_CORPUS_MAX_PAIRS:,} pairs, else kept where "
    "the model directory keeps it, else aligned. A pair the training corpus holds is not added again; where "
    "it holds every pair being aligned, the teacher train kept is read for them."))
TeacherWeightOpt = option(float | None, "--teacher-weight", panel=TEACHER_PANEL,
                          help="The teacher's share of each combined matrix, 0-1.",
                          show_default="see --teacher")


def align_options(decoder, sym, threshold, layer, head, shift, *, device: str, resolve: bool = True,
                  reverse_model=None, src_lang=None, tgt_lang=None, teacher=None, teacher_corpus=None,
                  **more):
    """The :class:`~attnalign.nmt.options.AlignOptions` of the parsed decoding options and ``device``
    (``--device``), and of ``--teacher`` and ``--teacher-corpus`` where the command has them;
    ``more``: other fields, given (the rest keep AlignOptions' defaults); ``resolve``: the device named
    for torch (imports torch)."""
    if resolve:
        from ..nmt.device import resolve_device

        device = str(resolve_device(device))
    for name, value in (("teacher", teacher), ("teacher_corpus", teacher_corpus)):
        if value is not None:
            more[name] = value.value
    return AlignOptions(decoder=decoder, threshold=threshold, sym=sym,
                        layer=_layer_head(layer, "layer"), head=_layer_head(head, "head"), shift=shift,
                        device=device, reverse_model=None if reverse_model is None else str(reverse_model),
                        src_lang=src_lang, tgt_lang=tgt_lang, **more)


# The statistical teacher's options, with the help TeacherOptions declares: `align statistical`'s
# (--aligner, --sym, --prefix, --identical, --samplers, --seed) here; train's --guide-* are made from the
# same declarations (cli/train.py).
TeacherModel = choices("TeacherModel", TEACHER_MODELS)
TeacherSym = choices("TeacherSym", TEACHER_SYMS)


def _teacher(kind, flag: str, name: str, **kw):
    return option(kind, flag, panel=TEACHER_PANEL, help=flag_of(TeacherOptions, name).text(), **kw)


AlignerOpt = _teacher(TeacherModel, "--aligner", "model")
StatSymOpt = _teacher(TeacherSym, "--sym", "sym")
PrefixOpt = _teacher(int, "--prefix", "prefix", min=0)
IdenticalOpt = _teacher(float, "--identical", "identical", min=0.0)
SamplersOpt = _teacher(int, "--samplers", "samplers")
StatSeedOpt = _teacher(int, "--seed", "seed")
TEACHER_MODEL, TEACHER_SYM = TeacherModel(TEACHER.model), TeacherSym(TEACHER.sym)
