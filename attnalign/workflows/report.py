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
  of the worst and best sentences as heatmaps.
"""

from __future__ import annotations

import html
import math
import os
import shlex
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._version import __version__
from ..data.alignments import Alignment
from ..data.attnfile import read_attention, saved_indices
from ..data.corpus import Pairs
from ..data.fileio import atomic_dir, inside, is_stdio
from ..decoding import DECODERS, SYMMETRIZATIONS, decode_pair
from ..errors import AttnAlignError, OptionError
from ..eval.metrics import Counts, alignment_counts
from ..eval.plot import html_heatmap, save_figure, settings_text

# the score table's column headers on the page (scores.csv keeps the names of the library's Counts)
HEADERS = {"best": "", "configuration": "configuration", "length": "target length", "sentences": "sentences",
           "aer": "AER", "precision": "P", "recall": "R",
           "f1": "F1", "links": "links", "sure": "gold sure", "possible": "gold possible",
           "hits_sure": "sure found", "hits_possible": "right links"}

CSS = (
    "body{font-family:sans-serif;margin:2em;max-width:70em} table.t{border-collapse:collapse;font-size:90%} "
    "table.t td,table.t th{padding:2px 8px;border-bottom:1px solid #ddd;text-align:right} "
    "img{max-width:100%;height:auto} "
    "figure.g{display:inline-block;vertical-align:top;margin:4px;max-width:100%} "
    "figure.g figcaption{font-size:85%} .wrap{overflow-x:auto} "
    "table.t tr.best{background:#e8f3e8;font-weight:bold} ul.gl{font-size:85%;columns:2} "
    "table.t th.sort{cursor:pointer} table.t th.sort:after{content:' \\2195';color:#999} "
    "table.hm{border-collapse:collapse;font-size:85%} table.hm td{width:1.8em;height:1.8em;text-align:center;"
    "border:1px solid #fff;padding:0} table.hm td:hover{outline:2px solid #d95f02} "
    "table.hm td.w{color:#d7191c;text-shadow:0 0 2px #fff} "
    "table.hm td.r{color:#1a9641;text-shadow:0 0 2px #fff} table.hm td.gs{border:2px solid #000} "
    "table.hm caption{caption-side:bottom;font-size:85%;text-align:left} "
    "table.hm td.gp{border:2px dashed #555} "
    "table.hm th{font-weight:normal;text-align:right;padding-right:4px} "
    "table.hm th.s{writing-mode:vertical-rl;transform:rotate(180deg);text-align:left;padding:0} "
    "details{margin:4px 0}"
)

# the score tables sort by a click on a column header: numbers as numbers, the rest as text
SORT_JS = """for (const th of document.querySelectorAll("table.t th.sort")) th.onclick = () => {
  const body = th.closest("table").tBodies[0], c = th.cellIndex, up = th.dataset.up !== "1";
  th.dataset.up = up ? "1" : "0";
  const key = r => { const t = r.cells[c].textContent, n = parseFloat(t); return isNaN(n) ? t : n; };
  [...body.rows].sort((a, b) => { const x = key(a), y = key(b);
                                  return (x < y ? -1 : x > y ? 1 : 0) * (up ? 1 : -1); })
    .forEach(r => body.appendChild(r));
};"""


def html_table(df, highlight: int | None = None, sorted_by: str | None = None) -> str:
    """A frame as a sortable HTML table (class ``t``); row ``highlight`` (by position) marked ``best``;
    ``sorted_by``: the column the rows already ascend by (its first click reverses them)."""
    def cell(v) -> str:
        if isinstance(v, float | np.floating):
            return f"{v:.2f}" if math.isfinite(v) else ""
        return html.escape(str(v))

    up = ' data-up="1"'
    head = "".join(f'<th class="sort"{up if c == sorted_by else ""} title="sort by this column">'
                   f"{html.escape(str(c))}</th>" for c in df.columns)
    best = ' class="best"'
    rows = "".join(
        f"<tr{best if k == highlight else ''}>" + "".join(f"<td>{cell(v)}</td>" for v in row) + "</tr>"
        for k, row in enumerate(df.itertuples(index=False, name=None))
    )
    return f'<table class="t"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'


@dataclass
class Config:
    """One way of reading alignments: which attention, which decoder, which symmetrization."""

    layer: int | str | None
    shift: int
    decoder: str
    sym: str

    @property
    def name(self) -> str:
        parts = [] if self.layer is None else [f"layer {self.layer}"]
        decoder = "" if SYMMETRIZATIONS[self.sym].hard else self.decoder  # hard ones: the forward links'
        parts += [f"shift {self.shift}", decoder, self.sym]
        return ", ".join(p for p in parts if p and p != "none") or "argmax"


@dataclass
class Result:
    config: Config
    per_sentence: list[Counts]
    links: list[list[tuple[int, int]]]

    @property
    def total(self) -> Counts:
        return sum(self.per_sentence, Counts())


def _entropy(m: np.ndarray, eos: np.ndarray) -> np.ndarray:
    """Entropy (nats) of each target word's attention over source words + EOS."""
    p = np.concatenate([m, eos[:, None]], axis=1).clip(1e-12, 1)
    return -(p * np.log(p)).sum(axis=1)


