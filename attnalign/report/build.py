"""A self-contained report on a model's alignments over a corpus with gold: ``attnalign report``.

The report directory holds ``index.html`` (opens in a browser with no server and no network: images
are PNG files beside it, referenced by relative paths), the PNGs, and CSV tables:

* ``scores.csv``: AER/P/R/F1 of every configuration tried (every decoder and symmetrization of
  :mod:`attnalign.decoding`'s registries, shifts, and for Transformers every layer), the best marked;
* ``by_length.csv``: AER and link counts by target sentence length (best configuration);
* ``wrong_pairs.csv`` / ``missed_pairs.csv``: the most frequent wrongly linked word pairs and the
  most frequently missed sure gold pairs;
* ``per_sentence.csv``: every sentence's counts and scores (best configuration);
* plots of AER per layer (Transformers), AER by length, attention entropy and EOS mass, and a gallery
  of the worst and best sentences as heatmaps;
* the systems compared (:mod:`.systems`): the model's default output (or the best reading of an
  attention file) and the alignment files given with ``--pred``, with intervals, paired tests, error
  breakdowns and the sentences where they disagree. Without a model or an attention file the report
  is this comparison alone (one system: its worst sentences drawn), and needs no torch.

A report is one :class:`ReportRequest` (what to score, what to draw, where); :func:`report_files` checks
it, reads every input once (:func:`read_inputs`) and builds the page.
"""

from __future__ import annotations

import html
import os
import shlex
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..data.alignments import Alignment
from ..data.attnfile import AttentionFile
from ..data.corpus import Pairs, open_corpus
from ..data.fileio import atomic_dir, check_one_stdin, inside, is_stdio
from ..errors import OptionError
from ..eval.explorer import EXPLORER_FILE, write_explorer
from ..eval.plot import settings_text
from ..eval.scoring import GoldOptions, gold_signature, read_gold, read_gold_for
from ..nmt.options import ONE_PAIR_MAX_LENGTH, AlignOptions, Reading
from ..training.options import TrainOptions
from ..workflows.views import gallery_panels, saved_panels
from .page import REPORT_TITLE, html_table, readable, write_page, write_systems_page
from .plots import write_plots
from .sweep import Config, Result, attention_stats, default_output, model_results, saved_results
from .systems import check_unique_names, pred_results, systems_html, write_systems
from .systems import plot_args as systems_plot_args
from .tables import eos_losses, write_tables

GALLERY = 4  # worst and best sentences drawn
TOP = 20  # rows of the most frequent wrong and missed word pairs


@dataclass(frozen=True)
class ReportRequest:
    """What a report scores: a ``model`` over the corpus (``src``/``tgt`` or ``corpus``, read with
    ``lowercase``, the model's own where None; ``options``: how the model is read: device, extraction
    batch, a pretrained model's reverse model and languages), a saved ``attention`` file, and other
    aligners' alignment files ``preds`` (named ``pred_names``, read as ``pred_options`` say), against
    ``gold`` (read as ``gold_options`` say); what it draws (``gallery`` worst and best sentences, ``top``
    word pairs); where it goes (the folder ``out``); and the ``command`` shown on the page."""

    out: str | os.PathLike
    gold: str | os.PathLike
    gold_options: GoldOptions = GoldOptions()
    model: str | os.PathLike | None = None
    attention: str | os.PathLike | None = None
    src: str | os.PathLike | None = None
    tgt: str | os.PathLike | None = None
    corpus: str | os.PathLike | None = None
    lowercase: bool | None = None
    options: AlignOptions | None = None
    preds: tuple = ()
    pred_names: tuple = ()
    pred_options: GoldOptions | None = None
    gallery: int = GALLERY
    top: int = TOP
    command: str | None = None

    @property
    def has_text(self) -> bool:
        return not (self.src is None and self.tgt is None and self.corpus is None)

    def check(self) -> ReportRequest:
        """A clear error for a request that cannot make a report; ``self`` otherwise."""
        out = Path(self.out)
        if is_stdio(out):
            raise OptionError("the report is a folder and cannot go to stdout (-)", hint="give -o FOLDER")
        if out.exists() and not out.is_dir():
            raise OptionError("the report output must be a folder, and this is a file", path=out,
                              hint="give -o a new folder, or an earlier report's")
        if self.gallery < 0:
            raise OptionError(f"--gallery must be >= 0, not {self.gallery}")
        if self.attention is None and self.model is None and not self.preds:
            raise OptionError("give --model DIR with a corpus, --attention FILE, or --pred FILE with the "
                              "corpus")
        if self.attention is None and not self.has_text:
            raise OptionError("give the corpus (--src/--tgt or --corpus) whose first sentences the gold "
                              "aligns")
        reverse = self.options.reverse_model if self.options is not None else None
        check_one_stdin({"--gold": self.gold, "--attention": self.attention, "--src": self.src,
                         "--tgt": self.tgt, "--corpus": self.corpus,
                         **{f"--pred {k + 1}": p for k, p in enumerate(self.preds)}})
        inputs = {"--gold": self.gold, "--attention": self.attention, "--model": self.model,
                  "--src": self.src, "--tgt": self.tgt, "--corpus": self.corpus, "--reverse-model": reverse,
                  **{f"--pred {p}": p for p in self.preds}}
        for flag, path in inputs.items():
            if path is not None and out.exists() and inside(path, out):
                raise OptionError(f"{flag} lies inside the report folder, which the report replaces whole",
                                  path=path,
                                  hint="write the report to another folder (-o), or move the input")
        return self


