"""Alignment and gold-alignment files: readers, writers, format detection. Torch-free.

Conventions (used everywhere in attnalign): a link is ``(src_i, tgt_j)``, 0-based, source first
(Pharaoh order). An :class:`Alignment` holds one sentence's sure links and possible links, with
``possible ⊇ sure`` enforced; a predicted alignment has all its links sure.

Formats read:

* **pharaoh** (also "talp"): one line per sentence, whitespace-separated links. ``i-j`` is sure,
  ``ipj`` or ``i?j`` possible, ``i-j-S`` / ``i-j-P`` labelled; ``i-j:0.83`` carries a score (the
  ``--scores`` output of ``attnalign align``). 0-based by default.
* **naacl** (also WPT / "key"): one link per line, ``sentid i j [S|P] [confidence]``. Sentence ids
  are integers (zero-padding allowed; id 1 is the first sentence, or id 0 if the file uses 0);
  positions are 1-based by default and position 0 means NULL (dropped); a missing label means S.
  The plain ``sentid i j`` key format is this format without labels.

A format is one reader and one :func:`register_format` line (:data:`ALIGNMENT_FORMATS`); detection and
the CLI's ``--gold-format`` / ``--pred-format`` choices read the registry.

Index base and side order are explicit (``one_based``, ``reverse``). The reader warns when the data
contradicts the base it was told (a file that never uses index 0 read as 0-based), and, given sentence
lengths, range-checks every link and says which option would make the file fit.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from ..errors import FormatError, warn
from .corpus import check_readable, is_piped, read_lines
from .fileio import path_text

Link = tuple[int, int]

# ASCII digits only: \d would read other scripts' digits (Arabic-Indic "٣-٤") as numbers
_PHARAOH_LINK = re.compile(r"^([0-9]+)([-p?])([0-9]+)(?:-([SPsp]))?(?::([-+0-9.eE]+))?$")
_NAACL_LINE = re.compile(r"^[0-9]+\s+[0-9]+\s+[0-9]+(\s+[SPsp])?(\s+[-+0-9.eE]+)?\s*$")


@dataclass(frozen=True)
class AlignmentFormat:
    """A file format of alignments (``--gold-format``, ``--pred-format``). ``read(path, encoding, role,
    n_sentences, max_sentences, from_text)`` returns its links (sentences numbered from 0, indices as
    written), its number of sentences and the sentences it left out past ``max_sentences``.
    ``one_based``: its index base unless told; ``null_index``: read 1-based, index 0 is NULL (dropped);
    ``line_per_sentence``: a line is a sentence (so a prediction's lines are counted first);
    ``looks_like``: whether a file's first non-empty line is in this format (detection tries the
    formats in order; the first registered is the fallback)."""

    name: str
    read: object
    help: str = ""  # what a line is, for --help
    one_based: bool = False
    null_index: bool = False
    line_per_sentence: bool = False
    looks_like: object = None


ALIGNMENT_FORMATS: dict[str, AlignmentFormat] = {}


def register_format(name: str, **traits):
    """Register a reader as the alignment format ``name`` (``traits``: :class:`AlignmentFormat`'s);
    the CLI's ``--*-format`` choices read the registry."""

    def add(read):
        ALIGNMENT_FORMATS[name] = AlignmentFormat(name, read, **traits)
        return read

    return add


@dataclass(frozen=True)
class Alignment:
    """One sentence's alignment: sure links ⊆ possible links, as (src_i, tgt_j), 0-based."""

    sure: frozenset[Link] = frozenset()
    possible: frozenset[Link] = frozenset()
    scores: dict[Link, float] | None = field(default=None, compare=False, hash=False)

    def __post_init__(self) -> None:
        if not self.sure <= self.possible:
            object.__setattr__(self, "possible", self.possible | self.sure)

    @classmethod
    def from_links(
        cls, links: Iterable[Link], scores: dict[Link, float] | None = None
    ) -> Alignment:
        """A hypothesis alignment: every link is sure (and so possible)."""
        s = frozenset((int(i), int(j)) for i, j in links)
        return cls(s, s, scores)

    @property
    def links(self) -> frozenset[Link]:
        """All links (the possible set, which includes the sure ones)."""
        return self.possible

    def __len__(self) -> int:
        return len(self.possible)


@dataclass(frozen=True)
class RawLink:
    """A link as written in the file, before index base and side order are applied (what a registered
    format's reader returns, one per link: its sentence from 0, its two indices, sure or possible, its
    score or None, its line for messages)."""

    sent: int
    a: int
    b: int
    sure: bool
    score: float | None
    line: int


@dataclass(frozen=True)
class ReadInfo:
    """How an alignment file was read (for signatures and messages)."""

    path: str
    format: str
    one_based: bool
    reverse: bool
    sentences: int
    lines_ignored: int = 0

GUIDE_ROLE = "guide"  # read_alignments' role of a guide file (train --guide FILE): Pharaoh, 0-based


def detect_format(path: str | os.PathLike, encoding: str = "utf-8") -> str:
    """Guess a file's format from its first non-empty line: the first registered format it looks like,
    else the first registered (a Pharaoh line never reads as NAACL's ``sentid i j``; a bad line further
    down is then reported by the parser, with its line)."""
    p = check_readable(path, "alignment file")
    fallback = next(iter(ALIGNMENT_FORMATS))
    for line in read_lines(p, encoding):
        if text := line.strip():
            return next((f.name for f in ALIGNMENT_FORMATS.values() if f.looks_like and f.looks_like(text)),
                        fallback)
    return fallback


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _parse_pharaoh(
    p: Path, encoding: str, max_sentences: int | None, role: str = "gold", n_text: int | None = None
) -> tuple[list[list[RawLink]], int]:
    """The links of each line; ``max_sentences``: the first lines only; ``n_text``: the sentences of the
    text the file aligns, beyond which a stream is read one line further (enough to know it is longer:
    a stream may not end)."""
    sents: list[list[RawLink]] = []
    ignored = 0
    stream = is_piped(p)
    for lineno, line in enumerate(read_lines(p, encoding), start=1):
        if stream and n_text is not None and max_sentences is None and lineno > n_text + 1:
            break
        if max_sentences is not None and len(sents) >= max_sentences:
            ignored += 1
            continue
        row: list[RawLink] = []
        for tok in line.split():
            m = _PHARAOH_LINK.match(tok)
            if m is not None and m.group(5) is not None and not _is_float(m.group(5)):
                m = None
            if m is None:
                raise FormatError(
                    f"cannot read {tok!r} as a Pharaoh link",
                    path=p,
                    line=lineno,
                    hint="links look like 3-4 (sure), 3p4 or 3?4 (possible), 3-4-S, 3-4-P or 3-4:0.8; "
                    + (f"for 'sentid i j [S|P]' lines use --{role}-format naacl" if role != GUIDE_ROLE
                       else "a guide has one such line per training pair"),
                )
            a, kind, b, label, score = m.groups()
            sure = kind == "-" and (label is None or label.upper() == "S")
            row.append(
                RawLink(len(sents), int(a), int(b), sure, None if score is None else float(score),
                         lineno)
            )
        sents.append(row)
        if stream and max_sentences is not None and len(sents) >= max_sentences:
            break  # a stream may not end, or not yet: the lines wanted are read, and no more waited for
    return sents, ignored


def _trailing_empty_lines(sents: list[list[RawLink]], p: Path, n_text: int | None) -> list[list[RawLink]]:
    """A Pharaoh gold whose file ends in empty lines (an editor's, or a gold set's: the RWTH
    German-English gold has 508 sentences in 509 lines): the lines beyond its text's ``n_text``
    sentences are left out; without the text they are read as sentences without links. Either way a
    warning says so and how many sentences are scored."""
    empty = 0
    while empty < len(sents) and not sents[len(sents) - 1 - empty]:
        empty += 1
    if not empty:
        return sents
    lines = f"{empty} empty line{'s' if empty > 1 else ''}"
    if n_text is not None and len(sents) - empty <= n_text < len(sents):
        warn(f"{path_text(p)}: ends in {lines}; the {len(sents) - n_text} beyond the text's {n_text} "
             f"sentences are left out: {n_text} sentences are scored")
        return sents[:n_text]
    if n_text is None:
        warn(f"{path_text(p)}: ends in {lines}, read as sentences without links: {len(sents)} sentences are "
             f"scored; if they are no sentences, give the gold's text (--src/--tgt), whose length cuts them, "
             "or remove them")
    return sents


def _parse_naacl(p: Path, encoding: str, role: str = "gold") -> list[RawLink]:
    links: list[RawLink] = []
    for lineno, line in enumerate(read_lines(p, encoding), start=1):
        fields = line.split()
        if not fields:
            continue
        ok = 3 <= len(fields) <= 5 and all(f.isascii() and f.isdecimal() for f in fields[:3])
        label, score = "S", None
        if ok and len(fields) >= 4:
            rest = fields[3:]
            if rest[0].upper() in ("S", "P"):
                label = rest.pop(0).upper()
            if rest:
                try:
                    score = float(rest.pop(0))
                except ValueError:
                    ok = False
            ok = ok and not rest
        if not ok:
            raise FormatError(
                f"cannot read {line.strip()!r} as a NAACL link 'sentid i j [S|P] [confidence]'",
                path=p,
                line=lineno,
                hint=f"for one-line-per-sentence files (0-1 2p3 ...) use --{role}-format pharaoh",
            )
        links.append(
            RawLink(int(fields[0]), int(fields[1]), int(fields[2]), label == "S", score, lineno)
        )
    return links


def _check_base(raw: list[RawLink], p: Path, form: AlignmentFormat, one_based: bool, role: str) -> None:
    """Warn or fail when the links contradict the index base we were told."""
    if not raw:
        return
    uses_zero = any(r.a == 0 or r.b == 0 for r in raw)
    if one_based and not form.null_index and uses_zero:
        first = next(r for r in raw if r.a == 0 or r.b == 0)
        raise FormatError(
            "this link uses index 0, which does not exist in a 1-based file",
            path=p,
            line=first.line,
            hint=f"the file looks 0-based: pass --{role}-zero-based",
        )
    if not one_based and not uses_zero and len(raw) >= 10:
        fix = f"use --{role}-one-based" if role != GUIDE_ROLE else "write it 0-based"
        warn(
            f"{p}: no link uses index 0 on either side, but the file is read as 0-based; it "
            f"looks 1-based ({fix}); read the wrong way, every link is off by one"
        )


def _build(
    raw: list[RawLink],
    n_sentences: int,
    one_based: bool,
    reverse: bool,
    drop_null: bool,
) -> list[Alignment]:
    sure: list[set[Link]] = [set() for _ in range(n_sentences)]
    poss: list[set[Link]] = [set() for _ in range(n_sentences)]
    scores: list[dict[Link, float]] = [{} for _ in range(n_sentences)]
    off = 1 if one_based else 0
    for r in raw:
        if drop_null and (r.a == 0 or r.b == 0):
            continue
        link = (r.b - off, r.a - off) if reverse else (r.a - off, r.b - off)
        (sure if r.sure else poss)[r.sent].add(link)
        if r.score is not None:
            scores[r.sent][link] = r.score
    return [
        Alignment(frozenset(s), frozenset(p | s), sc or None)
        for s, p, sc in zip(sure, poss, scores, strict=True)
    ]


def _first_out_of_range(raw: list[RawLink], src_lengths: Sequence[int], tgt_lengths: Sequence[int],
                        one_based: bool, reverse: bool, drop_null: bool) -> RawLink | None:
    off = 1 if one_based else 0
    for r in raw:
        if drop_null and (r.a == 0 or r.b == 0):
            continue
        i, j = (r.b - off, r.a - off) if reverse else (r.a - off, r.b - off)
        if r.sent >= len(src_lengths):
            return r
        if not (0 <= i < src_lengths[r.sent] and 0 <= j < tgt_lengths[r.sent]):
            return r
    return None


def _range_check(raw: list[RawLink], p: Path, src_lengths: Sequence[int], tgt_lengths: Sequence[int],
                 one_based: bool, reverse: bool, form: AlignmentFormat, role: str) -> None:
    drop_null = form.null_index and one_based
    bad = _first_out_of_range(raw, src_lengths, tgt_lengths, one_based, reverse, drop_null)
    if bad is None:
        return
    if bad.sent >= len(src_lengths):
        raise FormatError(
            f"the alignment has a link for sentence {bad.sent + 1}, but the text has only "
            f"{len(src_lengths)} sentences",
            path=p,
            line=bad.line,
            hint="check that the text files (--src/--tgt) belong to this alignment file",
        )
    fixes = []
    for ob, rev in ((one_based, not reverse), (not one_based, reverse), (not one_based, not reverse)):
        dn = form.null_index and ob
        if _first_out_of_range(raw, src_lengths, tgt_lengths, ob, rev, dn) is None:
            opts = []
            if ob != one_based:
                opts.append(("1-based" if ob else "0-based") if role == GUIDE_ROLE
                            else f"--{role}-one-based" if ob else f"--{role}-zero-based")
            if rev != reverse:
                opts.append("target first" if role == GUIDE_ROLE
                            else f"--reverse-{role}" if rev else f"no --reverse-{role}")
            fixes.append(" and ".join(opts))
    if role == GUIDE_ROLE:
        hint = ((f"the whole file fits read {fixes[0]}: " if fixes else "") +
                "a guide is 0-based, source first, one line per training pair")
    else:
        hint = (
            f"the whole file fits the text with {fixes[0]}"
            if fixes
            else f"check the index base (--{role}-one-based/--{role}-zero-based), the side order "
            f"(--reverse-{role}) and that the text files belong to this alignment file"
        )
    base = "1-based" if one_based else "0-based"
    order = "target-source" if reverse else "source-target"
    raise FormatError(
        f"link {bad.a} {bad.b} (read as {base}, {order}) is out of range: sentence "
        f"{bad.sent + 1} has {src_lengths[bad.sent]} source and {tgt_lengths[bad.sent]} target words",
        path=p,
        line=bad.line,
        hint=hint,
    )


def _check_sentence_ids(raw: list[RawLink], top: int, n_sentences: int | None, p: Path) -> None:
    """A NAACL file lists only sentences with links, so its highest id sets the number of sentences: an
    id far beyond the sentences it names (a typo, a byte offset) would make millions of empty ones."""
    bad = max(raw, key=lambda r: r.sent, default=None)
    if n_sentences is not None and top > n_sentences:
        raise FormatError(f"sentence {bad.sent + 1} has links, but the text has only {n_sentences} sentences",
                          path=p, line=bad.line,
                          hint="give the text of every sentence the file has links for (the same --src/--tgt "
                               "lines, in order)")
    if top > 10 * len({r.sent for r in raw}) + 100_000:
        raise FormatError(f"sentence {bad.sent + 1} is far beyond the {len({r.sent for r in raw})} "
                          "sentences the file has links for", path=p, line=bad.line,
                          hint="NAACL lines are 'sentid i j [S|P]' with sentences numbered from 1")


def read_alignments(
    path: str | os.PathLike,
    *,
    fmt: str = "auto",
    one_based: bool | None = None,
    reverse: bool = False,
    n_sentences: int | None = None,
    max_sentences: int | None = None,
    src_lengths: Sequence[int] | None = None,
    tgt_lengths: Sequence[int] | None = None,
    encoding: str = "utf-8",
    role: str = "gold",
) -> tuple[list[Alignment], ReadInfo]:
    """Read an alignment or gold file into one :class:`Alignment` per sentence.

    Args:
        fmt: ``"auto"`` (detect), ``"pharaoh"`` or ``"naacl"``.
        one_based: index base of the file; ``None`` picks the format's default (Pharaoh 0-based,
            NAACL 1-based).
        reverse: the file writes (tgt, src) pairs; swap them to (src, tgt).
        n_sentences: the number of sentences (a NAACL file only lists sentences with links);
            defaults to the length of ``src_lengths``, else the highest sentence id. A gold has no more
            sentences than its own (a Pharaoh gold's lines, a NAACL gold's highest sentence id).
        max_sentences: read only the first N sentences (Pharaoh: lines); ``ReadInfo.lines_ignored``
            counts the rest (a stream's rest is not read: it may not end).
        src_lengths, tgt_lengths: sentence lengths in words; every link is range-checked against them.
        role: ``"gold"`` or ``"pred"``: names the CLI options (``--gold-one-based``...) in hints;
            :data:`GUIDE_ROLE`: a guide file, whose format no option changes.
    """
    p = check_readable(path, "alignment file")
    if fmt != "auto" and fmt not in ALIGNMENT_FORMATS:
        raise FormatError(f"unknown alignment format {fmt!r}; choose one of auto, "
                          f"{', '.join(ALIGNMENT_FORMATS)}")
    form = ALIGNMENT_FORMATS[detect_format(p, encoding) if fmt == "auto" else fmt]
    if one_based is None:
        one_based = form.one_based
    from_text = src_lengths is not None and n_sentences is None  # not the caller's own count
    if from_text:
        n_sentences = len(src_lengths)
    raw, n, ignored = form.read(p, encoding, role, n_sentences, max_sentences, from_text)
    _check_base(raw, p, form, one_based, role)
    if src_lengths is not None and tgt_lengths is not None:
        _range_check(raw, p, src_lengths, tgt_lengths, one_based, reverse, form, role)
    elif n < max((r.sent for r in raw), default=-1) + 1:
        raise FormatError(f"the file has links for more than {n} sentences", path=p)
    info = ReadInfo(str(p), form.name, one_based, reverse, n, ignored)
    return _build(raw, n, one_based, reverse, form.null_index and one_based), info


@register_format("pharaoh", help="pharaoh/talp: a line of links per sentence", line_per_sentence=True)
def _read_pharaoh(p: Path, encoding: str, role: str, n_sentences: int | None, max_sentences: int | None,
                  from_text: bool) -> tuple[list[RawLink], int, int]:
    """Pharaoh: a line per sentence; its lines are its sentences."""
    sents, ignored = _parse_pharaoh(p, encoding, max_sentences, role, n_sentences)
    if role == "gold":
        sents = _trailing_empty_lines(sents, p, n_sentences)
    n = len(sents) if n_sentences is None else n_sentences
    if n_sentences is not None and len(sents) > n_sentences:
        has = "more lines than" if is_piped(p) else f"{len(sents)} lines but"
        raise FormatError(
            f"the file has {has} the text has {n_sentences} sentences",
            path=p,
            hint="a Pharaoh file has exactly one line per sentence pair",
        )
    if role == "gold" and len(sents) < n:  # its lines are its sentences: the text's first ones
        warn(f"{p}: the gold has {len(sents)} lines for a text of {n} sentences; scoring the first "
             f"{len(sents)}")
        n = len(sents)
    return [r for row in sents for r in row], n, ignored


@register_format("naacl", help="naacl: a link a line, 'sentid i j S|P'", one_based=True, null_index=True,
                 looks_like=_NAACL_LINE.match)
def _read_naacl(p: Path, encoding: str, role: str, n_sentences: int | None, max_sentences: int | None,
                from_text: bool) -> tuple[list[RawLink], int, int]:
    """NAACL: a line per link; the sentences are those up to its highest id."""
    raw = _parse_naacl(p, encoding, role)
    ignored = 0
    if raw and min(r.sent for r in raw) > 0:
        raw = [RawLink(r.sent - 1, r.a, r.b, r.sure, r.score, r.line) for r in raw]
    top = max((r.sent for r in raw), default=-1) + 1
    _check_sentence_ids(raw, top, n_sentences, p)
    if max_sentences is not None and top > max_sentences:
        ignored = top - max_sentences
        raw = [r for r in raw if r.sent < max_sentences]
        top = max_sentences
    n = top if n_sentences is None else n_sentences
    if role == "gold" and from_text and top < n:  # a gold's sentences are its own: up to its largest id
        warn(f"{p}: the gold has links for {top} sentences (its largest sentence id) for a text of {n} "
             f"sentences; scoring the first {top}")
        n = top
    return raw, n, ignored


def format_pharaoh_line(a: Alignment, with_scores: bool = False, precision: int = 4) -> str:
    """One Pharaoh line: sure links ``i-j``, possible-only links ``ipj``, sorted by (i, j).

    With ``with_scores``, links that have a score are written ``i-j:0.8312``.
    """
    out = []
    for link in sorted(a.possible):
        i, j = link
        tok = f"{i}-{j}" if link in a.sure else f"{i}p{j}"
        if with_scores and a.scores and link in a.scores:
            tok += f":{a.scores[link]:.{precision}f}"
        out.append(tok)
    return " ".join(out)


def write_pharaoh(
    alignments: Iterable[Alignment], out: IO[str], *, with_scores: bool = False
) -> int:
    """Write one Pharaoh line per alignment (an empty line for no links); return the line count."""
    n = 0
    for a in alignments:
        out.write(format_pharaoh_line(a, with_scores) + "\n")
        n += 1
    return n


def write_naacl(alignments: Iterable[Alignment], out: IO[str], *, start_id: int = 1) -> int:
    """Write NAACL lines ``sentid i j S|P`` (1-based positions and ids); return the link count."""
    n = 0
    for k, a in enumerate(alignments, start=start_id):
        for i, j in sorted(a.possible):
            out.write(f"{k} {i + 1} {j + 1} {'S' if (i, j) in a.sure else 'P'}\n")
            n += 1
    return n