def _evaluate(config: Config, fwd, rev, gold: Sequence[Alignment]) -> Result:
    per, links = [], []
    for k, g in enumerate(gold):
        m, eos = fwd[k]
        r, r_eos = rev[k] if rev is not None else (None, None)
        sym = config.sym if rev is not None else "none"
        lk, _, _ = decode_pair(m, eos, r, r_eos, config.decoder, sym)
        links.append(lk)
        per.append(alignment_counts(Alignment.from_links(lk), g))
    return Result(config, per, links)


def swept_decoders() -> list[str]:
    """The decoders the report scores (those of the registry marked ``sweep``)."""
    return [name for name, d in DECODERS.items() if d.sweep]


def swept_symmetrizations() -> list[str]:
    """The symmetrizations the report scores (every one that reads both directions)."""
    return [name for name, s in SYMMETRIZATIONS.items() if s.both]


def _sweep(layer, shift: int, fwd, rev, gold, full: bool) -> list[Result]:
    """The configurations of one (layer, shift): argmax, or with ``full`` every swept decoder and
    (with a reverse direction) every swept symmetrization."""
    results = [_evaluate(Config(layer, shift, dec, "none"), fwd, None, gold)
               for dec in (swept_decoders() if full else ["argmax"])]
    if rev is not None and full:
        results += [_evaluate(Config(layer, shift, "argmax", sym), fwd, rev, gold)
                    for sym in swept_symmetrizations()]
    return results


def _model_results(model_dir, pairs: Pairs, gold, options, batch_tokens: int):
    """Every configuration's result; the matrices of each (layer, shift) for the analyses. ``options``:
    the :class:`~attnalign.nmt.aligner.AlignOptions` naming the device and, for a pretrained model, its
    reverse model and languages."""
    from ..nmt.aligner import load_directions, model_meta
    from ..nmt.extract import AttentionSpec, corpus_attention

    device = options.device
    meta = model_meta(model_dir, options)
    fwd_model, rev_model = load_directions(model_dir, options, "reverse" in meta["directions"])
    tf = fwd_model.has_layers
    layers: list[int | str | None] = [None]
    if tf:
        n = fwd_model.config["dec_layers"]
        layers = [*range(n), "mean"]
        if fwd_model.config.get("align_head"):
            layers = ["align", *layers]
    mats = {}
    results = []
    default_layer = (-2 if tf and fwd_model.config["dec_layers"] > 1 else -1) if tf else None
    for layer in layers:
        for shift in (0, 1) if tf else (0,):  # an RNN's attention query already reads the decoder input
            spec = AttentionSpec(layer, "mean", shift)
            fwd = corpus_attention(fwd_model, pairs, spec, batch_tokens, device)
            rev = None
            if rev_model is not None:
                swapped = [(t, s) for s, t in pairs]
                rev = [(m.T, e) for m, e in corpus_attention(rev_model, swapped, spec, batch_tokens, device)]
            mats[(layer, shift)] = (fwd, rev)
            is_default = layer in (None, "align") or (
                isinstance(layer, int)
                and layer % fwd_model.config["dec_layers"] == default_layer % fwd_model.config["dec_layers"]
            )
            results += _sweep(layer, shift, fwd, rev, gold, is_default)
    return results, mats, tf