@dataclass
class ReportInputs:
    """Every input of a report, read once: the gold and how it was read, the gold's sentences (from the
    corpus or the attention file; None for an attention file without them), the source words' counts in
    the whole text (None: in the gold's sentences) and the ``--pred`` systems' results."""

    gold: list[Alignment]
    info: object
    pairs: list | None = None
    frequency: Counter | None = None
    systems: list[Result] = field(default_factory=list)


def read_inputs(request: ReportRequest) -> ReportInputs:
    """Read the gold against its text (the corpus's first lines, by
    :func:`~attnalign.eval.scoring.read_gold_for`; or the attention file's pairs, where it holds every
    gold sentence), the source words' frequencies over the whole text in the same pass, and the
    ``--pred`` files."""
    r = request
    pred_options = r.pred_options or GoldOptions(encoding=r.gold_options.encoding)
    frequency = None
    if r.attention is not None:  # its own pairs; the corpus options do not apply
        gold, info = read_gold(r.gold, r.gold_options)
        pairs = None
        with AttentionFile(r.attention) as saved:
            if set(range(len(gold))) <= set(saved.indices()):
                pairs = [(p.src, p.tgt) for p in (saved.pair(k) for k in range(len(gold)))]
                gold, info = read_gold(r.gold, r.gold_options, pairs=pairs)
    else:
        lowercase = r.lowercase
        if r.model is not None:
            from ..nmt.checkpoint import model_lowercase

            lowercase = model_lowercase(r.model, lowercase)
        text = open_corpus(r.src, r.tgt, r.corpus, encoding=r.gold_options.encoding,
                           lowercase=bool(lowercase))
        gold, info = read_gold_for(r.gold, r.gold_options, text)
        pairs, frequency = [], Counter()
        for k, (s, t) in enumerate(text):  # the breakdown's frequency bands count the whole text
            if k < len(gold):
                pairs.append((s, t))
            frequency.update(s)
    systems = pred_results(r.preds, r.pred_names, gold, pairs, pred_options) if r.preds and pairs else []
    return ReportInputs(gold, info, pairs, frequency, systems)


def report_files(request: ReportRequest) -> dict:
    """The library behind ``attnalign report``: check the request, read its inputs once and write the
    report folder (atomically: a failed run leaves the old report); return a summary (the best
    configuration and its scores, or the best system; the page's path)."""
    request = request.check()
    inputs = read_inputs(request)
    if request.attention is None and request.model is not None and request.options is not None:
        from ..nmt.device import resolve_device

        request = replace(request, options=replace(request.options,
                                                   device=str(resolve_device(request.options.device))))
    with atomic_dir(request.out, "report folder", marker=("index.html", REPORT_TITLE)) as stage:
        summary = build_report(stage, request, inputs)
    index = str(Path(request.out) / "index.html")
    return {**summary, "signature": gold_signature(inputs.info), "index": index}


def build_report(out: Path, request: ReportRequest, inputs: ReportInputs) -> dict:
    """Write the report into the folder ``out``: the comparison of the ``--pred`` systems alone, or the
    study of a model's (or an attention file's) readings with the systems beside its default output."""
    if request.attention is None and request.model is None:
        return _systems_report(out, request, inputs)
    return _readings_report(out, request, inputs)


