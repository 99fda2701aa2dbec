"""What a trained statistical model learned, kept by word so that training can go on over new
sentences from it (``align corpus`` on sentences a guided model was not trained on). Torch-free.

One direction's :class:`KeptCounts`: its counts per (source word or NULL, target word) entry of the
lexical table at the end of training (EM's expected counts, the sampler's link counts), each source
word's total, and its other tables (jumps, fertilities) as raw counts. Going on over new sentences,
a model adds these to the counts of the new sentences in every M-step (EM) or sampling step: the
training corpus's share stays frozen at its final state, the new sentences' share is re-estimated,
so that a word the training corpus never saw still learns from the new sentences. This is EM over
the union of both corpora with the training corpus's E-step fixed, at the cost of the new sentences
alone.

Entries with counts under :data:`PRUNE` are not kept (an EM table's entries are mostly near 0); the
source totals keep their mass, so an entry left out reads as a count of 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .ids import IdCorpus, LexTable

PRUNE = 1e-3  # smallest count an entry keeps


def _pack(words: list[str]) -> np.ndarray:
    return np.frombuffer("\n".join(words).encode("utf-8"), dtype=np.uint8)


def _unpack(data: np.ndarray) -> list[str]:
    return bytes(np.asarray(data, dtype=np.uint8)).decode("utf-8").split("\n")


@dataclass
class OnTable:
    """Kept counts as one corpus's EM sees them (:meth:`KeptCounts.on`)."""

    counts: np.ndarray  # [K] per entry of the corpus's table (0 where not kept)
    outside: np.ndarray  # [n_src] the rest of each source word's kept total: its entries outside the table
    n_tgt: int  # the target types of both corpora: the Dirichlet prior's dimension


@dataclass
class KeptCounts:
    """One direction's kept counts. Ids are the training corpus's: ``src_words[i]`` (0: NULL),
    ``tgt_words[f]``; entry keys are ``e * len(tgt_words) + f``, sorted."""

    src_words: list[str]
    tgt_words: list[str]
    keys: np.ndarray  # [K'] int64
    counts: np.ndarray  # [K'] float32
    src_totals: np.ndarray  # [n_src] float64: every count of the source word, pruned entries included
    tables: dict[str, np.ndarray] = field(default_factory=dict)  # e.g. "jump" [2m + 1], "fert" [n_src, F+1]

    @classmethod
    def of(cls, corpus: IdCorpus, table: LexTable, counts: np.ndarray, **tables: np.ndarray) -> KeptCounts:
        """Keep ``counts [K]`` of ``table``'s entries over ``corpus`` (the model's own ids)."""
        counts = np.asarray(counts, dtype=np.float64)
        keep = counts >= PRUNE
        totals = np.bincount(table.pair_src, weights=counts, minlength=table.n_src)
        return cls(list(corpus.src_words), list(corpus.tgt_words), table.keys[keep],
                   counts[keep].astype(np.float32), totals, {k: np.asarray(v) for k, v in tables.items()})

    def src_map(self, corpus: IdCorpus) -> np.ndarray:
        """``[corpus.n_src]``: each of ``corpus``'s source ids as a kept id, -1 for a word not kept
        (NULL stays 0)."""
        return _map(corpus.src_words, self.src_words)

    def on(self, corpus: IdCorpus, table: LexTable) -> OnTable:
        """The kept counts on another corpus's table (float64)."""
        e, f = table.keys // table.width, table.keys % table.width
        ke, kf = self.src_map(corpus)[e], _map(corpus.tgt_words, self.tgt_words)[f]
        ok = (ke >= 0) & (kf > 0)
        wanted = np.where(ok, ke * len(self.tgt_words) + kf, -1)
        pos = np.minimum(np.searchsorted(self.keys, wanted), max(len(self.keys) - 1, 0))
        found = ok & (self.keys[pos] == wanted) if len(self.keys) else np.zeros(len(wanted), bool)
        counts = np.where(found, self.counts[pos] if len(self.keys) else 0.0, 0.0).astype(np.float64)
        totals = self.per_src(corpus, self.src_totals)
        inside = np.bincount(table.pair_src, weights=counts, minlength=table.n_src)
        return OnTable(counts, np.maximum(totals - inside, 0.0), self.n_tgt(corpus))

    def table(self, name: str, shape: tuple[int, ...]) -> np.ndarray | None:
        """The kept table ``name`` as float64 if there is one whose trailing shape is ``shape`` (a
        model with other sizes kept another: None)."""
        t = self.tables.get(name)
        if t is None or t.ndim < len(shape) or t.shape[t.ndim - len(shape):] != tuple(shape):
            return None
        return t.astype(np.float64)

    def n_tgt(self, corpus: IdCorpus) -> int:
        """Target types of the training corpus and ``corpus`` together."""
        return len(self.tgt_words) - 1 + int((_map(corpus.tgt_words, self.tgt_words)[1:] < 0).sum())

    def per_src(self, corpus: IdCorpus, values: np.ndarray) -> np.ndarray:
        """Kept per-source-word ``values [n_src, ...]`` on ``corpus``'s source ids (0 for new words)."""
        m = self.src_map(corpus)
        out = np.zeros((len(m), *values.shape[1:]), dtype=np.float64)
        out[m >= 0] = values[m[m >= 0]]
        return out

    def arrays(self, prefix: str) -> dict[str, np.ndarray]:
        """The counts as named arrays (``prefix`` before each name), for an ``.npz``."""
        out = {"src_words": _pack(self.src_words), "tgt_words": _pack(self.tgt_words), "keys": self.keys,
               "counts": self.counts, "src_totals": self.src_totals,
               **{f"table_{k}": v for k, v in self.tables.items()}}
        return {prefix + k: v for k, v in out.items()}

    @classmethod
    def from_arrays(cls, z, prefix: str) -> KeptCounts:
        """Read what :meth:`arrays` wrote (``z``: a mapping of names to arrays, e.g. an open ``.npz``);
        ValueError if it does not hold a consistent direction."""
        names = [n[len(prefix):] for n in z if n.startswith(prefix)]
        kept = cls(_unpack(z[prefix + "src_words"]), _unpack(z[prefix + "tgt_words"]),
                   np.asarray(z[prefix + "keys"], np.int64), np.asarray(z[prefix + "counts"], np.float32),
                   np.asarray(z[prefix + "src_totals"], np.float64),
                   {n[len("table_"):]: np.asarray(z[prefix + n]) for n in names if n.startswith("table_")})
        n_src, width = len(kept.src_words), len(kept.tgt_words)
        if (len(kept.keys) != len(kept.counts) or len(kept.src_totals) != n_src
                or (len(kept.keys) and not 0 <= kept.keys[0] <= kept.keys[-1] < n_src * width)
                or (np.diff(kept.keys) <= 0).any()):
            raise ValueError("the kept counts do not fit their vocabularies")
        # counts are expected values: a NaN, an infinity or a negative one is a damaged file, which
        # would otherwise decode every link from garbage without a word
        for values in (kept.counts, kept.src_totals, *kept.tables.values()):
            if values.dtype.kind not in "iuf" or not np.isfinite(values).all() or (values < 0).any():
                raise ValueError("the kept counts hold values that are not finite non-negative numbers")
        return kept


def _map(words: list[str], kept_words: list[str]) -> np.ndarray:
    """Each of ``words`` (index 0: NULL) as its index in ``kept_words``, -1 where absent; 0 stays 0."""
    index = {w: i for i, w in enumerate(kept_words) if i}
    return np.array([0] + [index.get(w, -1) for w in words[1:]], dtype=np.int64)