def _saved_results(path, gold):
    idx = set(saved_indices(path))
    fwd, rev, pairs = [], [], []
    for k in range(len(gold)):
        if k not in idx:
            raise AttnAlignError(
                f"the attention file has no pair {k}; the report needs the gold's pairs", path=path
            )
        p = read_attention(path, k)
        fwd.append((p.matrix, p.eos))
        rev.append((p.reverse, None) if p.reverse is not None else None)
        pairs.append((p.src, p.tgt))
    has_rev = all(r is not None for r in rev)
    rev = rev if has_rev else None
    return _sweep(None, 0, fwd, rev, gold, full=True), {(None, 0): (fwd, rev)}, pairs


def build_report(
    out_dir: str | os.PathLike,
    gold: Sequence[Alignment],
    *,
    model: str | os.PathLike | None = None,
    pairs: Pairs | None = None,
    attention: str | os.PathLike | None = None,
    device: str = "cpu",
    batch_tokens: int = 4000,
    gallery: int = 4,
    top: int = 20,
    command: str | None = None,
    plot_args: str | None = None,
    signature: str | None = None,
    reverse_model: str | os.PathLike | None = None,
    src_lang: str | None = None,
    tgt_lang: str | None = None,
) -> dict:
    """Write the report directory; return a summary (best configuration and its scores). ``command``:
    the command line that made it, shown on the page; ``plot_args``: the ``plot sentence`` options
    that draw one of its sentences (the gallery's captions add ``--index N``); ``signature``: the
    scores' signature (:func:`attnalign.eval.scoring.gold_signature`), shown on the page;
    ``reverse_model``, ``src_lang``, ``tgt_lang``: for a pretrained Hugging Face ``model``."""
    with atomic_dir(out_dir, "report folder", marker="index.html") as stage:
        summary = _build(stage, gold, model, pairs, attention, device, batch_tokens, gallery, top, command,
                         plot_args, signature, reverse_model, src_lang, tgt_lang)
    return {**summary, "index": str(Path(out_dir) / "index.html")}


