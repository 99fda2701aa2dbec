"""Session fixtures: tiny models trained once for the align, plot and report tests."""

from __future__ import annotations

import pytest
from helpers import SAMPLE

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
