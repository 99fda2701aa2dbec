"""A teacher that goes on from what another teacher learned (:mod:`attnalign.statistical.learned`): the
counts kept by word, mapped onto a new corpus's table, the M-step over both corpora, the file, and
what going on buys on the sample data."""

from __future__ import annotations

from itertools import chain

import numpy as np
import pytest
from helpers import SAMPLE

from attnalign.data.alignments import Alignment, read_alignments
from attnalign.data.corpus import read_corpus
from attnalign.eval.metrics import Counts, corpus_counts
from attnalign.statistical import SoftTeacher, teacher_file
from attnalign.statistical.em import m_step
from attnalign.statistical.ids import IdCorpus, LexTable
from attnalign.statistical.learned import KeptCounts
from attnalign.statistical.options import TeacherOptions

A = [(["the", "cat"], ["le", "chat"]), (["the", "dog"], ["le", "chien"]), (["a", "cat"], ["un", "chat"])]


def test_kept_counts_map_by_word_onto_another_corpus_table():
    a = IdCorpus.encode(A)
    ta = LexTable(a)
    counts = np.arange(1, len(ta) + 1, dtype=np.float64)  # entry k holds k + 1
    kept = KeptCounts.of(a, ta, counts)
    # source totals by hand: every entry of "the" (id 1): (the, le), (the, chat), (the, chien)
    the = [k for k, key in enumerate(ta.keys) if key // ta.width == 1]
    assert len(the) == 3 and kept.src_totals[1] == sum(counts[the])
    # a new corpus: "the cat" again (known entries), "the bird" (a new target word), "big cat" (a new source)
    b = IdCorpus.encode([(["the", "cat"], ["le", "oiseau"]), (["big", "cat"], ["gros", "chat"])])
    tb = LexTable(b)
    on_b = kept.on(b, tb)
    on, outside = on_b.counts, on_b.outside
    for k, key in enumerate(tb.keys):
        e, f = b.src_words[key // tb.width], b.tgt_words[key % tb.width]
        ia = a.src_words.index(e) if e in a.src_words else -1
        fa = a.tgt_words.index(f) if f in a.tgt_words else -1
        hit = np.nonzero(ta.keys == ia * ta.width + fa)[0] if ia >= 0 and fa > 0 else []
        assert on[k] == (counts[hit[0]] if len(hit) else 0.0), (e, f)
    # outside: each source word's kept total less what the new table holds of it
    the_b = b.src_words.index("the")
    assert outside[the_b] == kept.src_totals[1] - on[tb.pair_src == the_b].sum()
    assert outside[b.src_words.index("big")] == 0.0
    assert kept.n_tgt(b) == on_b.n_tgt == a.n_tgt - 1 + 2  # oiseau and gros are new


def test_the_m_step_over_kept_counts_is_the_m_step_of_the_whole_corpus():
    """Going on over part of the training corpus, with nothing new counted, gives the training
    corpus's own t on every entry of that part."""
    pairs = read_corpus(SAMPLE / "train.en", SAMPLE / "train.fr")[:300]
    a = IdCorpus.encode(pairs)
    ta = LexTable(a)
    counts = np.random.default_rng(0).uniform(0.01, 3.0, len(ta))
    t_a = m_step(ta, counts, 0.01)
    kept = KeptCounts.of(a, ta, counts)
    b = IdCorpus.encode(pairs[100:150])
    tb = LexTable(b)
    t_b = m_step(tb, np.zeros(len(tb)), 0.01, base=kept.on(b, tb))
    index = {key: k for k, key in enumerate(ta.keys.tolist())}
    to_a = [index[a.src_words.index(b.src_words[key // tb.width]) * ta.width
                  + a.tgt_words.index(b.tgt_words[key % tb.width])] for key in tb.keys.tolist()]
    assert np.allclose(t_b, t_a[to_a], rtol=1e-6)  # float32 counts


def test_kept_counts_round_trip_and_prune():
    a = IdCorpus.encode(A)
    ta = LexTable(a)
    counts = np.where(np.arange(len(ta)) % 2, 1e-5, 2.0)
    kept = KeptCounts.of(a, ta, counts, jump=np.arange(5.0))
    assert len(kept.keys) == (counts >= 1e-3).sum()  # the tiny ones are not kept...
    assert np.isclose(kept.src_totals.sum(), counts.sum())  # ...but their mass is
    back = KeptCounts.from_arrays(kept.arrays("x."), "x.")
    assert back.src_words == a.src_words and back.tgt_words == a.tgt_words
    assert (back.keys == kept.keys).all() and (back.counts == kept.counts).all()
    assert (back.tables["jump"] == np.arange(5.0)).all()
    assert back.table("jump", (5,)) is not None and back.table("jump", (7,)) is None  # another model's sizes
    broken = {**kept.arrays("x."), "x.src_totals": np.zeros(1)}
    with pytest.raises(ValueError, match="do not fit"):
        KeptCounts.from_arrays(broken, "x.")


def _aer(links, gold) -> float:
    return 100 * sum(corpus_counts([Alignment.from_links(x) for x in links], gold), Counts()).aer


@pytest.fixture(scope="module")
def sample():
    train = read_corpus(SAMPLE / "train.en", SAMPLE / "train.fr")
    test = read_corpus(SAMPLE / "test.en", SAMPLE / "test.fr")
    gold, _ = read_alignments(SAMPLE / "test.gold.pharaoh")
    return train, test, gold, SoftTeacher(train, keep=True)


def test_going_on_learns_from_the_training_corpus_at_the_cost_of_the_new_pairs(sample):
    """The default teacher going on from the training corpus's counts over the 200 test pairs: better
    than a teacher of the test pairs alone, as good as one trained on both corpora (2.99 / 3.58 / 2.98
    AER when written)."""
    train, test, gold, kept = sample
    assert set(kept.kept) == {"hmm-agree", "fertility"}
    going_on = SoftTeacher(test, kept=kept.kept)
    assert going_on.pairs == len(test)
    on, alone = _aer(going_on.links(0, len(test)), gold), _aer(SoftTeacher(test).links(0, len(test)), gold)
    both = _aer(SoftTeacher(list(chain(test, train))).links(0, len(test)), gold)
    assert on < alone - 0.3 and on <= both + 0.3, (on, alone, both)


def test_the_teacher_file_keeps_the_counts_for_its_options(sample, tmp_path):
    train, _, _, kept = sample
    options = TeacherOptions().as_kwargs()
    shapes = [(len(t), len(s)) for s, t in train[:10]]
    meta = teacher_file.teacher_meta(options, "f", 10)
    teacher_file.save_matrices(tmp_path / teacher_file.FILE, kept, list(range(10)), shapes, meta)
    loaded, pairs = teacher_file.load_kept(tmp_path, options)
    assert pairs == 10 and set(loaded) == {"hmm-agree", "fertility"}
    for name, sides in kept.kept.items():
        for a, b in zip(sides, loaded[name], strict=True):
            assert a.src_words == b.src_words and (a.keys == b.keys).all() and (a.counts == b.counts).all()
            assert set(a.tables) == set(b.tables)
    assert teacher_file.load_kept(tmp_path, {**options, "model": "hmm-agree"}) is None  # another teacher's
    # kept before --samplers existed: its options lack it, and it had one chain
    old = {k: v for k, v in options.items() if k != "samplers"}
    teacher_file.save_matrices(tmp_path / teacher_file.FILE, kept, list(range(10)), shapes,
                        teacher_file.teacher_meta(old, "f", 10))
    assert teacher_file.load_kept(tmp_path, options) is not None
    assert teacher_file.load_kept(tmp_path, {**options, "samplers": 2}) is None
    assert teacher_file.load_matching(tmp_path, options, 10, lambda: "f") is not None
    assert teacher_file.load_matching(tmp_path, {**options, "samplers": 2}, 10, lambda: "f") is None
    assert teacher_file.SavedTeacher(tmp_path / teacher_file.FILE).pairs == 10  # the matrices still read
    # a file from before counts were kept, and a damaged one: nothing to go on from
    teacher_file.save_matrices(tmp_path / teacher_file.FILE, SoftTeacher(train[:10]), list(range(10)), shapes,
                               meta)
    assert teacher_file.load_kept(tmp_path, options) is None
    (tmp_path / teacher_file.FILE).write_bytes(b"PK\x03\x04 not a zip")
    assert teacher_file.load_kept(tmp_path, options) is None
