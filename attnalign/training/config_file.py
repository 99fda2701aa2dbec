"""A run's configuration as a file: the presets shipped in ``presets/`` and ``attnalign train --config``.

A configuration file is TOML with one table per section of :class:`~.options.TrainOptions`:
``[data]``, ``[network]``, ``[schedule]`` (each with a ``.gpu`` table: what a CUDA GPU runs instead),
``[teacher]`` and ``[runtime]``. A key is the option's flat name, the command line's without dashes:
``batch_tokens``; the network's own options under ``[network]`` (``hidden``, ``layers``, ``ff_dim``);
the teacher's aligner's as ``guide_*`` under ``[teacher]``. A top-level ``preset = "NAME"`` starts
from that preset. A preset is such a file, naming only what it changes. What the user typed wins over
the file, the file over its preset, the preset over the defaults (:func:`preset_options`).

A model directory's ``train.toml`` is the run's effective configuration in this form
(:func:`config_text`): ``train --config`` of it trains the same model again.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import sys
import types
import typing
from dataclasses import asdict, fields
from pathlib import Path

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

from ..data.fileio import is_stdio
from ..errors import AttnAlignError, OptionError, path_text, warn
from ..nmt.configs import NETWORKS
from ..statistical.options import TeacherOptions, check_choices
from .options import (
    GPU_TABLES,
    NETWORK_OPTIONS,
    SECTIONS,
    WHERE,
    Network,
    Teacher,
    TrainOptions,
    expand_layers,
    flag,
    network_keys,
)

# the tables of what a CUDA GPU runs instead, and the flat name each is read into
GPU_TABLE_NAMES = {f"{section}.gpu": name for name, section in GPU_TABLES.items()}

PRESET_DIR = Path(__file__).parent / "presets"
PRESETS = tuple(sorted(p.stem for p in PRESET_DIR.glob("*.toml")))  # train --preset NAME
MAX_BYTES = 1 << 20  # a configuration file names a few dozen options


def _hints() -> dict[str, object]:
    """Each flat name's type, from its dataclass's annotation."""
    owners = {"aligner": TeacherOptions, "config": Network, **SECTIONS}
    hints = {name: typing.get_type_hints(owners[section])[key] for name, (section, key) in WHERE.items()}
    return {**hints, "layers": int}


HINTS = _hints()


def _allowed(table: str) -> set[str]:
    """The keys a table of a configuration file takes."""
    sections = {"data": {"data"}, "network": {"network", "config"}, "network.gpu": {"config"},
                "schedule": {"schedule"}, "schedule.gpu": {"schedule"}, "teacher": {"teacher", "aligner"},
                "runtime": {"runtime"}}[table]
    keys = {name for name, (section, _) in WHERE.items() if section in sections}
    return keys | ({"layers"} if "config" in sections else set())


def _fits(value, hint) -> bool:
    """Whether a TOML value has the type an option's annotation names (a whole number is a float)."""
    kinds = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
    if isinstance(value, bool):
        return bool in kinds
    return any(isinstance(value, k) or (k is float and isinstance(value, int)) for k in kinds
               if isinstance(k, type) and k is not bool and k is not type(None))


def _line(text: str, key: str, table: str | None = None) -> int | None:
    """The 1-based line where ``key`` is set (under the ``[table]`` header, where one is given), or its
    ``[key]`` table begins, in a TOML text (for an error's place)."""
    inside = table is None
    for n, line in enumerate(text.splitlines(), 1):
        header = re.match(r"\s*\[\s*([\w.]+)\s*\]", line)
        if header and table is not None:
            inside = header.group(1) == table
        if inside and re.match(rf"\s*({re.escape(key)}\s*=|\[\s*{re.escape(key)}\s*\])", line):
            return n
    return None


