"""Pictures of attention and alignments: heatmaps with link overlays (matplotlib, Agg) and a terminal
view (rich). Torch-free: everything here takes ``[T_tgt, S_src]`` matrices and link sets.

Overlay legend (shape carries the meaning; colour only repeats it):

* predicted link that is right (in the gold's possible set): filled circle, green;
* predicted link that is wrong: cross, red;
* gold sure link: solid square outline; gold possible-only link: dashed square outline;
  a gold sure link with no circle inside is a miss.
"""

from __future__ import annotations

import html
import os
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..data.alignments import Alignment, Link
from ..data.fileio import atomic_open
from ..errors import require
from .metrics import alignment_counts


@dataclass
class Panel:
    """One heatmap: a matrix, its words, and what to draw over it."""

    matrix: np.ndarray  # [T, S]
    src: list[str]
    tgt: list[str]
    links: Sequence[Link] = ()
    gold: Alignment | None = None
    eos: np.ndarray | None = None  # [T]: drawn as an extra last column when given
    title: str = ""
    settings: dict = field(default_factory=dict)
    shaded: bool = True  # the matrix is attention, shaded with a colour bar; False: a blank grid for links
    positions: np.ndarray | None = None  # [T]: a local-p attention's predicted source position, as a line


MAX_INCHES = 36.0  # the largest side of a figure
DPI = 150  # save_figure's dots per inch ...
# ... up to this many dots a side: a long pair's figure is drawn at fewer dots a cell, so that its PNG
# stays a few MB and quick to write, not a 29-megapixel file
MAX_PIXELS = 2400
FONT_SIZE = 8.0  # points: word labels; printed at the figure's own size (a 3.3-inch column up to ~12 words)
# the overlay's colours (the legend above): a right link (a link where there is no gold), a wrong one,
# a possible gold link's square, the EOS column's rule, a local-p attention's predicted positions
RIGHT, LINK, WRONG, POSSIBLE, RULE, POSITION = "#1a9641", "#d95f02", "#d7191c", "0.35", "0.4", "#e66101"
LINE = 1.35  # a cell is this many label heights: labels of neighbouring rows never touch
MIN_MATRIX = 1.9  # inches: a short pair's matrix is not smaller than this


@dataclass
class FigureStyle:
    """What ``plot sentence --title/--width/--font-size`` set. ``title``: None keeps the settings and
    scores line, "" draws none; ``width``: inches, None sizes the cells from the font; ``font_size``:
    points of the word labels (titles one point more, the legend one less), None: FONT_SIZE, or smaller
    where a given width leaves cells too small for it."""

    title: str | None = None
    width: float | None = None
    font_size: float | None = None

    def check(self) -> FigureStyle:
        require("--width", self.width, low=1.0, high=MAX_INCHES, optional=True)
        require("--font-size", self.font_size, low=2.0, high=72.0, optional=True)
        return self


def _mpl():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # TrueType (Type 42) fonts in PDF and PostScript: camera-ready checkers reject Type 3; SVG text
    # stays text, so labels can be edited; words are data: "$x$" in a sentence is not TeX
    plt.rcParams.update({"pdf.fonttype": 42, "ps.fonttype": 42, "svg.fonttype": "none",
                         "text.parse_math": False})
    return plt


def pair_score_text(links: Sequence[Link], gold: Alignment | None) -> str:
    if gold is None:
        return ""
    c = alignment_counts(Alignment.from_links(links), gold)
    return f"AER {100 * c.aer:.1f}  P {100 * c.precision:.1f}  R {100 * c.recall:.1f}"


