"""Alignment and gold formats: Pharaoh/talp and NAACL readers, writers, base and order checks."""

from __future__ import annotations

import io

import pytest
from helpers import write

from attnalign.data.alignments import (
    Alignment,
    detect_format,
    read_alignments,
    write_naacl,
    write_pharaoh,
)
from attnalign.errors import AttnAlignWarning, FormatError


def test_pharaoh_sure_possible_labels_and_scores(tmp_path):
    f = write(tmp_path / "a.txt", "0-0 1p1 2?2 3-3-S 4-4-P 5-5:0.75\n\n0-1\n")
    al, info = read_alignments(f)
    assert info.format == "pharaoh" and not info.one_based and info.sentences == 3
    assert al[0].sure == {(0, 0), (3, 3), (5, 5)}
    assert al[0].possible == {(0, 0), (1, 1), (2, 2), (3, 3), (4, 4), (5, 5)}
    assert al[0].scores == {(5, 5): 0.75}
    assert al[1] == Alignment() and al[2].sure == {(0, 1)}


def test_pharaoh_one_based_and_reversed(tmp_path):
    f = write(tmp_path / "a.txt", "1-2 3-1\n")
    al, _ = read_alignments(f, one_based=True, reverse=True)
    assert al[0].sure == {(1, 0), (0, 2)}


def test_naacl_padding_null_labels_confidence(tmp_path):
    text = "0001 1 1 S\n0001 2 3 P\n0001 0 2 S\n0002 3 0 P\n0003 2 2\n0003 1 1 P 0.5\n0003 3 3 0.9\n"
    f = write(tmp_path / "g.naacl", text)
    al, info = read_alignments(f)
    assert info.format == "naacl" and info.one_based and info.sentences == 3
    assert al[0].sure == {(0, 0)} and al[0].possible == {(0, 0), (1, 2)}  # NULL link dropped
    assert al[1] == Alignment()  # only a NULL link
    assert al[2].sure == {(1, 1), (2, 2)} and al[2].possible == {(0, 0), (1, 1), (2, 2)}


def test_naacl_sentence_count_from_text_and_missing_sentences(tmp_path):
    f = write(tmp_path / "g.naacl", "2 1 1 S\n")
    # a prediction lists only sentences with links: the text says how many there are
    al, info = read_alignments(f, src_lengths=[1, 1, 1], tgt_lengths=[1, 1, 1], role="pred")
    assert info.sentences == 3 and [len(a) for a in al] == [0, 1, 0]
    # a gold's sentences are its own, up to its largest id, whatever the text's length
    with pytest.warns(UserWarning, match="the gold has links for 2 sentences"):
        al, info = read_alignments(f, src_lengths=[1, 1, 1], tgt_lengths=[1, 1, 1])
    assert info.sentences == 2 and [len(a) for a in al] == [0, 1]


def test_sure_wins_over_possible_for_the_same_link(tmp_path):
    f = write(tmp_path / "g.naacl", "1 1 1 P\n1 1 1 S\n")
    al, _ = read_alignments(f)
    assert al[0].sure == {(0, 0)} == al[0].possible


@pytest.mark.parametrize(
    ("text", "fmt"),
    [("0-1 2-3\n", "pharaoh"), ("1 1 2 S\n", "naacl"), ("1 2 3\n", "naacl"), ("\n\n", "pharaoh"),
     ("0p1\n", "pharaoh"), ("\n1 1 2 S\n2 1-2\n", "naacl")],
)
def test_detect_format(tmp_path, text, fmt):
    assert detect_format(write(tmp_path / "x", text)) == fmt


def test_a_bad_line_deep_in_a_naacl_file_is_reported_where_it_is(tmp_path):
    lines = "".join(f"{k} 1 1 S\n" for k in range(1, 11)) + "11 1-1\n"
    with pytest.raises(FormatError) as e:
        read_alignments(write(tmp_path / "g", lines))
    assert e.value.line == 11 and "NAACL" in e.value.message and "--gold-format pharaoh" in e.value.hint
    with pytest.raises(FormatError) as e:
        read_alignments(write(tmp_path / "p", "0-1 x\n"), role="pred")
    assert "--pred-format naacl" in e.value.hint


@pytest.mark.parametrize("text", ["1 ² 1\n", "0-1:e\n", "0-1:.\n", "٣-x\n"])
def test_odd_digits_and_scores_are_format_errors(tmp_path, text):
    with pytest.raises(FormatError):
        read_alignments(write(tmp_path / "g", text))


def test_short_pharaoh_gold_with_text_scores_its_lines_with_a_warning(tmp_path):
    gold = write(tmp_path / "g", "0-0\n")
    with pytest.warns(AttnAlignWarning, match="1 lines for a text of 3"):
        al, info = read_alignments(gold, src_lengths=[1, 1, 1], tgt_lengths=[1, 1, 1])
    assert len(al) == 1 == info.sentences


