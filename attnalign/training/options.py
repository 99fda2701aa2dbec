"""Training options: a run's configuration as data, in sections, each with its defaults and its check.

:class:`TrainOptions` is made of :class:`Data`, :class:`Network`, :class:`Schedule`, :class:`Teacher`
(the :class:`~attnalign.statistical.TeacherOptions` of ``--guide auto`` among them) and
:class:`Runtime`; every default is stated once, in its section, and the command line's help reads it
there. Each option also has a flat name, the command line's without dashes (``batch_tokens``; the
teacher's aligner's as ``guide_*``): :meth:`TrainOptions.of` builds options from flat names, and a
``train --config`` file or a preset (training/config_file.py) holds them under their section's table.
A model directory's ``config.json`` keeps :meth:`TrainOptions.record` (so that ``--resume`` restarts
exactly the run it resumes; :meth:`TrainOptions.from_saved` reads old directories too) and its
``train.toml`` the same options as a ``--config`` file.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import asdict, dataclass, field, fields, make_dataclass, replace
from pathlib import Path

from ..errors import OptionError, require
from ..flags import KEY, Flag, declared, opt
from ..nmt.configs import NETWORKS, RNNConfig
from ..nmt.options import (
    DEVICE_HELP,
    MAX_BATCH_TOKENS,
    MAX_LENGTH,
    SUBWORD_TYPES,
    THREADS_HELP,
    check_threads,
)
from ..statistical.options import DEFAULT as TEACHER
from ..statistical.options import TeacherOptions

DIRECTIONS = ("forward", "reverse")
DIRECTION_CHOICES = (*DIRECTIONS, "both")  # --direction
PARALLEL_CHOICES = ("auto", "on", "off")  # --parallel-directions
# --parallel-directions auto on a CUDA GPU starts processes for corpora of this many pairs or more: below,
# the few seconds each process takes to start weigh more than what the processes save (parallel.wanted)
PARALLEL_MIN_PAIRS = 1000
EPOCHS = 8  # --epochs auto: the passes over a corpus of up to EPOCHS_FULL_PAIRS pairs
# up to here a corpus gets the full EPOCHS (measured at 40,447 pairs: docs/benchmarks.md, "Scale:
# `--preset align`")
EPOCHS_FULL_PAIRS = 40_000
MAX_SELF_TRAIN = 5  # --self-train rounds
PRECISIONS = ("fp32", "bf16")  # --precision: the arithmetic of training (bf16: torch.autocast)
# --batch-tokens auto: batches, learning rate and passes sized for the device (TrainOptions.for_device).
# On a CPU the preset's 2,000 tokens, at the rate --lr gives. On a CUDA GPU, batches of about
# 1 / GPU_UPDATES_PER_PASS of the corpus's words, between CPU_BATCH_TOKENS and GPU_BATCH_TOKENS
# (less where GPU_MEMORY_SHARE of the GPU's memory holds fewer), the rate scaled by the square root of
# the batch's size against CPU_BATCH_TOKENS, and under --epochs auto the full passes up to
# EPOCHS_FULL_PAIRS_GPU pairs (docs/benchmarks.md, "The student on a GPU").
CPU_BATCH_TOKENS = 2000
GPU_BATCH_TOKENS = 16_000
GPU_UPDATES_PER_PASS = 200
GPU_MEMORY_SHARE = 0.25
GPU_BYTES_PER_TOKEN = 160 * 1024  # peak GPU memory per padded batch token, the larger network's
EPOCHS_FULL_PAIRS_GPU = 400_000


def epochs_for(epochs: int | float | str, pairs: int, full: int = EPOCHS,
               full_pairs: int = EPOCHS_FULL_PAIRS) -> float:
    """The passes over ``pairs`` training pairs that ``--epochs`` asks for: the number given, or for
    ``auto`` ``full`` passes up to ``full_pairs`` pairs and ``full`` x sqrt(``full_pairs`` / pairs)
    beyond, so that the updates grow as the square root of the corpus, not in proportion to it."""
    if epochs != "auto":
        return float(epochs)
    return full * min(1.0, math.sqrt(full_pairs / max(pairs, 1)))


def parse_batch_tokens(text: str | int | None) -> int | str | None:
    """``--batch-tokens`` as given: a whole number of padded tokens, or ``auto``."""
    if text is None or isinstance(text, int) or text == "auto":
        return text
    if isinstance(text, str):  # not a list or a float of a hand-written call
        with contextlib.suppress(ValueError):
            return int(text)
    raise OptionError(f"bad --batch-tokens {text!r}",
                      hint="give padded tokens per batch (2000) or auto (sized for the device)")


def gpu_batch_tokens(corpus_tokens: int, memory: int) -> int:
    """``--batch-tokens auto`` on a CUDA GPU of ``memory`` bytes for a corpus of ``corpus_tokens``
    words (the longer side of each pair): about GPU_UPDATES_PER_PASS updates a pass, within
    CPU_BATCH_TOKENS..GPU_BATCH_TOKENS and the memory share (at least 256 tokens, a few pairs)."""
    fits = int(GPU_MEMORY_SHARE * memory / GPU_BYTES_PER_TOKEN)
    wanted = max(CPU_BATCH_TOKENS, min(GPU_BATCH_TOKENS, corpus_tokens // GPU_UPDATES_PER_PASS))
    return max(256, min(wanted, fits))


def parse_epochs(text: str | int | float) -> int | float | str:
    """``--epochs`` as given on the command line: ``auto``, a whole number or a fraction (``1.5``)."""
    if isinstance(text, int | float) or text == "auto":
        return text
    try:
        value = float(text)
    except ValueError:
        raise OptionError(f"bad --epochs {text!r}", hint="give a number of passes (8, 1.5) or auto") from None
    return int(value) if value.is_integer() else value


# --lr left out: the peak learning rate of each network type
BASE_LR = {"rnn": 1e-3, "transformer": 5e-4}
WARMUP_SHARE = 0.1  # --warmup takes at most this share of a run's updates


def warmup_steps(warmup: int, total: int) -> int:
    """The warm-up of a run of ``total`` updates: ``--warmup`` steps, at most WARMUP_SHARE of them."""
    return min(warmup, int(total * WARMUP_SHARE))


NO_GUIDE = "none"  # --guide none: no guide, where a preset (or a file) names one


def parse_guide(text: str | None) -> str | None:
    """``--guide`` as given: ``auto``, a file of links, or ``none`` (None: no guide)."""
    return None if text == NO_GUIDE else text


def flag(name: str) -> str:
    """An option's command-line flag from its name: ``batch_tokens`` -> ``--batch-tokens``."""
    return "--" + name.replace("_", "-")


