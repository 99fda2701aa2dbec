"""How attention is read and decoded into links: :class:`AlignOptions`, with each default stated once, and
the extraction's sizes. Torch-free, so that the CLI declares its defaults (and ``--help`` shows them)
without importing torch."""

from __future__ import annotations

from dataclasses import dataclass

from ..decoding import TEACHER_CHOICES, TEACHER_CORPUS_CHOICES
from ..decoding.policy import AUTO, Decoding
from ..errors import require

BATCH_TOKENS = 4000  # padded tokens per batch when attention is extracted (align, plot, report)
# padded tokens a batch may hold: far beyond any device's memory; a larger number is a typo
MAX_BATCH_TOKENS = 10**7
MAX_LENGTH = 250  # model tokens per side (EOS included): longer pairs are skipped in align, left out in train
DEVICE = "auto"  # --device: cuda where torch sees a GPU, else cpu (nmt.device.resolve_device)


@dataclass(frozen=True)
class AlignOptions:
    # the decoding as given (auto, None: decoding.policy.choose_decoding's): see decoding
    decoder: str = AUTO  # a name of decoding.DECODERS
    threshold: float | None = None
    sym: str = AUTO  # a name of decoding.SYMMETRIZATIONS
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
    # combine the attention with the statistical teacher's soft matrices (align corpus), on what it
    # trains, and its share of the blend: decoding.policy.plan_teacher and choose_decoding
    teacher: str = AUTO
    teacher_weight: float | None = None
    teacher_corpus: str = AUTO

    @property
    def decoding(self) -> Decoding:
        """The decoding as the user gave it (``auto`` and None left for ``choose_decoding``)."""
        return Decoding(self.sym, self.decoder, self.threshold, self.teacher_weight)

    def check(self) -> AlignOptions:
        """Raise an OptionError naming the option that is out of range or unknown."""
        self.decoding.check()
        require("--shift", self.shift, choices=(0, 1))
        require("--teacher", self.teacher, choices=TEACHER_CHOICES)
        require("--teacher-corpus", self.teacher_corpus, choices=TEACHER_CORPUS_CHOICES)
        require("--batch-tokens", self.batch_tokens, low=1, high=MAX_BATCH_TOKENS)
        for flag, value in (("--max-length", self.max_length), ("chunk_size", self.chunk_size)):
            require(flag, value, low=1)
        return self