def read_config(path: str | os.PathLike) -> tuple[str | None, dict]:
    """A configuration file's preset (or None) and its options by flat name, each checked: one error
    naming the file, the line and the fix for a file that is not TOML, a table or key that is no
    option, or a value of the wrong type or out of range."""
    try:
        with contextlib.nullcontext(sys.stdin.buffer) if is_stdio(path) else open(path, "rb") as f:
            data = f.read(MAX_BYTES + 1)  # a device or an endless stream: no further than a file could be
        if len(data) > MAX_BYTES:
            raise AttnAlignError(f"the configuration file is larger than {MAX_BYTES // 1024} KiB: it is not "
                                 "one", path=path, hint="give a TOML file of options, such as a model "
                                                        "directory's train.toml")
        text = data.decode("utf-8-sig")  # a byte-order mark, as editors on Windows write, is no option
    except (OSError, UnicodeDecodeError) as e:
        why = "is not UTF-8 text" if isinstance(e, UnicodeDecodeError) else f"cannot be read ({e.strerror})"
        raise AttnAlignError(f"the configuration file {why}", path=path,
                             hint="give a TOML file of options, such as a model directory's train.toml"
                             ) from None
    try:
        doc = tomllib.loads(text)
    except RecursionError:  # arrays or tables nested thousands deep: no configuration is
        raise AttnAlignError("not a configuration file: its values are nested too deeply", path=path,
                             hint="write key = value lines under [section] headers, as a model "
                                  "directory's train.toml does") from None
    except tomllib.TOMLDecodeError as e:
        at = re.search(r"\(at line (\d+), column \d+\)", str(e))
        raise AttnAlignError(f"not a TOML file: {str(e).replace(at.group(0), '').strip() if at else e}",
                             path=path, line=int(at.group(1)) if at else None,
                             hint="write key = value lines under [section] headers, as a model "
                                  "directory's train.toml does") from None
    preset = doc.pop("preset", None)
    if preset is not None and preset not in PRESETS:
        raise OptionError(f"unknown preset {preset!r}; choose {', '.join(PRESETS)}", path=path,
                          line=_line(text, "preset"))
    values: dict = {}
    tables = [(name, doc[name]) for name in doc]
    for gpu_table in GPU_TABLE_NAMES:
        section = gpu_table.split(".")[0]
        if isinstance(doc.get(section), dict) and isinstance(doc[section].get("gpu"), dict):
            tables.append((gpu_table, doc[section].pop("gpu")))
    for table, entries in tables:
        if table not in SECTIONS and table not in GPU_TABLE_NAMES or not isinstance(entries, dict):
            raise OptionError(f"{table!r} is not a section of a run's configuration", path=path,
                              line=_line(text, table),
                              hint=f"the sections are {', '.join(SECTIONS)}, each a [table]")
        allowed = _allowed(table)
        for key, value in entries.items():
            if key not in allowed:
                raise OptionError(f"[{table}] has no option {key!r}", path=path, line=_line(text, key),
                                  hint=f"its options are {', '.join(sorted(allowed))}")
            if not _fits(value, HINTS[key]):
                raise OptionError(f"[{table}] {key} = {value!r} is not {_kind(HINTS[key])}", path=path,
                                  line=_line(text, key, table))
        if table in GPU_TABLE_NAMES:
            values[GPU_TABLE_NAMES[table]] = expand_layers(entries)
        else:
            values.update(expand_layers(entries))
    table = None
    try:  # each value on its own (the rules between options hold once the command line's are in)
        own = TrainOptions.of(**values)
        for name in SECTIONS:
            if name == "schedule":  # its own values, then [schedule.gpu]'s (Schedule.check) at its line
                own.schedule.on(False).check()
                table = "schedule.gpu"
            if name != "network":
                getattr(own, name).check()
                table = None
        aligner = own.teacher.aligner
        if {"guide_model", "guide_sym"} & set(values):
            check_choices(aligner.model, aligner.sym, flags="--guide-")
        table = "network"
        _check_network(values.get("model_type"), own.network.config)
        table = "network.gpu"  # what a GPU runs: checked now, not when a GPU is lent
        _check_network(values.get("model_type"), {**own.network.config, **own.network.gpu})
    except OptionError as e:
        found = {k: re.search(rf"{re.escape(flag(k))}(?![\w-])", e.message)
                 for k in (*values, *values.get("gpu_network", {}), *values.get("gpu_schedule", {}),
                           "layers")}
        named = sorted((k for k in found if found[k]), key=lambda k: found[k].start())  # the first it names
        key = next(iter(named), None) or next((k for k in values if k in e.message), None)
        line = key and (_line(text, key, table) or _line(text, key))
        raise OptionError(e.message, path=path, line=line, hint=e.hint) from None
    return preset, values


