"""How attention is read and decoded into links: :class:`AlignOptions`, with each default stated once, and
the extraction's sizes. Torch-free, so that the CLI declares its defaults (and ``--help`` shows them)
without importing torch."""

from __future__ import annotations

from dataclasses import dataclass

from ..decoding import DECODERS, SYMMETRIZATIONS, TEACHER_CHOICES, TEACHER_CORPUS_CHOICES
from ..errors import require

BATCH_TOKENS = 4000  # padded tokens per batch when attention is extracted (align, plot, report)
# padded tokens a batch may hold: far beyond any device's memory; a larger number is a typo
MAX_BATCH_TOKENS = 10**7
MAX_LENGTH = 250  # model tokens per side (EOS included): longer pairs are skipped in align, left out in train
AUTO = "auto"  # --decoder / --sym / --teacher: chosen per model by resolve_decoding and Aligner.wants_teacher
DEVICE = "auto"  # --device: cuda where torch sees a GPU, else cpu (nmt.device.resolve_device)


@dataclass(frozen=True)
class AlignOptions:
    decoder: str = AUTO  # a name of decoding.DECODERS, or auto: see resolve_decoding
    threshold: float | None = None  # None: see resolve_decoding
    sym: str = AUTO  # a name of decoding.SYMMETRIZATIONS, or auto: see resolve_decoding
    layer: int | str | None = None
    head: int | str = "mean"
    shift: int = 0
    batch_tokens: int = BATCH_TOKENS
    device: str = "cpu"
    max_length: int = MAX_LENGTH  # model tokens per side; longer pairs are skipped (empty line, warning)
    chunk_size: int = 5000  # pairs extracted at once (bounds memory)
    # pretrained (Hugging Face) models only: the tgt->src model for both directions, and the language
    # codes a multilingual model needs
    reverse_model: str | None = None
    src_lang: str | None = None
    tgt_lang: str | None = None
    # combine the attention with the statistical teacher's soft matrices (align corpus): auto = for a
    # model guided by the built-in teacher, where the teacher's corpus has at least TEACHER_MIN_PAIRS pairs
    teacher: str = AUTO
    teacher_weight: float | None = None  # None: decoding.teacher_decoding's, by the teacher's pairs
    teacher_corpus: str = AUTO  # what the teacher trains on: decoding.TEACHER_CORPUS_CHOICES

    def check(self) -> AlignOptions:
        """Raise an OptionError naming the option that is out of range or unknown."""
        require("--decoder", self.decoder, choices=(AUTO, *DECODERS))
        require("--sym", self.sym, choices=(AUTO, *SYMMETRIZATIONS))
        require("--threshold", self.threshold, low=0, high=1, optional=True)
        require("--shift", self.shift, choices=(0, 1))
        require("--teacher", self.teacher, choices=TEACHER_CHOICES)
        require("--teacher-weight", self.teacher_weight, low=0, high=1, optional=True)
        require("--teacher-corpus", self.teacher_corpus, choices=TEACHER_CORPUS_CHOICES)
        require("--batch-tokens", self.batch_tokens, low=1, high=MAX_BATCH_TOKENS)
        for flag, value in (("--max-length", self.max_length), ("chunk_size", self.chunk_size)):
            require(flag, value, low=1)
        return self