def _systems_report(out: Path, request: ReportRequest, inputs: ReportInputs) -> dict:
    """The page of ``--pred`` files without a model: the systems compared (one: its worst sentences)."""
    if inputs.pairs is None or not inputs.systems:
        raise OptionError("a report needs --model with a corpus, --attention, or --pred files with the "
                          "corpus")
    _, compare_args = _plot_args(request)
    frames = write_systems(out, inputs.systems, inputs.gold, inputs.pairs, inputs.frequency,
                           request.gallery, request.top, None, compare_args, inputs.info)
    write_explorer(out / EXPLORER_FILE, [g["explorer"] for g in frames["disagree"]], "the systems compared")
    write_systems_page(out, len(inputs.gold), frames, request.command, gold_signature(inputs.info))
    best = min(inputs.systems, key=lambda r: r.total.aer)
    return {"best": best.config.name, **best.total.as_dict(), "configurations": len(inputs.systems),
            "default_output_aer": None}


def _readings_report(out: Path, request: ReportRequest, inputs: ReportInputs) -> dict:
    """The page of a model's readings over the gold's sentences (every decoding, layer and shift), or of
    an attention file's, with the systems compared beside the default output."""
    r, gold, default, model_info = request, inputs.gold, None, ""
    if r.attention is not None:
        results, mats, pairs = saved_results(r.attention, gold)
        layered, title = False, f"attention file {r.attention}"
    else:
        pairs = inputs.pairs
        options = r.options or AlignOptions()
        results, mats, layered = model_results(r.model, pairs, gold, options, options.batch_tokens)
        default = default_output(r.model, pairs, gold, options)
        title, model_info = f"model {r.model}", _model_info(r.model, options)
    systems = inputs.systems
    check_unique_names([x.config.name for x in results], [x.config.name for x in systems])
    best = min(results, key=lambda x: x.total.aer)  # the best reading of the attention: what the page studies
    fwd, _ = mats[(best.config.layer, best.config.shift)]
    tables = write_tables(out, [*results, *([default] if default else []), *systems], best, pairs, gold,
                          r.top)
    tables["eos_losses"] = eos_losses(fwd, pairs, gold, r.top)
    tables["eos_losses"].to_csv(out / "eos_losses.csv", index=False)
    stats = attention_stats(fwd)
    draw = _gallery_panel(best.config, r.model, r.attention, r.options if r.attention is None else None,
                          pairs, gold)
    images = write_plots(out, tables, best, draw, stats, pairs, gold, layered, r.gallery)
    compared = [default or best, *systems]  # what align corpus writes (a saved file: its best reading)
    frequency = inputs.frequency or Counter(w for s, _ in pairs for w in s)
    plot_args, compare_args = _plot_args(r)
    # the model's own gallery draws its worst sentences; the systems' draws where they disagree
    frames = write_systems(out, compared, gold, pairs, frequency, r.gallery if systems else 0, r.top,
                           lambda k: fwd[k], compare_args, inputs.info)
    write_explorer(out / EXPLORER_FILE, [*images["explorer"], *(g["explorer"] for g in frames["disagree"])],
                   f"{title}: the gallery's sentences, worst first")
    write_page(out, title, len(gold), best, tables, images, fwd, stats, layered, pairs, r.command, plot_args,
               model_info, gold_signature(inputs.info), default, systems_html(frames, html_table, readable))
    return {"best": best.config.name, **best.total.as_dict(), "configurations": len(results),
            "default_output_aer": None if default is None else default.total.aer}


def _gallery_panel(cfg: Config, model, attention, options, pairs: Pairs, gold):
    """``draw(ks)``: for sentences ks, each one's picture as its caption's ``plot sentence ... --eos --index
    k`` draws it (the same functions, so the same matrices, marks and titles; a model read once, the
    sentences' attention extracted once, in batches): the matrix the best configuration's links were
    decoded from, with the EOS column; and beside it, for the explorer, the panels of ``plot sentence
    --compare`` (both directions and their symmetrizations)."""
    if attention is None:  # the configuration the sweep scored: the student's attention, no teacher
        # drawn as its caption's plot sentence draws it: a long pair too, which the sweep scored
        opts = replace(options, decoder=cfg.decoder, sym=cfg.sym, layer=cfg.layer, shift=cfg.shift,
                       teacher="off", max_length=ONE_PAIR_MAX_LENGTH)
    else:
        opts = AlignOptions(decoder=cfg.decoder, sym=cfg.sym)

    def draw(ks: list[int]) -> list[tuple]:
        if attention is None:
            return gallery_panels(model, [(list(pairs[k][0]), list(pairs[k][1])) for k in ks], opts,
                                  [gold[k] for k in ks])
        with AttentionFile(attention) as saved:  # opened (and checked) once for the sentences
            return [(saved_panels(saved, k, opts, gold=gold[k], show_eos=True)[0],
                     saved_panels(saved, k, opts, gold=gold[k], compare=True)) for k in ks]

    return draw


