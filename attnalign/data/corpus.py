"""Parallel corpus files: two files (one sentence per line) or one ``src ||| tgt`` file.

Torch-free. Sentences are whitespace-tokenized, as every alignment tool and gold set is: a token is
a maximal run of non-whitespace characters, and the links of an alignment index these tokens.

Files are read lazily, line by line, in binary, so a corpus of any size streams with flat memory and a
decoding error can name its line. What can be checked before the work starts (files exist, are not
empty, have the same number of lines) is checked when the corpus is opened.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import CorpusError, warn

Tokens = list[str]
# A corpus in memory: (source tokens, target tokens) per pair. The one definition; used everywhere.
Pairs = Sequence[tuple[Sequence[str], Sequence[str]]]
SEPARATORS = ("|||", "\t")


def count_lines(path: str | os.PathLike) -> int:
    """Number of lines in a file; a last line without a newline counts."""
    n = 0
    last = b"\n"
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            n += chunk.count(b"\n")
            last = chunk[-1:]
    return n + (last != b"\n")


def check_readable(path: str | os.PathLike, what: str = "file") -> Path:
    """Return ``path`` as a Path, or raise a clear error if it is missing, a directory or empty."""
    p = Path(path)
    if not p.exists():
        raise CorpusError(f"{what} does not exist", path=p, hint="check the path and its spelling")
    if p.is_dir():
        raise CorpusError(f"{what} is a directory, not a file", path=p)
    if p.stat().st_size == 0:
        raise CorpusError(f"{what} is empty", path=p, hint="give a file with one sentence per line")
    return p


def _decode(raw: bytes, path: Path, lineno: int, encoding: str) -> str:
    try:
        return raw.decode(encoding).rstrip("\r\n")
    except UnicodeDecodeError as e:
        raise CorpusError(
            f"invalid {encoding} (byte {e.start + 1} of the line)",
            path=path,
            line=lineno,
            hint="if the file is in another encoding, pass it, e.g. --encoding latin-1",
        ) from None


def read_lines(path: str | os.PathLike, encoding: str = "utf-8") -> Iterator[str]:
    """Yield the decoded lines of a file (without their newline), with errors naming the line."""
    p = Path(path)
    with open(p, "rb") as f:
        for lineno, raw in enumerate(f, start=1):
            yield _decode(raw, p, lineno, encoding)


def tokenize(text: str, lowercase: bool = False) -> Tokens:
    """Whitespace tokenization (the convention of every alignment tool and gold set)."""
    return (text.lower() if lowercase else text).split()


def split_pair(line: str, path: Path, lineno: int) -> tuple[str, str]:
    """Split one line of a one-file corpus on `` ||| `` (or a TAB) into its two sides."""
    if not line.strip():
        return "", ""
    for sep in SEPARATORS:
        if sep in line:
            parts = line.split(sep)
            if len(parts) != 2:
                raise CorpusError(
                    f"line has {len(parts) - 1} {sep!r} separators; expected exactly one",
                    path=path,
                    line=lineno,
                    hint="write each pair as 'source ||| target'",
                )
            return parts[0], parts[1]
    raise CorpusError(
        "line has no ' ||| ' (or TAB) separator between source and target",
        path=path,
        line=lineno,
        hint="write each pair as 'source ||| target', or give two files with --src and --tgt",
    )


@dataclass
class ParallelCorpus:
    """A lazily read parallel corpus; iterating yields ``(src_tokens, tgt_tokens)`` in file order.

    Open it with :func:`open_corpus`, which validates the files. Each iteration re-reads the files.
    ``empty_pairs`` counts pairs with an empty side seen by the last complete iteration; such pairs are
    kept (they get an empty alignment line) and reported in a warning.
    """

    src_path: Path | None
    tgt_path: Path | None
    corpus_path: Path | None
    n_pairs: int
    encoding: str = "utf-8"
    lowercase: bool = False
    empty_pairs: int = field(default=0, init=False)

    def __len__(self) -> int:
        return self.n_pairs

    @property
    def name(self) -> str:
        if self.corpus_path is not None:
            return str(self.corpus_path)
        return f"{self.src_path} + {self.tgt_path}"

    def _raw_pairs(self) -> Iterator[tuple[str, str]]:
        if self.corpus_path is not None:
            p = self.corpus_path
            for lineno, line in enumerate(read_lines(p, self.encoding), start=1):
                yield split_pair(line, p, lineno)
        else:
            assert self.src_path is not None and self.tgt_path is not None
            yield from zip(
                read_lines(self.src_path, self.encoding),
                read_lines(self.tgt_path, self.encoding),
                strict=True,
            )

    def __iter__(self) -> Iterator[tuple[Tokens, Tokens]]:
        empty = 0
        for src, tgt in self._raw_pairs():
            s, t = tokenize(src, self.lowercase), tokenize(tgt, self.lowercase)
            if not s or not t:
                empty += 1
            yield s, t
        self.empty_pairs = empty
        if empty:
            warn(
                f"{self.name}: {empty} of {self.n_pairs} pairs have an empty side; they are kept "
                "and get an empty alignment line"
            )


def open_corpus(
    src: str | os.PathLike | None = None,
    tgt: str | os.PathLike | None = None,
    corpus: str | os.PathLike | None = None,
    *,
    encoding: str = "utf-8",
    lowercase: bool = False,
) -> ParallelCorpus:
    """Open a parallel corpus given as ``src`` + ``tgt`` files or one ``corpus`` file (``src ||| tgt``).

    Checks now, before any work: the files exist and are not empty, and two files have the same number
    of lines. Decoding and separator errors are raised, with their line, when iteration reaches them.
    """
    if corpus is not None and (src is not None or tgt is not None):
        raise CorpusError("give either --corpus or --src and --tgt, not both")
    if corpus is not None:
        p = check_readable(corpus, "corpus file")
        return ParallelCorpus(None, None, p, count_lines(p), encoding, lowercase)
    if src is None or tgt is None:
        raise CorpusError(
            "a parallel corpus needs both --src and --tgt (or one --corpus file with 'src ||| tgt')"
        )
    ps, pt = check_readable(src, "source file"), check_readable(tgt, "target file")
    ns, nt = count_lines(ps), count_lines(pt)
    if ns != nt:
        raise CorpusError(
            f"the source and target files have different line counts: {ps} has {ns} lines, "
            f"{pt} has {nt}",
            hint="a parallel corpus needs one sentence per line on both sides, in the same order",
        )
    return ParallelCorpus(ps, pt, None, ns, encoding, lowercase)


def read_corpus(
    src: str | os.PathLike | None = None,
    tgt: str | os.PathLike | None = None,
    corpus: str | os.PathLike | None = None,
    *,
    encoding: str = "utf-8",
    lowercase: bool = False,
) -> list[tuple[Tokens, Tokens]]:
    """Read a whole parallel corpus into memory (see :func:`open_corpus`)."""
    return list(open_corpus(src, tgt, corpus, encoding=encoding, lowercase=lowercase))

