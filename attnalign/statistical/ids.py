"""A corpus as token ids, and the lexical table of its co-occurring word types. Torch-free.

The statistical aligners never hold the corpus as Python strings nor any array per (target word,
source word) cell of the whole corpus: :class:`IdCorpus` keeps 4 bytes a token (flat int32 ids plus
offsets), :class:`LexTable` one int64 key per co-occurring (source type, target type) pair, and the
cells of EM are built for one batch of pairs at a time (:mod:`.em`), their expected counts
added to the table's, the batch dropped (or cached, up to a bound). Memory then grows with the
tokens and the number of co-occurring type pairs, not with pairs x length^2.

Ids start at 1 on both sides; id 0 is the NULL word (on the source side of a direction).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from . import kernels

CHUNK_PAIRS = 5000  # pairs decoded (and their links yielded) at once, in corpus order


@dataclass
class IdCorpus:
    """Sentence pairs as ids: pair k's source words are ``src[src_off[k]:src_off[k + 1]]``."""

    src: np.ndarray  # [source tokens] int32, ids 1..n_src-1
    src_off: np.ndarray  # [pairs + 1] int64
    tgt: np.ndarray  # [target tokens] int32, ids 1..n_tgt-1
    tgt_off: np.ndarray  # [pairs + 1] int64
    src_words: list[str]  # id -> word (index 0: NULL)
    tgt_words: list[str]

    @classmethod
    def encode(cls, pairs: Iterable[tuple[Sequence[str], Sequence[str]]], prefix: int = 0) -> IdCorpus:
        """Encode pairs of word lists (read once), each word cut to its first ``prefix`` characters
        (0: whole; see :meth:`cut`)."""
        _check_prefix(prefix)  # before the corpus is read
        vocab: tuple[dict[str, int], dict[str, int]] = ({}, {})
        ids = (array("i"), array("i"))
        offs = (array("q", [0]), array("q", [0]))
        for pair in pairs:
            for side in (0, 1):
                v, buf = vocab[side], ids[side]
                buf.extend(v.setdefault(w, len(v) + 1) for w in pair[side])
                offs[side].append(len(buf))
        words = [["<null>", *v] for v in vocab]
        arr = [np.frombuffer(a, dtype=np.int32).copy() if len(a) else np.zeros(0, np.int32) for a in ids]
        return cls(arr[0], np.frombuffer(offs[0], dtype=np.int64).copy(), arr[1],
                   np.frombuffer(offs[1], dtype=np.int64).copy(), words[0], words[1]).cut(prefix)

    def __len__(self) -> int:
        return len(self.src_off) - 1

    def cut(self, prefix: int) -> IdCorpus:
        """The same corpus with every word cut to its first ``prefix`` characters (0: itself)."""
        if not _check_prefix(prefix):
            return self
        sides = []
        for words, ids in ((self.src_words, self.src), (self.tgt_words, self.tgt)):
            vocab: dict[str, int] = {}
            new = np.array([0] + [vocab.setdefault(w[:prefix], len(vocab) + 1) for w in words[1:]], np.int32)
            sides.append((new[ids], ["<null>", *vocab]))
        (src, src_words), (tgt, tgt_words) = sides
        return IdCorpus(src, self.src_off, tgt, self.tgt_off, src_words, tgt_words)

    @property
    def n_src(self) -> int:
        return len(self.src_words)

    @property
    def n_tgt(self) -> int:
        return len(self.tgt_words)

    def shapes_of(self, lo: int = 0, hi: int | None = None) -> list[tuple[int, int]]:
        """``(T, S)`` of pairs ``lo..hi``."""
        hi = len(self) if hi is None else hi
        T, S = np.diff(self.tgt_off[lo:hi + 1]), np.diff(self.src_off[lo:hi + 1])
        return list(zip(T.tolist(), S.tolist(), strict=True))

    def swapped(self) -> IdCorpus:
        """The reverse direction: target words become the source side."""
        return IdCorpus(self.tgt, self.tgt_off, self.src, self.src_off, self.tgt_words, self.src_words)

    def chunks(self, size: int = CHUNK_PAIRS) -> Iterator[tuple[int, int]]:
        """``(lo, hi)`` pair ranges of at most ``size`` pairs, in corpus order."""
        return chunks(len(self), size)

    def same_type(self) -> np.ndarray:
        """``[n_tgt]``: for each target type the source id of the identical word, else -1."""
        index = {w: i for i, w in enumerate(self.src_words) if i}
        return np.array([-1] + [index.get(w, -1) for w in self.tgt_words[1:]], dtype=np.int64)


def _check_prefix(prefix: int) -> int:
    if prefix < 0:
        raise ValueError(f"prefix must be 0 (whole words) or a positive length, not {prefix}")
    return prefix


def chunks(n: int, size: int = CHUNK_PAIRS) -> Iterator[tuple[int, int]]:
    """``(lo, hi)`` ranges of at most ``size`` of ``n`` pairs, in order."""
    for lo in range(0, n, size):
        yield lo, min(n, lo + size)


class LexTable:
    """The co-occurring (source type or NULL, target type) pairs of a corpus: sorted int64 keys
    ``e * n_tgt + f``; an entry's index is where its counts and probabilities live."""

    def __init__(self, corpus: IdCorpus):
        self.width = corpus.n_tgt
        # [n_src + 1]: source type e's entries are keys[starts[e]:starts[e + 1]]
        self.keys, self.starts = kernels.lex_keys(corpus.src, corpus.src_off, corpus.tgt, corpus.tgt_off,
                                                  corpus.n_src, corpus.n_tgt, 4 * kernels.threads())
        self.pair_src = self.keys // self.width  # [K] source id of each entry (0 = NULL)
        self.n_src = corpus.n_src
        self.n_tgt = corpus.n_tgt - 1  # target types (the Dirichlet prior's dimension)
        self._same = corpus.same_type()

    def __len__(self) -> int:
        return len(self.keys)

    def bonus(self, identical: float) -> np.ndarray | None:
        """``[K]`` extra counts for pairs of identical source and target types (None for 0)."""
        if not identical:
            return None
        return identical * (self._same[self.keys % self.width] == self.pair_src)
