"""Corpus files -> alignment files: the library behind ``attnalign align corpus`` and ``attnalign align
statistical``.

``align corpus`` streams the corpus through an :class:`~attnalign.nmt.aligner.Aligner`, writes the
alignment (Pharaoh, or JSON lines) and optionally the soft matrices as they are produced, scores the
first N pairs against a gold on the fly, and returns a summary. Files are written atomically: a failed
or interrupted run leaves no half-written output (and does not clobber an earlier one).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..data.alignments import Alignment, format_pharaoh_line
from ..data.attnfile import AttentionWriter
from ..data.corpus import Corpus, open_corpus, tokenize
from ..data.fileio import atomic_open, check_distinct, check_writable, is_stdio
from ..decoding.policy import check_tunable
from ..dist import world
from ..errors import AttnAlignError, OptionError, warn
from ..eval.metrics import Counts, alignment_counts
from ..eval.scoring import GoldOptions, ScoreReport, SystemScore, read_gold_for
from ..nmt.options import AlignOptions, check_threads
from ..statistical import iter_links, kernels
from ..statistical.ids import IdCorpus
from ..statistical.options import DEFAULT as TEACHER
from ..statistical.options import SYMS, TeacherOptions
from ..statistical.progress import reporting
from ..statistical.settings import MAX_WORDS

if TYPE_CHECKING:
    from ..combine import Tuning
    from ..nmt.aligner import AlignedPair


@dataclass
class AlignSummary:
    pairs: int = 0
    skipped: int = 0
    links: int = 0
    seconds: float = 0.0
    eos_mass: float = 0.0  # mean attention mass on the source EOS per target word
    eos_argmax: int = 0  # target words whose argmax landed on EOS (no link)
    report: ScoreReport | None = None
    settings: dict = field(default_factory=dict)
    tuning: Tuning | None = None  # align corpus --tune-gold: the blends scored on that gold, the choice

    @property
    def pairs_per_s(self) -> float:
        return self.pairs / self.seconds if self.seconds else 0.0


def pair_json(pair: AlignedPair) -> dict:
    """The ``--json-lines`` record of one pair."""
    return {
        "index": pair.index, "src": pair.src, "tgt": pair.tgt, "links": [list(x) for x in pair.links],
        "scores": [round(pair.scores.get(x, 0.0), 4) for x in pair.links], "skipped": pair.skipped,
    }


def _report(gold_info, output, per_sentence: list[Counts]) -> ScoreReport:
    """The score report of one system: the output file's name, or "attnalign" for stdout."""
    report = ScoreReport(gold_info)
    name = str(output) if output is not None and not is_stdio(output) else "attnalign"
    report.systems.append(SystemScore(name, sum(per_sentence, Counts()), per_sentence))
    return report


