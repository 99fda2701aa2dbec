"""The shipped sample data is what its generator makes, and its gold fits its text."""

from __future__ import annotations

import runpy

from helpers import SAMPLE

from attnalign.data.alignments import read_alignments
from attnalign.data.corpus import read_corpus

FILES = ["train.en", "train.fr", "dev.en", "dev.fr", "dev.gold.pharaoh", "test.en", "test.fr",
         "test.gold.pharaoh", "test.gold.naacl", "test.diagonal.align"]


def test_generator_is_deterministic_and_matches_the_shipped_files(tmp_path):
    mod = runpy.run_path(str(SAMPLE / "make_sample_data.py"))
    mod["write"](tmp_path)
    for name in FILES:
        assert (tmp_path / name).read_bytes() == (SAMPLE / name).read_bytes(), name


def test_gold_fits_the_text_in_both_formats():
    pairs = read_corpus(SAMPLE / "test.en", SAMPLE / "test.fr")
    lens = ([len(s) for s, _ in pairs], [len(t) for _, t in pairs])
    ph, _ = read_alignments(SAMPLE / "test.gold.pharaoh", src_lengths=lens[0], tgt_lengths=lens[1])
    na, _ = read_alignments(SAMPLE / "test.gold.naacl", src_lengths=lens[0], tgt_lengths=lens[1])
    assert ph == na and len(ph) == 200
    assert sum(len(a.sure) for a in ph) > 0 and any(a.possible - a.sure for a in ph)


def test_sizes():
    assert len(read_corpus(SAMPLE / "train.en", SAMPLE / "train.fr")) == 5000
    total = sum((SAMPLE / n).stat().st_size for n in FILES)
    assert total < 1_000_000