def said(name: str) -> str:
    """A network option as an error names it: its flag, ``--[no-]x`` for a switch."""
    how = NETWORK_OPTIONS[name].metadata.get(KEY)
    return f"--[no-]{name.replace('_', '-')}" if how is not None and "/" in (how.flag or "") else flag(name)


@dataclass(frozen=True)
class Data:
    """``[data]``: what the networks read of each sentence."""

    lowercase: bool = opt(False, "Lower-case the text.")
    min_freq: int = opt(1, "Words seen fewer times are <unk>.")
    max_vocab: int | None = opt(None, "Largest vocabulary per side.")
    subword: int | None = opt(None, "Sentencepiece vocabulary size per side; 0: whole words.",
                              shown="whole words")
    subword_type: str = opt("unigram", f"{' or '.join(SUBWORD_TYPES)}.")
    max_length: int = opt(MAX_LENGTH, (  # model tokens per side (EOS included)
        "Training pairs longer than this many model tokens on either side are left out, with a warning."))

    def check(self) -> None:
        if self.subword is not None and (not isinstance(self.subword, int) or self.subword < 0):
            raise OptionError(f"bad --subword {self.subword}",
                              hint="give 0 (whole words) or a vocabulary size per side, e.g. 4000")
        require("--min-freq", self.min_freq, low=1)
        require("--max-length", self.max_length, low=1)
        require("--max-vocab", self.max_vocab, low=1, optional=True)
        require("--subword-type", self.subword_type, choices=SUBWORD_TYPES)


