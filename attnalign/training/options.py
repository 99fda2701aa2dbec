"""Training options: :class:`TrainOptions`, the named presets, and the checks that run before any work.

``TrainOptions`` is what users and bench/ construct (``TrainOptions(teacher=TeacherOptions(...),
model_config={...})``) and what a model directory's ``config.json`` stores as ``train_options`` (so that
``--resume`` restarts exactly the run it resumes; :meth:`TrainOptions.from_saved` reads old directories
too). Its parts are :meth:`TrainOptions.network` (the model's ``RNNConfig`` / ``TransformerConfig``,
with every default filled in) and :attr:`TrainOptions.teacher` (the
:class:`~attnalign.statistical.TeacherOptions` of ``--guide auto``, the ``--guide-*`` options), and
:meth:`TrainOptions.check` validates them all.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields, replace

from ..errors import OptionError, require
from ..nmt.options import MAX_BATCH_TOKENS, MAX_LENGTH
from ..statistical.options import DEFAULT as TEACHER
from ..statistical.options import TeacherOptions

DIRECTIONS = ("forward", "reverse")
PARALLEL_CHOICES = ("auto", "on", "off")  # --parallel-directions
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
    try:
        return int(text)
    except ValueError:
        raise OptionError(f"bad --batch-tokens {text!r}",
                          hint="give padded tokens per batch (2000) or auto (sized for the device)") from None


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


@dataclass
class TrainOptions:
    """Everything that determines a training run besides the data."""

    model_type: str = "rnn"
    model_config: dict = field(default_factory=dict)  # network options given; see network()
    # network options a run on a CUDA GPU takes instead (a preset's; for_device applies them, then empties
    # this: config.json records the network that ran)
    gpu_network: dict = field(default_factory=dict)
    epochs: int | float | str = "auto"  # passes over the data, or "auto" (epochs_for)
    auto_epochs: int = EPOCHS  # the passes "auto" makes over a corpus of up to EPOCHS_FULL_PAIRS pairs
    max_steps: int | None = None
    batch_tokens: int | str = 1000  # or "auto": sized for the device (for_device)
    lr: float | None = None  # None: the model type's (see base_lr)
    precision: str = "fp32"  # fp32 | bf16 (torch.autocast; docs/benchmarks.md says why fp32)
    auto_full_pairs: int = EPOCHS_FULL_PAIRS  # --epochs auto: the full passes up to this many pairs
    warmup: int = 200
    clip: float = 1.0
    label_smoothing: float = 0.1
    seed: int = 1
    device: str = "auto"
    threads: int | None = None
    min_freq: int = 1
    max_vocab: int | None = None
    lowercase: bool = False
    direction: str = "forward"  # forward | reverse | both
    subword: int | None = None  # sentencepiece vocabulary size per side; None or 0: words
    guide: str | None = None  # guided alignment: "auto" (built-in statistical aligner) or a file
    guide_weight: float = 1.0  # weight of the guided-alignment loss
    teacher: TeacherOptions = TEACHER  # the statistical aligner of guide="auto" (--guide-*)
    subword_type: str = "unigram"  # unigram | bpe
    save_every: int | None = None  # steps between resumable checkpoints inside an epoch
    max_length: int = MAX_LENGTH  # model tokens per side (EOS included); longer pairs are left out
    parallel_directions: str = "auto"  # both directions at once, a process each (training/parallel.py)
    # rounds of self-training after the teacher-guided one: the student trained again, guided by the
    # links align corpus writes with the last round's model and the kept teacher (training/loop.py)
    self_train: int = 0
    # passes of each self-training round, going on from the round before's weights (None: each round
    # trains a new student from scratch for --epochs)
    self_train_epochs: int | float | None = None
    # guided fine-tuning of a pretrained Hugging Face model instead of a new network (training/finetune.py)
    init_from: str | None = None  # the source-to-target model: a save_pretrained directory or hf:NAME
    reverse_init_from: str | None = None  # the target-to-source model (--direction both)
    src_lang: str | None = None  # language codes of a multilingual model
    tgt_lang: str | None = None

    @property
    def directions(self) -> list[str]:
        return list(DIRECTIONS) if self.direction == "both" else [self.direction]

    @property
    def rounds_go_on(self) -> bool:
        """Each self-training round goes on from the last round's weights (``self_train_epochs``)."""
        return self.self_train_epochs is not None

    def passes(self, pairs: int) -> float:
        """The passes over ``pairs`` training pairs this run makes (see :func:`epochs_for`)."""
        return epochs_for(self.epochs, pairs, self.auto_epochs, self.auto_full_pairs)

    def total_steps(self, per_epoch: int, pairs: int, going_on: bool = False) -> int:
        """The updates of a run over ``pairs`` pairs in ``per_epoch`` batches an epoch: its passes'
        worth (at least one; ``going_on``: a self-training round that goes on from the round before,
        ``self_train_epochs``' worth), at most ``max_steps``."""
        passes = float(self.self_train_epochs) if going_on else self.passes(pairs)
        total = max(1, round(per_epoch * passes))
        return total if self.max_steps is None else min(self.max_steps, total)

    @property
    def base_lr(self) -> float:
        return self.lr or (1e-3 if self.model_type == "rnn" else 5e-4)

    def network(self):
        """The typed network config (``RNNConfig`` or ``TransformerConfig``) with every default."""
        from ..nmt.models import MODEL_TYPES

        if self.model_type not in MODEL_TYPES:
            raise OptionError(f"unknown model type {self.model_type!r}; choose {', '.join(MODEL_TYPES)}")
        try:
            return MODEL_TYPES[self.model_type][0](**self.model_config)
        except TypeError as e:
            raise OptionError(f"bad model option: {e}") from None

    def check(self, has_guide_links: bool = False):
        """Validate everything before any work (an OptionError names the option); return the typed
        network config."""
        require("--direction", self.direction, choices=(*DIRECTIONS, "both"))
        if self.subword is not None and self.subword < 0:
            raise OptionError(f"bad --subword {self.subword}",
                              hint="give 0 (whole words) or a vocabulary size per side, e.g. 4000")
        if self.epochs != "auto":
            require("--epochs", parse_epochs(self.epochs), low=0, low_open=True, high=10**6)
        require("auto_epochs", self.auto_epochs, low=1, high=10**6)
        if self.batch_tokens != "auto":
            require("--batch-tokens", self.batch_tokens, low=1, high=MAX_BATCH_TOKENS)
        require("--precision", self.precision, choices=PRECISIONS)
        require("auto_full_pairs", self.auto_full_pairs, low=1)
        for flag, value in (("--min-freq", self.min_freq), ("--max-length", self.max_length)):
            require(flag, value, low=1)
        for flag, value in (("--max-steps", self.max_steps), ("--threads", self.threads),
                            ("--max-vocab", self.max_vocab), ("--save-every", self.save_every)):
            require(flag, value, low=1, optional=True)
        require("--lr", self.lr, low=0, low_open=True, high=1, optional=True)  # Adam's steps: 1e-4 to 1e-2
        require("--seed", self.seed, low=0, high=2**32 - 1)
        require("--warmup", self.warmup, low=0)
        require("--clip", self.clip, low=0, low_open=True)
        require("--label-smoothing", self.label_smoothing, low=0, high=1, high_open=True)
        require("--guide-weight", self.guide_weight, low=0)
        require("--subword-type", self.subword_type, choices=("unigram", "bpe"))
        require("--parallel-directions", self.parallel_directions, choices=PARALLEL_CHOICES)
        require("--self-train", self.self_train, low=0, high=MAX_SELF_TRAIN)
        require("--self-train-epochs", self.self_train_epochs, low=0, low_open=True, high=10**6,
                optional=True)
        if self.self_train_epochs is not None and not self.self_train:
            raise OptionError("--self-train-epochs sets the passes of self-training rounds: there are none",
                              hint="add --self-train N, or leave --self-train-epochs out")
        if self.precision != "fp32" and self.init_from is not None:
            raise OptionError("--precision bf16 trains attnalign's own networks; --init-from fine-tunes a "
                              "pretrained model in its own precision", hint="leave --precision out")
        if self.self_train and (self.guide != "auto" or self.init_from is not None):
            raise OptionError("--self-train learns from a model and its built-in teacher",
                              hint="train with --guide auto (as --preset align does), not --guide FILE "
                                   "or --init-from")
        network = self.network().check()
        if network.align_head and not has_guide_links and self.guide is None:
            raise OptionError("the alignment head learns from a guide alignment only",
                              hint="add --guide auto (or --guide FILE), or leave out --align-head")
        if self.guide != "auto" and self.teacher != TEACHER:  # they would do nothing
            flags = [f"--guide-{f.name}" for f in fields(TeacherOptions)
                     if getattr(self.teacher, f.name) != getattr(TEACHER, f.name)]
            raise OptionError(f"{', '.join(flags)} set{'s' if len(flags) == 1 else ''} the built-in "
                              "teacher of --guide auto, which this run does not use",
                              hint="add --guide auto, or leave them out")
        if self.guide == "auto" and not has_guide_links:
            self.teacher.check(prefix_flag="--guide-prefix", identical_flag="--guide-identical",
                               samplers_flag="--guide-samplers", seed_flag="--guide-seed")
        return network

    def for_device(self, device_type: str, corpus_tokens: int, memory: int | None = None) -> TrainOptions:
        """The options as a device of type ``device_type`` (``cpu``, ``cuda``) runs them, with
        ``--batch-tokens auto`` resolved, so that ``config.json`` records (and ``--resume`` repeats)
        what ran: CPU_BATCH_TOKENS on a CPU; on a CUDA GPU of ``memory`` bytes, :func:`gpu_batch_tokens`
        of the corpus's ``corpus_tokens``, the learning rate scaled by sqrt(tokens /
        CPU_BATCH_TOKENS) and the full passes of ``--epochs auto`` up to EPOCHS_FULL_PAIRS_GPU pairs; and
        on a CUDA GPU the network options of ``gpu_network``."""
        options = self._gpu_network(device_type == "cuda")
        if options.batch_tokens != "auto":
            return options
        if device_type != "cuda" or not memory:
            return replace(options, batch_tokens=CPU_BATCH_TOKENS)
        tokens = gpu_batch_tokens(corpus_tokens, memory)
        lr = options.base_lr * math.sqrt(tokens / CPU_BATCH_TOKENS)
        return replace(options, batch_tokens=tokens, lr=lr, auto_full_pairs=EPOCHS_FULL_PAIRS_GPU)

    def _gpu_network(self, cuda: bool) -> TrainOptions:
        """The options with ``gpu_network`` applied on a CUDA GPU (the entries the network has) and
        emptied everywhere."""
        if not self.gpu_network:
            return self
        from ..nmt.models import MODEL_TYPES

        have = {f.name for f in fields(MODEL_TYPES[self.model_type][0])} if self.model_type in MODEL_TYPES \
            else set()
        wanted = {k: v for k, v in self.gpu_network.items() if k in have} if cuda else {}
        return replace(self, model_config={**self.model_config, **wanted}, gpu_network={})

    @classmethod
    def from_saved(cls, saved: dict) -> TrainOptions:
        """The options a model directory recorded (``config.json``'s ``train_options``): the teacher's
        as :meth:`TeacherOptions.from_saved` reads them; a run started before --max-length had no length
        filter."""
        saved = {"max_length": 10**9, "parallel_directions": "off", **saved}
        known = {f.name for f in fields(cls)} - {"teacher"}
        return cls(**{k: v for k, v in saved.items() if k in known}, teacher=TeacherOptions.from_saved(saved))

    def as_dict(self) -> dict:
        return asdict(self)


