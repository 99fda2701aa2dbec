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
* the systems compared (:mod:`.report_systems`): the model's default output (or the best reading of an
  attention file) and the alignment files given with ``--pred``, with intervals, paired tests, error
  breakdowns and the sentences where they disagree. Without a model or an attention file the report
  is this comparison alone, and needs no torch.
"""

from __future__ import annotations

import html
import os
import shlex
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..data.alignments import Alignment
from ..data.attnfile import read_attention, saved_indices
from ..data.corpus import Pairs
from ..data.fileio import atomic_dir, inside, is_stdio
from ..errors import AttnAlignError, OptionError
from ..eval.plot import settings_text
from .report_page import REPORT_TITLE, html_table, readable, write_page, write_systems_page
from .report_plots import write_plots
from .report_sweep import Config, Result, attention_stats, default_output, model_results, saved_results
from .report_systems import check_unique_names, pred_results, systems_html, write_systems
from .report_systems import plot_args as systems_plot_args
from .report_tables import eos_losses, write_tables

if TYPE_CHECKING:
    from ..nmt.aligner import AlignOptions


def build_report(
    out_dir: str | os.PathLike,
    gold: Sequence[Alignment],
    *,
    model: str | os.PathLike | None = None,
    pairs: Pairs | None = None,
    attention: str | os.PathLike | None = None,
    options: AlignOptions | None = None,
    gallery: int = 4,
    top: int = 20,
    command: str | None = None,
    plot_args: str | None = None,
    signature: str | None = None,
    systems: Sequence[Result] = (),
    frequency: dict | None = None,
    systems_plot_args: str | None = None,
    info=None,
) -> dict:
    """Write the report directory; return a summary (best configuration and its scores). ``command``:
    the command line that made it, shown on the page; ``plot_args``: the ``plot sentence`` options
    that draw one of its sentences (the gallery's captions add ``--index N``); ``signature``: the
    scores' signature (:func:`attnalign.eval.scoring.gold_signature`), shown on the page; ``options``:
    how the model is read (device, extraction batch, a pretrained model's reverse model and
    languages); the report tries every decoding itself. ``systems``: other aligners' results
    (:func:`~.report_systems.pred_results`), compared with the model's default output;
    ``frequency``: the source words' counts in the whole text, for the breakdown (None: in the gold's
    sentences); ``systems_plot_args``: the ``plot sentence`` options that draw the systems' links;
    ``info``: how the gold was read."""
    with atomic_dir(out_dir, "report folder", marker=("index.html", REPORT_TITLE)) as stage:
        summary = _build(stage, gold, model, pairs, attention, options, gallery, top, command, plot_args,
                         signature, list(systems), frequency, systems_plot_args, info)
    return {**summary, "index": str(Path(out_dir) / "index.html")}


def _build(out: Path, gold, model, pairs, attention, options, gallery, top, command, plot_args,
           signature, systems, frequency, systems_plot_args, info) -> dict:
    model_info, default = "", None
    if attention is None and model is None:
        if pairs is None or not systems:
            raise OptionError("a report needs --model with a corpus, --attention, or --pred files with the "
                              "corpus")
        frequency = frequency or Counter(w for s, _ in pairs for w in s)
        frames = write_systems(out, systems, gold, pairs, frequency, gallery, top, None, systems_plot_args,
                               info)
        write_systems_page(out, len(gold), frames, command, signature)
        best = min(systems, key=lambda r: r.total.aer)
        return {"best": best.config.name, **best.total.as_dict(), "configurations": len(systems),
                "default_output_aer": None, "signature": signature}
    if attention is not None:
        results, mats, pairs = saved_results(attention, gold)
        layered = False
        title = f"attention file {attention}"
    else:
        if model is None or pairs is None:
            raise OptionError("a report needs --model and a corpus, or --attention")
        if len(pairs) < len(gold):
            raise AttnAlignError(f"the corpus has {len(pairs)} pairs but the gold {len(gold)} sentences")
        pairs = list(pairs[: len(gold)])
        from ..nmt.aligner import AlignOptions

        options = options or AlignOptions()
        results, mats, layered = model_results(model, pairs, gold, options, options.batch_tokens)
        default = default_output(model, pairs, gold, options)
        title = f"model {model}"
        model_info = _model_info(model, options)
    check_unique_names([r.config.name for r in results], [r.config.name for r in systems])
    best = min(results, key=lambda r: r.total.aer)  # the best reading of the attention: what the page studies
    fwd, _ = mats[(best.config.layer, best.config.shift)]
    tables = write_tables(out, [*results, *([default] if default else []), *systems], best, pairs, gold, top)
    tables["eos_losses"] = eos_losses(fwd, pairs, gold, top)
    tables["eos_losses"].to_csv(out / "eos_losses.csv", index=False)
    stats = attention_stats(fwd)
    draw = _gallery_panel(best.config, model, attention, options if attention is None else None, pairs, gold)
    images = write_plots(out, tables, best, draw, stats, pairs, gold, layered, gallery)
    compared = [default or best, *systems]  # what align corpus writes (a saved file: its best reading)
    frequency = frequency or Counter(w for s, _ in pairs for w in s)
    frames = write_systems(out, compared, gold, pairs, frequency, gallery, top, lambda k: fwd[k],
                           systems_plot_args, info)
    write_page(out, title, len(gold), best, tables, images, fwd, stats, layered, pairs, command, plot_args,
               model_info, signature, default, systems_html(frames, html_table, readable))
    return {
        "best": best.config.name,
        **best.total.as_dict(),
        "configurations": len(results),
        "default_output_aer": None if default is None else default.total.aer,
        "signature": signature,
    }


def _gallery_panel(cfg: Config, model, attention, options, pairs: Pairs, gold):
    """``draw(k)``: sentence k's picture as its caption's ``plot sentence ... --eos --index k`` draws
    it (the same function, so the same matrix, marks and title): the matrix the best configuration's
    links were decoded from, with the EOS column."""
    from dataclasses import replace

    from ..nmt.aligner import AlignOptions
    from .views import model_panels, saved_panels

    if attention is not None:
        opts = AlignOptions(decoder=cfg.decoder, sym=cfg.sym)
        return lambda k: saved_panels(attention, k, opts, gold=gold[k], show_eos=True)[0]
    opts = replace(options, decoder=cfg.decoder, sym=cfg.sym, layer=cfg.layer, shift=cfg.shift)
    return lambda k: model_panels(model, list(pairs[k][0]), list(pairs[k][1]), opts, gold=gold[k],
                                  show_eos=True)[0]


def _model_info(model, options) -> str:
    """The model's architecture and training options, from its config.json, as HTML."""
    from ..nmt.aligner import model_meta

    cfg = model_meta(model, options)
    if cfg.get("pretrained"):
        rev = cfg.get("reverse_model")
        return (f"<p>Model: pretrained Hugging Face model <code>{html.escape(cfg['pretrained'])}</code>"
                + (f", reverse direction <code>{html.escape(rev)}</code>" if rev else ", one direction")
                + ".</p>")
    from ..training.options import flat_options

    train = {k: v for k, v in flat_options(cfg.get("train_options") or {}).items() if k != "model_config"}
    return (f"<p>Model: {html.escape(str(cfg.get('model_type')))}, directions "
            f"{html.escape(', '.join(cfg.get('directions', [])))}; architecture "
            f"<code>{html.escape(settings_text(cfg.get('model_config') or {}))}</code>; trained with "
            f"<code>{html.escape(settings_text(train))}</code>.</p>" + _tuning_info(model))


