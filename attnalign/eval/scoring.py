"""Scoring alignment files against a gold file: the library behind ``attnalign score``.

Reads the gold once (with explicit index base and side order), reads each prediction (Pharaoh,
0-based, source first unless told otherwise), applies the standard protocol when a prediction has more
lines than the gold has sentences (score the first N), and returns counts per system and per sentence.
Torch-free; pandas is imported only for the tabular exports.
"""

from __future__ import annotations

import itertools
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from .._version import __version__
from ..data.alignments import ALIGNMENT_FORMATS, Alignment, ReadInfo, detect_format, read_alignments
from ..data.corpus import Pairs, check_readable, count_lines, open_corpus
from ..data.fileio import check_one_stdin, path_text
from ..errors import FormatError, OptionError, warn
from .breakdown import Band, breakdown
from .metrics import Counts, corpus_counts
from .significance import Bootstrap, Interval, PairedResult, intervals, paired_test
from .significance import signature as resampling_signature


@dataclass(frozen=True)
class GoldOptions:
    """How to read a gold file: format (auto/pharaoh/naacl), index base (None: the format's
    default), side order, encoding."""

    fmt: str = "auto"
    one_based: bool | None = None
    reverse: bool = False
    encoding: str = "utf-8"


def gold_signature(g: ReadInfo) -> str:
    """The settings a score depends on, as one line (sacrebleu-style): gold format, index base, order,
    sentences, metric, version."""
    return (
        f"gold:{g.format}|base:{1 if g.one_based else 0}|"
        f"order:{'tgt-src' if g.reverse else 'src-tgt'}|sents:{g.sentences}|"
        f"metric:och-ney-micro|attnalign:{__version__}"
    )


@dataclass
class SystemScore:
    """The score of one prediction file."""

    name: str
    total: Counts
    per_sentence: list[Counts]
    lines_ignored: int = 0
    intervals: dict[str, Interval] | None = None  # by metric (aer, precision, recall, f1)
    paired: PairedResult | None = None  # against the report's first system
    bands: list[Band] | None = None  # the error breakdown

    def as_dict(self) -> dict:
        """The scores (fractions), counts, and where computed the intervals (``aer_low`` ...), the
        paired test and the breakdown: ``score --json``'s keys."""
        row: dict = {"system": self.name, **self.total.as_dict()}
        for metric, iv in (self.intervals or {}).items():
            row[f"{metric}_low"], row[f"{metric}_high"] = iv.low, iv.high
        if self.paired is not None:
            row.update(delta_aer=self.paired.delta, delta_aer_low=self.paired.interval.low,
                       delta_aer_high=self.paired.interval.high, p_value=self.paired.p_value)
        if self.bands is not None:
            row["breakdown"] = [{"dimension": b.dimension, "band": b.band, **b.counts.as_dict(),
                                 **({} if b.has_precision else {"precision": None})} for b in self.bands]
        return row


@dataclass
class ScoreReport:
    """Scores of one or more systems against one gold, with the settings' signature; with
    :meth:`resample`, each system's intervals and (``paired``) its test against the first system."""

    gold: ReadInfo
    systems: list[SystemScore] = field(default_factory=list)
    bootstrap: Bootstrap | None = None
    paired: bool = False

    @property
    def signature(self) -> str:
        sig = gold_signature(self.gold)
        if self.bootstrap is None:
            return sig
        return f"{sig}|{resampling_signature(self.bootstrap.samples, self.bootstrap.seed, self.paired)}"

    def resample(self, bootstrap: Bootstrap, paired: bool = False) -> ScoreReport:
        """Add every system's intervals and, with ``paired``, every system's paired test against the
        first (the baseline), all on the same resamples of the gold's sentences."""
        self.bootstrap, self.paired = bootstrap, paired
        if not self.systems or not self.systems[0].per_sentence:
            return self
        weights = bootstrap.resamples(len(self.systems[0].per_sentence))
        base = self.systems[0]
        for s in self.systems:
            s.intervals = intervals(s.per_sentence, weights)
            if paired and s is not base:
                s.paired = paired_test(base.per_sentence, s.per_sentence, weights)
        return self

    def frame(self):
        """One row per system: aer, precision, recall, f1 (fractions), the counts and any intervals and
        paired tests."""
        import pandas as pd

        rows = [{k: v for k, v in s.as_dict().items() if k != "breakdown"} for s in self.systems]
        return pd.DataFrame(rows)

    def per_sentence_frame(self):
        """One row per (system, sentence), sentence numbered from 1 as in the gold file."""
        import pandas as pd

        rows = [
            {"system": s.name, "sentence": k, **c.as_dict()}
            for s in self.systems
            for k, c in enumerate(s.per_sentence, start=1)
        ]
        df = pd.DataFrame(rows)
        return df.drop(columns=["sentences"]) if not df.empty else df