def draw_panel(ax, p: Panel, colorbar: bool = True, compact: bool = False, fs: float = FONT_SIZE,
               title: str | None = None, title_chars: int = 60):
    """Draw one panel on a matplotlib Axes with ``fs``-point labels and ``title`` (None: the panel's
    title and scores); return the image (for a shared colour bar)."""
    from matplotlib.collections import PatchCollection
    from matplotlib.patches import Rectangle

    m = p.matrix
    show_eos = p.eos is not None
    data = np.concatenate([m, p.eos[:, None]], axis=1) if show_eos and m.size else m
    im = ax.imshow(data, cmap="Blues", vmin=0.0, vmax=1.0, aspect="equal", interpolation="nearest")
    T, S = m.shape
    # user text is drawn as text: a control character (ESC, BEL) as its \x1b escape, never a glyph the
    # font lacks (matplotlib warns of each on stderr)
    xlabels = [printable(w) for w in p.src] + (["</s>"] if show_eos else [])
    if compact:
        ax.set_xticks([])
        ax.set_yticks([])
    else:
        ax.set_xticks(range(len(xlabels)))
        ax.set_xticklabels(xlabels, rotation=60, ha="left", fontsize=fs)
        ax.xaxis.tick_top()
        ax.set_yticks(range(T))
        ax.set_yticklabels([printable(w) for w in p.tgt], fontsize=fs)
    if show_eos:
        ax.axvline(S - 0.5, color=RULE, lw=1.0)
    gold = p.gold
    if gold is not None:
        from matplotlib import patheffects

        halo = [patheffects.withStroke(linewidth=3.0, foreground="white")]  # visible on dark cells too
        for kind in (True, False):  # sure, then possible only: one collection each (a long pair has many)
            # sorted: the drawing order (and so the pixels where squares meet) is the links', not the set's
            cells = sorted((i, j) for i, j in gold.possible if ((i, j) in gold.sure) == kind)
            if cells:
                ax.add_collection(PatchCollection(
                    [Rectangle((i - 0.45, j - 0.45), 0.9, 0.9) for i, j in cells], facecolor="none",
                    lw=1.4 if kind else 1.0, ls="-" if kind else "--",
                    edgecolor="black" if kind else POSSIBLE, path_effects=halo))
    hits = [(i, j) for i, j in p.links if gold is None or (i, j) in gold.possible]
    wrong = [(i, j) for i, j in p.links if gold is not None and (i, j) not in gold.possible]
    ms = max(2.0, min(7.0, 0.75 * fs))
    if hits:
        ax.plot([i for i, _ in hits], [j for _, j in hits], "o", color=RIGHT if gold else LINK,
                ms=ms, mec="white", mew=0.6, ls="none")
    if wrong:
        ax.plot([i for i, _ in wrong], [j for _, j in wrong], "x", color=WRONG, ms=ms + 1, mew=1.6,
                ls="none")
    if p.positions is not None and len(p.positions):
        ax.plot(p.positions, range(len(p.positions)), "--", color=POSITION, lw=1.2)
    if title is None:
        title = p.title
        score = pair_score_text(p.links, gold)
        if score:
            title = f"{title}\n{score}" if title else score
    if title:
        title = "\n".join(map(printable, title.split("\n")))
        ax.set_title(wrap_title(title, title_chars), fontsize=fs + 1, pad=4 if compact else 0.8 * fs)
    if colorbar:
        bar = ax.figure.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
        bar.set_label("attention", fontsize=fs)
        bar.ax.tick_params(labelsize=fs - 1)
    return im


def settings_text(settings: dict) -> str:
    skip = ("directions", "grid_cols")
    return "  ".join(f"{k}={v}" for k, v in settings.items() if v is not None and k not in skip)


def shared_settings(panels: Sequence[Panel]) -> dict:
    """The settings every panel has with the same value (a figure's title; each panel names the rest)."""
    first = panels[0].settings
    return {k: v for k, v in first.items() if all(p.settings.get(k, object()) == v for p in panels[1:])}


def figure_for(panels: Sequence[Panel], cols: int | None = None, compact: bool = False,
               suptitle: str = "", style: FigureStyle | None = None):
    """A figure with one or more panels: cells of LINE label heights (or as wide as ``style.width``
    allows), the figure growing with the sentence up to MAX_INCHES a side."""
    plt = _mpl()
    style = style or FigureStyle()
    n = len(panels)
    cols = cols or n
    rows = (n + cols - 1) // cols
    fs, chars, (w, h) = _sizes(panels, cols, rows, compact, style)
    fig, axes = plt.subplots(rows, cols, figsize=(w, h), squeeze=False, layout="constrained")
    im = None
    # --title is the figure's title: the one panel's, or above several (their own titles name what differs)
    titles = [style.title if n == 1 else None] * n
    for k, ax in enumerate(axes.flat):
        if k < n:
            im = draw_panel(ax, panels[k], colorbar=not compact and n == 1 and panels[k].shaded,
                            compact=compact, fs=fs,
                            title=titles[k], title_chars=chars)
        else:
            ax.axis("off")
    if im is not None and (compact or n > 1) and any(p.shaded for p in panels):
        bar = fig.colorbar(im, ax=axes.ravel().tolist(), shrink=0.6)
        bar.set_label("attention", fontsize=fs)
        bar.ax.tick_params(labelsize=fs - 1)
    suptitle = suptitle if style.title is None or n == 1 else style.title
    if suptitle:
        lines = "\n".join(map(printable, suptitle.split("\n")))
        fig.suptitle(wrap_title(lines, chars * cols), fontsize=fs + 1)
    if not compact:
        _legend(fig, panels, fs - 1)
    return fig


