"""The package's shape: no import cycles, the layering, torch only where it is needed, and the
decoding registry as the one list of decoders that every consumer reads."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "attnalign"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports() -> dict[str, set[str]]:
    """Every module of the package -> the package modules it imports (at any depth of its code)."""
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        edges = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = package.split(".")
                if node.level:
                    base = base[: len(base) - node.level + 1]
                target = (".".join(base + ([node.module] if node.module else [])) if node.level
                          else node.module)
                for alias in node.names:  # `from . import x` may name a module
                    sub = f"{target}.{alias.name}"
                    edges.add(sub if sub in modules else target)
            elif isinstance(node, ast.Import):
                edges |= {a.name for a in node.names}
        graph[name] = {e for e in edges if e in modules and e != name}
    return graph


def test_no_import_cycle():
    graph = _imports()
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                pytest.fail("import cycle: " + " -> ".join(path[path.index(nxt):] + [node, nxt])
                            if nxt in path else f"import cycle through {node} -> {nxt}")
            if nxt not in state:
                visit(nxt, path + [node])
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [])


def test_no_import_cycle_between_packages():
    """The packages (attnalign's folders) form layers too: none imports a package that imports it back,
    through any of their modules (the package root ``attnalign`` only re-exports, lazily)."""
    def package(module: str) -> str:
        parts = module.split(".")
        return ".".join(parts[:2]) if len(parts) > 2 or (PACKAGE / parts[-1]).is_dir() else "attnalign"

    edges: dict[str, set[str]] = {}
    for module, targets in _imports().items():
        for target in targets:
            a, b = package(module), package(target)
            if a != b and "attnalign" not in (a, b):
                edges.setdefault(a, set()).add(b)

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        return any(n == goal or (n not in seen and reaches(n, goal, seen | {n}))
                   for n in edges.get(start, ()))

    cycles = sorted((a, b) for a, bs in edges.items() for b in bs if reaches(b, a, {b}))
    assert not cycles, f"package cycles: {cycles}"


def test_the_folders_follow_the_data_flow():
    """Files and decoding never reach into the model side; the student (nmt) and the teacher
    (statistical) never import each other, nor combine, which sits above both; the library never
    imports the CLI."""
    graph = _imports()
    for module, targets in graph.items():
        for target in targets:
            for low, high in (("data", "nmt"), ("data", "decoding"), ("data", "eval"), ("decoding", "nmt"),
                              ("eval", "nmt"), ("statistical", "nmt"), ("nmt", "statistical"),
                              ("nmt", "combine"), ("statistical", "combine"), ("decoding", "combine"),
                              ("nmt", "training"), ("nmt", "workflows"), ("training", "workflows")):
                wrong = module.startswith(f"attnalign.{low}") and target.startswith(f"attnalign.{high}")
                assert not wrong, f"{module} imports {target}"
            if not module.startswith(("attnalign.cli", "attnalign.__main__")):
                assert not target.startswith("attnalign.cli"), f"{module} imports {target}"


TORCH_FREE = """
import sys
from typer.testing import CliRunner
import attnalign, attnalign.data.alignments, attnalign.decoding, attnalign.eval.scoring, attnalign.statistical
from attnalign.cli import app
r = CliRunner().invoke(app, {args!r})
assert r.exit_code == 0, r.output
assert "torch" not in sys.modules, "torch was imported"
print("ok")
"""


@pytest.mark.parametrize("args", [["--help"], ["align", "--help"], ["train", "--help"],
                                  ["score", "sample_data/test.gold.naacl",
                                   "sample_data/test.diagonal.align"],
                                  ["align", "statistical", "--src", "sample_data/test.en", "--tgt",
                                   "sample_data/test.fr", "-o", "-", "--quiet"]])
def test_help_score_and_the_statistical_aligner_never_import_torch(args):
    r = subprocess.run([sys.executable, "-c", TORCH_FREE.format(args=args)], capture_output=True, text=True,
                       cwd=PACKAGE.parent)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]


def test_a_registered_decoder_reaches_the_report(models, tmp_path, monkeypatch):
    from attnalign.decoding import DECODERS, decode_matrix
    from attnalign.decoding.decoders import Decoder
    from attnalign.nmt.aligner import AlignOptions
    from attnalign.report import ReportRequest, report_files

    def first_word(m, eos, threshold):  # every target word to source word 0
        return sorted((0, j) for j in range(m.shape[0]))

    monkeypatch.setitem(DECODERS, "first-word", Decoder("first-word", first_word, "toy"))
    assert decode_matrix(np.ones((3, 2)), "first-word") == [(0, 0), (0, 1), (0, 2)]
    sample = PACKAGE.parent / "sample_data"
    report_files(ReportRequest(tmp_path / "r", sample / "test.gold.pharaoh", model=models / "rnn",
                               src=sample / "test.en", tgt=sample / "test.fr",
                               options=AlignOptions(device="cpu"), gallery=1))
    scores = pd.read_csv(tmp_path / "r" / "scores.csv")
    assert "first-word" in set(scores.decoder)


def test_teacher_defaults_are_stated_once():
    """The CLI's, the library's and training's teacher defaults are TeacherOptions'."""
    import inspect

    from attnalign.statistical import DEFAULT, align_statistical
    from attnalign.training import TrainOptions
    from attnalign.workflows.align_files import align_statistical_files

    params = inspect.signature(align_statistical).parameters
    assert (params["model"].default, params["sym"].default) == (DEFAULT.model, DEFAULT.sym)
    assert TrainOptions().teacher.aligner == DEFAULT
    params = inspect.signature(align_statistical_files).parameters
    assert tuple(params[k].default for k in ("model", "sym", "prefix", "identical")) == \
        (DEFAULT.model, DEFAULT.sym, DEFAULT.prefix, DEFAULT.identical)


def test_train_options_are_stated_once():
    # the train command's defaults and help are read from TrainOptions' sections and the preset files
    import inspect

    from typer.testing import CliRunner

    from attnalign.cli import app
    from attnalign.cli.train import train
    from attnalign.training.config_file import preset_values
    from attnalign.training.options import FLAT_NAMES, TrainOptions

    defaults = TrainOptions().flat()
    params = inspect.signature(train).parameters
    for name in set(params) & set(defaults):
        if params[name].default is not None:
            assert params[name].default == defaults[name], name
    assert {"hidden", "layers", "guide_model", "precision"} <= set(params) & set(FLAT_NAMES)
    r = CliRunner().invoke(app, ["train", "--help"], env={"COLUMNS": "300"})
    text = " ".join(r.output.split())
    assert f"--batch-tokens {preset_values('align')['batch_tokens']}" in text
    assert f"[default: ({defaults['batch_tokens']};" in text


def cli_options() -> dict[str, dict[str, str]]:
    """Every command's options (their flags) and arguments with their defaults, as ``--help`` lists them."""
    import enum

    import typer

    from attnalign.cli import app

    def walk(cmd, path):
        if hasattr(cmd, "commands"):
            for name, sub in sorted(cmd.commands.items()):
                yield from walk(sub, [*path, name])
            return
        params = {}
        for p in cmd.params:
            d = p.default.value if isinstance(p.default, enum.Enum) else p.default
            option = p.param_type_name == "option"
            key = " ".join(sorted(p.opts + p.secondary_opts)) if option else p.name.upper()
            params[key] = repr(list(d) if isinstance(d, list | tuple) else d)
        yield " ".join(path), params

    return dict(walk(typer.main.get_command(app), []))


def test_the_command_line_keeps_its_options_and_defaults():
    # option names are an interface: a new option is added to tests/data/cli_options.json, none renamed
    import json

    expected = json.loads((PACKAGE.parent / "tests" / "data" / "cli_options.json").read_text())
    assert cli_options() == expected


def test_every_declared_option_is_a_flag_of_train_in_its_sections_panel():
    # adding an option is one field: its declaration makes train's flag, in the panel of its section
    import typer

    from attnalign.cli import app
    from attnalign.flags import declared
    from attnalign.nmt.configs import NETWORKS
    from attnalign.statistical.options import TeacherOptions
    from attnalign.training.options import SECTIONS

    command = typer.main.get_command(app).commands["train"]
    panels = {p.name: p.rich_help_panel for p in command.params}
    owners = [*SECTIONS.items(), *(("network", cls) for cls in NETWORKS.values())]
    expected = {name: section.capitalize() for section, cls in owners for name in declared(cls)}
    expected |= {f"guide_{name}": "Teacher" for name in declared(TeacherOptions)}
    assert {name: panels.get(name) for name in expected} == expected
    assert panels["layers"] == "Network"


def test_help_text_is_never_read_as_markup():
    # the help is rendered as rich markup (its panels need it): a "[...]" in a help text would vanish
    import typer

    from attnalign.cli import app

    def params(cmd):
        if hasattr(cmd, "commands"):
            for sub in cmd.commands.values():
                yield from params(sub)
        else:
            yield from ((cmd.name, p) for p in cmd.params)

    for command, p in params(typer.main.get_command(app)):
        assert "[" not in (getattr(p, "help", None) or ""), (command, p.name)
        assert getattr(p, "rich_help_panel", None) or p.param_type_name == "argument" or p.name == "help", (
            command, p.name)


@pytest.mark.parametrize("command", ["", "train", "align", "align corpus", "align sentence",
                                     "align statistical", "plot", "plot sentence", "score", "report"])
def test_help_reads_at_80_columns(command):
    """In an 80-column terminal no help text is cut ("…"), no flag shows a value type and an argument's
    shows as an option's (PATH, not Typer's <path> or <list[Path]>)."""
    from typer.testing import CliRunner

    from attnalign.cli import app

    r = CliRunner().invoke(app, [*command.split(), "--help"], env={"COLUMNS": "80"})
    assert r.exit_code == 0, r.output
    assert max(map(len, r.output.splitlines())) <= 80
    assert "…" not in r.output and "<bool>" not in r.output, r.output
    assert "<path>" not in r.output and "<list[" not in r.output, r.output
    if command == "train":  # a choice of long names shows as NAME, its choices ending its help
        text = " ".join(r.output.replace("│", " ").split())
        assert "--guide-sym NAME" in text and "One of: intersection, union, grow-diag," in text


def test_docs_cli_md_lists_the_options_as_they_are(tmp_path):
    """docs/cli.md is the command line's own help (Typer writes it): a changed option changes it, and
    this test says how to write it again."""
    import subprocess
    import sys

    out = tmp_path / "cli.md"
    command = ["typer", "attnalign.cli.root", "utils", "docs", "--name", "attnalign", "--output"]
    subprocess.run([sys.executable, "-m", *command, str(out)], check=True, capture_output=True)
    assert out.read_text() == (PACKAGE.parent / "docs" / "cli.md").read_text(), (
        f"docs/cli.md is out of date: {' '.join(command)} docs/cli.md")
