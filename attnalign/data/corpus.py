"""Parallel corpus files: two files (one sentence per line) or one ``src ||| tgt`` file.

Torch-free. Sentences are whitespace-tokenized, as every alignment tool and gold set is: a token is
a maximal run of non-whitespace characters, and the links of an alignment index these tokens.

Files are read lazily, line by line, in binary, so a corpus of any size streams with flat memory and a
decoding error can name its line. What can be checked before the work starts (files exist, are not
empty, have the same number of lines) is checked when the corpus is opened.
"""

from __future__ import annotations

import atexit
import codecs
import hashlib
import io
import itertools
import os
import re
import stat
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import numpy as np

from ..errors import CorpusError, OptionError, path_text, warn
from .fileio import check_one_stdin

Tokens = list[str]
# A corpus in memory: (source tokens, target tokens) per pair. The one definition; used everywhere.
Pairs = Sequence[tuple[Sequence[str], Sequence[str]]]
BOM = "\ufeff"
# " ||| " between the sides (whitespace or the line's edge around it, so a token "a|||b" is not split),
# or a TAB
_TRIPLE_BAR = re.compile(r"(?:^|\s)\|\|\|(?=\s|$)")


_SPOOLED: dict[str, tuple] = {}  # stdin and pipes (the stdin object, its spool), copied as far as read
# A line longer than this is no text line (a binary file, /dev/zero): the read stops there. 64 MiB holds
# a line of several million words.
MAX_LINE_BYTES = 64 << 20
# A pipe copied for a second reading stops where its file system would keep less free than this share of
# its size (and at least SPOOL_KEEP_FREE_BYTES): a stream without an end never fills the disk.
SPOOL_KEEP_FREE_SHARE = 0.05
SPOOL_KEEP_FREE_BYTES = 1 << 30
_BLOCK = 1 << 20


def _not_text(path, why: str) -> CorpusError:
    return CorpusError(f"this is not a line-based text file ({why})", path=path,
                       hint="give a text file with one sentence (or alignment) per line")


def is_piped(path: str | os.PathLike) -> bool:
    """``-`` (stdin) or an existing path that is not a regular file (``/dev/stdin``, ``<(...)``, a FIFO):
    a stream, which a reader that needs only its first lines stops reading there."""
    if str(path) == "-":
        return True
    try:
        return not stat.S_ISREG(os.stat(path).st_mode) and not Path(path).is_dir()
    except OSError:
        return False


def _room(folder: str) -> int:
    """The bytes a spool in ``folder`` may still take: the free space above the margin it keeps."""
    st = os.statvfs(folder)
    keep = max(SPOOL_KEEP_FREE_BYTES, int(SPOOL_KEEP_FREE_SHARE * st.f_blocks * st.f_frsize))
    return st.f_bavail * st.f_frsize - keep


def _size_text(n: int) -> str:
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.0f} MiB"