def _sizes(panels: Sequence[Panel], cols: int, rows: int, compact: bool, style: FigureStyle
           ) -> tuple[float, float, tuple[float, float]]:
    """The label size in points, a title's characters a line and the figure's (width, height) in
    inches."""
    T = max(p.matrix.shape[0] for p in panels)
    S = max(p.matrix.shape[1] + (p.eos is not None) for p in panels)
    fs = style.font_size or FONT_SIZE
    longest = max((len(w) for p in panels for w in [*p.src, *p.tgt, "</s>"]), default=4)
    titles = [p.title + ("\nAER 00.0  P 00.0  R 00.0" if p.gold is not None else "") for p in panels]
    if style.title is not None:
        titles = [style.title] if len(panels) == 1 else titles

    def labels(fs: float) -> float:  # the word labels' extent beside (and, rotated, above) the matrix
        return 0.3 if compact else min(longest, 30) * 0.55 * fs / 72 + 0.1

    bar = 0.8  # the colour bar, the panel's or the figure's
    if style.width is not None:
        cell = ((style.width - bar) / cols - labels(fs)) / S
        if style.font_size is None:  # the default font shrinks to fit the cells the width leaves
            fs = max(2.0, min(fs, cell * 72 / LINE))
            cell = ((style.width - bar) / cols - labels(fs)) / S
        cell = max(cell, 0.01)
    else:
        cell = 0.12 if compact else max(LINE * fs / 72, MIN_MATRIX / max(S, T))
    # a long pair shrinks its cells (and labels) so that a figure stays under MAX_INCHES a side: a
    # 150-word pair must not become a 200-megapixel PNG
    fit = min(cell, ((MAX_INCHES - bar) / cols - labels(fs)) / S, (MAX_INCHES / rows - 2.0) / T)
    if fit < cell:
        fs, cell = (fs * fit / cell if style.font_size is None else fs), fit
    panel = cell * S + labels(fs)
    width = style.width if style.width is not None else cols * panel + bar
    chars = max(12, int(panel / (0.6 * (fs + 1) / 72)))  # a title's characters a line
    lines = max(len(wrap_title(t, chars).split("\n")) for t in titles) if any(titles) else 0
    title = 0.0 if compact else lines * 1.4 * (fs + 1) / 72 + 0.8 * fs / 72
    legend = 0.0 if compact else 2 * 1.6 * fs / 72
    return fs, chars, (width, rows * (cell * T + 0.87 * labels(fs) + title) + legend + 0.2)


def wrap_title(text: str, chars: int) -> str:
    """``text`` in lines of at most ``chars`` characters, broken at spaces, and inside words (a path)
    longer than a line."""
    return "\n".join(textwrap.fill(line, chars, break_on_hyphens=False) or line for line in text.split("\n"))


def _legend(fig, panels: Sequence[Panel], fs: float) -> None:
    """The overlay's marks, explained under the figure (only those the panels can show)."""
    from matplotlib.lines import Line2D

    gold = any(p.gold is not None for p in panels)
    if not (gold or any(p.links for p in panels)):
        return
    handles = [Line2D([], [], marker="o", ls="none", color=RIGHT if gold else LINK, mec="white",
                      label="right link" if gold else "link")]
    if gold:
        handles += [Line2D([], [], marker="x", ls="none", color=WRONG, mew=1.6, label="wrong link"),
                    Line2D([], [], marker="s", ls="none", mfc="none", mec="black", label="gold sure"),
                    Line2D([], [], marker="s", ls="none", mfc="none", mec=POSSIBLE,
                           label="gold possible (dashed)")]
    # constrained layout makes room for it; two rows of marks where one would be wider than the figure
    ncols = len(handles) if fig.get_figwidth() >= 1.1 * len(handles) * fs * 9 / 72 else 2
    fig.legend(handles=handles, loc="outside lower center", ncols=ncols, fontsize=fs, frameon=False)


def save_figure(fig, path: str | os.PathLike, exact: bool = False) -> None:
    """Save by the file's extension (png, svg, pdf), atomically: cropped to what is drawn, or with
    ``exact`` at the figure's own size (a width the user asked for)."""
    ext = os.path.splitext(str(path))[1].lower().lstrip(".") or "png"
    dpi = min(DPI, MAX_PIXELS / max(fig.get_size_inches()))
    with atomic_open(path, "wb") as f:
        fig.savefig(f, format=ext, dpi=dpi, bbox_inches=None if exact else "tight")
    _mpl().close(fig)


_CONTROL = {c: f"\\x{c:02x}" for c in [*range(32), 127]}  # ESC and its kin, shown, never obeyed


def printable(text: str) -> str:
    """User text for a terminal: control characters (an escape sequence that would recolour or clear
    the screen) written as ``\\x1b``, everything else as it is."""
    return text.translate(_CONTROL)