def read_gold(
    path: str | os.PathLike,
    options: GoldOptions = GoldOptions(),
    *,
    pairs: Pairs | None = None,
    lengths: tuple[Sequence[int], Sequence[int]] | None = None,
    corpus_size: int | None = None,
) -> tuple[list[Alignment], ReadInfo]:
    """Read a gold file as ``options`` say: the one gold reader of attnalign.

    ``pairs`` (token pairs) or ``lengths`` (source and target lengths): range-check every link against
    them. ``corpus_size``: the gold covers the first sentences of a corpus of this many pairs and may
    not be longer.
    """
    if pairs is not None:
        lengths = [len(s) for s, _ in pairs], [len(t) for _, t in pairs]
    gold, info = read_alignments(
        path,
        fmt=options.fmt,
        one_based=options.one_based,
        reverse=options.reverse,
        src_lengths=lengths[0] if lengths else None,
        tgt_lengths=lengths[1] if lengths else None,
        encoding=options.encoding,
    )
    if corpus_size is not None and len(gold) > corpus_size:
        raise FormatError(f"the gold has {len(gold)} sentences but the corpus only {corpus_size}",
                          path=path, hint="the gold's sentences must be the corpus's first lines")
    return gold, info


def read_gold_for(path: str | os.PathLike, options: GoldOptions, pairs) -> tuple[list[Alignment], ReadInfo]:
    """Read the gold of the first sentences of the corpus ``pairs`` (a sized iterable of token pairs,
    read as far as the gold goes) and range-check every link against those sentences, as ``score
    --src/--tgt`` does: a gold that does not fit its text is an error, not a silent score."""
    gold, _ = read_gold(path, options, corpus_size=len(pairs))
    head = list(itertools.islice(iter(pairs), len(gold)))
    return read_gold(path, options, pairs=head)


def load_gold(
    path: str | os.PathLike,
    options: GoldOptions = GoldOptions(),
    *,
    src: str | os.PathLike | None = None,
    tgt: str | os.PathLike | None = None,
    corpus: str | os.PathLike | None = None,
    words: bool = False,
) -> tuple[list[Alignment], ReadInfo, GoldText | None]:
    """Read a gold file; given its text (``src`` + ``tgt`` or one ``corpus``), range-check every
    link against it.

    Returns the gold alignments, how the file was read, and the text's sentence lengths (if text was
    given), with ``words`` also the gold's sentences and the source words' counts in the whole text.
    """
    text = None
    if src is not None or tgt is not None or corpus is not None:
        text = GoldText([], [], [] if words else None, Counter() if words else None)
        for s, t in open_corpus(src, tgt, corpus, encoding=options.encoding):
            text.src_lengths.append(len(s))
            text.tgt_lengths.append(len(t))
            if words:
                text.pairs.append((s, t))
                text.frequency.update(s)
    gold, info = read_gold(path, options, lengths=None if text is None else text.lengths)
    if text is not None and words:
        del text.pairs[len(gold):]
    return gold, info, text


@dataclass
class GoldText:
    """The text of a gold's sentences as :func:`load_gold` read it: every line's length, and where
    asked the gold's sentences (``pairs``) and each source word's count in the whole text."""

    src_lengths: list[int]
    tgt_lengths: list[int]
    pairs: list | None = None
    frequency: dict[str, int] | None = None

    @property
    def lengths(self) -> tuple[list[int], list[int]]:
        return self.src_lengths, self.tgt_lengths


def score_alignments(
    gold: Sequence[Alignment], hyp: Sequence[Alignment], name: str = "system"
) -> SystemScore:
    """Score hypothesis alignments against gold alignments, sentence by sentence."""
    per = corpus_counts(hyp, gold)
    return SystemScore(name, sum(per, Counts()), per)


