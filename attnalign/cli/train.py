"""``attnalign train``: train an attention NMT model into a model directory."""

from __future__ import annotations

import inspect
import sys
import typing
from dataclasses import MISSING, fields, replace
from pathlib import Path

import typer

from ..data.fileio import check_one_stdin
from ..dist import own_rank
from ..errors import OptionError
from ..flags import Flag, declared
from ..nmt.configs import NETWORKS
from ..statistical.options import TeacherOptions
from ..training.config_file import (
    PRESETS,
    chosen_preset,
    config_listing,
    layered_options,
    preset_flags,
    preset_values,
    read_config,
)
from ..training.options import (
    FLAT_NAMES,
    GPU_TABLES,
    LAYERS,
    LAYERS_FLAG,
    NETWORK_OPTIONS,
    SECTIONS,
    TrainOptions,
    flag,
)
from .common import (
    INPUT,
    MODEL,
    CorpusOpt,
    EncodingOpt,
    GoldBaseOpt,
    GoldFormatOpt,
    OptionalModelOpt,
    QuietOpt,
    Registered,
    ReverseGoldOpt,
    SrcOpt,
    TgtOpt,
    err,
    gold_options,
    handle_errors,
    interruption,
    option,
    out,
)
from .progress import RichTrainReporter
from .render import train_table


def _words(value, switch: str | None = None) -> str:
    """A value as --help says it: ``0.002``, ``translation`` / ``no-translation`` for a switch."""
    if isinstance(value, bool) and switch:
        return switch if value else f"no-{switch}"
    return f"{value:g}" if isinstance(value, float) else str(value)


def _preset_words(name: str, switch: str | None = None) -> str:
    """What the presets set an option to, on a CPU and on a CUDA GPU, for ``--help``: ``96 with
    --preset align or align-fast (256 on a CUDA GPU)``; empty where none sets it."""
    said: dict[tuple, list[str]] = {}
    for preset in PRESETS:
        values = preset_values(preset)
        gpu = {k: v for table in GPU_TABLES for k, v in values.get(table, {}).items()}
        if name in values or name in gpu:
            said.setdefault((values.get(name), gpu.get(name)), []).append(preset)
    parts = []
    for (cpu, gpu), names in said.items():
        on_gpu = f" ({_words(gpu, switch)} on a CUDA GPU)" if gpu is not None else ""
        parts.append(f"{_words(cpu, switch) if cpu is not None else 'as without it'} with --preset "
                     f"{' or '.join(names)}{on_gpu}")
    return "; ".join(parts)


def _network_default(name: str, switch: str | None) -> str:
    """A network option's default by network type: ``rnn 0.2, transformer 0.1``, or the one type's."""
    key = LAYERS[0] if name == "layers" else name  # --layers: both stacks, whose defaults are equal
    values = {t: f.default for t, cls in NETWORKS.items() for f in fields(cls) if f.name == key}
    if len(set(values.values())) == 1:
        return _words(next(iter(values.values())), switch)
    return ", ".join(f"{t} {_words(v, switch)}" for t, v in values.items())


def _declarations():
    """Every option ``train`` takes from the run's configuration: (flat name, its section, its
    :class:`Flag`, its field's type, its default (MISSING: the network type's)), section by section."""
    for section, cls in SECTIONS.items():
        hints = typing.get_type_hints(cls)
        for name, how in declared(cls).items():
            default = next(f.default for f in fields(cls) if f.name == name)
            yield name, section, how, hints[name], MISSING if name in NETWORK_OPTIONS else default
        if section == "network":
            yield "layers", section, LAYERS_FLAG, int, MISSING
        if section == "teacher":
            hints = typing.get_type_hints(TeacherOptions)
            for name, how in declared(TeacherOptions).items():
                guide = replace(how, help=f"--guide auto: {how.text()}")
                yield f"guide_{name}", section, guide, hints[name], getattr(TeacherOptions(), name)


