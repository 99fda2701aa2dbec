"""Property-based tests (hypothesis): every reader reads back what its writer wrote, random bytes never
give a traceback (only attnalign's own errors), and the symmetrization laws hold."""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attnalign.data.alignments import Alignment, read_alignments, write_naacl, write_pharaoh
from attnalign.data.attnfile import AttentionWriter, read_attention
from attnalign.data.corpus import read_corpus
from attnalign.decoding.symmetrize import LINK_METHODS, symmetrize
from attnalign.errors import AttnAlignError
from attnalign.eval.metrics import alignment_counts

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
links = st.sets(st.tuples(st.integers(0, 12), st.integers(0, 12)), max_size=25)


@st.composite
def gold_alignments(draw):
    possible = draw(links)
    sure = draw(st.sets(st.sampled_from(sorted(possible)), max_size=len(possible))) if possible else set()
    return Alignment(frozenset(sure), frozenset(possible))


_TMP = tempfile.TemporaryDirectory()  # removed at exit; hypothesis's examples cannot share tmp_path


def _file(data: bytes) -> Path:
    fd, name = tempfile.mkstemp(suffix=".txt", dir=_TMP.name)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return Path(name)


@SETTINGS
@given(st.lists(gold_alignments(), min_size=1, max_size=8))
def test_pharaoh_round_trip(alignments):
    buf = io.StringIO()
    write_pharaoh(alignments, buf)
    back, info = read_alignments(_file(buf.getvalue().encode()), fmt="pharaoh")
    assert back == alignments and info.sentences == len(alignments)


@SETTINGS
@given(st.lists(gold_alignments(), min_size=1, max_size=8))
def test_naacl_round_trip(alignments):
    buf = io.StringIO()
    write_naacl(alignments, buf)
    if not buf.getvalue():  # a NAACL file lists links only; an alignment without any has no lines
        return
    back, _ = read_alignments(_file(buf.getvalue().encode()), fmt="naacl", n_sentences=len(alignments))
    assert back == alignments


words = st.text(st.characters(blacklist_categories=("Cs", "Zs", "Zl", "Zp", "Cc")), min_size=1, max_size=6)
word = words.filter(lambda w: not any(c.isspace() for c in w) and "\ufeff" not in w and w != "|||")


@SETTINGS
@given(st.lists(st.tuples(st.lists(word, max_size=6), st.lists(word, max_size=6)), min_size=1, max_size=8))
def test_corpus_round_trip_two_files_and_one(pairs):
    src = _file("".join(" ".join(s) + "\n" for s, _ in pairs).encode())
    tgt = _file("".join(" ".join(t) + "\n" for _, t in pairs).encode())
    assert read_corpus(src, tgt) == [(list(s), list(t)) for s, t in pairs]
    one = _file("".join(f"{' '.join(s)} ||| {' '.join(t)}\n" for s, t in pairs).encode())
    assert read_corpus(corpus=one) == [(list(s), list(t)) for s, t in pairs]


@SETTINGS
@given(st.binary(min_size=1, max_size=300))
def test_random_bytes_never_give_a_traceback(data):
    f = _file(data)
    for read in (lambda: read_alignments(f), lambda: read_alignments(f, fmt="naacl"),
                 lambda: read_corpus(corpus=f), lambda: read_corpus(f, f),
                 lambda: read_alignments(f, src_lengths=[3] * 5, tgt_lengths=[3] * 5)):
        with contextlib.suppress(AttnAlignError):
            read()


@SETTINGS
@given(st.lists(st.tuples(st.integers(1, 6), st.integers(1, 6)), min_size=1, max_size=4), st.randoms())
def test_attention_file_round_trip(shapes, rnd):
    import numpy as np

    path = _file(b"")
    mats = [np.array([[rnd.random() for _ in range(s)] for _ in range(t)], dtype=np.float32)
            for t, s in shapes]
    with open(path, "wb") as f:
        w = AttentionWriter(f, {"model": "m"})
        for k, m in enumerate(mats):  # an EOS mass per target word in 0-1, as attention gives
            w.add(k, [f"s{i}" for i in range(m.shape[1])], [f"t{j}" for j in range(m.shape[0])], m,
                  m.mean(axis=1))
        w.close()
    for k, m in enumerate(mats):
        assert np.array_equal(read_attention(path, k).matrix, m)


@SETTINGS
@given(links, links)
def test_symmetrization_laws(forward, reverse):
    inter, union = forward & reverse, forward | reverse
    assert symmetrize(forward, reverse, "intersection") == inter
    assert symmetrize(forward, reverse, "union") == union
    for method in LINK_METHODS:
        got = symmetrize(forward, reverse, method)
        assert inter <= got <= union, method  # every method lies between intersection and union
    # the final steps only add to grow-diag (gdfa is not within gdf: the greedy final step is
    # order-dependent, e.g. forward {} and reverse {0,1}x{0,1})
    gd = symmetrize(forward, reverse, "grow-diag")
    assert gd <= symmetrize(forward, reverse, "grow-diag-final-and")
    assert gd <= symmetrize(forward, reverse, "grow-diag-final")


@SETTINGS
@given(gold_alignments(), links)
def test_metric_bounds_and_perfect_score(gold, hyp):
    c = alignment_counts(Alignment.from_links(hyp), gold)
    assert 0.0 <= c.aer <= 1.0 and 0.0 <= c.precision <= 1.0 and 0.0 <= c.recall <= 1.0
    if gold.sure:
        assert alignment_counts(Alignment.from_links(gold.sure), gold).aer == 0.0
