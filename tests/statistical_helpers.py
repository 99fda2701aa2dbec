"""The statistical models trained on a small corpus of word pairs in one call, for the tests: each
returns every pair's posteriors ``[T, S + 1]`` (NULL last; the reverse direction's ``[S, T + 1]``)."""

from __future__ import annotations

import numpy as np

from attnalign.data.corpus import Pairs
from attnalign.statistical.em import CellBatch, make_batch
from attnalign.statistical.fertility import FertilityModel
from attnalign.statistical.hmm import HMMAgreement, fit_hmm
from attnalign.statistical.ibm2 import IBM2
from attnalign.statistical.ids import IdCorpus, LexTable
from attnalign.statistical.settings import EM, SAMPLER


def train_ibm2(pairs: Pairs, iterations: int = EM.iterations, **kw) -> list[np.ndarray]:
    corpus = IdCorpus.encode(pairs)
    return IBM2(corpus, iterations, **kw).posteriors(0, len(corpus))


def train_hmm(pairs: Pairs, iterations: int = EM.iterations, **kw) -> list[np.ndarray]:
    hmm = fit_hmm(IdCorpus.encode(pairs), iterations, **kw)
    return hmm.posteriors(0, len(hmm.corpus))


def train_agreement(pairs: Pairs, iterations: int = EM.iterations, **kw
                    ) -> tuple[list[np.ndarray], list[np.ndarray]]:
    corpus = IdCorpus.encode(pairs)
    return HMMAgreement(corpus, iterations, **kw).posteriors(0, len(corpus))


def train_fertility(pairs: Pairs, seed: int = SAMPLER.seed, **kw
                    ) -> tuple[list[np.ndarray], list[np.ndarray]]:
    corpus = IdCorpus.encode(pairs)
    return FertilityModel(corpus, seed, **kw).posteriors(0, len(corpus))


def all_cells(pairs: Pairs, identical: float = 0.0) -> tuple[CellBatch, LexTable, np.ndarray | None]:
    """All pairs of a small corpus as one batch (in corpus order), its table and the identical-type
    bonus."""
    corpus = IdCorpus.encode(pairs)
    table = LexTable(corpus)
    return make_batch(corpus, table, np.arange(len(corpus))), table, table.bonus(identical)


def unpad(batch: CellBatch, values: np.ndarray) -> list[np.ndarray]:
    """``[B, Tm, Sm + 1]`` values of ``batch`` -> one ``[T, S + 1]`` array per pair (NULL last)."""
    Sm = batch.idx.shape[2] - 1
    return [np.concatenate([values[b, :T, :S], values[b, :T, Sm:]], axis=1)
            for b, (T, S) in enumerate(zip(batch.T.tolist(), batch.S.tolist(), strict=True))]