def _parameter(name: str, section: str, how: Flag, hint, default) -> inspect.Parameter:
    """The command-line parameter of one declared option, in its section's help panel. An option a
    preset sets, or whose default is the network type's, defaults to None (the parameter's source says
    whether it was typed) and says its default in words."""
    flags = how.flag or flag(name)
    switch = flags.split("/")[0][2:] if "/" in flags else None
    kind = how.kind or next(k for k in (typing.get_args(hint) or (hint,)) if k is not type(None))
    preset = _preset_words(name, switch)
    if default is MISSING or preset:
        words = _network_default(name, switch) if default is MISSING else (
            how.shown if default is None else _words(default, switch))
        shown: str | bool = "; ".join(w for w in (words, preset) if w) or False
        default = None
    else:
        shown = how.shown or True
    if how.choices is not None:
        names = how.choices if callable(how.choices) else (lambda c=how.choices: list(c))
        kind, help_kw = Registered(names, how.text), {}
    else:
        kind, help_kw = (kind | None if default is None else kind), {"help": how.text()}
    annotation = option(kind, *flags.split("/") if switch is None else (flags,), panel=section.capitalize(),
                        show_default=shown, **help_kw)
    return inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)


def with_sections(fn):
    """``fn`` (taking ``**sections``) with a parameter for every option of the run's configuration, in
    a help panel per section named as its table, after its own options (its ``--quiet`` last, in the
    runtime panel), so that Typer makes them options of the command."""
    own = [p for p in inspect.signature(fn, eval_str=True).parameters.values()
           if p.kind is not inspect.Parameter.VAR_KEYWORD]
    last = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own if p.name == "quiet"]
    sections = [_parameter(*d) for d in _declarations()]
    fn.__signature__ = inspect.Signature([*(p for p in own if p.name != "quiet"), *sections, *last])
    return fn


PresetOpt = option(str | None, "--preset", panel=MODEL, help=(
    f"Named options (a file of attnalign/training/presets, in --config's form); others given beside it "
    f"override it. align: {preset_flags('align')} (the benchmarked "
    f"aligner); align-fast: the same with {preset_values('align-fast')['auto_epochs']} passes, for "
    "aligning the training corpus with align corpus's default teacher (its student alone is weaker)."))
ConfigOpt = option(Path | None, "--config", panel=MODEL, help=(
    "A TOML file of options: a table per section (" + ", ".join(SECTIONS) + "), each key an option's "
    "name without the dashes; a model directory's train.toml is one. Options typed beside it win; it "
    "wins over its preset (a top-level preset = NAME); a --preset typed beside it replaces that preset "
    "(the file's own options still apply over it)."))
PrintConfigOpt = option(bool, "--print-config", panel=MODEL, help=(
    "Print the complete configuration these options describe (every section, as --config reads it; the "
    "preset's and your values marked) and exit, reading no corpus: a file of your own to start from."))
ResumeOpt = option(bool, "--resume", panel=MODEL, help="Continue an interrupted run in --model.")
OverwriteOpt = option(bool, "--overwrite", panel=MODEL, help="Replace the model in --model.")
DevSrcOpt = option(Path | None, "--dev-src", panel=INPUT, help="Dev source text.")
DevTgtOpt = option(Path | None, "--dev-tgt", panel=INPUT, help="Dev target text.")
DevGoldOpt = option(Path | None, "--dev-gold", panel=INPUT, help="Dev gold alignment: select by dev AER.")