def align_corpus_files(
    model: str | os.PathLike,
    *,
    src: str | os.PathLike | None = None,
    tgt: str | os.PathLike | None = None,
    corpus: str | os.PathLike | None = None,
    output: str | os.PathLike | None = None,
    options: AlignOptions | None = None,
    scores: bool = False,
    json_lines: bool = False,
    save_attention: str | os.PathLike | None = None,
    gold: str | os.PathLike | None = None,
    gold_options: GoldOptions = GoldOptions(),
    lowercase: bool | None = None,
    encoding: str = "utf-8",
    progress: Callable[[int, int], None] | None = None,
    threads: int | None = None,
    teacher_progress: Callable[[str, str, int, int], None] | None = None,
    tune: TuneGold | None = None,
) -> AlignSummary:
    """Align a corpus file to ``output`` (stdout when None) with ``threads`` CPU threads (None: torch's
    default); see the module doc. Where the options and the model call for the teacher
    (:func:`attnalign.combine.combined_aligner`), it is read or trained first,
    ``teacher_progress(stage, step, done, total)`` hearing its passes. ``tune`` (a gold in
    ``gold_options``' format): the blend is chosen on that gold first (:func:`_tuned`)."""
    from ..combine import combined_aligner
    from ..nmt.aligner import Aligner
    from ..nmt.checkpoint import model_files
    from ..nmt.device import set_threads

    set_threads(threads)
    kernels.set_threads(threads)  # the teacher's loops
    outputs = {"--output": output, "--save-attention": save_attention}
    options = options or AlignOptions()
    reverse_model = options.reverse_model
    check_distinct(outputs, {"--src": src, "--tgt": tgt, "--corpus": corpus, "--gold": gold,
                             **(tune.inputs if tune else {}),
                             **model_files(model), **model_files(reverse_model, "--reverse-model")})
    for path, what in ((output, "output file"), (save_attention, "attention file")):
        if path is not None:
            check_writable(path, what)
    if is_stdio(output) and is_stdio(save_attention):
        raise OptionError("--output and --save-attention cannot both go to stdout (-)")
    aligner = Aligner(model, options)
    pairs = open_corpus(src, tgt, corpus, encoding=encoding,
                        lowercase=aligner.lowercase if lowercase is None else lowercase)
    golds, gold_info = read_gold_for(gold, gold_options, pairs) if gold else ([], None)
    if tune is None:
        aligner, _ = combined_aligner(aligner, model, pairs, options.teacher, options.teacher_corpus, outputs,
                                      teacher_progress)
        tuning = None
    else:
        text = tune.text(encoding, aligner.lowercase)
        tune_golds, _ = read_gold_for(tune.gold, gold_options, pairs if text is None else text)
        aligner, tuning = _tuned(aligner, options, model, pairs, text, tune_golds, str(tune.gold), outputs,
                                 teacher_progress)
    summary = AlignSummary(settings=aligner.description, tuning=tuning)
    if world()[0] != 0:  # under torchrun: align this process's share; rank 0 writes
        for _ in aligner.align(pairs):
            pass
        return summary
    t0 = time.perf_counter()
    per_sentence, eos_total, tgt_words = _write_pairs(aligner, pairs, model, output, save_attention,
                                                      json_lines, scores, golds, progress, summary)
    summary.seconds = time.perf_counter() - t0
    summary.eos_mass = eos_total / tgt_words if tgt_words else 0.0
    if gold is not None:
        summary.report = _report(gold_info, output, per_sentence)
    return summary


@dataclass(frozen=True)
class TuneGold:
    """``align corpus --tune-gold``: a gold to choose the blend on, of the corpus's first lines, or of its
    own text ``src`` / ``tgt``."""

    gold: str | os.PathLike
    src: str | os.PathLike | None = None
    tgt: str | os.PathLike | None = None

    @property
    def inputs(self) -> dict:
        return {"--tune-gold": self.gold, "--tune-src": self.src, "--tune-tgt": self.tgt}

    def text(self, encoding: str, lowercase: bool):
        """The gold's own text (None: the corpus's first lines)."""
        if (self.src is None) != (self.tgt is None):
            raise OptionError("--tune-src and --tune-tgt go together (the gold's own text)",
                              hint="give both, or neither: the gold's sentences are then the corpus's first "
                                   "lines")
        return None if self.src is None else open_corpus(self.src, self.tgt, encoding=encoding,
                                                         lowercase=lowercase)


