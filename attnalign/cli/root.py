"""The Typer application: the root command and its commands (see :mod:`attnalign.cli`)."""

from __future__ import annotations

import io
import sys
from typing import Annotated

import typer

from .. import dist
from .._version import __version__
from ..errors import EXIT_INTERRUPTED, AttnAlignError
from . import align, plot
from .common import Command, Group
from .report import report
from .score import score
from .train import train

# What a command line that does not parse raises: click's ClickException, which Typer 0.29 carries as
# its own and derives from typer.TyperException (before, click's)
_USAGE_ERRORS = getattr(typer, "TyperException", None) or __import__("click").ClickException


class _PlainErrors(Group):
    """The root command: ``--help`` in Typer's rich panels, but a usage error shown as click shows it, one
    plain ``Error:`` line under the usage, like every other error of the tool (not a rich box). Typer
    renders errors itself only in standalone mode: the command runs without it, and this main renders."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except _USAGE_ERRORS as e:
            e.show()
            sys.exit(e.exit_code)
        except typer.Abort:
            print("Aborted!", file=sys.stderr)
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)


app = typer.Typer(
    name="attnalign",
    cls=_PlainErrors,
    help="Word alignment from the attention of NMT models: train, align, plot, score.",
    epilog="Exit codes: 0 done; 1 an input or the run failed (a file missing, unreadable or malformed, a "
           "model that does not load); 2 the command line is wrong (an unknown option, a value out of "
           "range, options that do not go together, an output that names an input); 130 interrupted.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)


def _version(value: bool) -> None:
    if value:
        print(f"attnalign {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.",
                             metavar="")
    ] = False,
) -> None:
    """Word alignment from the attention of NMT models."""


app.command(cls=Command)(score)
app.command(cls=Command)(train)
app.add_typer(align.app, name="align")
app.add_typer(plot.app, name="plot")
app.command(cls=Command)(report)


class _ClosedStdout(io.TextIOBase):
    """stdout for a process started with it closed (``>&-``): the first write is one error line."""

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def write(self, text: str) -> int:
        raise AttnAlignError("stdout is closed: the output has nowhere to go",
                             hint="redirect stdout to a file (> out.txt), or give -o FILE where the command "
                                  "has it")


def run() -> None:
    """The command line, once :func:`attnalign.cli.main` has its signal handlers in place."""
    if sys.stdout is None:
        sys.stdout = _ClosedStdout()
    try:
        app()
    except SystemExit as e:
        dist.end(e.code, now=e.code == EXIT_INTERRUPTED)  # under torchrun the process ends here
        raise