class _Spool:
    """A pipe's bytes copied to a temporary file block by block, only as far as some reader has read: a
    reader that needs N lines of ``yes 0-0 |`` reads N and stops, and a corpus streamed from ``<(zcat
    ...)`` or stdin is read with flat memory and can be read again (counted, then aligned). The copy
    stops with an error where the disk would keep less than its margin free (:func:`_room`), and is
    removed when the process exits."""

    def __init__(self, path: str | os.PathLike):
        self.path = path
        if str(path) == "-":
            if sys.stdin is None or sys.stdin.closed:  # started with stdin closed (<&-)
                raise CorpusError("stdin is closed: there is nothing to read", path=path,
                                  hint="pipe the text in (... | attnalign ...), or give the file's name")
            self._source, self._owned = sys.stdin.buffer, False
        else:
            self._source, self._owned = open(path, "rb"), True  # noqa: SIM115 (closed at its end)
        fd, name = tempfile.mkstemp(prefix="attnalign-pipe-", suffix=".txt")
        self.name = name
        atexit.register(lambda: os.path.exists(name) and os.unlink(name))
        self._out = os.fdopen(fd, "wb")
        self.size, self.done, self._since_newline = 0, False, 0

    def pull(self) -> bool:
        """Copy one more block of the stream; False at its end."""
        if self.done:
            return False
        # what the stream has now (at least a byte): a reader that needs N lines of a slow stream does
        # not wait for a whole block beyond them
        read = getattr(self._source, "read1", self._source.read)
        block = read(_BLOCK)
        if not block:
            self.done = True
            self._out.close()
            if self._owned:
                self._source.close()
            return False
        last = block.rfind(b"\n")
        self._since_newline = self._since_newline + len(block) if last < 0 else len(block) - last - 1
        if self._since_newline > MAX_LINE_BYTES:
            raise _not_text(self.path, f"no newline in {MAX_LINE_BYTES >> 20} MiB")
        folder = os.path.dirname(self.name)
        if _room(folder) < len(block):
            raise CorpusError(
                f"copied {_size_text(self.size)} of the stream to a temporary file in {folder} and "
                "stopped there, to keep the disk's free space; the input is read more than once, so a "
                "stream is copied", path=self.path,
                hint="give the input as a file, or set TMPDIR to a folder on a larger disk")
        self._out.write(block)
        self._out.flush()
        self.size += len(block)
        return True

    def open(self) -> BinaryIO:
        """A reader of the stream from its start (the copy, then the stream as it comes)."""
        return io.BufferedReader(_SpoolReader(self), _BLOCK)


class _SpoolReader(io.RawIOBase):
    """Reads a :class:`_Spool`'s copy, pulling blocks from the stream where the copy ends."""

    def __init__(self, spool: _Spool):
        self._spool = spool
        self._f = open(spool.name, "rb", buffering=0)  # noqa: SIM115 (closed with the reader)

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        while True:
            n = self._f.readinto(b)
            if n or not self._spool.pull():
                return n or 0

    def close(self) -> None:
        self._f.close()
        super().close()


def _spooled(path: str | os.PathLike) -> _Spool:
    """The one spool of a pipe (stdin: of the current ``sys.stdin``, which a test runner swaps: the
    object is kept with its spool, so that a later stdin cannot take its id and read its copy)."""
    key = str(path) if str(path) != "-" else f"-{id(sys.stdin)}"
    if key not in _SPOOLED or (str(path) == "-" and _SPOOLED[key][0] is not sys.stdin):
        _SPOOLED[key] = (sys.stdin if str(path) == "-" else None, _Spool(path))
    return _SPOOLED[key][1]


def copied_stream(path: str | os.PathLike) -> Path:
    """A stream (stdin, a pipe) copied whole to a temporary file, for a reader that needs the whole
    file at once (an ``.npz`` is read from its end); the copy stops at the disk's margin with one error
    line, as every stream's does."""
    spool = _spooled(path)
    while spool.pull():
        pass
    return Path(spool.name)


def _open_binary(path: str | os.PathLike) -> BinaryIO:
    return _spooled(path).open() if is_piped(path) else open(path, "rb")


def check_encoding(encoding: str) -> str:
    """The encoding's name, or an error naming the option if Python does not know it."""
    try:
        info = codecs.lookup(encoding)
    except (LookupError, TypeError, ValueError):
        raise OptionError(f"unknown --encoding {encoding!r}",
                          hint="give a Python codec name, e.g. utf-8, latin-1, utf-16") from None
    # rot13, hex, base64, zlib ... transform data; punycode and idna encode host names, not files
    if not getattr(info, "_is_text_encoding", True) or info.name in ("punycode", "idna"):
        raise OptionError(f"--encoding {encoding!r} is not a text encoding",
                          hint="give a text encoding, e.g. utf-8, latin-1, utf-16")
    return encoding