def _tuned(aligner, options: AlignOptions, model, pairs, text, golds, name: str, outputs, progress):
    """The aligner combined with its teacher, the blend chosen on ``golds`` (named ``name``) of ``text``
    (None: of the first lines of ``pairs``; else the teacher reads ``text`` after ``pairs``), and the
    :class:`~attnalign.combine.Tuning`, kept in the model directory."""
    from ..combine import Combined, combined_aligner, save_tuning, tune_blend
    from ..nmt.checkpoint import is_hf_model

    check_tunable(options.decoding)
    if is_hf_model(model):
        raise OptionError("--tune-gold keeps its choice in an attnalign model directory", path=model,
                          hint="fine-tune it with attnalign train --init-from, or leave --tune-gold out")
    combined, _ = combined_aligner(aligner, model, pairs if text is None else Corpus(pairs, text),
                                   options.teacher, options.teacher_corpus, outputs, progress, kept=False)
    if not isinstance(combined, Combined):
        raise OptionError("--tune-gold chooses how the student is blended with its teacher, and this run has "
                          "no teacher", hint="give --teacher on (a model trained with --guide auto gets one "
                                             "from 1,000 pairs), or leave --tune-gold out")
    tuning = tune_blend(combined, pairs if text is None else text, golds, 0 if text is None else len(pairs),
                        name)
    save_tuning(model, tuning, options.readout)
    return (combined if tuning.chosen is None else combined.with_decoding(tuning.chosen)), tuning


def _write_pairs(aligner, pairs, model, output, save_attention, json_lines: bool, scores: bool, golds,
                 progress, summary: AlignSummary) -> tuple[list[Counts], float, int]:
    """Align ``pairs`` and write each line (and its matrices with ``save_attention``) as it comes,
    counting into ``summary``; each gold sentence's counts, the EOS mass and the target words."""
    per_sentence: list[Counts] = []
    eos_total, tgt_words = 0.0, 0
    with contextlib.ExitStack() as stack:
        out = sys.stdout if output is None else stack.enter_context(atomic_open(output))
        writer = None
        if save_attention is not None:
            f = stack.enter_context(atomic_open(save_attention, "wb"))
            writer = AttentionWriter(f, {"model": str(model), **aligner.description})
            stack.push(writer.exit)  # closes it before the atomic rename (LIFO)
        for pair in aligner.align(pairs):
            if json_lines:
                out.write(json.dumps(pair_json(pair), ensure_ascii=False) + "\n")
            else:
                a = Alignment.from_links(pair.links, pair.scores)
                out.write(format_pharaoh_line(a, with_scores=scores) + "\n")
            summary.pairs += 1
            summary.links += len(pair.links)
            if pair.skipped:
                summary.skipped += 1
            elif pair.eos is not None and len(pair.eos):
                eos_total += float(pair.eos.sum())
                tgt_words += len(pair.eos)
                if pair.matrix is not None and pair.matrix.size:
                    summary.eos_argmax += int((pair.eos > pair.matrix.max(axis=1)).sum())
            if writer is not None and not pair.skipped and pair.matrix is not None:
                writer.add(pair.index, pair.src, pair.tgt, pair.matrix, pair.eos, pair.reverse,
                           forward=None if pair.forward is pair.matrix else pair.forward,
                           reverse_eos=None if pair.reverse is None else pair.reverse_eos)
            if pair.index < len(golds):
                per_sentence.append(alignment_counts(Alignment.from_links(pair.links), golds[pair.index]))
            if progress is not None:
                progress(summary.pairs, len(pairs))
        if output is None:
            out.flush()
    return per_sentence, eos_total, tgt_words