def read_prediction(
    path: str | os.PathLike,
    n_gold: int,
    *,
    fmt: str = "auto",
    reverse: bool = False,
    one_based: bool | None = None,
    lengths: tuple[list[int], list[int]] | None = None,
    encoding: str = "utf-8",
) -> tuple[list[Alignment], int]:
    """Read a prediction file for a gold of ``n_gold`` sentences.

    Following the standard protocol, a file with more lines than the gold has sentences is scored on
    its first ``n_gold`` lines (the test sentences come first, training sentences after). Returns the
    alignments and the number of lines (sentences) left out.
    """
    p = check_readable(path, "prediction file")
    if fmt == "auto":
        fmt = detect_format(p, encoding)
    form = ALIGNMENT_FORMATS.get(fmt)
    if form and form.line_per_sentence and (n_lines := count_lines(p, at_most=n_gold)) < n_gold:
        raise FormatError(
            f"the prediction has {n_lines} lines but the gold has {n_gold} sentences",
            path=p,
            hint="a prediction needs one line per gold sentence, in the gold's order",
        )
    hyp, info = read_alignments(
        p,
        fmt=fmt,
        one_based=one_based,
        reverse=reverse,
        n_sentences=n_gold,
        max_sentences=n_gold,
        src_lengths=lengths[0][:n_gold] if lengths else None,
        tgt_lengths=lengths[1][:n_gold] if lengths else None,
        encoding=encoding,
        role="pred",
    )
    if info.lines_ignored:
        warn(
            f"{path_text(path)}: has {n_gold + info.lines_ignored} lines for {n_gold} gold sentences; "
            f"scoring the first {n_gold} (the standard protocol puts the test sentences first)"
        )
    return hyp, info.lines_ignored


def read_prediction_line(path: str | os.PathLike, index: int, src_len: int, tgt_len: int,
                         options: GoldOptions = GoldOptions()) -> Alignment:
    """Sentence ``index`` (0-based) of a prediction file, read as ``options`` say (by default Pharaoh
    0-based or NAACL 1-based, source first), as the alignment of a pair of ``src_len`` x ``tgt_len``
    words: a link outside the pair is an error naming the line."""
    p = check_readable(path, "prediction file")
    hyp, _ = read_alignments(p, fmt=options.fmt, one_based=options.one_based, reverse=options.reverse,
                             max_sentences=index + 1, encoding=options.encoding, role="pred")
    if index >= len(hyp):
        lines = f"{len(hyp)} line{'' if len(hyp) == 1 else 's'}"
        raise FormatError(f"the prediction has {lines}; --index {index} is past its end", path=p,
                          hint="a prediction has one line per pair of the corpus, in its order")
    for i, j in sorted(hyp[index].links):
        if i >= src_len or j >= tgt_len:
            raise FormatError(f"line {index + 1}: link {i}-{j} lies outside the pair ({src_len} source and "
                              f"{tgt_len} target words)", path=p,
                              hint="the file must align these sentences, 0-based, source index first")
    return hyp[index]


def score_files(
    gold_path: str | os.PathLike,
    pred_paths: Sequence[str | os.PathLike],
    options: GoldOptions = GoldOptions(),
    *,
    src: str | os.PathLike | None = None,
    tgt: str | os.PathLike | None = None,
    corpus: str | os.PathLike | None = None,
    pred_format: str = "auto",
    reverse_pred: bool = False,
    pred_one_based: bool | None = None,
    bootstrap: Bootstrap | None = None,
    paired: bool = False,
    bands: bool = False,
) -> ScoreReport:
    """Score one or more prediction files against a gold file (one :class:`SystemScore` each); with
    ``bootstrap`` each score's interval, with ``paired`` each system's paired test against the first,
    with ``bands`` each system's error breakdown (:mod:`attnalign.eval.breakdown`; needs the text)."""
    if not pred_paths:
        raise FormatError("give at least one prediction file to score")
    if paired and len(pred_paths) < 2:
        raise OptionError("--paired tests systems against the first one: give two prediction files or more")
    if bands and src is None and tgt is None and corpus is None:
        raise OptionError("--breakdown needs the gold's text: give --src/--tgt or --corpus",
                          hint="the bands read the source words and the sentence lengths")
    check_one_stdin({"GOLD": gold_path, **{f"PRED {k + 1}": p for k, p in enumerate(pred_paths)},
                     "--src": src, "--tgt": tgt, "--corpus": corpus})
    gold, info, text = load_gold(gold_path, options, src=src, tgt=tgt, corpus=corpus, words=bands)
    lengths = None if text is None else text.lengths
    report = ScoreReport(info)
    for p in pred_paths:
        hyp, ignored = read_prediction(
            p,
            len(gold),
            fmt=pred_format,
            reverse=reverse_pred,
            one_based=pred_one_based,
            lengths=lengths,
            encoding=options.encoding,
        )
        s = score_alignments(gold, hyp, path_text(p))
        s.lines_ignored = ignored
        if bands:
            s.bands = breakdown(hyp, gold, text.pairs, text.frequency)
        report.systems.append(s)
    if bootstrap is not None or paired:
        report.resample(bootstrap or Bootstrap(), paired)
    return report