def train_options(ctx: typer.Context, preset: str | None, config: Path | None
                  ) -> tuple[TrainOptions, str | None, set[str]]:
    """The command line's TrainOptions: the options the user typed, over ``config``'s, over
    ``preset``'s (else the one the file names), over the defaults
    (:func:`~attnalign.training.config_file.layered_options`). An option left at its default overrides
    nothing; each is read by its flat name, its parameter's. With them the preset, and the names typed
    or set by the file (``--resume`` checks them against the run's)."""
    typed = set(typed_options(ctx))
    given = {k: str(v) if isinstance(v, Path) else v for k, v in ctx.params.items()
             if k in typed and k in FLAT_NAMES}
    if "direction" not in typed and ctx.params["reverse_init_from"] is not None:
        given["direction"] = "both"
    file_preset, from_file = read_config(config) if config is not None else (None, {})
    preset = chosen_preset(preset, file_preset, config)
    return layered_options(preset, from_file, given), preset, typed | set(from_file)


def typed_options(ctx: typer.Context) -> list[str]:
    """The parameters the user gave (on the command line or in the environment), not left at their
    defaults. Read by the source's name: Typer may carry a click of its own, whose enum is not click's."""
    sources = {name: ctx.get_parameter_source(name) for name in ctx.params}
    return [name for name, source in sources.items()
            if source is not None and source.name in ("COMMANDLINE", "ENVIRONMENT")]


def resume_hint(model: Path) -> str:
    """What an interrupted ``train`` prints: where it stands and how to go on."""
    from ..training.model_dir import run_config

    try:
        run_config(model)
    except Exception:  # interrupted before the run began: nothing to resume
        return "nothing was written; the model directory is as it was"
    return f"continue this run with: attnalign train --model {model} --resume"


@handle_errors
@with_sections
def train(
    ctx: typer.Context, model: OptionalModelOpt = None, preset: PresetOpt = None, config: ConfigOpt = None,
    print_config: PrintConfigOpt = False, resume: ResumeOpt = False, overwrite: OverwriteOpt = False,
    src: SrcOpt = None, tgt: TgtOpt = None, corpus: CorpusOpt = None, encoding: EncodingOpt = "utf-8",
    dev_src: DevSrcOpt = None, dev_tgt: DevTgtOpt = None, dev_gold: DevGoldOpt = None,
    gold_format: GoldFormatOpt = "auto", gold_one_based: GoldBaseOpt = None,
    reverse_gold: ReverseGoldOpt = False, quiet: QuietOpt = False, **sections,
) -> None:
    """Train an attention NMT model (one or both directions) into a model directory.

    Or fine-tune a pretrained Hugging Face model's cross-attention head on a guide (--init-from).

    Example: attnalign train --src sample_data/train.en --tgt sample_data/train.fr --model runs/sample
    """
    # ``sections``: the run's options (with_sections), read with their sources by train_options
    from ..workflows.train_files import train_files

    check_one_stdin({"--config": config, "--src": src, "--tgt": tgt, "--corpus": corpus, "--dev-src": dev_src,
                     "--dev-tgt": dev_tgt, "--dev-gold": dev_gold})
    options, preset, typed = train_options(ctx, preset, config)
    if print_config:
        options.check(has_guide_links=options.teacher.guide not in (None, "auto"))
        sys.stdout.write(config_listing(options, preset, typed))
        return
    if model is None:
        raise OptionError("train writes a model directory: give --model DIR",
                          hint="or --print-config to see the configuration without training")
    rank = own_rank()  # read before the process group exists: training chooses its backend
    try:
        summary = train_files(model, options, src=src, tgt=tgt, corpus=corpus, dev_src=dev_src,
                              dev_tgt=dev_tgt, dev_gold=dev_gold,
                              gold_options=gold_options(gold_format, gold_one_based, reverse_gold, encoding),
                              overwrite=overwrite, resume=resume,
                              reporter=None if quiet or rank else RichTrainReporter(err()),
                              typed=typed, preset=preset)
    except (KeyboardInterrupt, SystemError) as e:
        if interruption(e) is None:
            raise
        raise KeyboardInterrupt(resume_hint(model)) from None
    if rank == 0:  # under torchrun rank 0 reports
        out().print(train_table(model, summary))
