"""The ``attnalign`` command line: thin Typer commands over library functions.

Data goes to stdout; messages, warnings and progress go to stderr. A user-fixable error
(:class:`~attnalign.errors.AttnAlignError`, an unreadable or unwritable file) prints one clear message
and exits with code 1, never a traceback.
"""

from __future__ import annotations

import functools
import json
import sys
import warnings
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from . import __version__
from .errors import AttnAlignError, AttnAlignWarning

app = typer.Typer(
    name="attnalign",
    help="Word alignment from the attention of NMT models: train, align, plot, score.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
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
        gold, pred, options, src=src, tgt=tgt, corpus=corpus,
        pred_format=pred_format.value, pred_one_based=pred_one_based, reverse_pred=reverse_pred,
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


def main() -> None:
    """Entry point of the ``attnalign`` console script."""
    app()