def _model_info(model, options) -> str:
    """The model's architecture and training options, from its config.json, as HTML."""
    from ..nmt.aligner import model_meta

    cfg = model_meta(model, options)
    if cfg.get("pretrained"):
        rev = cfg.get("reverse_model")
        return (f"<p>Model: pretrained Hugging Face model <code>{html.escape(cfg['pretrained'])}</code>"
                + (f", reverse direction <code>{html.escape(rev)}</code>" if rev else ", one direction")
                + ".</p>")

    readout = options.readout
    options = TrainOptions.from_saved(cfg.get("train_options") or {})
    network = {*options.network.config, "gpu_network"}
    train = {k: v for k, v in options.flat().items() if k not in network}
    return (f"<p>Model: {html.escape(str(cfg.get('model_type')))}, directions "
            f"{html.escape(', '.join(cfg.get('directions', [])))}; architecture "
            f"<code>{html.escape(settings_text(cfg.get('model_config') or {}))}</code>; trained with "
            f"<code>{html.escape(settings_text(train))}</code>.</p>" + _tuning_info(model, readout))


TUNING_ROWS = 12  # the best candidates the report lists of a --tune-gold run (and the default)


def _tuning_info(model, readout: str) -> str:
    """The blend ``align corpus --tune-gold`` chose for the model's matrices of ``readout`` (its
    candidates' scores on that gold), as HTML; empty where it was never tuned."""
    import pandas as pd

    from ..combine.tune import kept_tuning

    tuning = kept_tuning(model, readout)
    if tuning is None:
        return ""
    shown = tuning.scores[:TUNING_ROWS]
    if tuning.default not in [d for d, _ in shown]:
        shown.append((tuning.default, tuning.default_aer))
    frame = pd.DataFrame([{"decoding": d.describe(), "AER": 100 * aer,
                           "": "default" if d == tuning.default else ("kept" if d == tuning.chosen else "")}
                          for d, aer in shown])
    return (f"<p>{html.escape(tuning.describe())}.</p>"
            + html_table(frame, highlight=0 if tuning.chosen is not None else None, sorted_by="AER"))


def _plot_args(request: ReportRequest) -> tuple[str, str]:
    """The ``plot sentence`` options (less ``--index``) that draw a sentence of the report: as the
    gallery draws it (the model's or the attention file's matrix), and as the systems' gallery does
    (the --pred files' links)."""
    r = request
    text = ["--corpus", r.corpus] if r.corpus is not None else ["--src", r.src, "--tgt", r.tgt]
    source = ["--attention", r.attention] if r.attention is not None else ["--model", r.model, *text]
    case = [] if r.lowercase is None else ["--lowercase" if r.lowercase else "--no-lowercase"]
    o = r.options
    given = () if o is None else (("--reverse-model", o.reverse_model), ("--src-lang", o.src_lang),
                                  ("--tgt-lang", o.tgt_lang),
                                  ("--readout", None if o.readout == Reading.readout else o.readout),
                                  ("--smoothgrad", o.smoothgrad or None))
    hf = [f for flag, v in given if v is not None and r.attention is None for f in (flag, v)]
    gold_args = ["--gold", str(r.gold), *_gold_args(r.gold_options), *case]
    drawn = source if r.attention is not None or r.model is not None else text
    pred_options = r.pred_options or GoldOptions(encoding=r.gold_options.encoding)
    return (shlex.join([*map(str, source), *map(str, hf), *gold_args]),
            systems_plot_args(r.preds, [*drawn, *hf, *_gold_args(pred_options, "pred")], gold_args))


def _gold_args(options, role: str = "gold") -> list[str]:
    """The options of a gold (or of the predictions: ``role`` "pred") that differ from their defaults,
    as command-line words (the encoding once, with the gold's)."""
    args = []
    if options.fmt != "auto":
        args += [f"--{role}-format", options.fmt]
    if options.one_based is not None:
        args.append(f"--{role}-one-based" if options.one_based else f"--{role}-zero-based")
    if options.reverse:
        args.append(f"--reverse-{role}")
    if options.encoding != "utf-8" and role == "gold":
        args += ["--encoding", options.encoding]
    return args

