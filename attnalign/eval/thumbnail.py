"""Quick raster pictures of panels: the matrix in cells, the words beside it, the links and the gold
drawn over it with the heatmap's marks (:mod:`.plot`'s legend), drawn with Pillow at fixed sizes.

A matplotlib figure lays its text out (constrained layout, a tight crop) and draws several times over;
this draws each pixel once, so that a report's gallery of thousands of sentences is drawn in minutes.
``plot sentence --thumbnail`` draws the same picture. Torch-free and matplotlib-light (its colour map and
its DejaVu Sans font only).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from functools import cache, lru_cache

import numpy as np

from ..data.alignments import Link
from ..data.fileio import atomic_open
from ..errors import path_text
from . import plot
from .plot import MAX_PIXELS, Panel, link_status, pair_score_text, printable, wrap_title

CELL = 16  # pixels a cell, at most; a long pair's cells shrink so that a side stays under MAX_PIXELS
FONT = 11  # pixels: word labels (titles the same, the legend one less)
MIN_LABELLED = 7  # cells smaller than this many pixels get no word labels (too small to read)
LABEL_CHARS = 24  # a longer word is cut, with an ellipsis
PAD = 6
BAR = 12  # the colour bar's width


def _rgb(colour: str) -> tuple[int, int, int]:
    """A matplotlib colour of the two forms the heatmap uses, "#rrggbb" or a grey level "0.35", as bytes
    (by hand: importing matplotlib here would load it with the package, where only a drawing needs it)."""
    if colour.startswith("#"):
        return tuple(int(colour[k:k + 2], 16) for k in (1, 3, 5))
    return (round(255 * float(colour)),) * 3


WHITE, INK = (255, 255, 255), (0, 0, 0)
RIGHT, LINK, WRONG, POSSIBLE, RULE, POSITION = map(  # the heatmap's marks
    _rgb, (plot.RIGHT, plot.LINK, plot.WRONG, plot.POSSIBLE, plot.RULE, plot.POSITION))


@cache
def _font(px: int):
    from matplotlib import font_manager
    from PIL import ImageFont

    return ImageFont.truetype(font_manager.findfont(font_manager.FontProperties(family="DejaVu Sans")), px)


@cache
def _blues():
    import matplotlib

    return matplotlib.colormaps["Blues"]  # a copy each time it is looked up: once


def _shown(text: str) -> str:
    """User text as drawn: control characters and bytes that are not UTF-8 as escapes, never raw."""
    return path_text(printable(text))


def _label(word: str) -> str:
    word = _shown(word)
    return word if len(word) <= LABEL_CHARS else word[:LABEL_CHARS - 1] + "…"


def _cell(panels: Sequence[Panel]) -> int:
    T = max(p.matrix.shape[0] for p in panels)
    S = sum(p.matrix.shape[1] + (p.eos is not None) for p in panels)
    return max(1, min(CELL, (MAX_PIXELS - 200 * len(panels)) // max(S, 1), (MAX_PIXELS - 300) // max(T, 1)))


@lru_cache(maxsize=65_536)
def _word(word: str):
    """A word label's mask (Pillow "L" image, one line's height): a corpus repeats its words, so each is
    rendered once."""
    from PIL import Image, ImageDraw

    font, label = _font(FONT), _label(word)
    ascent, descent = font.getmetrics()
    img = Image.new("L", (max(1, math.ceil(font.getlength(label))), ascent + descent), 0)
    ImageDraw.Draw(img).text((0, 0), label, fill=255, font=font, anchor="la")
    return img


def _words_block(words: Sequence[str], cell: int, right: bool):
    """The words one a row of ``cell`` pixels, in an image as wide as the longest (right-aligned with
    ``right``): the target's labels, or, turned a quarter, the source's."""
    from PIL import Image

    masks = [_word(w) for w in words]
    width = max((m.width for m in masks), default=0) + 2
    img = Image.new("RGB", (width, max(1, cell * len(masks))), WHITE)
    for j, m in enumerate(masks):
        img.paste(INK, (width - 1 - m.width if right else 1, j * cell + (cell - m.height) // 2), m)
    return img


@cache
def _palette():
    """256 colours: the shades of the colour map, the greys of the text's edges, the marks'."""
    from PIL import Image

    shades = _blues()(np.linspace(0.0, 1.0, 192), bytes=True)[:, :3]
    greys = np.repeat(np.linspace(0, 255, 56).astype(np.uint8)[:, None], 3, axis=1)
    marks = np.array([RIGHT, LINK, WRONG, POSSIBLE, RULE, POSITION, WHITE, INK], np.uint8)
    image = Image.new("P", (1, 1))
    image.putpalette(np.concatenate([shades, greys, marks]).ravel().tolist())
    return image


def _cells(p: Panel, cell: int) -> np.ndarray:
    """The shaded matrix (EOS column last) as ``[T*cell, S*cell, 3]`` bytes, or a blank grid."""
    m = p.matrix
    data = np.concatenate([m, p.eos[:, None]], axis=1) if p.eos is not None and m.size else m
    if p.shaded:
        rgb = _blues()(np.clip(data, 0.0, 1.0), bytes=True)[..., :3]
    else:
        rgb = np.full((*data.shape, 3), 255, np.uint8)
    img = np.repeat(np.repeat(rgb, cell, axis=0), cell, axis=1)
    if not p.shaded and cell >= 3:  # a blank grid's cells are told apart by their lines
        img[::cell, :] = img[:, ::cell] = 220
    return img


def _square(d, i: int, j: int, cell: int, sure: bool) -> None:
    lo, hi = 0.05 * cell, 0.95 * cell - 1
    x0, y0, x1, y1 = i * cell + lo, j * cell + lo, i * cell + hi, j * cell + hi
    w = max(1, round(cell / 11))
    if sure:
        d.rectangle((x0 - 1, y0 - 1, x1 + 1, y1 + 1), outline=WHITE, width=w + 2)  # a halo on dark cells
        d.rectangle((x0, y0, x1, y1), outline=INK, width=w)
        return
    dash = max(2.0, cell / 5)
    for a, b, horizontal in ((x0, y0, True), (x0, y1, True), (x0, y0, False), (x1, y0, False)):
        t = 0.0
        while t < hi - lo:
            e = min(t + dash, hi - lo)
            seg = (a + t, b, a + e, b) if horizontal else (a, b + t, a, b + e)
            d.line(seg, fill=POSSIBLE, width=w)
            t += 2 * dash


def _marks(img, p: Panel, cell: int) -> None:
    """Gold squares (sure solid, possible dashed), right links as circles, wrong ones as crosses, and a
    local-p attention's predicted positions as a line, over the cells."""
    from PIL import ImageDraw

    d = ImageDraw.Draw(img)
    gold = p.gold
    if gold is not None and cell >= 4:
        for i, j in sorted(gold.possible):
            _square(d, i, j, cell, (i, j) in gold.sure)
    links: set[Link] = set(p.links)
    r = max(1.0, 0.3 * cell)
    for i, j in sorted(links):
        cx, cy = (i + 0.5) * cell, (j + 0.5) * cell
        if link_status(i, j, links, gold) == "wrong link":
            w = max(1, round(cell / 7))
            d.line((cx - r, cy - r, cx + r, cy + r), fill=WRONG, width=w)
            d.line((cx - r, cy + r, cx + r, cy - r), fill=WRONG, width=w)
        else:
            d.ellipse((cx - r, cy - r, cx + r, cy + r), fill=RIGHT if gold is not None else LINK,
                      outline=WHITE if cell >= 6 else None)
    if p.positions is not None and len(p.positions):
        points = [((float(x) + 0.5) * cell, (j + 0.5) * cell) for j, x in enumerate(p.positions)]
        d.line(points, fill=POSITION, width=max(1, cell // 8))


def _panel_image(p: Panel, cell: int, title: str):
    """One panel: its title, the source words turned a quarter above the matrix, the target words on its
    left; with the pixel (x, y) where the matrix's top left corner is."""
    from PIL import Image, ImageDraw

    font = _font(FONT)
    T, S = p.matrix.shape
    cols = S + (p.eos is not None)
    grid = Image.fromarray(_cells(p, cell))
    if p.eos is not None and S:
        ImageDraw.Draw(grid).line((S * cell, 0, S * cell, T * cell), fill=RULE, width=1)
    _marks(grid, p, cell)
    labelled = cell >= MIN_LABELLED
    if labelled:
        words = _words_block(p.tgt, cell, right=True)
        top = _words_block([*p.src, *(["</s>"] if p.eos is not None else [])], cell, right=False)
        top = top.transpose(Image.Transpose.ROTATE_90)
    left_w, top_h = (words.width, top.height) if labelled else (0, 0)
    inner = left_w + PAD + cols * cell
    lines = _title_lines(title, max(inner, 40 * FONT)) if title else []
    width = max([inner, *(int(font.getlength(line)) + 2 for line in lines)])
    line_h = FONT + 4
    head = len(lines) * line_h + (PAD if lines else 0)
    img = Image.new("RGB", (max(width, 1), head + top_h + PAD + T * cell), WHITE)
    d = ImageDraw.Draw(img)
    for n, line in enumerate(lines):
        d.text((width / 2, n * line_h), line, fill=INK, font=font, anchor="ma")
    off = (width - inner) // 2  # a title wider than the matrix: the matrix in the middle
    x0, y0 = off + left_w + PAD, head + top_h + PAD
    if labelled:
        img.paste(top, (x0, head + top_h - top.height))
        img.paste(words, (off, y0))
    img.paste(grid, (x0, y0))
    return img, (x0, y0)


def _title_lines(title: str, width: int) -> list[str]:
    chars = max(12, int(width / (0.6 * FONT)))
    return wrap_title("\n".join(map(_shown, title.split("\n"))), chars).split("\n")


def _legend(gold: bool, links: bool):
    """The marks explained, in one row: only those the panels can show."""
    from PIL import Image, ImageDraw

    if not (gold or links):
        return None
    font = _font(FONT - 1)
    items = [("right link" if gold else "link", "o")]
    if gold:
        items += [("wrong link", "x"), ("gold sure", "s"), ("gold possible (dashed)", "p")]
    box = 14
    width = sum(box + 4 + int(font.getlength(t)) + 14 for t, _ in items)
    img = Image.new("RGB", (width, box + 2), WHITE)
    d = ImageDraw.Draw(img)
    x = 0
    for text, mark in items:
        c = box / 2
        if mark == "o":
            d.ellipse((x + c - 5, c - 5, x + c + 5, c + 5), fill=RIGHT if gold else LINK, outline=WHITE)
        elif mark == "x":
            d.line((x + c - 5, c - 5, x + c + 5, c + 5), fill=WRONG, width=2)
            d.line((x + c - 5, c + 5, x + c + 5, c - 5), fill=WRONG, width=2)
        else:
            sub = Image.new("RGB", (box, box), WHITE)
            _square(ImageDraw.Draw(sub), 0, 0, box, mark == "s")
            img.paste(sub, (x, 0))
        d.text((x + box + 4, c), text, fill=INK, font=font, anchor="lm")
        x += box + 4 + int(font.getlength(text)) + 14
    return img


def _bar(height: int):
    """The colour bar: Blues from 0 (bottom) to 1 (top), with its three weights."""
    from PIL import Image, ImageDraw

    font = _font(FONT - 1)
    ramp = _blues()(np.linspace(1.0, 0.0, max(height, 2)), bytes=True)[:, :3]
    labels = max(int(font.getlength(t)) for t in ("0", "0.5", "1"))
    img = Image.new("RGB", (BAR + 4 + labels + 2, height + FONT), WHITE)
    img.paste(Image.fromarray(np.repeat(ramp[:, None], BAR, axis=1)), (0, FONT // 2))
    d = ImageDraw.Draw(img)
    for value, text in ((1.0, "1"), (0.5, "0.5"), (0.0, "0")):
        y = FONT // 2 + (1.0 - value) * (height - 1)
        d.text((BAR + 4, y), text, fill=INK, font=font, anchor="lm")
    return img


def thumbnail(panels: Sequence[Panel], title: str | None = None):
    """The panels side by side on one cell size, a shared colour bar where they are shaded and the
    legend below: a Pillow image. ``title``: None draws each panel's title and scores line, "" none, else
    this text above the one panel (several: above them all)."""
    from PIL import Image

    cell = _cell(panels)
    own = [None if title is None else title if len(panels) == 1 else "" for _ in panels]
    images = []
    for p, t in zip(panels, own, strict=True):
        if t is None:
            score = pair_score_text(p.links, p.gold)
            t = f"{p.title}\n{score}" if p.title and score else p.title or score
        images.append(_panel_image(p, cell, t))
    above = _title_lines(title, MAX_PIXELS) if title and len(panels) > 1 else []
    head = len(above) * (FONT + 4) + (PAD if above else 0)
    y0 = max(y for _, (_, y) in images)
    T = max(p.matrix.shape[0] for p in panels)
    bar = _bar(T * cell) if any(p.shaded for p in panels) and T * cell >= 20 else None
    legend = _legend(any(p.gold is not None for p in panels), any(p.links for p in panels))
    width = sum(img.width for img, _ in images) + 2 * PAD * len(images) + (bar.width + PAD if bar else 0)
    width = max(width, legend.width + 2 * PAD if legend else 0)
    body = max(img.height - y for img, (_, y) in images)
    height = head + y0 + body + PAD + (legend.height + PAD if legend else 0) + PAD
    canvas = Image.new("RGB", (width, height), WHITE)
    if above:
        from PIL import ImageDraw

        d = ImageDraw.Draw(canvas)
        for n, line in enumerate(above):
            d.text((width / 2, n * (FONT + 4)), line, fill=INK, font=_font(FONT), anchor="ma")
    x = PAD
    for img, (_, y) in images:  # each panel's matrix on one line: their words' heights differ
        canvas.paste(img, (x, head + y0 - y))
        x += img.width + 2 * PAD
    if bar is not None:
        canvas.paste(bar, (x - PAD, head + y0 - FONT // 2))
    if legend is not None:
        canvas.paste(legend, ((width - legend.width) // 2, head + y0 + body + PAD))
    return canvas


def save_thumbnail(panels: Sequence[Panel], path: str | os.PathLike, title: str | None = None) -> None:
    """:func:`thumbnail` as a PNG, written atomically."""
    from PIL import Image

    # one palette holds every colour drawn: under half the bytes, quicker to write
    image = thumbnail(panels, title).quantize(palette=_palette(), dither=Image.Dither.NONE)
    with atomic_open(path, "wb") as f:
        image.save(f, format="png")