def align_statistical_files(
    *,
    src: str | os.PathLike | None = None,
    tgt: str | os.PathLike | None = None,
    corpus: str | os.PathLike | None = None,
    output: str | os.PathLike | None = None,
    model: str = TEACHER.model,
    sym: str = TEACHER.sym,
    prefix: int = TEACHER.prefix,
    identical: float = TEACHER.identical,
    samplers: int = TEACHER.samplers,
    seed: int = TEACHER.seed,
    gold: str | os.PathLike | None = None,
    gold_options: GoldOptions = GoldOptions(),
    lowercase: bool = False,
    encoding: str = "utf-8",
    progress: Callable[[str, str, int, int], None] | None = None,
    threads: int | None = None,
) -> AlignSummary:
    """Align a corpus file with the built-in statistical aligner (no NMT model; the teacher of
    ``train --guide auto``; settings as :class:`~attnalign.statistical.TeacherOptions`) to ``output``
    (stdout when None). The corpus is read once into token ids and the links are written as they are
    decoded (README, ``align statistical``). ``progress(stage, step, done, total)`` hears every pass
    (:mod:`attnalign.statistical.progress`). ``threads``: the cores its compiled loops use (None: every
    core). Under torchrun every process trains and rank 0 writes."""

    check_threads(threads)
    teacher = TeacherOptions(model, sym, prefix, identical, samplers, seed).check((*SYMS, "none"))
    kernels.set_threads(threads)
    check_distinct({"--output": output}, {"--src": src, "--tgt": tgt, "--corpus": corpus, "--gold": gold})
    writer = world()[0] == 0
    if output is not None and writer:
        check_writable(output)
    pairs = open_corpus(src, tgt, corpus, encoding=encoding, lowercase=lowercase)
    golds, gold_info = read_gold_for(gold, gold_options, pairs) if gold else ([], None)
    t0 = time.perf_counter()
    summary = AlignSummary(pairs=len(pairs), links=0,
                           settings={"aligner": model, "sym": sym, "prefix": prefix, "identical": identical,
                                     "samplers": samplers, "seed": seed})
    try:
        summary.links, per_sentence = _write_statistical(pairs, teacher, output, writer, golds, progress)
    except MemoryError:
        raise AttnAlignError(
            f"out of memory aligning {len(pairs)} pairs with {model}",
            hint="run it under torchrun (README, align statistical) so that several processes or machines "
                 "share the corpus, or align it in parts") from None
    if not writer:
        return summary
    summary.seconds = time.perf_counter() - t0
    if gold is not None:
        summary.report = _report(gold_info, output, per_sentence)
    return summary


def _write_statistical(pairs, teacher: TeacherOptions, output, writer: bool, golds, progress
                       ) -> tuple[int, list[Counts]]:
    """Train, then write the links as they are decoded (rank 0); return the number of links and the
    gold sentences' counts."""
    long = [0]

    def short(pairs):  # a pair too long to be a sentence is left out: an empty line, counted
        for s, t in pairs:
            if len(s) > MAX_WORDS or len(t) > MAX_WORDS:
                long[0] += 1
                s, t = [], []
            yield s, t

    with reporting(progress), contextlib.ExitStack() as stack:
        links = iter_links(IdCorpus.encode(short(pairs)), **teacher.as_kwargs())
        if long[0] and writer:
            warn(f"{long[0]} pair{'s' if long[0] != 1 else ''} with more than {MAX_WORDS:,} words on a side "
                 "left out (an empty line each): split such lines into sentences to align them")
        if not writer:  # another process writes; this one trains on its share
            for _ in links:
                pass
            return 0, []
        first = next(links, None)  # trained: only now is the old output replaced
        n_links, per_sentence = 0, []
        out = sys.stdout if output is None else stack.enter_context(atomic_open(output))
        for k, x in enumerate(itertools.chain([first] if first is not None else [], links)):
            out.write(format_pharaoh_line(Alignment.from_links(x)) + "\n")
            n_links += len(x)
            if k < len(golds):
                per_sentence.append(alignment_counts(Alignment.from_links(x), golds[k]))
        if output is None:
            out.flush()
    return n_links, per_sentence


def align_sentence(model: str | os.PathLike, src: str, tgt: str, options: AlignOptions | None = None
                   ) -> tuple[AlignedPair, dict]:
    """One pair given as whitespace-tokenized strings, aligned by ``model`` as ``align corpus`` aligns a
    file of that one pair (the teacher included); the settings used."""
    from ..combine import combined_aligner
    from ..nmt.aligner import Aligner

    options = options or AlignOptions()
    aligner = Aligner(model, options)
    s, t = tokenize(src, aligner.lowercase), tokenize(tgt, aligner.lowercase)
    if not s or not t:
        raise OptionError("both --src and --tgt need at least one word")
    run, _ = combined_aligner(aligner, model, [(s, t)], options.teacher, options.teacher_corpus)
    (pair,) = run.align_pairs([(s, t)])
    return pair, run.description