TUNING_ROWS = 12  # the best candidates the report lists of a --tune-gold run (and the default)


def _tuning_info(model) -> str:
    """The blend ``align corpus --tune-gold`` chose for the model (its candidates' scores on that gold),
    as HTML; empty where it was never tuned."""
    import pandas as pd

    from ..combine.tune import kept_tuning
    from .report_page import html_table

    tuning = kept_tuning(model)
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


def report_files(
    out_dir: str | os.PathLike,
    gold: str | os.PathLike,
    gold_options=None,
    *,
    model: str | os.PathLike | None = None,
    src: str | os.PathLike | None = None,
    tgt: str | os.PathLike | None = None,
    corpus: str | os.PathLike | None = None,
    attention: str | os.PathLike | None = None,
    lowercase: bool | None = None,
    options: AlignOptions | None = None,
    gallery: int = 4,
    command: str | None = None,
    preds: Sequence[str | os.PathLike] = (),
    pred_names: Sequence[str] = (),
    pred_options=None,
) -> dict:
    """The library behind ``attnalign report``: read the gold and the corpus's first sentences (or a
    saved attention file), then :func:`build_report` (``options``: how the model is read, its device
    ``auto`` resolved here). ``command``: the command line shown on the page; ``preds``: other aligners'
    alignment files (read as ``pred_options`` say: a :class:`~attnalign.eval.scoring.GoldOptions`),
    named ``pred_names`` (default: their paths), compared with the model's default output, or alone
    without a model."""
    from ..eval.scoring import GoldOptions, gold_signature, read_gold

    out = Path(out_dir)
    if is_stdio(out):
        raise OptionError("the report is a folder and cannot go to stdout (-)", hint="give -o FOLDER")
    if out.exists() and not out.is_dir():
        raise AttnAlignError("the report output must be a directory", path=out)
    if gallery < 0:
        raise OptionError(f"--gallery must be >= 0, not {gallery}")
    reverse_model = options.reverse_model if options is not None else None
    inputs = {"--gold": gold, "--attention": attention, "--model": model, "--src": src, "--tgt": tgt,
              "--corpus": corpus, "--reverse-model": reverse_model, **{f"--pred {p}": p for p in preds}}
    for flag, path in inputs.items():
        if path is not None and out.exists() and inside(path, out):
            raise OptionError(f"{flag} lies inside the report folder, which the report replaces whole",
                              path=path, hint="write the report to another folder (-o), or move the input")
    gold_options = gold_options or GoldOptions()
    pred_options = pred_options or GoldOptions(encoding=gold_options.encoding)
    golds, info = read_gold(gold, gold_options)
    pairs, frequency = None, None
    if attention is not None and set(range(len(golds))) <= set(saved_indices(attention)):
        saved = [read_attention(attention, k) for k in range(len(golds))]
        golds, info = read_gold(gold, gold_options, pairs=[(p.src, p.tgt) for p in saved])
        pairs = [(p.src, p.tgt) for p in saved]
    if attention is None:
        if model is None and not preds:
            raise OptionError("give --model DIR with a corpus, --attention FILE, or --pred FILE with the "
                              "corpus")
        if src is None and tgt is None and corpus is None:
            raise OptionError("give the corpus (--src/--tgt or --corpus) whose first sentences the gold "
                              "aligns")
        from ..data.corpus import open_corpus

        if model is not None:
            from ..nmt.checkpoint import model_lowercase

            lowercase = model_lowercase(model, lowercase)
        it = iter(open_corpus(src, tgt, corpus, encoding=gold_options.encoding, lowercase=bool(lowercase)))
        pairs = [p for _, p in zip(range(len(golds)), it, strict=False)]
        if len(pairs) < len(golds):
            raise AttnAlignError(f"the corpus has {len(pairs)} pairs but the gold {len(golds)} sentences",
                                 path=src or corpus, hint="the gold aligns the corpus's first sentences")
        golds, info = read_gold(gold, gold_options, pairs=pairs)
        frequency = Counter(w for s, _ in pairs for w in s)
        for s, _ in it:  # the breakdown's frequency bands count the whole text
            frequency.update(s)
    systems = pred_results(preds, pred_names, golds, pairs, pred_options) if preds and pairs else []
    if attention is None and model is not None and options is not None:
        from dataclasses import replace

        from ..nmt.device import resolve_device

        options = replace(options, device=str(resolve_device(options.device)))
    plot_args, compare_args = _plot_args(model, attention, src, tgt, corpus, gold, gold_options, lowercase,
                                         options, preds, pred_options)
    return build_report(out, golds, model=model, pairs=pairs, attention=attention, options=options,
                        gallery=gallery, command=command, plot_args=plot_args, signature=gold_signature(info),
                        systems=systems, frequency=frequency, systems_plot_args=compare_args, info=info)


def _plot_args(model, attention, src, tgt, corpus, gold, gold_options, lowercase, options, preds,
               pred_options) -> tuple[str, str]:
    """The ``plot sentence`` options (less ``--index``) that draw a sentence of the report: as the
    gallery draws it (the model's or the attention file's matrix), and as the systems' gallery does
    (the --pred files' links)."""
    text = ["--corpus", corpus] if corpus is not None else ["--src", src, "--tgt", tgt]
    source = ["--attention", attention] if attention is not None else ["--model", model, *text]
    case = [] if lowercase is None else ["--lowercase" if lowercase else "--no-lowercase"]
    given = () if options is None else (("--reverse-model", options.reverse_model),
                                        ("--src-lang", options.src_lang), ("--tgt-lang", options.tgt_lang))
    hf = [f for flag, v in given if v is not None and attention is None for f in (flag, v)]
    gold_args = ["--gold", str(gold), *_gold_args(gold_options), *case]
    drawn = source if attention is not None or model is not None else text
    return (shlex.join([*map(str, source), *map(str, hf), *gold_args]),
            systems_plot_args(preds, [*drawn, *hf, *_gold_args(pred_options, "pred")], gold_args))


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

