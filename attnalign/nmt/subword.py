"""Word <-> model-token segmentation, keeping word boundaries.

A :class:`Segmenter` turns a sentence of words into model tokens and records, for every token, the
index of the word it came from, so attention over tokens can be mapped back to words (see
:func:`attnalign.nmt.words.tokens_to_words`). Word-level models use the identity; subword models use a
sentencepiece model (https://github.com/google/sentencepiece) trained on the training text, applied
word by word so a piece never spans two words.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence

import torch

from ..errors import AttnAlignError
from .options import SUBWORD_TYPES


class Segmenter:
    """Identity (``proto=None``) or sentencepiece segmentation of whitespace-tokenized words."""

    def __init__(self, proto: bytes | None = None, path=None):
        self.proto = proto
        self._sp = None
        self._cache: dict[str, list[str]] = {}
        if proto is not None:
            import sentencepiece as spm

            try:
                if not proto:
                    raise ValueError("it is empty")
                self._sp = spm.SentencePieceProcessor(model_proto=proto)
            except (RuntimeError, OSError, ValueError, TypeError):
                # said in our words: sentencepiece's own message spans lines and holds terminal codes
                raise AttnAlignError("the sentencepiece model inside is damaged: sentencepiece cannot "
                                     "load it", path=path,
                                     hint="restore the model directory, or train the model again") from None

    @property
    def is_subword(self) -> bool:
        return self._sp is not None

    def pieces(self, word: str) -> list[str]:
        got = self._cache.get(word)
        if got is None:
            got = self._sp.encode(word, out_type=str) or [word]
            if len(self._cache) < 1_000_000:
                self._cache[word] = got
        return got

    def segment(self, words: Sequence[str]) -> tuple[list[str], list[int]]:
        """Model tokens of a sentence and, for each token, the index of its word."""
        if self._sp is None:
            return list(words), list(range(len(words)))
        tokens, index = [], []
        for k, w in enumerate(words):
            p = self.pieces(w)
            tokens += p
            index += [k] * len(p)
        return tokens, index

    def to_tensor(self) -> torch.Tensor | None:
        """The model proto as a uint8 tensor, for a ``weights_only`` checkpoint."""
        if self.proto is None:
            return None
        return torch.frombuffer(bytearray(self.proto), dtype=torch.uint8).clone()

    @classmethod
    def from_tensor(cls, t: torch.Tensor | None, path=None) -> Segmenter:
        """The segmenter a checkpoint (``path``, named in an error) holds."""
        if t is not None and not isinstance(t, torch.Tensor):
            raise AttnAlignError("the sentencepiece model inside is not a tensor", path=path,
                                 hint="train the model again")
        return cls(None if t is None else bytes(t.detach().cpu().numpy().tobytes()), path)


def train_segmenter(sentences: Iterable[Sequence[str]], vocab_size: int, model_type: str = "unigram"
                    ) -> Segmenter:
    """Train a sentencepiece model on whitespace-tokenized sentences (in memory, deterministic)."""
    import sentencepiece as spm

    text = [" ".join(s) for s in sentences if s]
    if model_type not in SUBWORD_TYPES:
        raise AttnAlignError(f"unknown subword type {model_type!r}; choose {' or '.join(SUBWORD_TYPES)}")
    buf = io.BytesIO()
    try:
        spm.SentencePieceTrainer.train(
        sentence_iterator=iter(text), model_writer=buf, vocab_size=vocab_size, model_type=model_type,
            character_coverage=1.0, hard_vocab_limit=False, minloglevel=2, num_threads=1,
            input_sentence_size=1_000_000, shuffle_input_sentence=False,
        )
    except RuntimeError as e:
        raise AttnAlignError(f"sentencepiece could not train a {vocab_size}-piece model: {e}",
                             hint="try another --subword size") from None
    return Segmenter(buf.getvalue())