# Named sets of training options (``attnalign train --preset NAME``); options given beside a preset
# override it. "align": the configuration benchmarked in bench/quality.py (docs/benchmarks.md, "How
# `--preset align` was chosen"): both directions reading 4,000 sentencepiece pieces per side, guided
# by the built-in statistical aligner (its default, on words), with an alignment head; 5 passes under
# --epochs auto, in batches sized for the device (on a CPU 2,000 tokens, which keep its matrix products
# busier than the defaults' 1,000) at a 2e-3 learning rate for 2,000 tokens, and without dropout, which
# slows a student learning its teacher's links in few passes. "align-fast": the same network in 3
# passes, for the corpus it aligns with its teacher (``align corpus --teacher``); alone its student is
# weaker than "align"'s (the same section).
_ALIGN = {"direction": "both", "guide": "auto", "subword": 4000, "auto_epochs": 5, "batch_tokens": "auto",
          "lr": 2e-3, "model_config": {"align_head": True, "dropout": 0.0},
          "gpu_network": {"input_feeding": False}}
PRESETS: dict[str, dict] = {
    "align": _ALIGN,
    "align-fast": {**_ALIGN, "auto_epochs": 3},
}


def preset_flags(name: str) -> str:
    """A preset as the options it sets, for ``--help``: ``--direction both --guide auto ...``."""
    preset = dict(PRESETS[name])
    config, passes = preset.pop("model_config", {}), preset.pop("auto_epochs", None)
    gpu = preset.pop("gpu_network", {})

    def flag(k: str, v) -> str:
        k = k.replace("_", "-")
        return f"--{k}" if v is True else f"--no-{k}" if v is False else f"--{k} {v:g}"

    words = [f"--{k.replace('_', '-')} {v:g}" if isinstance(v, float) else f"--{k.replace('_', '-')} {v}"
             for k, v in preset.items()]
    words += [flag(k, v) for k, v in config.items()]
    text = " ".join(words) + (f" and {passes} passes under --epochs auto" if passes else "")
    return text + (f"; on a CUDA GPU {' '.join(flag(k, v) for k, v in gpu.items())}" if gpu else "")


