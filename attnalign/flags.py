"""How an option of a run's configuration is given on the command line, declared beside its default.

A section's field (``training/options.py``, the network configs of ``nmt/configs.py``, the teacher's
``statistical/options.py``) declares itself with :func:`opt`: its default, its help, and where it needs
them its flag, its parse of command-line text and its choices. ``attnalign train``'s parameters, help
panels and shown defaults are made from these declarations (``cli/train.py``), and the options' readers
(``TrainOptions.of``, ``train --config``) parse with the same functions; a field declared without a help
is an option of configuration files only. Torch-free.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import MISSING, dataclass, field, fields
from typing import Any

KEY = "attnalign.flag"  # the field metadata's key


@dataclass(frozen=True)
class Flag:
    """An option's command-line form. ``help``: text, or a function that writes it when the command runs
    (a registry's choices). ``flag``: the flag(s), where they are not ``--name`` (``--x/--no-x`` for a
    switch that a preset may set either way). ``parse``: command-line or file text -> value, where the
    value is not the field's type as given. ``kind``: the command line's type where it is not the
    field's (``str`` for what ``parse`` reads). ``choices``: the names the value is one of, or a function
    returning them (a registry, read when the command runs). ``shown``: the default in words, where the
    default value does not say it (None: no limit, a per-type default)."""

    help: str | Callable[[], str]
    flag: str | None = None
    parse: Callable[[Any], Any] | None = None
    kind: Any = None
    choices: tuple[str, ...] | Callable[[], Any] | None = None
    shown: str | None = None

    def text(self) -> str:
        return self.help() if callable(self.help) else self.help


def opt(default: Any = MISSING, help: str | Callable[[], str] | None = None, *, factory: Any = MISSING,
        **how: Any):
    """A dataclass field with its default (or ``factory``) and, given a ``help``, its command-line form
    (:class:`Flag`'s other fields by keyword)."""
    metadata = {KEY: Flag(help, **how)} if help is not None else {}
    return field(default=default, default_factory=factory, metadata=metadata)


def flag_of(cls, name: str) -> Flag | None:
    """The command-line form ``cls``'s field ``name`` declares (None: a file's option only)."""
    return next((f.metadata.get(KEY) for f in fields(cls) if f.name == name), None)


def declared(cls) -> dict[str, Flag]:
    """``cls``'s fields that the command line gives, by name, in the order they are declared."""
    return {f.name: f.metadata[KEY] for f in fields(cls) if KEY in f.metadata}