def _byte_lines(encoding: str) -> bool:
    """Whether lines of this encoding can be split on the byte ``\n`` (UTF-8, Latin-1, ...; not UTF-16)."""
    return "\n".encode(encoding) == b"\n" and "a\n".encode(encoding) == b"a\n"


def count_lines(path: str | os.PathLike, encoding: str = "utf-8", at_most: int | None = None) -> int:
    """Number of lines in a file; a last line without a newline counts. With ``at_most``, the count
    stops there (a stream is read no further)."""
    if not _byte_lines(check_encoding(encoding)):
        return sum(1 for _ in itertools.islice(read_lines(path, encoding), at_most))
    n = 0
    last = b"\n"
    with _open_binary(path) as f:
        while chunk := f.read1(_BLOCK):  # what is there: a stream is not waited on past the lines wanted
            n += chunk.count(b"\n")
            last = chunk[-1:]
            if at_most is not None and n >= at_most:
                return at_most
    n += last != b"\n"
    return n if at_most is None else min(n, at_most)


def check_readable(path: str | os.PathLike, what: str = "file") -> Path:
    """Return ``path`` as a Path, or raise a clear error if it is missing, a directory or empty.
    ``-`` is stdin; stdin, pipes and process substitutions are read once, into a temporary file."""
    p = Path(path)
    if is_piped(p):
        try:
            spool = _spooled(p)
            empty = spool.size == 0 and not spool.pull()
        except OSError as e:
            raise CorpusError(f"cannot read the {what} ({e.strerror})", path=p) from None
        if empty:
            raise CorpusError(f"{what} is empty (nothing came through the pipe)", path=p)
        return p
    if not p.exists():
        raise CorpusError(f"{what} does not exist", path=p, hint="check the path and its spelling")
    if p.is_dir():
        raise CorpusError(f"{what} is a directory, not a file", path=p)
    if not os.access(p, os.R_OK):
        raise CorpusError(f"{what} is not readable", path=p, hint="check the permissions")
    if p.stat().st_size == 0:
        raise CorpusError(f"{what} is empty", path=p, hint="give a file with one sentence per line")
    return p


def _decode(raw: bytes, path: Path, lineno: int, encoding: str) -> str:
    try:
        text = raw.decode(encoding).rstrip("\r\n")
    except UnicodeDecodeError as e:
        raise CorpusError(
            f"invalid {encoding} (byte {e.start + 1} of the line)",
            path=path,
            line=lineno,
            hint="if the file is in another encoding, pass it, e.g. --encoding latin-1",
        ) from None
    return text.removeprefix(BOM) if lineno == 1 else text


def read_lines(path: str | os.PathLike, encoding: str = "utf-8") -> Iterator[str]:
    """Yield the decoded lines of a file (without their newline; a byte-order mark removed), with
    errors naming the line."""
    p = Path(path)
    if _byte_lines(check_encoding(encoding)):
        with _open_binary(p) as f:
            lineno = 0
            while raw := f.readline(MAX_LINE_BYTES + 1):
                lineno += 1
                if len(raw) > MAX_LINE_BYTES:
                    raise _not_text(p, f"line {lineno} is longer than {MAX_LINE_BYTES >> 20} MiB")
                if b"\0" in raw:
                    raise _not_text(p, f"line {lineno} holds a NUL byte")
                yield _decode(raw, p, lineno, encoding)
        return
    # UTF-16/32: decode the stream, then split on "\n" only (as the byte path does)
    lineno = 0
    with io.TextIOWrapper(_open_binary(p), encoding=encoding, newline="\n") as f:
        try:
            for lineno, line in enumerate(f, start=1):
                text = line.rstrip("\r\n")
                yield text.removeprefix(BOM) if lineno == 1 else text
        except UnicodeError as e:  # a decoding error, or a UTF-16/32 stream without its byte-order mark
            reason = e.reason if isinstance(e, UnicodeDecodeError) else str(e)
            raise CorpusError(f"invalid {encoding} ({reason})", path=p, line=lineno + 1,
                              hint="pass the file's encoding with --encoding (utf-16-le or utf-16-be for a "
                                   "file without a byte-order mark)") from None