def _check_network(model_type: str | None, config: dict) -> None:
    """The ranges of a file's network options: as the network type it names has them, else as the
    first type that has every option given (the command line may still name the type)."""
    types = [model_type] if model_type in NETWORKS else [t for t in NETWORKS
                                                          if set(config) <= network_keys(t)]
    if types:  # an option the type lacks: "does not apply", from Network.typed
        Network(model_type=types[0]).with_config(config).typed().check(fits=False)


_KINDS = {int: "a whole number", float: "a number", str: "text in quotes", bool: "true or false",
          dict: "a table"}


def _kind(hint) -> str:
    """What a TOML value of an option's type is, in words: ``a whole number or text in quotes``."""
    kinds = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
    return " or ".join(_KINDS.get(k, getattr(k, "__name__", str(k))) for k in kinds if k is not type(None))


@functools.cache
def preset_values(name: str) -> dict:
    """A preset's options by flat name, over the preset it starts from."""
    if name not in PRESETS:
        raise OptionError(f"unknown preset {name!r}; choose {', '.join(PRESETS)}")
    base, own = read_config(PRESET_DIR / f"{name}.toml")
    return layered(preset_values(base) if base else {}, own)


def layered(below: dict, above: dict) -> dict:
    """Options by flat name, ``above``'s over ``below``'s. An option given above also wins over
    ``below``'s ``[network.gpu]`` or ``[schedule.gpu]`` entry for it."""
    above = expand_layers(above)
    merged = {**below, **above}
    for name in GPU_TABLES:
        gpu = {k: v for k, v in (below.get(name) or {}).items() if k not in above}
        merged[name] = {**gpu, **(above.get(name) or {})}
        if not merged[name]:
            del merged[name]
    return merged


def preset_options(name: str | None = None, config: str | os.PathLike | None = None, **given) -> TrainOptions:
    """TrainOptions from the defaults, a preset (``name``, else the one ``config`` names), a
    configuration file (``config``) and the options ``given`` by flat name (those not None), each over
    the one before."""
    file_preset, from_file = read_config(config) if config is not None else (None, {})
    return layered_options(chosen_preset(name, file_preset, config), from_file, given)


def chosen_preset(given: str | None, file_preset: str | None, config=None) -> str | None:
    """The preset a run starts from: ``--preset``'s (``given``) where it is given, as every option typed
    wins over the file's, else the one the ``config`` file names (``file_preset``); a warning where
    both name one and they differ. An empty or unknown name is refused, not taken for none."""
    if given is None:
        return file_preset
    if given not in PRESETS:
        raise OptionError(f"unknown preset {given!r}",
                          hint=f"choose {', '.join(PRESETS)}, or leave --preset out")
    if file_preset is not None and file_preset != given:
        warn(f"--preset {given} wins over the preset = {file_preset!r} of {path_text(config)}: the "
             f"file's own options apply over {given}'s")
    return given


def layered_options(name: str | None, from_file: dict, given: dict) -> TrainOptions:
    """The preset ``name``'s options (or none), under a file's (``from_file``, by flat name, as
    :func:`read_config` reads them), under ``given``'s (those not None)."""
    values = dict(preset_values(name)) if name else {}
    given = {k: v for k, v in given.items() if v is not None}
    # a preset describes its own network type's options: another type named over it takes only those
    # it has (its [network.gpu] entries are kept, and filtered as a GPU runs them)
    own_type = values.get("model_type", Network.model_type)
    model_type = {**from_file, **given}.get("model_type", own_type)
    if model_type != own_type:
        network = {*NETWORK_OPTIONS, "layers"}
        values = {k: v for k, v in values.items() if k not in network or k in network_keys(model_type)}
    # a preset's student without a decoder is its choice for a network that does not translate:
    # --translation given over it asks for the decoder back (--head-only given with it is refused)
    later = {**from_file, **given}
    if later.get("translation") and "head_only" not in later:
        values.pop("head_only", None)
    return TrainOptions.of(**layered(layered(values, from_file), given))