def terminal_view(p: Panel, plain: bool = False):
    """A rich Table of the matrix: shaded cells (darker = more attention; with ``plain``, for a file or
    a pipe where colours are lost, the weight as a digit 0-9 instead), ● right link, ✗ wrong link, □
    missed sure gold link, ◇ missed possible gold link."""
    from rich.table import Table
    from rich.text import Text

    # user words are Text, never markup: "[laughter]" is a word, not a style
    t = Table(show_header=True, header_style="bold", box=None, pad_edge=False,
              title=Text("\n".join(map(printable, p.title.split("\n")))) if p.title else None)
    t.add_column("")
    for w in p.src:
        w = printable(w)
        t.add_column(Text(w if len(w) <= 10 else w[:9] + "…"), justify="center", no_wrap=True)
    links = set(p.links)
    for j, word in enumerate(p.tgt):
        cells = [Text(printable(word), style="bold")]
        for i in range(len(p.src)):
            v = float(p.matrix[j, i])
            mark = _mark(link_status(i, j, links, p.gold))
            if plain or not p.shaded:  # a blank grid has no weights to show: a dot
                weight = min(9, int(v * 10)) if p.shaded else "·"
                cells.append(Text(f"{weight}{mark or ' '}"))
            else:
                shade = int(255 - 200 * v)
                fg = "white" if v > 0.5 else "black"
                cells.append(Text(f"{mark:^3}", style=f"{fg} on rgb({shade},{shade},255)"))
        t.add_row(*cells)
    legend = "● right  ✗ wrong  □ missed sure  ◇ missed possible"
    legend += "  digits: weight x 10" if plain and p.shaded else ""
    t.caption = Text((pair_score_text(p.links, p.gold) + "   " if p.gold is not None else "") + legend)
    return t


def link_status(i: int, j: int, links: set, gold: Alignment | None) -> str:
    """What cell (i, j) is: a right or wrong link, a missed gold link, or nothing ("")."""
    if (i, j) in links:
        if gold is None:
            return "link"
        kind = "sure" if (i, j) in gold.sure else "possible"
        return f"right link (gold {kind})" if (i, j) in gold.possible else "wrong link"
    if gold is not None and (i, j) in gold.sure:
        return "missed gold sure link"
    if gold is not None and (i, j) in gold.possible:
        return "gold possible link, not predicted"
    return ""


_MARKS = {"link": "●", "wrong link": "✗", "missed gold sure link": "□",
          "gold possible link, not predicted": "◇"}


def _mark(status: str) -> str:
    """The overlay's character for a cell's status (as in the PNG legend)."""
    return "●" if status.startswith("right") else _MARKS.get(status, "")


def html_heatmap(p: Panel) -> str:
    """The panel as an HTML table for a web page: cells shaded like the PNG (Blues, 0-1), the overlay's
    marks as characters, gold links as cell borders (solid sure, dashed possible), and on every cell a
    tooltip (``title``) with the source word, the target word,
    the weight and the link's status. Self-contained: no script, no external file."""
    import matplotlib

    esc = html.escape
    links = set(p.links)
    # the shades of every cell at once (a colour map called once a cell was most of a large gallery's page)
    rgba = matplotlib.colormaps["Blues"](np.clip(np.nan_to_num(np.asarray(p.matrix, dtype=float)), 0.0, 1.0))
    shades = [[f"{r * 255:.0f},{g * 255:.0f},{b * 255:.0f}" for r, g, b, _ in row] for row in rgba]
    src = [esc(w) for w in p.src]
    sure, possible = (p.gold.sure, p.gold.possible) if p.gold is not None else ((), ())
    head = "".join(f'<th class="s">{w}</th>' for w in src)
    rows = []
    for j, tw in enumerate(p.tgt):
        cells = []
        tgt = esc(tw)
        for i, sw in enumerate(src):
            v = float(p.matrix[j, i])
            status = link_status(i, j, links, p.gold)
            mark = _mark(status)
            tip = f"{sw} → {tgt}: {v:.3f}" + (f"; {esc(status)}" if status else "")
            # classes: r/w right/wrong link (mark colour), gs/gp gold sure/possible (cell border, as the
            # PNG's squares)
            names = ["w" if status == "wrong link" else "r" if mark == "●" else "",
                     "gs" if (i, j) in sure else "gp" if (i, j) in possible else ""]
            cls = f' class="{" ".join(filter(None, names))}"' if any(names) else ""
            # a link's mark keeps its class's colour (green, red); other marks contrast with the cell
            fg = "" if names[0] else f";color:{'#fff' if v > 0.55 else '#000'}"
            cells.append(f'<td{cls} style="background:rgb({shades[j][i]}){fg}" title="{tip}">{mark}</td>')
        rows.append(f"<tr><th>{esc(tw)}</th>{''.join(cells)}</tr>")
    legend = ("darker: more attention; ● right link, ✗ wrong link, □ missed sure link, ◇ missed possible "
              "link; gold links framed (solid: sure, dashed: possible)" if p.gold is not None else
              "darker: more attention; ● link")
    return (f'<table class="hm"><caption>{legend}</caption><thead><tr><th></th>{head}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table>')
