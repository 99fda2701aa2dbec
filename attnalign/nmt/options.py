"""What ``align corpus`` is given: :class:`AlignOptions`, the one flat record of the command line and the
Python API, in three parts with each default stated once: :class:`Reading` (how a model's attention is
read: all the :class:`~.aligner.Aligner` sees), the decoding as given (a
:class:`~attnalign.decoding.policy.Decoding` whose ``auto`` choices the runner makes once, for its model
and teacher) and whether and on what a teacher joins (``teacher``, ``teacher_corpus``:
:func:`attnalign.combine.combined_aligner`'s). Torch-free, so that the CLI declares its defaults (and
``--help`` shows them) without importing torch."""

from __future__ import annotations

from dataclasses import dataclass, fields

from ..decoding import TEACHER_CHOICES, TEACHER_CORPUS_CHOICES
from ..decoding.policy import AUTO, Decoding
from ..errors import OptionError, require
from .readouts import READOUT, READOUTS

BATCH_TOKENS = 4000  # padded tokens per batch when attention is extracted (align, plot, report)
# ... and when a gradient readout (saliency) is, on a CPU: its backward passes, one a target position,
# run faster over batches whose states stay in the CPU's caches (docs/benchmarks.md, "Readouts")
GRADIENT_BATCH_TOKENS = 1000
# padded tokens a batch may hold: far beyond any device's memory; a larger number is a typo
MAX_BATCH_TOKENS = 10**7
MAX_LENGTH = 250  # model tokens per side (EOS included): longer pairs are skipped in align, left out in train
# a pair typed on the command line or drawn (plot sentence, a report's gallery) is never skipped for its
# length
ONE_PAIR_MAX_LENGTH = 10**6
DEVICE = "auto"  # --device: cuda where torch sees a GPU, else cpu (nmt.device.resolve_device)
# --threads is at most this many per core of the machine: more only slow the work down, and thousands
# of threads crash the libraries that start them (a typing error, refused before any work)
THREADS_PER_CORE = 4
SUBWORD_TYPES = ("unigram", "bpe")  # train --subword-type: sentencepiece's models
DEVICE_HELP = "auto, cpu or cuda."  # --device, of every command that runs a network
THREADS_HELP = f"CPU threads for torch; at most {THREADS_PER_CORE} per core of the machine."
# pairs a gradient readout (saliency) extracts at once, below chunk_size: its chunks take seconds, not
# minutes, so the progress display moves
GRADIENT_CHUNK_SIZE = 256
MAX_SMOOTHGRAD = 1000  # --smoothgrad: each copy costs a saliency pass; more is a typo


def max_threads() -> int:
    """The largest ``--threads``: :data:`THREADS_PER_CORE` per core of this machine."""
    import os

    return THREADS_PER_CORE * (os.cpu_count() or 1)


def check_threads(threads: int | None) -> None:
    """Refuse a ``--threads`` below 1 or above :func:`max_threads` (None: the libraries' default)."""
    require("--threads", threads, low=1, high=max_threads(), optional=True)


@dataclass(frozen=True)
class Reading:
    """How a model's attention is read: the layer and head (Transformers), Shift-Att, the batches, the
    device, the longest pair; a pretrained model's reverse direction and language codes."""

    layer: int | str | None = None
    head: int | str = "mean"
    shift: int = 0
    readout: str = READOUT  # a name of nmt.readouts.READOUTS: what the matrix is read from
    smoothgrad: int = 0  # noisy copies the saliency readout averages (0: none)
    batch_tokens: int | None = None  # None: nmt.extract.batch_tokens_for's, by the readout and device
    device: str = "cpu"
    max_length: int = MAX_LENGTH  # model tokens per side; longer pairs are skipped (empty line, warning)
    chunk_size: int = 5000  # pairs extracted at once (bounds memory)
    reverse_model: str | None = None
    src_lang: str | None = None
    tgt_lang: str | None = None

    def check(self) -> Reading:
        """Raise an OptionError naming the option that is out of range."""
        require("--shift", self.shift, choices=(0, 1))
        require("--readout", self.readout, choices=tuple(READOUTS))
        require("--smoothgrad", self.smoothgrad, low=0, high=MAX_SMOOTHGRAD)
        if self.smoothgrad and not READOUTS[self.readout].gradients:
            raise OptionError(f"--smoothgrad averages a gradient readout; --readout {self.readout} has none",
                              hint="add --readout saliency, or leave --smoothgrad out")
        require("--batch-tokens", self.batch_tokens, low=1, high=MAX_BATCH_TOKENS, optional=True)
        for flag, value in (("--max-length", self.max_length), ("chunk_size", self.chunk_size)):
            require(flag, value, low=1)
        return self


@dataclass(frozen=True)
class AlignOptions:
    """The flat record of ``align corpus``'s options (and of the Python API): the :attr:`reading`, the
    :attr:`decoding` as given, and the teacher's ``teacher`` and ``teacher_corpus``. Its defaults are
    its parts'."""

    # the decoding as given (auto, None: decoding.policy.choose_decoding's)
    decoder: str = Decoding.decoder  # a name of decoding.DECODERS
    threshold: float | None = Decoding.threshold
    sym: str = Decoding.sym  # a name of decoding.SYMMETRIZATIONS
    teacher_weight: float | None = Decoding.teacher_weight  # the teacher's share of the blend
    # the reading
    layer: int | str | None = Reading.layer
    head: int | str = Reading.head
    shift: int = Reading.shift
    readout: str = Reading.readout
    smoothgrad: int = Reading.smoothgrad
    batch_tokens: int | None = Reading.batch_tokens
    device: str = Reading.device
    max_length: int = Reading.max_length
    chunk_size: int = Reading.chunk_size
    reverse_model: str | None = Reading.reverse_model
    src_lang: str | None = Reading.src_lang
    tgt_lang: str | None = Reading.tgt_lang
    # whether the statistical teacher joins (align corpus) and on what it trains: decoding.policy.plan_teacher
    teacher: str = AUTO
    teacher_corpus: str = AUTO

    @property
    def reading(self) -> Reading:
        """How the model's attention is read."""
        return Reading(**{f.name: getattr(self, f.name) for f in fields(Reading)})

    @property
    def decoding(self) -> Decoding:
        """The decoding as the user gave it (``auto`` and None left for ``choose_decoding``)."""
        return Decoding(self.sym, self.decoder, self.threshold, self.teacher_weight)

    def check(self) -> AlignOptions:
        """Raise an OptionError naming the option that is out of range or unknown."""
        self.decoding.check()
        self.reading.check()
        require("--teacher", self.teacher, choices=TEACHER_CHOICES)
        require("--teacher-corpus", self.teacher_corpus, choices=TEACHER_CORPUS_CHOICES)
        return self