def _build(out: Path, gold, model, pairs, attention, device, batch_tokens, gallery, top, command, plot_args,
           signature, reverse_model, src_lang, tgt_lang) -> dict:
    model_info = ""
    if attention is not None:
        results, mats, pairs = _saved_results(attention, gold)
        tf = False
        title = f"attention file {attention}"
    else:
        if model is None or pairs is None:
            raise OptionError("a report needs --model and a corpus, or --attention")
        if len(pairs) < len(gold):
            raise AttnAlignError(f"the corpus has {len(pairs)} pairs but the gold {len(gold)} sentences")
        pairs = list(pairs[: len(gold)])
        from ..nmt.aligner import AlignOptions

        rev = None if reverse_model is None else str(reverse_model)
        options = AlignOptions(device=device, reverse_model=rev, src_lang=src_lang, tgt_lang=tgt_lang)
        results, mats, tf = _model_results(model, pairs, gold, options, batch_tokens)
        title = f"model {model}"
        model_info = _model_info(model, options)
    best = min(results, key=lambda r: r.total.aer)
    fwd, _ = mats[(best.config.layer, best.config.shift)]
    tables = _write_tables(out, results, best, pairs, gold, top)
    tables["eos_losses"] = _eos_losses(fwd, pairs, gold, top)
    tables["eos_losses"].to_csv(out / "eos_losses.csv", index=False)
    stats = _attention_stats(fwd)
    draw = _gallery_panel(best.config, model, attention, options if attention is None else None, pairs, gold)
    images = _write_plots(out, tables, best, draw, stats, pairs, gold, tf, gallery)
    _write_page(out, title, len(gold), best, tables, images, fwd, stats, tf, pairs, command, plot_args,
                model_info, signature)
    return {
        "best": best.config.name,
        **best.total.as_dict(),
        "configurations": len(results),
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
    train = {k: v for k, v in (cfg.get("train_options") or {}).items() if k not in ("model_config",)}
    return (f"<p>Model: {html.escape(str(cfg.get('model_type')))}, directions "
            f"{html.escape(', '.join(cfg.get('directions', [])))}; architecture "
            f"<code>{html.escape(settings_text(cfg.get('model_config') or {}))}</code>; trained with "
            f"<code>{html.escape(settings_text(train))}</code>.</p>")


def _write_tables(out: Path, results: list[Result], best: Result, pairs: Pairs, gold, top: int) -> dict:
    """scores.csv, per_sentence.csv, by_length.csv, wrong_pairs.csv, missed_pairs.csv; the frames."""
    import pandas as pd

    rows = [
        {
            "configuration": r.config.name,
            "layer": r.config.layer,
            "shift": r.config.shift,
            "decoder": r.config.decoder,
            "sym": r.config.sym,
            **r.total.as_dict(),
            "best": r is best,
        }
        for r in results
    ]
    scores = pd.DataFrame(rows).sort_values("aer", kind="stable", ignore_index=True)  # as on the page
    scores.round(6).to_csv(out / "scores.csv", index=False)  # fractions without float noise
    per = pd.DataFrame(
        [
            {"sentence": k + 1, "index": k, "src_len": len(s), "tgt_len": len(t), **c.as_dict()}
            for k, ((s, t), c) in enumerate(zip(pairs, best.per_sentence, strict=True))
        ]
    )
    per.drop(columns=["sentences"]).round(6).to_csv(out / "per_sentence.csv", index=False)
    bins = [0, 5, 10, 15, 20, 30, 40, 60, 10**6]
    labels = ["1-5", "6-10", "11-15", "16-20", "21-30", "31-40", "41-60", "61+"]
    per["length"] = pd.cut(per.tgt_len, bins=bins, labels=labels)
    by_len = []
    for lab, grp in per.groupby("length", observed=True):
        c = sum((best.per_sentence[k] for k in grp["index"]), Counts())
        by_len.append({"length": lab, **c.as_dict()})
    by_length = pd.DataFrame(by_len)
    by_length.round(6).to_csv(out / "by_length.csv", index=False)
    wrong, missed = Counter(), Counter()
    for (s, t), lk, g in zip(pairs, best.links, gold, strict=True):
        for i, j in lk:
            if (i, j) not in g.possible:
                wrong[(s[i], t[j])] += 1
        for i, j in g.sure - set(lk):
            missed[(s[i], t[j])] += 1
    frames = {"scores": scores, "by_length": by_length}
    for name, counter in (("wrong_pairs", wrong), ("missed_pairs", missed)):
        frames[name] = pd.DataFrame([{"source": a, "target": b, "count": n}
                                     for (a, b), n in counter.most_common(top)])
        frames[name].to_csv(out / f"{name}.csv", index=False)
    return frames


def _eos_losses(fwd, pairs: Pairs, gold, top: int):
    """The target words whose forward attention puts more on the source EOS than on any source word (an
    argmax reads that as "no link") although the gold links them: per word, how often, and how often it
    occurs with a gold link; the most frequent first."""
    import pandas as pd

    lost, linked = Counter(), Counter()
    for (m, eos), (_, t), g in zip(fwd, pairs, gold, strict=True):
        gold_tgt = {j for _, j in g.sure}
        for j in gold_tgt:
            linked[t[j]] += 1
            if m.size and eos[j] > m[j].max():
                lost[t[j]] += 1
    return pd.DataFrame([{"target word": w, "to EOS": n, "gold-linked": linked[w]}
                         for w, n in lost.most_common(top)], columns=["target word", "to EOS", "gold-linked"])


def _write_plots(out: Path, tables: dict, best: Result, draw, stats, pairs: Pairs, gold, tf: bool,
                 gallery: int) -> dict:
    """The PNGs: AER by layer (Transformers), AER by length, attention statistics, the gallery."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scores, by_length = tables["scores"], tables["by_length"]
    images = {}
    if tf:
        fig, ax = plt.subplots(figsize=(5, 3.2), layout="constrained")
        for shift, style in ((0, "o-"), (1, "s--")):
            sub = scores[
                (scores.shift == shift)
                & (scores.decoder == "argmax")
                & (scores.sym == "none")
                & scores.layer.apply(lambda v: isinstance(v, int | np.integer))
            ]
            ax.plot(sub.layer.astype(int), 100 * sub.aer, style, label=f"shift {shift}")
        ax.set_xlabel("decoder layer")
        ax.set_ylabel("AER (%)")
        ax.legend()
        ax.set_title("AER by layer (argmax, heads averaged)")
        save_figure(fig, out / "aer_by_layer.png")
        images["aer_by_layer"] = "aer_by_layer.png"
    fig, ax = plt.subplots(figsize=(5, 3.2), layout="constrained")
    bars = ax.bar(by_length.length.astype(str), 100 * by_length.aer, color="#4a78b5")
    ax.bar_label(bars, labels=[f"n={n}" for n in by_length.sentences], fontsize=7)  # sentences per bin
    ax.set_xlabel("target length (words)")
    ax.set_ylabel("AER (%)")
    ax.set_title(f"AER by sentence length ({best.config.name})")
    save_figure(fig, out / "aer_by_length.png")
    images["aer_by_length"] = "aer_by_length.png"
    ent, eos = stats
    fig, axes = plt.subplots(1, 2, figsize=(8, 3), layout="constrained")
    axes[0].hist(ent, bins=40, color="#4a78b5")
    axes[0].set_xlabel("attention entropy per target word (nats)")
    axes[0].set_title("forward direction: entropy", fontsize=9)
    axes[1].hist(eos, bins=40, color="#d95f02")
    axes[1].set_yscale("log")  # most words put almost nothing on EOS; the tail is what matters
    axes[1].set_xlabel("attention mass on EOS per target word")
    axes[1].set_title("forward direction: EOS mass (log count)", fontsize=9)
    for a in axes:
        a.set_ylabel("target words")
    save_figure(fig, out / "attention_stats.png")
    images["attention_stats"] = "attention_stats.png"
    from .views import sentence_figure

    images["gallery"] = gallery_order(best, pairs, gallery)
    for kind, ks in images["gallery"].items():
        for n, k in enumerate(ks):
            p = draw(k)
            name = f"{kind}_{n + 1}.png"
            save_figure(sentence_figure([p], False), out / name)
            images[f"{kind}_{n + 1}"] = name
            images[f"{kind}_{n + 1}_html"] = html_heatmap(p)
    return images


def gallery_order(best: Result, pairs: Pairs, n: int) -> dict[str, list[int]]:
    """The gallery's sentences (2 words a side at least): ``worst``, the ``n`` with the most errors
    (wrong links and missed sure links; then the higher AER) first; then ``best``, the ``n`` others with
    the fewest errors, the longest first."""
    eligible = [k for k in range(len(pairs)) if len(pairs[k][0]) >= 2 and len(pairs[k][1]) >= 2]

    def errors(k: int) -> int:
        c = best.per_sentence[k]
        return (c.hyp - c.hyp_possible) + (c.sure - c.hyp_sure)

    worst = sorted((k for k in eligible if errors(k)),
                   key=lambda k: (-errors(k), -best.per_sentence[k].aer, k))[:n]
    rest = sorted(set(eligible) - set(worst),
                  key=lambda k: (errors(k), best.per_sentence[k].aer, -len(pairs[k][1]), k))
    return {"worst": worst, "best": rest[:n]}


def _attention_stats(fwd) -> tuple[np.ndarray, np.ndarray]:
    """Per target word: attention entropy and EOS mass (every non-empty pair)."""
    ent = np.concatenate([_entropy(m, e) for m, e in fwd if m.size])
    eos = np.concatenate([e for m, e in fwd if m.size])
    return ent, eos


def _write_page(out: Path, title: str, n_gold: int, best: Result, tables: dict, images: dict, fwd, stats,
                tf: bool, pairs: Pairs, command: str | None = None, plot_args: str | None = None,
                model_info: str = "", signature: str | None = None) -> None:
    """index.html: the summary, the tables and the pictures."""
    from ..data.fileio import atomic_open

    total = best.total
    ent, eos = stats

    def readable(df, first: list[str], gold: bool = True):  # scores in %, the page's headers
        df = df.assign(**{k: 100 * df[k] for k in ("aer", "precision", "recall", "f1")})
        counts = ["links", *(["sure", "possible"] if gold else []), "hits_sure", "hits_possible"]
        return df[[*first, "aer", "precision", "recall", "f1", *counts]].rename(columns=HEADERS)

    shown = tables["scores"]  # sorted by AER; the gold's counts, the same on every row, are in the summary
    shown = readable(shown.assign(best=shown["best"].map({True: "★", False: ""})), ["best", "configuration"],
                     gold=False)
    by_length = readable(tables["by_length"], ["length", "sentences"])
    wrong_df, missed_df = tables["wrong_pairs"], tables["missed_pairs"]
    cfg = best.config  # the gallery's reading, for its plot commands
    reading = shlex.join([*(["--layer", str(cfg.layer)] if cfg.layer is not None else []),
                          *(["--shift", str(cfg.shift)] if cfg.shift else []), "--decoder", cfg.decoder,
                          "--sym", cfg.sym, "--eos"])

    def glossary() -> str:
        terms = [(d.name, d.help) for d in DECODERS.values()]
        terms += [(m.name, m.help) for m in SYMMETRIZATIONS.values()]
        return "<ul class=\"gl\">" + "".join(f"<li><code>{html.escape(n)}</code>: {html.escape(h)}</li>"
                                               for n, h in terms) + "</ul>"

    def caption(k: int) -> str:
        c, (src, tgt) = best.per_sentence[k], pairs[k]
        plot = (f"attnalign plot sentence {plot_args} {reading} --index {k} -o sentence{k}.png" if plot_args
                else f"plot sentence --index {k}")
        return (f"<figcaption><b>index {k}</b> (<code>{html.escape(plot)}</code>): AER "
                f"{100 * c.aer:.1f}, P {100 * c.precision:.1f}, R {100 * c.recall:.1f}<br>"
                f"{html.escape(' '.join(src))}<br>{html.escape(' '.join(tgt))}</figcaption>")

    gallery_html = "".join(
        f"<h3>{kind} sentences</h3>"
        + "".join(
            f'<figure class="g"><a href="{images[f"{kind}_{n + 1}"]}">'
            f'<img src="{images[f"{kind}_{n + 1}"]}" alt="{kind} {n + 1}: index {k}"></a>'
            f"{caption(k)}<details><summary>the matrix, a cell's words, weight and link on hover</summary>"
            f'<div class="wrap">{images[f"{kind}_{n + 1}_html"]}</div></details></figure>'
            for n, k in enumerate(ks)
        )
        for kind, ks in images["gallery"].items()
    )
    body = f"""<!doctype html><html><head><meta charset="utf-8"><title>attnalign report</title>
<style>{CSS}</style></head><body>
<h1>attnalign report</h1>
<p>{html.escape(title)}: {n_gold} sentences with gold.
Best configuration: <b>{html.escape(best.config.name)}</b>,
AER {100 * total.aer:.2f}, precision {100 * total.precision:.2f}, recall {100 * total.recall:.2f},
F1 {100 * total.f1:.2f} ({total.hyp} links, {total.sure} sure, {total.possible} possible).</p>
{model_info}
<p>Made by attnalign {html.escape(__version__)}{
    f" with <code>{html.escape(command)}</code>" if command else ""}. Sentences are numbered from 0 (the
<code>index</code> column of per_sentence.csv, <code>plot sentence --index</code>); the gallery draws,
for the best configuration, the matrix its links were decoded from, with the attention on the end of
sentence (EOS, "no link") in its last column, the sentences with the most errors first.{
    f" Scores' signature: <code>{html.escape(signature)}</code>." if signature else ""}</p>
<h2>Scores of every configuration</h2><p><a href="scores.csv">scores.csv</a>; sorted by AER, in %
(★ = best). A configuration names the attention read (<code>layer N</code> of a Transformer;
<code>shift 1</code>: Shift-Att, each target word read at the next step), the decoder and the
symmetrization of the two directions:</p>{glossary()}
<div class="wrap">{html_table(shown, highlight=0, sorted_by=HEADERS["aer"])}</div>
{'<h2>AER by layer</h2><img src="aer_by_layer.png" alt="AER by layer">' if tf else ""}
<h2>By sentence length</h2><p><a href="by_length.csv">by_length.csv</a>,
<a href="per_sentence.csv">per_sentence.csv</a>; scores in %</p>
<img src="aer_by_length.png" alt="AER by length">
{html_table(by_length)}
<h2>Attention entropy and EOS mass</h2><p>mean entropy {float(ent.mean()):.3f} nats
(uniform over a {float(np.mean([m.shape[1] for m, _ in fwd if m.size])):.1f}-word source:
{math.log(max(1.0, float(np.mean([m.shape[1] + 1 for m, _ in fwd if m.size])))):.3f}); mean EOS mass
{100 * float(eos.mean()):.2f}%.</p><img src="attention_stats.png" alt="attention statistics">
<p>Words lose their links to EOS: a target word whose forward attention puts more on the end of the
sentence than on any source word gets no link from an argmax. The target words the gold links that go
to EOS most often (<a href="eos_losses.csv">eos_losses.csv</a>; "gold-linked": how often the word has a
sure gold link):</p>
{html_table(tables["eos_losses"]) if len(tables["eos_losses"]) else "<p>none</p>"}
<h2>Most frequent wrongly linked word pairs</h2><p><a href="wrong_pairs.csv">wrong_pairs.csv</a></p>
{html_table(wrong_df) if len(wrong_df) else "<p>none</p>"}
<h2>Most frequently missed sure gold pairs</h2><p><a href="missed_pairs.csv">missed_pairs.csv</a></p>
{html_table(missed_df) if len(missed_df) else "<p>none</p>"}
<h2>Gallery</h2>{gallery_html}
<script>{SORT_JS}</script>
</body></html>
"""
    with atomic_open(out / "index.html") as f:
        f.write(body)


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
    device: str = "auto",
    gallery: int = 4,
    command: str | None = None,
    reverse_model: str | os.PathLike | None = None,
    src_lang: str | None = None,
    tgt_lang: str | None = None,
) -> dict:
    """The library behind ``attnalign report``: read the gold and the corpus's first sentences (or a
    saved attention file), then :func:`build_report`. ``command``: the command line shown on the page;
    ``reverse_model``, ``src_lang``, ``tgt_lang``: for a pretrained Hugging Face ``model``."""
    from ..eval.scoring import GoldOptions, gold_signature, read_gold

    out = Path(out_dir)
    if is_stdio(out):
        raise OptionError("the report is a folder and cannot go to stdout (-)", hint="give -o FOLDER")
    if out.exists() and not out.is_dir():
        raise AttnAlignError("the report output must be a directory", path=out)
    if gallery < 0:
        raise OptionError(f"--gallery must be >= 0, not {gallery}")
    inputs = {"--gold": gold, "--attention": attention, "--model": model, "--src": src, "--tgt": tgt,
              "--corpus": corpus, "--reverse-model": reverse_model}
    for flag, path in inputs.items():
        if path is not None and out.exists() and inside(path, out):
            raise OptionError(f"{flag} lies inside the report folder, which the report replaces whole",
                              path=path, hint="write the report to another folder (-o), or move the input")
    gold_options = gold_options or GoldOptions()
    golds, info = read_gold(gold, gold_options)
    pairs = None
    if attention is not None and set(range(len(golds))) <= set(saved_indices(attention)):
        saved = [read_attention(attention, k) for k in range(len(golds))]
        golds, info = read_gold(gold, gold_options, pairs=[(p.src, p.tgt) for p in saved])
    if attention is None:
        if model is None:
            raise OptionError("give --model DIR with a corpus, or --attention FILE")
        from ..data.corpus import open_corpus
        from ..nmt.checkpoint import model_lowercase

        it = iter(open_corpus(src, tgt, corpus, encoding=gold_options.encoding,
                              lowercase=model_lowercase(model, lowercase)))
        pairs = [p for _, p in zip(range(len(golds)), it, strict=False)]
        if len(pairs) == len(golds):  # a shorter corpus: build_report says so
            golds, info = read_gold(gold, gold_options, pairs=pairs)
    dev = "cpu"
    if attention is None:
        from ..nmt.device import resolve_device

        dev = str(resolve_device(device))
    source = ["--attention", attention] if attention is not None else ["--model", model] + (
        ["--corpus", corpus] if corpus is not None else ["--src", src, "--tgt", tgt])
    case = [] if lowercase is None else ["--lowercase" if lowercase else "--no-lowercase"]
    given = (("--reverse-model", reverse_model), ("--src-lang", src_lang), ("--tgt-lang", tgt_lang))
    hf = [f for flag, v in given if v is not None and attention is None for f in (flag, v)]
    plot_args = shlex.join([*map(str, source), *map(str, hf), "--gold", str(gold), *_gold_args(gold_options),
                            *case])
    return build_report(out, golds, model=model, pairs=pairs, attention=attention, device=dev,
                        gallery=gallery, command=command, plot_args=plot_args, signature=gold_signature(info),
                        reverse_model=reverse_model, src_lang=src_lang, tgt_lang=tgt_lang)


def _gold_args(options) -> list[str]:
    """The gold options that differ from their defaults, as command-line words."""
    args = []
    if options.fmt != "auto":
        args += ["--gold-format", options.fmt]
    if options.one_based is not None:
        args.append("--gold-one-based" if options.one_based else "--gold-zero-based")
    if options.reverse:
        args.append("--reverse-gold")
    if options.encoding != "utf-8":
        args += ["--encoding", options.encoding]
    return args