def preset_flags(name: str) -> str:
    """A preset as the options it sets, for ``--help``: ``--direction both --guide auto ...``."""
    values = dict(preset_values(name))
    gpu = {k: v for name in GPU_TABLES for k, v in values.pop(name, {}).items()}
    passes = values.pop("auto_epochs", None)

    def words(k: str, v) -> str:
        k = k.replace("_", "-")
        return f"--{k}" if v is True else f"--no-{k}" if v is False else f"--{k} {v:g}" \
            if isinstance(v, float) else f"--{k} {v}"

    text = " ".join(words(k, v) for k, v in values.items())
    text += f" and {passes} passes under --epochs auto" if passes else ""
    return text + (f"; on a CUDA GPU {' '.join(words(k, v) for k, v in gpu.items())}" if gpu else "")


def config_text(options: TrainOptions, network: dict | None = None, comment: str = "") -> str:
    """``options`` as a configuration file, every value written (``network``: the network's every
    option, as it ran; a value None, the default's, is left out); ``comment`` heads it."""
    import tomli_w

    sections = {}
    for name in SECTIONS:
        part = getattr(options, name)
        table = {k: v for k, v in asdict(part).items()
                 if v is not None and k not in ("gpu", "aligner") and k not in NETWORK_OPTIONS}
        if isinstance(part, Network):
            table |= network if network is not None else part.config
        if getattr(part, "gpu", None):
            table["gpu"] = dict(part.gpu)
        if isinstance(part, Teacher):
            table |= {f"guide_{k}": v for k, v in asdict(part.aligner).items()}
        sections[name] = table
    # a name that is not UTF-8 (surrogate escapes) cannot be TOML text, and its \xNN form would name
    # another file: left out, and said
    unwritable = sorted(k for table in sections.values() for k, v in table.items()
                        if isinstance(v, str) and path_text(v) != v)
    sections = {name: {k: v for k, v in table.items() if k not in unwritable}
                for name, table in sections.items()}
    if unwritable:
        comment += "\n" * bool(comment) + (f"Left out: {', '.join(unwritable)}, a file name that is not "
                                            "UTF-8 text; give it on the command line.")
    # TOML allows no control character but a tab in a comment: a file name's are shown as "?"
    lines = (re.sub(r"[\x00-\x08\x0a-\x1f\x7f]", "?", line) for line in comment.split("\n") if comment)
    head = "".join(f"# {line}".rstrip(" ") + "\n" for line in lines)
    return path_text(head) + ("\n" if head else "") + tomli_w.dumps(sections)


def config_listing(options: TrainOptions, preset: str | None = None, given: set[str] = frozenset()) -> str:
    """``train --print-config``: the complete configuration of a run (every section, every option,
    the network's own defaults included) as ``--config`` reads it, each value that the ``preset`` or
    the user (``given``: flat names, typed or from a file) set marked in a comment, and each option
    left unset (None, which TOML cannot write: no limit, none, or the library's choice) said in one."""
    network = asdict(options.network.typed())
    text = config_text(options, network, comment=(
        "The run these options describe (attnalign train --print-config). Give it back with --config FILE;\n"
        "options typed beside --config win over its values."))
    from_preset = expand_layers(dict(preset_values(preset))) if preset else {}
    gpu_preset = {f"{GPU_TABLES[name]}.gpu": from_preset.pop(name, {}) for name in GPU_TABLES}
    given = set(expand_layers(dict.fromkeys(given)))
    lines, table = [], None
    for line in text.splitlines():
        header = re.match(r"\[([\w.]+)\]$", line)
        table = header.group(1) if header else table
        key = re.match(r"(\w+) = ", line)
        name = key and key.group(1)
        if name and table in gpu_preset:
            line += "  # preset " + preset if name in gpu_preset[table] else ""
        elif name in given:
            line += "  # given"
        elif name in from_preset:
            line += f"  # preset {preset}"
        lines.append(line)
        if header and table in SECTIONS:
            part = getattr(options, table)
            unset = [f.name for f in fields(part) if f.name not in ("gpu", "aligner")
                     and f.name not in NETWORK_OPTIONS and getattr(part, f.name) is None]
            lines += [f"# {k}: not set" for k in unset]
    return "\n".join(lines) + "\n"