def _network_options() -> dict:
    """Every network type's options (nmt/configs.py), each once: name -> the field that declares it
    first (its type, and its command-line form where it has one)."""
    options: dict = {}
    for cls in NETWORKS.values():
        for f in fields(cls):
            options.setdefault(f.name, f)
    return options


NETWORK_OPTIONS = _network_options()


@dataclass(frozen=True)
class _Network:
    """``[network]``: which networks, in which directions, and (the fields :class:`Network` adds, one
    for each of :data:`NETWORK_OPTIONS`, typed as its network config declares it) the network's own
    options, None where not given: the type's default (:meth:`typed`); :attr:`config` holds those
    given. ``gpu``: options a run on a CUDA GPU takes instead (a preset's ``[network.gpu]``;
    :meth:`TrainOptions.for_device` applies them, then empties this, so that the record holds the
    network that ran). ``init_from``: fine-tune a pretrained Hugging Face model instead
    (training/finetune.py)."""

    model_type: str = opt("rnn", "Network.", choices=tuple(NETWORKS))
    direction: str = opt("forward", "Train src->tgt, tgt->src or both.", choices=DIRECTION_CHOICES)
    gpu: dict = field(default_factory=dict)
    init_from: str | None = opt(None, (  # the source-to-target model
        "Fine-tune this pretrained Hugging Face translation model (a save_pretrained directory or hf:NAME) "
        "instead of training a new network: one cross-attention head learns the guide (needs --guide)."),
        kind=Path)
    reverse_init_from: str | None = opt(None, "With --init-from and --direction both: the target-to-source "
                                              "model.", kind=Path)
    src_lang: str | None = opt(None, "Multilingual Hugging Face models (M2M-100, NLLB): the source "
                                     "language code.")
    tgt_lang: str | None = opt(None, "Multilingual Hugging Face models: the target language code.")

    @property
    def config(self) -> dict:
        """The network options given, by name (those not None)."""
        return {k: getattr(self, k) for k in NETWORK_OPTIONS if getattr(self, k) is not None}

    def with_config(self, config: dict):
        """This network with exactly ``config``'s network options given (the others None)."""
        unknown = sorted(set(config) - set(NETWORK_OPTIONS))
        if unknown:
            raise OptionError(f"no network has the option{'s' * (len(unknown) > 1)} {', '.join(unknown)}")
        return replace(self, **{**dict.fromkeys(NETWORK_OPTIONS), **config})

    def typed(self):
        """The network's ``RNNConfig`` / ``TransformerConfig`` with every default filled in."""
        require("--model-type", self.model_type, choices=tuple(NETWORKS))
        wrong = sorted(set(self.config) - network_keys(self.model_type))
        if wrong:
            names = [said(w) for w in wrong]
            raise OptionError(f"{', '.join(names)} {'does' if len(names) == 1 else 'do'} not apply to "
                              f"--model-type {self.model_type}")
        return NETWORKS[self.model_type](**self.config)

    def check(self):
        """Validate; return the typed network config."""
        require("--direction", self.direction, choices=DIRECTION_CHOICES)
        if self.config.get("input_feeding") and self.config.get("decoder_style") == "bahdanau":
            raise OptionError("--input-feeding is Luong's decoder's: Bahdanau's reads the context as its "
                              "input", hint="leave out --input-feeding, or give --decoder-style luong")
        window = self.config.get("window", RNNConfig.window)  # a file of every option names the default
        if window != RNNConfig.window and self.config.get("attention_span", "global") == "global":
            raise OptionError("--window sets a local attention's window",
                              hint="give --attention-span local-m or local-p with it")
        return self.typed().check()

    @property
    def directions(self) -> list[str]:
        return list(DIRECTIONS) if self.direction == "both" else [self.direction]

    def on(self, cuda: bool) -> Network:
        """The network a device runs: on a CUDA GPU with ``gpu``'s options (those the type has); the
        ``gpu`` entries emptied everywhere."""
        if not self.gpu:
            return self
        wanted = {k: v for k, v in self.gpu.items() if k in network_keys(self.model_type)} if cuda else {}
        return replace(self, **wanted, gpu={})


