"""Decoding attention matrices into links: hand-worked cases on small matrices."""

from __future__ import annotations

import numpy as np

from attnalign.decoding import argmax_links
from attnalign.nmt.words import select_rows, tokens_to_words


def test_argmax_and_eos_means_no_link():
    m = np.array([[0.7, 0.2], [0.1, 0.3], [0.5, 0.5]])
    assert argmax_links(m) == [(0, 0), (0, 2), (1, 1)]  # ties go to the first source word
    eos = np.array([0.1, 0.6, 0.0])
    assert argmax_links(m, eos) == [(0, 0), (0, 2)]  # target 1 put most mass on EOS
    assert argmax_links(np.zeros((0, 3))) == []


def test_select_rows_and_shift():
    # decoder steps x (2 source words + EOS) for a 2-word target: 3 steps
    att = np.array([[0.8, 0.1, 0.1], [0.2, 0.7, 0.1], [0.0, 0.1, 0.9]])
    m, eos = select_rows(att, src_len=2, tgt_len=2, shift=0)
    assert m.tolist() == [[0.8, 0.1], [0.2, 0.7]] and eos.tolist() == [0.1, 0.1]
    m, eos = select_rows(att, src_len=2, tgt_len=2, shift=1)
    assert m.tolist() == [[0.2, 0.7], [0.0, 0.1]] and eos.tolist() == [0.1, 0.9]


def test_tokens_to_words_sums_source_pieces_and_averages_target_pieces():
    # source words: [p0 p1] [p2 p3]; target words: [q0] [q1 q2]
    m = np.array([[0.1, 0.2, 0.3, 0.4], [0.5, 0.5, 0.0, 0.0], [0.0, 0.0, 0.5, 0.5]])
    w, eos = tokens_to_words(m, np.zeros(3), [0, 0, 1, 1], [0, 1, 1], 2, 2)
    assert np.allclose(w, [[0.3, 0.7], [0.5, 0.5]]) and np.allclose(eos, 0)


def test_argmax_src_inter_threshold():
    from attnalign.decoding import argmax_src_links, decode_matrix, inter_links, threshold_links

    # rows: target words 0..2; columns: source words 0..2
    m = np.array([[0.6, 0.3, 0.1], [0.5, 0.4, 0.1], [0.1, 0.2, 0.7]])
    # column argmax: source 0 -> target 0, source 1 -> target 1 (0.4 > 0.3, 0.2), source 2 -> target 2
    assert argmax_src_links(m) == [(0, 0), (1, 1), (2, 2)]
    # row argmax: 0->0, 1->0, 2->2; agreeing with the columns: 0-0 and 2-2
    assert inter_links(m) == [(0, 0), (2, 2)]
    assert threshold_links(m, 0.45) == [(0, 0), (0, 1), (2, 2)]
    assert decode_matrix(m, "argmax") == [(0, 0), (0, 1), (2, 2)]  # sorted by (source, target)
    assert argmax_src_links(m, eos=np.array([0.0, 0.9, 0.0])) == [(0, 0), (2, 2)]


def test_relative_follows_the_matrix_s_own_scale():
    from attnalign.decoding import RELATIVE_RATIO, decode_matrix, relative_links

    assert RELATIVE_RATIO == 0.7
    m = np.array([[0.6, 0.3, 0.1], [0.5, 0.4, 0.1], [0.1, 0.2, 0.7]])
    # (0,0) 0.6: its row's max, its column's max; (target 1, source 0) 0.5 >= 0.7 * 0.5 in its row and
    # >= 0.7 * 0.6 = 0.42 in its column; (target 1, source 1) 0.4 >= 0.35 and its column's max;
    # (target 0, source 1) 0.3 < 0.7 * 0.6 in its row; (2,2) 0.7: both maxima
    assert relative_links(m, 0.2) == [(0, 0), (0, 1), (1, 1), (2, 2)]
    assert relative_links(m, 0.45) == [(0, 0), (0, 1), (2, 2)]  # the floor cuts 0.4
    flat = m / 4  # a flatter matrix keeps its links where a fixed cut of 0.1 keeps fewer
    assert relative_links(flat, 0.05) == relative_links(m, 0.2)
    assert decode_matrix(m, "relative", threshold=0.2) == relative_links(m, 0.2)
    assert relative_links(np.zeros((0, 3)), 0.2) == []
