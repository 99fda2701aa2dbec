"""Parallel corpus reading: both layouts, tokenization, every error path."""

from __future__ import annotations

import pytest
from helpers import write

from attnalign.data.corpus import count_lines, open_corpus, read_corpus
from attnalign.errors import AttnAlignError, AttnAlignWarning, CorpusError


def test_two_files(tmp_path):
    s = write(tmp_path / "a.en", "the  cat\nA Dog\n")
    t = write(tmp_path / "a.fr", "le chat\r\nun chien")  # CRLF, no final newline
    assert read_corpus(s, t) == [(["the", "cat"], ["le", "chat"]), (["A", "Dog"], ["un", "chien"])]
    assert read_corpus(s, t, lowercase=True)[1] == (["a", "dog"], ["un", "chien"])


@pytest.mark.parametrize("sep", [" ||| ", "   |||  ", "\t", " |||\t"])
def test_one_file_separators(tmp_path, sep):
    c = write(tmp_path / "c.txt", f"the cat{sep}le chat\n")
    assert read_corpus(corpus=c) == [(["the", "cat"], ["le", "chat"])]


def test_bars_inside_a_token_are_not_a_separator(tmp_path):
    c = write(tmp_path / "c.txt", "a|||b c ||| x\nsrc ||| \n")
    assert read_corpus(corpus=c) == [(["a|||b", "c"], ["x"]), (["src"], [])]
    with pytest.raises(CorpusError, match="no ' \\|\\|\\| ' .*separator"):
        read_corpus(corpus=write(tmp_path / "d.txt", "the cat|||le chat\n"))


def test_empty_sides_are_kept_and_counted(tmp_path):
    c = write(tmp_path / "c.txt", "a b ||| c\n ||| d\ne ||| \n\n")
    with pytest.warns(AttnAlignWarning, match="3 of 4 pairs have an empty side"):
        pairs = read_corpus(corpus=c)
    assert pairs == [(["a", "b"], ["c"]), ([], ["d"]), (["e"], []), ([], [])]


def test_line_counts_differ(tmp_path):
    s = write(tmp_path / "a.en", "1\n2\n3\n")
    t = write(tmp_path / "a.fr", "1\n2\n")
    with pytest.raises(CorpusError, match=r"a\.en has 3 lines, .*a\.fr has 2"):
        open_corpus(s, t)


def test_missing_separator_names_the_line(tmp_path):
    c = write(tmp_path / "c.txt", "a ||| b\nno separator here\n")
    with pytest.raises(CorpusError) as e:
        read_corpus(corpus=c)
    assert e.value.line == 2 and e.value.path == str(c)
    assert "separator" in e.value.message


def test_two_separators(tmp_path):
    c = write(tmp_path / "c.txt", "a ||| b ||| c\n")
    with pytest.raises(CorpusError, match="2 ' \\|\\|\\| ' separators"):
        read_corpus(corpus=c)


def test_invalid_utf8_suggests_an_encoding(tmp_path):
    s = write(tmp_path / "a.fr", "ok\nd\xe9j\xe0\n".encode("latin-1"))
    t = write(tmp_path / "a.en", "ok\nalready\n")
    with pytest.raises(CorpusError) as e:
        read_corpus(s, t)
    assert e.value.line == 2 and "--encoding latin-1" in e.value.hint
    assert read_corpus(s, t, encoding="latin-1")[1] == (["déjà"], ["already"])


@pytest.mark.parametrize("missing", ["src", "tgt", "both"])
def test_missing_and_empty_files(tmp_path, missing):
    s = write(tmp_path / "a.en", "x\n")
    t = write(tmp_path / "a.fr", "y\n")
    if missing == "src":
        s = tmp_path / "nope.en"
    elif missing == "tgt":
        t = write(tmp_path / "empty.fr", "")
    else:
        with pytest.raises(AttnAlignError, match="needs both"):
            open_corpus(s, None)
        return
    with pytest.raises(CorpusError, match="does not exist|is empty"):
        open_corpus(s, t)


def test_corpus_and_two_files_are_exclusive(tmp_path):
    c = write(tmp_path / "c.txt", "a ||| b\n")
    with pytest.raises(AttnAlignError, match="not both"):
        open_corpus(c, c, c)


def test_streaming_and_length(tmp_path):
    c = write(tmp_path / "c.txt", "".join(f"w{i} ||| v{i}\n" for i in range(1000)))
    corpus = open_corpus(corpus=c)
    assert len(corpus) == 1000 == count_lines(c)
    first = next(iter(corpus))
    assert first == (["w0"], ["v0"])