Network = make_dataclass(
    "Network", [(name, f"{f.type} | None", field(default=None, metadata=f.metadata))
                for name, f in NETWORK_OPTIONS.items()], bases=(_Network,), frozen=True)
Network.__module__, Network.__doc__ = __name__, _Network.__doc__


def network_keys(model_type: str) -> set[str]:
    """The options of a network type (none for an unknown one)."""
    return {f.name for f in fields(NETWORKS[model_type])} if model_type in NETWORKS else set()


@dataclass(frozen=True)
class Schedule:
    """``[schedule]``: how long and how fast the networks learn. ``gpu``: options a run on a CUDA GPU
    takes instead (a preset's ``[schedule.gpu]``, applied as ``[network.gpu]`` is: :meth:`on`)."""

    epochs: int | float | str = opt("auto", (  # epochs_for
        f"Passes over the training data: a number (1.5 ends halfway through the second) or auto: "
        f"{EPOCHS} for up to {EPOCHS_FULL_PAIRS:,} pairs, {EPOCHS} x sqrt({EPOCHS_FULL_PAIRS:,} / pairs) "
        f"for more (a preset may set other passes: --print-config shows them)."),
        parse=parse_epochs, kind=str)
    auto_epochs: int = EPOCHS  # the passes "auto" makes over a corpus of up to auto_full_pairs pairs
    auto_full_pairs: int = EPOCHS_FULL_PAIRS
    max_steps: int | None = opt(None, "Stop after this many updates.")
    batch_tokens: int | str = opt(1000, (  # TrainOptions.for_device sizes "auto"
        f"Padded tokens per batch, or auto: {CPU_BATCH_TOKENS:,} on a CPU; on a CUDA GPU a "
        f"{GPU_UPDATES_PER_PASS}th of the corpus's words, {CPU_BATCH_TOKENS:,} to {GPU_BATCH_TOKENS:,}, at "
        f"--lr x sqrt(tokens / {CPU_BATCH_TOKENS:,}), and --epochs auto's full passes up to "
        f"{EPOCHS_FULL_PAIRS_GPU:,} pairs."), parse=parse_batch_tokens, kind=str)
    lr: float | None = opt(None, "Peak learning rate.",  # None: the network type's BASE_LR
                           shown=", ".join(f"{k} {v:g}" for k, v in BASE_LR.items()))
    warmup: int = opt(200, f"Warm-up steps (at most {WARMUP_SHARE:.0%} of training).")
    clip: float = opt(1.0, "Gradient norm clipping.")
    label_smoothing: float = opt(0.1, "Label smoothing of the NMT loss.")
    seed: int = opt(1, "Same seed, data and device: same model.")
    gpu: dict = field(default_factory=dict)

    def on(self, cuda: bool) -> Schedule:
        """The schedule a device runs: on a CUDA GPU with ``gpu``'s options; ``gpu`` emptied everywhere."""
        return replace(self, **(self.gpu if cuda else {}), gpu={}) if self.gpu else self

    def check(self) -> None:
        if self.gpu:  # what a GPU runs: checked now, not when a GPU is lent
            wrong = sorted(set(self.gpu) - {f.name for f in fields(Schedule)} - {"gpu"})
            if wrong:
                raise OptionError(f"[schedule.gpu] has no option {', '.join(map(repr, wrong))}")
            self.on(True).check()
        if self.epochs != "auto":
            require("--epochs", parse_epochs(self.epochs), low=0, low_open=True, high=10**6)
        require("auto_epochs", self.auto_epochs, low=1, high=10**6)
        require("auto_full_pairs", self.auto_full_pairs, low=1)
        if self.batch_tokens != "auto":
            require("--batch-tokens", self.batch_tokens, low=1, high=MAX_BATCH_TOKENS)
        require("--max-steps", self.max_steps, low=1, optional=True)
        require("--lr", self.lr, low=0, low_open=True, high=1, optional=True)  # Adam's steps: 1e-4 to 1e-2
        require("--warmup", self.warmup, low=0)
        require("--clip", self.clip, low=0, low_open=True)
        require("--label-smoothing", self.label_smoothing, low=0, high=1, high_open=True)
        require("--seed", self.seed, low=0, high=2**32 - 1)