def preset_options(name: str | None, **given) -> TrainOptions:
    """TrainOptions from a preset (or none) and the options given (those not None win; model_config
    entries are merged)."""
    if name is not None and name not in PRESETS:
        raise OptionError(f"unknown preset {name!r}; choose {', '.join(PRESETS)}")
    base = PRESETS.get(name, {}) if name else {}
    given = {k: v for k, v in given.items() if v is not None}
    mine = given.pop("model_config", {})
    config = {**base.get("model_config", {}), **mine}
    gpu = {k: v for k, v in base.get("gpu_network", {}).items() if k not in mine}  # what is given wins
    return TrainOptions(**{**base, **given, "model_config": config, "gpu_network": gpu})


# what a --resume command line may give again with other values: the data (checked by its fingerprint),
# where to write, what to show, and the threads (a run's result does not depend on them)
RESUME_FREE = frozenset({"model", "resume", "quiet", "threads", "src", "tgt", "corpus", "dev_src", "dev_tgt",
                         "dev_gold", "encoding", "gold_format", "gold_one_based", "reverse_gold"})
_NETWORK = {"hidden": ("hidden",), "emb_dim": ("emb_dim",), "d_model": ("d_model",), "heads": ("heads",),
            "dropout": ("dropout",), "align_head": ("align_head",), "attention": ("attention",),
            "cell": ("cell",), "layers": ("enc_layers", "dec_layers"), "attention_span": ("attention_span",),
            "window": ("window",), "decoder_style": ("decoder_style",),
            "input_feeding": ("input_feeding",)}