def tokenize(text: str, lowercase: bool = False) -> Tokens:
    """Whitespace tokenization (the convention of every alignment tool and gold set)."""
    return (text.lower() if lowercase else text).split()


def split_pair(line: str, path: Path, lineno: int) -> tuple[str, str]:
    """Split one line of a one-file corpus on `` ||| `` (or a TAB) into its two sides."""
    if not line.strip():
        return "", ""
    for name, parts in (("' ||| '", _TRIPLE_BAR.split(line)), ("TAB", line.split("\t"))):
        if len(parts) > 2:
            raise CorpusError(
                f"line has {len(parts) - 1} {name} separators; expected exactly one",
                path=path,
                line=lineno,
                hint="write each pair as 'source ||| target'",
            )
        if len(parts) == 2:
            return parts[0], parts[1]
    raise CorpusError(
        "line has no ' ||| ' (or TAB) separator between source and target",
        path=path,
        line=lineno,
        hint="write each pair as 'source ||| target' (spaces around |||), or give two files with --src "
             "and --tgt",
    )


class Corpus:
    """Pairs ``(src_tokens, tgt_tokens)`` in order, sized, read again on every iteration: its ``parts``
    (an opened corpus file, pairs in memory, another corpus) one after the other. The one corpus type
    of aligning: the pairs being aligned (a file, or a file followed by a gold's own text), the
    teacher's corpus (:meth:`join`), and what names their pairs (:meth:`keys`, :meth:`fingerprint`).
    ``learned``: how many of the first pairs are the training corpus a teacher's corpus starts with
    (0: none; :attr:`training` is it); ``index[k]``: where pair k of the pairs being aligned stands in
    this corpus (None: at k)."""

    learned: int = 0
    index: list[int] | None = None

    def __init__(self, *parts, learned: int = 0, index: list[int] | None = None):
        self.parts, self.learned, self.index = parts, learned, index

    def __len__(self) -> int:
        return sum(len(p) for p in self.parts)

    def __iter__(self) -> Iterator[tuple[Tokens, Tokens]]:
        for part in self.parts:
            yield from part

    @property
    def added(self) -> int:
        """The pairs after the training corpus: all of them where there is none."""
        return len(self) - self.learned

    @property
    def training(self):
        """The training corpus a teacher's corpus starts with (None: none)."""
        return self.parts[0] if self.learned else None

    def keys(self) -> np.ndarray:
        """Each pair's key, ``[n]`` uint64 (:func:`pair_keys`)."""
        return pair_keys(self)

    def fingerprint(self, gold=None) -> str:
        """A hash of the pairs' tokens and of ``gold``'s links (:func:`pairs_fingerprint`)."""
        return pairs_fingerprint(self, gold)

    def join(self, training=None) -> Corpus:
        """The teacher's corpus for aligning these pairs: ``training`` (the model's training corpus as
        train read it) followed by the pairs of this corpus it does not hold, each pair once
        (:func:`joined_index`), with ``index``; without ``training``, these pairs."""
        if training is None:
            return Corpus(self)
        added, index = joined_index(self.keys(), pair_keys(training))
        wanted = set(added)
        return Corpus(training, [p for k, p in enumerate(self) if k in wanted], learned=len(training),
                      index=index)