@dataclass(frozen=True)
class Teacher:
    """``[teacher]``: guided alignment. ``guide``: ``auto`` (the built-in statistical aligner,
    ``aligner``: the ``--guide-*`` options) or a file of links; ``self_train`` rounds after the
    teacher-guided one (training/loop.py), each going on from the round before for
    ``self_train_epochs`` passes where that is given, else trained from scratch."""

    guide: str | None = opt(None, (
        "Guided alignment: 'auto' (the built-in statistical aligner, see --guide-model and --guide-sym), a "
        "Pharaoh file of links for the training corpus, or 'none' (no guide, where a preset names one; "
        "give ./none for a file of that name)."), parse=parse_guide)
    guide_weight: float = opt(1.0, "Weight of the guide loss.")
    self_train: int = opt(0, (
        "Rounds of self-training after the teacher-guided one: the student trained again (from scratch, or "
        "see --self-train-epochs), guided by the links align corpus writes with the last round's model and "
        "its teacher (needs --guide auto; each round costs a training)."))
    self_train_epochs: int | float | None = opt(None, (
        "With --self-train: each round goes on from the last round's model for this many passes (1.5 ends "
        "halfway through the second) instead of training a new student for --epochs."), kind=float)
    aligner: TeacherOptions = TEACHER

    def check(self) -> None:
        require("--guide-weight", self.guide_weight, low=0)
        require("--self-train", self.self_train, low=0, high=MAX_SELF_TRAIN)
        require("--self-train-epochs", self.self_train_epochs, low=0, low_open=True, high=10**6,
                optional=True)

    def check_together(self, has_guide_links: bool = False) -> None:
        """The rules between the teacher's options."""
        if self.self_train_epochs is not None and not self.self_train:
            raise OptionError("--self-train-epochs sets the passes of self-training rounds: there are none",
                              hint="add --self-train N, or leave --self-train-epochs out")
        if self.guide != "auto" and self.aligner != TEACHER:  # they would do nothing
            flags = [flag(f"guide_{f.name}") for f in fields(TeacherOptions)
                     if getattr(self.aligner, f.name) != getattr(TEACHER, f.name)]
            raise OptionError(f"{', '.join(flags)} set{'s' if len(flags) == 1 else ''} the built-in "
                              "teacher of --guide auto, which this run does not use",
                              hint="add --guide auto, or leave them out")
        if self.guide == "auto" and not has_guide_links:
            self.aligner.check(flags="--guide-")


@dataclass(frozen=True)
class Runtime:
    """``[runtime]``: where and how the run computes. A run's result does not depend on ``threads``
    or ``save_every``."""

    device: str = opt("auto", DEVICE_HELP)
    threads: int | None = opt(None, THREADS_HELP)
    precision: str = opt("fp32", (  # torch.autocast; docs/benchmarks.md says why fp32
        "Arithmetic of training: fp32, or bf16 (the network's products in bfloat16 under autocast)."))
    parallel_directions: str = opt("auto", (  # training/parallel.py
        "auto, on or off: with --direction both, train the two directions at once, each in a process of "
        f"its own with half of --threads (auto: for {PARALLEL_MIN_PAIRS:,} pairs or more on a CUDA GPU, "
        "which both processes share, or on a CPU with 2 threads or more; not under torchrun)."))
    save_every: int | None = opt(None, "Resumable checkpoint every N steps.")  # inside an epoch

    def check(self) -> None:
        require("--precision", self.precision, choices=PRECISIONS)
        require("--parallel-directions", self.parallel_directions, choices=PARALLEL_CHOICES)
        check_threads(self.threads)
        require("--save-every", self.save_every, low=1, optional=True)


