"""AER, precision, recall, F1: hand-computed cases, including the degenerate ones."""

from __future__ import annotations

import pytest

from attnalign.data.alignments import Alignment
from attnalign.eval.metrics import Counts, corpus_counts, sentence_counts

# (hyp, sure, possible-only, expected (precision, recall, aer)), computed by hand:
#   P = |A∩P|/|A|, R = |A∩S|/|S|, AER = 1 - (|A∩S| + |A∩P|)/(|A| + |S|), P ⊇ S.
CASES = [
    # perfect on sure links only
    ([(0, 0), (1, 1)], [(0, 0), (1, 1)], [], (1.0, 1.0, 0.0)),
    # one of two right: P = 1/2, R = 1/2, AER = 1 - 2/4
    ([(0, 0), (0, 1)], [(0, 0), (1, 1)], [], (0.5, 0.5, 0.5)),
    # a possible link is not an error but does not count for recall:
    # A = {00, 12}, S = {00, 11}, P = S ∪ {12}: |A∩S| = 1, |A∩P| = 2 -> P = 1, R = .5, AER = 1 - 3/4
    ([(0, 0), (1, 2)], [(0, 0), (1, 1)], [(1, 2)], (1.0, 0.5, 0.25)),
    # all wrong
    ([(2, 2)], [(0, 0)], [], (0.0, 0.0, 1.0)),
    # empty hypothesis against a gold: nothing found
    ([], [(0, 0), (1, 1)], [(2, 2)], (0.0, 0.0, 1.0)),
    # a hypothesis against an empty gold: all false positives
    ([(0, 0)], [], [], (0.0, 0.0, 1.0)),
    # nothing to find, nothing found: perfect by convention
    ([], [], [], (1.0, 1.0, 0.0)),
    # only possible links in the gold, hypothesis hits one: |A∩S| = 0, |A∩P| = 1, |S| = 0
    # P = 1/1, R = 0 (|S| = 0 but A not empty), AER = 1 - 1/1 = 0
    ([(0, 1)], [], [(0, 1), (1, 0)], (1.0, 0.0, 0.0)),
]


@pytest.mark.parametrize(("hyp", "sure", "possible", "expected"), CASES)
def test_sentence_scores(hyp, sure, possible, expected):
    c = sentence_counts(hyp, sure, possible)
    p, r, aer = expected
    assert c.precision == pytest.approx(p)
    assert c.recall == pytest.approx(r)
    assert c.aer == pytest.approx(aer)
    f1 = 0.0 if p + r == 0 else 2 * p * r / (p + r)
    assert c.f1 == pytest.approx(f1)


def test_sure_links_are_added_to_possible():
    c = sentence_counts([(0, 0)], sure=[(0, 0)], possible=[(1, 1)])
    assert c.possible == 2  # {00, 11}
    a = Alignment(frozenset({(0, 0)}), frozenset({(1, 1)}))
    assert a.possible == {(0, 0), (1, 1)}


def test_corpus_score_sums_counts_before_dividing():
    # Sentence 1: 1 link, right. Sentence 2: 3 links, 1 right, |S| = 1.
    gold = [Alignment.from_links([(0, 0)]), Alignment.from_links([(0, 0)])]
    hyp = [Alignment.from_links([(0, 0)]), Alignment.from_links([(0, 0), (1, 1), (2, 2)])]
    total = sum(corpus_counts(hyp, gold), Counts())
    # micro: P = 2/4 (a macro average would give (1 + 1/3)/2 = 0.667)
    assert total.precision == pytest.approx(0.5)
    assert total.recall == pytest.approx(1.0)
    assert total.aer == pytest.approx(1 - (2 + 2) / (4 + 2))
    assert total.sentences == 2


def test_json_keys_are_fractions_and_integers():
    d = sentence_counts([(0, 0), (1, 1)], [(0, 0)], [(1, 1)]).as_dict()
    for key in ("aer", "precision", "recall", "f1"):
        assert isinstance(d[key], float) and 0.0 <= d[key] <= 1.0
    for key in ("sentences", "links", "sure", "possible"):
        assert isinstance(d[key], int)
    assert (d["links"], d["sure"], d["possible"]) == (2, 1, 2)


def test_mismatched_lengths_are_refused():
    with pytest.raises(ValueError):
        corpus_counts([Alignment()], [])
