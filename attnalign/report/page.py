"""The report's page: index.html with its CSS, its sortable tables and its gallery."""

from __future__ import annotations

import html
import math
import shlex
from pathlib import Path

import numpy as np

from .._version import __version__
from ..data.corpus import Pairs
from ..data.fileio import atomic_open, path_text
from ..decoding import DECODERS, SYMMETRIZATIONS
from ..eval.explorer import EXPLORER_FILE
from .sweep import Result
from .systems import systems_html

REPORT_TITLE = "<title>attnalign report</title>"  # how a folder shows it holds an attnalign report
# the score table's column headers on the page (scores.csv keeps the names of the library's Counts)
HEADERS = {"best": "", "configuration": "configuration", "length": "target length", "sentences": "sentences",
           "aer": "AER", "interval": "AER 95% interval", "precision": "P", "recall": "R",
           "f1": "F1", "links": "links", "sure": "gold sure", "possible": "gold possible",
           "hits_sure": "sure found", "hits_possible": "right links"}

CSS = (
    "body{font-family:sans-serif;margin:2em;max-width:70em} table.t{border-collapse:collapse;font-size:90%} "
    "table.t td,table.t th{padding:2px 8px;border-bottom:1px solid #ddd;text-align:right} "
    "img{max-width:100%;height:auto} "
    "figure.g{display:inline-block;vertical-align:top;margin:4px;max-width:100%} "
    "figure.g figcaption{font-size:85%} .wrap{overflow-x:auto} "
    # a figure is as wide as its picture: its caption and matrix wrap or scroll inside that width
    "figure.g figcaption,figure.g details{contain:inline-size} "
    "table.t tr.best{background:#e8f3e8;font-weight:bold} ul.gl{font-size:85%;columns:2} "
    "table.t th.sort{cursor:pointer} table.t th.sort:after{content:' \\2195';color:#999} "
    "table.hm{border-collapse:collapse;font-size:85%} table.hm td{width:1.8em;height:1.8em;text-align:center;"
    "border:1px solid #fff;padding:0} table.hm td:hover{outline:2px solid #d95f02} "
    "table.hm td.w{color:#d7191c;text-shadow:0 0 2px #fff} "
    "table.hm td.r{color:#1a9641;text-shadow:0 0 2px #fff} table.hm td.gs{border:2px solid #000} "
    "table.hm caption{caption-side:bottom;font-size:85%;text-align:left} "
    "table.hm td.gp{border:2px dashed #555} "
    "table.hm th{font-weight:normal;text-align:right;padding-right:4px} "
    "table.hm th.s{writing-mode:vertical-rl;transform:rotate(180deg);text-align:left;padding:4px 0;"
    "white-space:nowrap;vertical-align:bottom;line-height:1.2} "
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


def readable(df, first: list[str], gold: bool = True):
    """A score frame for the page: scores in %, the page's headers; where the frame has the AER's
    interval (``aer_low``, ``aer_high``), a column of it beside the AER."""
    df = df.assign(**{k: 100 * df[k] for k in ("aer", "precision", "recall", "f1")})
    counts = ["links", *(["sure", "possible"] if gold else []), "hits_sure", "hits_possible"]
    interval = []
    if "aer_low" in df.columns:
        ends = zip(df.aer_low, df.aer_high, strict=True)
        df = df.assign(interval=[f"[{100 * lo:.2f}, {100 * hi:.2f}]" for lo, hi in ends])
        interval = ["interval"]
    return df[[*first, "aer", *interval, "precision", "recall", "f1", *counts]].rename(columns=HEADERS)


def _glossary() -> str:
    """The decoders and symmetrizations a configuration names, each with its one-line help."""
    terms = [(d.name, d.help) for d in DECODERS.values()]
    terms += [(m.name, m.help) for m in SYMMETRIZATIONS.values()]
    return "<ul class=\"gl\">" + "".join(f"<li><code>{html.escape(n)}</code>: {html.escape(h)}</li>"
                                           for n, h in terms) + "</ul>"


def _default_line(default: Result | None) -> str:
    if default is None:
        return ""
    t = default.total
    teacher = f" Its teacher: {html.escape(default.teacher)}." if default.teacher else ""
    return (f" The {html.escape(default.config.name)}: AER {100 * t.aer:.2f}, precision "
            f"{100 * t.precision:.2f}, recall {100 * t.recall:.2f}, F1 {100 * t.f1:.2f}.{teacher}")


def _gallery_html(best: Result, images: dict, pairs: Pairs, plot_args: str | None) -> str:
    """The gallery's figures, each captioned with the ``plot sentence`` command that draws it."""
    cfg = best.config
    reading = shlex.join([*(["--layer", str(cfg.layer)] if cfg.layer is not None else []),
                          *(["--shift", str(cfg.shift)] if cfg.shift else []), "--decoder", cfg.decoder,
                          "--sym", cfg.sym, "--teacher", "off", "--eos",
                          *(["--thumbnail"] if images.get("thumbnails") else [])])

    def caption(k: int) -> str:
        c, (src, tgt) = best.per_sentence[k], pairs[k]
        plot = (f"attnalign plot sentence {plot_args} {reading} --index {k} -o sentence{k}.png" if plot_args
                else f"plot sentence --index {k}")
        return (f'<figcaption><b>index {k}</b> (<a href="{EXPLORER_FILE}#{k}">explore</a>; '
                f"<code>{html.escape(plot)}</code>): AER "
                f"{100 * c.aer:.1f}, P {100 * c.precision:.1f}, R {100 * c.recall:.1f}<br>"
                f"{html.escape(' '.join(src))}<br>{html.escape(' '.join(tgt))}</figcaption>")

    def matrix(table: str) -> str:
        return (f"<details><summary>the matrix, a cell's words, weight and link on hover</summary>"
                f'<div class="wrap">{table}</div></details>' if table else "")

    return "".join(
        f"<h3>{kind} sentences</h3>"
        + "".join(
            f'<figure class="g"><a href="{images[f"{kind}_{n + 1}"]}">'
            f'<img src="{images[f"{kind}_{n + 1}"]}" alt="{kind} {n + 1}: index {k}" loading="lazy"></a>'
            f"{caption(k)}{matrix(images[f'{kind}_{n + 1}_html'])}</figure>"
            for n, k in enumerate(ks)
        )
        for kind, ks in images["gallery"].items()
    )


def write_page(out: Path, title: str, n_gold: int, best: Result, tables: dict, images: dict, fwd, stats,
                tf: bool, pairs: Pairs, command: str | None = None, plot_args: str | None = None,
                model_info: str = "", signature: str | None = None, default: Result | None = None,
                systems: str = "") -> None:
    """index.html: the summary, the tables and the pictures. ``default``: the default output of
    ``align corpus`` (student and teacher), scored beside the readings of the attention; ``systems``: the
    comparison's section (:func:`~.systems.systems_html`)."""

    total = best.total
    ent, eos = stats

    shown = tables["scores"]  # sorted by AER; the gold's counts, the same on every row, are in the summary
    shown = readable(shown.assign(best=shown["best"].map({True: "★", False: ""})), ["best", "configuration"],
                     gold=False)
    by_length = readable(tables["by_length"], ["length", "sentences"])
    wrong_df, missed_df = tables["wrong_pairs"], tables["missed_pairs"]
    gallery_html = _gallery_html(best, images, pairs, plot_args)
    body = f"""<!doctype html><html><head><meta charset="utf-8">{REPORT_TITLE}
<style>{CSS}</style></head><body>
<h1>attnalign report</h1>
<p>{html.escape(title)}: {n_gold} sentences with gold.
Best configuration: <b>{html.escape(best.config.name)}</b>,
AER {100 * total.aer:.2f}, precision {100 * total.precision:.2f}, recall {100 * total.recall:.2f},
F1 {100 * total.f1:.2f} ({total.hyp} links, {total.sure} sure, {total.possible} possible).{
    _default_line(default)}</p>
{model_info}
<p>Made by attnalign {html.escape(__version__)}{
    f" with <code>{html.escape(command)}</code>" if command else ""}. Sentences are numbered from 0 (the
<code>index</code> column of per_sentence.csv, <code>plot sentence --index</code>); the gallery draws,
for the best configuration, the matrix its links were decoded from, with the attention on the end of
sentence (EOS, "no link") in its last column, the sentences with the most errors first.{
    f" Scores' signature: <code>{html.escape(signature)}</code>." if signature else ""}</p>
<h2>Scores of every configuration</h2><p><a href="scores.csv">scores.csv</a>; sorted by AER, in %
(★ = the best reading of the model's attention, which the rest of the page studies; the default output
of <code>align corpus</code> combines the student with its teacher where the model has one).
A configuration names the attention read (<code>layer N</code> of a Transformer;
<code>shift 1</code>: Shift-Att, each target word read at the next step), the decoder and the
symmetrization of the two directions:</p>{_glossary()}
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
{systems}
<script>{SORT_JS}</script>
</body></html>
"""
    _write(out, body)


def _write(out: Path, body: str) -> None:
    with atomic_open(out / "index.html") as f:
        f.write(path_text(body))  # a file name's bytes that are not UTF-8, as \xNN


def write_systems_page(out: Path, n_gold: int, frames: dict, command: str | None,
                       signature: str | None) -> None:
    """index.html of a report without a model: the systems compared (:mod:`.systems`)."""
    best = frames["report"].systems
    body = f"""<!doctype html><html><head><meta charset="utf-8">{REPORT_TITLE}
<style>{CSS}</style></head><body>
<h1>attnalign report</h1>
<p>{len(best)} alignment file{"s" if len(best) != 1 else ""} against a gold of {n_gold} sentences.
Made by attnalign {html.escape(__version__)}{
    f" with <code>{html.escape(command)}</code>" if command else ""}. Sentences are numbered from 0 (the
<code>index</code> column of systems_per_sentence.csv, <code>plot sentence --index</code>).{
    f" Scores' signature: <code>{html.escape(signature)}</code>." if signature else ""}</p>
{systems_html(frames, html_table, readable)}
<script>{SORT_JS}</script>
</body></html>
"""
    _write(out, body)