SECTIONS = {"data": Data, "network": Network, "schedule": Schedule, "teacher": Teacher, "runtime": Runtime}
# the network options the command line gives as one: --layers sets both stacks
LAYERS = ("enc_layers", "dec_layers")
LAYERS_FLAG = Flag("Encoder and decoder layers.")


def expand_layers(flat: dict) -> dict:
    """Options by flat name with ``layers`` given as both stacks' (an own ``enc_layers`` or
    ``dec_layers`` wins)."""
    if "layers" not in flat:
        return flat
    flat = dict(flat)
    layers = flat.pop("layers")
    return {**dict.fromkeys(LAYERS, layers), **flat}


def _where() -> dict[str, tuple[str, str]]:
    """Each flat option name (the command line's, without dashes) -> its section and field; the
    teacher's aligner's as ``guide_*``."""
    parts = [(f.name, (section, f.name)) for section, cls in SECTIONS.items() for f in fields(cls)
             if (section, f.name) not in {("network", "gpu"), ("schedule", "gpu"), ("teacher", "aligner")}
             and not (section == "network" and f.name in NETWORK_OPTIONS)]
    parts += [(f"guide_{f.name}", ("aligner", f.name)) for f in fields(TeacherOptions)]
    parts += [(k, ("config", k)) for k in NETWORK_OPTIONS]
    names = [name for name, _ in parts]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:  # a name in two places would be read from one of them only
        raise AssertionError(f"training options named twice: {twice}")
    return dict(parts)


WHERE = _where()


def _parsers() -> dict:
    """Each flat name's parse of what the command line (or a hand-written call) gives, where its field
    declares one."""
    owners = [*SECTIONS.items(), ("guide_", TeacherOptions)]
    return {(f"guide_{name}" if section == "guide_" else name): how.parse for section, cls in owners
            for name, how in declared(cls).items() if how.parse is not None}


PARSED = _parsers()
# each section's options a CUDA GPU runs instead, by flat name: [network.gpu], [schedule.gpu]
GPU_TABLES = {"gpu_network": "network", "gpu_schedule": "schedule"}
FLAT_NAMES = (*WHERE, "layers", *GPU_TABLES)