def joined_index(aligned: Sequence[int], learned: Sequence[int]) -> tuple[list[int], list[int]]:
    """Where the pairs being aligned (keys ``aligned``) stand in the teacher's corpus when they join a
    corpus of pairs keyed ``learned`` (the model's training corpus): a pair ``learned`` holds is not
    added again (its n-th occurrence in ``aligned`` is its n-th in ``learned``, or the last there), the
    others are added after ``learned`` as they come (a text's own repeats are evidence, as in any
    corpus). Returns the positions in ``aligned`` of the pairs added, and each aligned pair's position in
    the joined corpus."""
    occurrences: dict[int, list[int]] = {}
    for k, key in enumerate(learned):
        occurrences.setdefault(int(key), []).append(k)
    seen: Counter = Counter()
    added: list[int] = []
    index = []
    for k, key in enumerate(map(int, aligned)):
        at = occurrences.get(key)
        if at is None:
            index.append(len(learned) + len(added))
            added.append(k)
        else:
            index.append(at[min(seen[key], len(at) - 1)])
            seen[key] += 1
    return added, index


@dataclass
class ParallelCorpus(Corpus):
    """A lazily read parallel corpus; iterating yields ``(src_tokens, tgt_tokens)`` in file order.

    Open it with :func:`open_corpus`, which validates the files. Each iteration re-reads the files.
    ``empty_pairs`` counts pairs with an empty side seen by the last complete iteration; such pairs are
    kept (they get an empty alignment line) and reported in a warning, once however often the corpus
    is read.
    """

    src_path: Path | None
    tgt_path: Path | None
    corpus_path: Path | None
    n_pairs: int
    encoding: str = "utf-8"
    lowercase: bool = False
    empty_pairs: int = field(default=0, init=False)
    _warned: bool = field(default=False, init=False, repr=False)

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
        if empty and not self._warned:
            self._warned = True
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
        raise OptionError("give either --corpus or --src and --tgt, not both")
    check_one_stdin({"--src": src, "--tgt": tgt})
    if corpus is not None:
        p = check_readable(corpus, "corpus file")
        return ParallelCorpus(None, None, p, count_lines(p, encoding), encoding, lowercase)
    if src is None or tgt is None:
        raise OptionError(
            "a parallel corpus needs both --src and --tgt (or one --corpus file with 'src ||| tgt')"
        )
    ps, pt = check_readable(src, "source file"), check_readable(tgt, "target file")
    if is_piped(ps) and not is_piped(pt):  # the file's length first: a stream is read one line past it
        nt = count_lines(pt, encoding)
        ns = count_lines(ps, encoding, at_most=nt + 1)
    else:
        ns = count_lines(ps, encoding)
        nt = count_lines(pt, encoding, at_most=ns + 1 if is_piped(pt) and not is_piped(ps) else None)
    if ns != nt:
        def has(p: Path, n: int, other: int) -> str:  # a stream's count stopped one line past the file's
            return f"{path_text(p)} has {f'more than {other}' if is_piped(p) and n > other else n} lines"

        raise CorpusError(
            f"the source and target files have different line counts: {has(ps, ns, nt)}, {has(pt, nt, ns)}",
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


def pair_keys(pairs) -> np.ndarray:
    """A 64-bit key of each pair's tokens, ``[n]`` uint64: equal pairs, equal keys (a pair is the same
    pair wherever it appears: the teacher learns from it once)."""
    keys = np.empty(len(pairs), dtype=np.uint64)
    for k, (s, t) in enumerate(pairs):
        h = hashlib.blake2b(digest_size=8)
        h.update(" ".join(s).encode("utf-8", "surrogatepass") + b"\t" +
                 " ".join(t).encode("utf-8", "surrogatepass"))
        keys[k] = int.from_bytes(h.digest(), "little")
    return keys


def pairs_fingerprint(pairs, gold=None) -> str:
    """A hash of a corpus's tokens (and of a gold's links): what a model directory records of its data
    (``--resume`` refuses other data, a kept teacher serves only its own corpus)."""
    h = hashlib.sha256()
    for s, t in pairs:
        h.update(" ".join(s).encode("utf-8", "surrogatepass") + b"\t")
        h.update(" ".join(t).encode("utf-8", "surrogatepass") + b"\n")
    for g in gold or ():
        h.update(repr((sorted(g.sure), sorted(g.possible))).encode() + b"\n")
    return h.hexdigest()[:16]
