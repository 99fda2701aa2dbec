"""Vocabularies: token <-> id, built from training data. Torch-free.

Ids 0-3 are reserved: ``<pad>``, ``<unk>``, ``<s>`` (BOS), ``</s>`` (EOS). A vocabulary is saved as a
plain list of tokens (its ``itos``), so checkpoints stay loadable with ``weights_only=True``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<s>", "</s>"
SPECIALS = (PAD, UNK, BOS, EOS)
PAD_ID, UNK_ID, BOS_ID, EOS_ID = range(4)


class Vocab:
    """A fixed token <-> id mapping with reserved special tokens."""

    def __init__(self, itos: Sequence[str]):
        if tuple(itos[:4]) != SPECIALS:
            raise ValueError(f"a vocabulary must start with {SPECIALS}")
        self.itos = list(itos)
        self.stoi = {t: i for i, t in enumerate(self.itos)}

    @classmethod
    def build(
        cls, sentences: Iterable[Sequence[str]], min_freq: int = 1, max_size: int | None = None
    ) -> Vocab:
        """Tokens seen at least ``min_freq`` times, most frequent first (ties alphabetical)."""
        counts = Counter(t for s in sentences for t in s)
        tokens = sorted((t for t, c in counts.items() if c >= min_freq and t not in SPECIALS),
                        key=lambda t: (-counts[t], t))
        if max_size is not None:
            tokens = tokens[: max(0, max_size - len(SPECIALS))]
        return cls(list(SPECIALS) + tokens)

    def __len__(self) -> int:
        return len(self.itos)

    def encode(self, tokens: Sequence[str]) -> list[int]:
        get = self.stoi.get
        return [get(t, UNK_ID) for t in tokens]

    def coverage(self, sentences: Iterable[Sequence[str]]) -> float:
        """Fraction of tokens that are in the vocabulary (1.0 for no tokens)."""
        n = known = 0
        for s in sentences:
            n += len(s)
            known += sum(t in self.stoi for t in s)
        return known / n if n else 1.0