@dataclass(frozen=True)
class TrainOptions:
    """Everything that determines a training run besides the data, in sections (``train --config``'s
    TOML file has one table each; training/config_file.py). :meth:`of` builds one from flat names,
    the command line's; :meth:`record` is ``config.json``'s ``train_options`` (flat), which
    :meth:`from_saved` reads back, old directories' too."""

    data: Data = field(default_factory=Data)
    network: Network = field(default_factory=Network)
    schedule: Schedule = field(default_factory=Schedule)
    teacher: Teacher = field(default_factory=Teacher)
    runtime: Runtime = field(default_factory=Runtime)

    @classmethod
    def of(cls, **flat) -> TrainOptions:
        """The defaults with options given by their flat names (``epochs=2``, ``hidden=64``,
        ``layers=2``, ``guide_model=...``, ``gpu_network={...}``, ``gpu_schedule={...}``); None leaves
        the default."""
        return cls().updated(**flat)

    def updated(self, **flat) -> TrainOptions:
        """These options with those given by flat name changed (network options merged)."""
        unknown = sorted(set(flat) - set(FLAT_NAMES))
        if unknown:
            raise OptionError(f"unknown training option{'s' if len(unknown) > 1 else ''} "
                              f"{', '.join(unknown)}", hint="see attnalign train --help")
        given = expand_layers({k: PARSED.get(k, lambda v: v)(v) for k, v in flat.items() if v is not None})
        gpu = dict(given.pop("gpu_network", self.network.gpu))
        gpu_schedule = dict(given.pop("gpu_schedule", self.schedule.gpu))
        parts: dict[str, dict] = {}
        for name, value in given.items():
            section, key = WHERE[name]
            parts.setdefault(section, {})[key] = value
        network = replace(self.network, **parts.pop("config", {}), gpu=gpu)
        teacher = replace(self.teacher, aligner=replace(self.teacher.aligner, **parts.pop("aligner", {})))
        own = {"network": network, "teacher": teacher, "schedule": replace(self.schedule, gpu=gpu_schedule)}
        return TrainOptions(**{name: replace(own.get(name, getattr(self, name)), **parts.get(name, {}))
                               for name in SECTIONS})

    @property
    def directions(self) -> list[str]:
        return self.network.directions

    @property
    def rounds_go_on(self) -> bool:
        """Each self-training round goes on from the last round's weights (``self_train_epochs``)."""
        return self.teacher.self_train_epochs is not None

    @property
    def base_lr(self) -> float:
        return self.schedule.lr or BASE_LR.get(self.network.model_type, BASE_LR["rnn"])

    def passes(self, pairs: int) -> float:
        """The passes over ``pairs`` training pairs this run makes (see :func:`epochs_for`)."""
        s = self.schedule
        return epochs_for(s.epochs, pairs, s.auto_epochs, s.auto_full_pairs)

    def total_steps(self, per_epoch: int, pairs: int, going_on: bool = False) -> int:
        """The updates of a run over ``pairs`` pairs in ``per_epoch`` batches an epoch: its passes'
        worth (at least one; ``going_on``: a self-training round that goes on from the round before,
        ``self_train_epochs``' worth), at most ``max_steps``."""
        passes = float(self.teacher.self_train_epochs) if going_on else self.passes(pairs)
        total = max(1, round(per_epoch * passes))
        return total if self.schedule.max_steps is None else min(self.schedule.max_steps, total)

    def check(self, has_guide_links: bool = False):
        """Validate everything before any work (an OptionError names the option): each section's
        values, then the rules between them; return the typed network config."""
        for name in SECTIONS:
            if name != "network":
                getattr(self, name).check()
        network, teacher = self.network.check(), self.teacher
        teacher.check_together(has_guide_links)
        if self.runtime.precision != "fp32" and self.network.init_from is not None:
            raise OptionError("--precision bf16 trains attnalign's own networks; --init-from fine-tunes a "
                              "pretrained model in its own precision", hint="leave --precision out")
        if teacher.self_train and (teacher.guide != "auto" or self.network.init_from is not None):
            raise OptionError("--self-train learns from a model and its built-in teacher",
                              hint="train with --guide auto (as --preset align does), not --guide FILE "
                                   "or --init-from")
        if network.align_head and not has_guide_links and teacher.guide is None:
            raise OptionError("the alignment head learns from a guide alignment only",
                              hint="add --guide auto (or --guide FILE), or leave out --align-head")
        return network

    def for_device(self, device_type: str, corpus_tokens: int, memory: int | None = None) -> TrainOptions:
        """The options as a device of type ``device_type`` (``cpu``, ``cuda``) runs them, with
        ``--batch-tokens auto`` resolved, so that ``config.json`` records (and ``--resume`` repeats)
        what ran: CPU_BATCH_TOKENS on a CPU; on a CUDA GPU of ``memory`` bytes, :func:`gpu_batch_tokens`
        of the corpus's ``corpus_tokens``, the learning rate scaled by sqrt(tokens /
        CPU_BATCH_TOKENS) and the full passes of ``--epochs auto`` up to EPOCHS_FULL_PAIRS_GPU pairs; and
        on a CUDA GPU the options of ``[network.gpu]`` and ``[schedule.gpu]``."""
        cuda = device_type == "cuda"
        options = replace(self, network=self.network.on(cuda), schedule=self.schedule.on(cuda))
        schedule = options.schedule
        if schedule.batch_tokens != "auto":
            return options
        if device_type != "cuda" or not memory:
            return replace(options, schedule=replace(schedule, batch_tokens=CPU_BATCH_TOKENS))
        tokens = gpu_batch_tokens(corpus_tokens, memory)
        lr = options.base_lr * math.sqrt(tokens / CPU_BATCH_TOKENS)
        return replace(options, schedule=replace(schedule, batch_tokens=tokens, lr=lr,
                                                 auto_full_pairs=EPOCHS_FULL_PAIRS_GPU))

    def flat(self) -> dict:
        """Every option by its flat name (network options as given, ``gpu_network``,
        ``gpu_schedule``)."""
        values = {name: getattr(self.teacher.aligner if section == "aligner" else getattr(self, section), key)
                  for name, (section, key) in WHERE.items() if section != "config"}
        return {**values, **self.network.config, "gpu_network": self.network.gpu,
                "gpu_schedule": self.schedule.gpu}

    def record(self) -> dict:
        """``config.json``'s ``train_options``: the flat options, the network's as ``model_config``, the
        teacher's aligner's as ``teacher`` (the layout every attnalign version has read)."""
        values = {name: getattr(getattr(self, section), key) for name, (section, key) in WHERE.items()
                  if section in SECTIONS}
        return {**values, "model_config": dict(self.network.config), "gpu_network": dict(self.network.gpu),
                "gpu_schedule": dict(self.schedule.gpu),
                "teacher": asdict(self.teacher.aligner)}

    @classmethod
    def from_saved(cls, saved: dict) -> TrainOptions:
        """The options a model directory recorded (:meth:`record`): the teacher's as
        :meth:`TeacherOptions.from_saved` reads them; a run started before --max-length had no length
        filter, and trained its directions one after the other."""
        saved = {"max_length": 10**9, "parallel_directions": "off", **saved}
        simple = {k: v for k, v in saved.items() if WHERE.get(k, ("", ""))[0] in SECTIONS}
        options = cls.of(**simple)
        network = replace(options.network.with_config(dict(saved.get("model_config") or {})),
                          gpu=dict(saved.get("gpu_network") or {}))
        schedule = replace(options.schedule, gpu=dict(saved.get("gpu_schedule") or {}))
        teacher = replace(options.teacher, aligner=TeacherOptions.from_saved(saved))
        return replace(options, network=network, schedule=schedule, teacher=teacher)


