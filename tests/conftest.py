"""Shared fixtures: tiny models trained once for the align, plot and report tests, a sample corpus and
its files, and a copy of a model a test may damage."""

from __future__ import annotations

import shutil

import pytest
from helpers import SAMPLE, write

from attnalign.data.corpus import read_corpus
from attnalign.training import TrainOptions, train


@pytest.fixture(scope="session")
def models(tmp_path_factory):
    """Tiny bidirectional RNN and Transformer models trained on 300 sample pairs (seconds)."""
    root = tmp_path_factory.mktemp("models")
    pairs = read_corpus(SAMPLE / "train.en", SAMPLE / "train.fr")[:300]
    train(pairs, root / "rnn", TrainOptions.of(hidden=32, emb_dim=16, epochs=1, batch_tokens=400,
                                               direction="both"))
    train(pairs, root / "tf", TrainOptions.of(model_type="transformer", epochs=1, batch_tokens=400,
                                              d_model=32, heads=2, ff_dim=64, layers=2))
    return root


@pytest.fixture(scope="session")
def pairs():
    """The first 120 sample training pairs (a module that needs another slice overrides this)."""
    return read_corpus(SAMPLE / "train.en", SAMPLE / "train.fr")[:120]


@pytest.fixture
def texts(tmp_path, pairs):
    """:func:`pairs` as two line-parallel files, ``t.en`` and ``t.fr``."""
    src = write(tmp_path / "t.en", "".join(" ".join(s) + "\n" for s, _ in pairs))
    tgt = write(tmp_path / "t.fr", "".join(" ".join(t) + "\n" for _, t in pairs))
    return src, tgt


@pytest.fixture
def model_copy(models, tmp_path):
    """A copy of the two-direction RNN model, so a test may try to damage it."""
    shutil.copytree(models / "rnn", tmp_path / "M")
    return tmp_path / "M"