def flat_options(options: dict) -> dict:
    """Recorded options (``TrainOptions.as_dict``, or an old ``config.json``'s) as the command line names
    them: the teacher's fields as ``guide_*``."""
    options = dict(options)
    teacher = options.pop("teacher", None)
    return {**options, **{f"guide_{k}": v for k, v in (teacher or {}).items()}}


def resume_conflicts(given: TrainOptions, run: TrainOptions, network: dict, typed, preset: str | None = None
                     ) -> list[str]:
    """The options of ``typed`` (names, as the command line's parameters; ``preset``: every option that
    preset sets) whose values in ``given`` (the options a ``--resume`` command line makes) differ from
    the ``run``'s, whose network is ``network`` (``config.json``'s ``model_config``)."""
    new, old = (flat_options(o.as_dict()) for o in (given, run))
    names = set(typed) - RESUME_FREE - {"preset"}
    if preset in PRESETS:
        sets = PRESETS[preset]
        names |= {k for k in sets if k != "model_config"} | set(sets.get("model_config", {}))

    def differs(name: str) -> bool:
        if name in _NETWORK:
            return any(k in given.model_config and given.model_config[k] != network.get(k)
                       for k in _NETWORK[name])
        if name not in new:
            return False
        # "auto" was resolved when the run began and recorded: naming it again asks for the same
        return new[name] != old[name] and not (new[name] == "auto" and name == "batch_tokens")

    return sorted(n for n in names if differs(n))