# what a --resume command line may give again with other values: the data (checked by its fingerprint),
# where to write, what to show, and the threads (a run's result does not depend on them)
RESUME_FREE = frozenset({"model", "resume", "quiet", "threads", "src", "tgt", "corpus", "dev_src", "dev_tgt",
                         "dev_gold", "encoding", "gold_format", "gold_one_based", "reverse_gold"})


def resume_conflicts(given: TrainOptions, run: TrainOptions, network: dict, names) -> list[str]:
    """The options of ``names`` (flat names: those the user gave, and those a preset or a config file
    sets) whose values in ``given`` (the options a ``--resume`` command line makes) differ from the
    ``run``'s, whose network is ``network`` (``config.json``'s ``model_config``)."""
    new, old = given.flat(), run.flat()

    def differs(name: str) -> bool:
        if name == "layers" or WHERE.get(name, ("",))[0] == "config":
            keys = LAYERS if name == "layers" else (name,)
            return any(k in given.network.config and given.network.config[k] != network.get(k) for k in keys)
        if name not in new or name in GPU_TABLES:
            return False
        # "auto" was resolved when the run began and recorded: naming it again asks for the same
        return new[name] != old[name] and not (new[name] == "auto" and name == "batch_tokens")

    return sorted(n for n in set(names) - RESUME_FREE if differs(n))