def test_bad_pharaoh_token_names_line_and_format(tmp_path):
    f = write(tmp_path / "a.txt", "0-0\n0-1 x-2\n")
    with pytest.raises(FormatError) as e:
        read_alignments(f, fmt="pharaoh")
    assert e.value.line == 2 and "'x-2'" in e.value.message


def test_bad_naacl_line(tmp_path):
    f = write(tmp_path / "g.naacl", "1 1 1 S\n1 1 1 Q\n")
    with pytest.raises(FormatError) as e:
        read_alignments(f, fmt="naacl")
    assert e.value.line == 2


def test_one_based_file_read_as_zero_based_warns(tmp_path):
    f = write(tmp_path / "talp", "".join(f"{k}-{k} {k + 1}-{k}\n" for k in range(1, 12)))
    with pytest.warns(AttnAlignWarning, match="looks 1-based.*--gold-one-based"):
        read_alignments(f)


def test_index_zero_in_one_based_pharaoh_is_an_error(tmp_path):
    f = write(tmp_path / "a", "1-1\n0-2\n")
    with pytest.raises(FormatError, match="index 0") as e:
        read_alignments(f, one_based=True)
    assert e.value.line == 2 and "--gold-zero-based" in e.value.hint


def test_range_check_suggests_the_right_option(tmp_path):
    # 1-based, target first: sentence of 2 source and 3 target words
    f = write(tmp_path / "a", "3-1 1-2\n")
    with pytest.raises(FormatError) as e:
        read_alignments(f, src_lengths=[2], tgt_lengths=[3])
    assert "--gold-one-based and --reverse-gold" in e.value.hint
    al, _ = read_alignments(f, src_lengths=[2], tgt_lengths=[3], one_based=True, reverse=True)
    assert al[0].sure == {(0, 2), (1, 0)}


def test_range_check_too_many_lines(tmp_path):
    f = write(tmp_path / "a", "0-0\n0-0\n")
    with pytest.raises(FormatError, match="2 lines but the text has 1"):
        read_alignments(f, src_lengths=[1], tgt_lengths=[1])


def test_max_sentences_reads_a_prefix(tmp_path):
    f = write(tmp_path / "a", "0-0\n1-1\n2-2\n")
    al, info = read_alignments(f, max_sentences=2)
    assert len(al) == 2 and info.lines_ignored == 1


def test_writers_round_trip(tmp_path):
    al = [
        Alignment(frozenset({(0, 0), (2, 1)}), frozenset({(1, 1)})),
        Alignment(),
        Alignment.from_links([(3, 0)], scores={(3, 0): 0.5}),
    ]
    buf = io.StringIO()
    assert write_pharaoh(al, buf, with_scores=True) == 3
    assert buf.getvalue() == "0-0 1p1 2-1\n\n3-0:0.5000\n"
    back, _ = read_alignments(write(tmp_path / "p", buf.getvalue()))
    assert back == al
    buf = io.StringIO()
    assert write_naacl(al, buf) == 4
    assert buf.getvalue().splitlines()[0] == "1 1 1 S"
    back, _ = read_alignments(write(tmp_path / "n", buf.getvalue()), n_sentences=3)
    assert back == al


def test_a_format_is_one_registered_reader(tmp_path, monkeypatch):
    # a new format is a reader and its traits: read by name, detected by its look, 0-based unless told
    from attnalign.data import alignments as al

    monkeypatch.setattr(al, "ALIGNMENT_FORMATS", dict(al.ALIGNMENT_FORMATS))

    @al.register_format("arrows", help="arrows: i>j links", looks_like=lambda line: ">" in line)
    def read_arrows(p, encoding, role, n_sentences, max_sentences, from_text):
        rows = [line.split() for line in p.read_text(encoding=encoding).splitlines()]
        raw = [al.RawLink(k, int(a), int(b), True, None, k + 1)
               for k, row in enumerate(rows) for a, b in (t.split(">") for t in row)]
        return raw, len(rows), 0

    path = write(tmp_path / "x.txt", "0>0 1>2\n1>1\n")
    alignments, info = al.read_alignments(path)
    assert (info.format, info.one_based, info.sentences) == ("arrows", False, 2)
    assert [set(a.sure) for a in alignments] == [{(0, 0), (1, 2)}, {(1, 1)}]
    one_based = write(tmp_path / "y.txt", "1>1 2>3\n2>2\n")
    assert al.read_alignments(one_based, fmt="arrows", one_based=True)[0][0].sure == {(0, 0), (1, 2)}
    assert al.detect_format(write(tmp_path / "p.txt", "0-0 1-2\n")) == "pharaoh"  # the first one registered
