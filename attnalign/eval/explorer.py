"""The attention explorer: one self-contained HTML page (no network, no server) in which a person looks
at the matrices of one or many sentences: hover a word to see where it attends, a cell for its weight
and whether it is a link, a gold sure or possible link; switch between the matrices the run has
(forward, reverse, symmetrized, a Transformer's layers and heads, the panels ``plot sentence`` draws);
toggle the links, the gold and the errors; move with the arrow keys. Torch-free and matplotlib-free.

The page holds its data as JSON (user text stays data: it is set with ``textContent``, never parsed as
markup), each matrix a byte per weight (round(255 w), base64), so that a page of hundreds of sentences
stays small; one sentence is drawn at a time. The colour scale is viridis (perceptually uniform, readable with
every common colour-vision deficiency); marks are shapes as well as colours.
"""

from __future__ import annotations

import base64
import html
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources

import numpy as np

from ..data.alignments import Alignment
from ..data.fileio import atomic_open, path_text
from .plot import Panel

EXPLORER_TITLE = "attnalign explorer"
EXPLORER_FILE = "explorer.html"  # a report's explorer, beside its index.html


@dataclass
class ExplorerSentence:
    """One sentence of the page: its words, its gold (None: none), and its ``views``, the panels whose
    matrices and links can be shown (the first is shown first); ``label`` says where it comes from
    (``worst 1``, ``index 7``)."""

    index: int
    views: Sequence[Panel]
    gold: Alignment | None = None
    label: str = ""

    def as_json(self) -> dict:
        first = self.views[0]
        gold = self.gold if self.gold is not None else first.gold
        return {
            "index": self.index, "label": self.label or f"index {self.index}",
            "src": [path_text(w) for w in first.src], "tgt": [path_text(w) for w in first.tgt],
            "sure": None if gold is None else sorted(map(list, gold.sure)),
            "possible": None if gold is None else sorted(map(list, gold.possible)),
            "views": list({json.dumps(v, sort_keys=True): v for v in map(_view, self.views)}.values()),
        }


def _view(p: Panel) -> dict:
    """A panel as the page stores it: its name (its title's first line), [T, S] weights as bytes, links."""
    m = np.nan_to_num(np.asarray(p.matrix, dtype=np.float64), nan=0.0) if p.shaded else np.zeros(
        np.shape(p.matrix))
    cells = np.rint(np.clip(m, 0.0, 1.0) * 255).astype(np.uint8)
    return {"name": (p.title or "attention").split("\n")[0], "m": base64.b64encode(cells.tobytes()).decode(),
            "links": sorted(map(list, p.links)), "shaded": bool(p.shaded)}


def explorer_html(sentences: Sequence[ExplorerSentence], title: str = "") -> str:
    """The page (see the module doc) for ``sentences``, in the order given."""
    data = {"title": title, "sentences": [s.as_json() for s in sentences]}
    # inside <script>, "</" would end it: every "<" of the data is written \u003c (JSON reads it back)
    payload = json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{EXPLORER_TITLE}</title>'
            f'<meta name="viewport" content="width=device-width"><style>{_asset("css")}</style></head><body>'
            f'<header><h1>{EXPLORER_TITLE}</h1><p id="title">{html.escape(title)}</p>{_CONTROLS}</header>'
            '<div id="views" aria-label="matrices"></div><p id="scores"></p>'
            '<div id="main"><table id="hm"></table></div><p id="info" aria-live="polite"></p>'
            f'<p class="keys">{_KEYS}</p>'
            f'<script type="application/json" id="data">{payload}</script>'
            f'<script>{_asset("js")}</script></body></html>')


def _asset(kind: str) -> str:
    """The page's script or style sheet (``explorer.js``, ``explorer.css`` beside this module)."""
    return resources.files(__package__).joinpath(f"explorer.{kind}").read_text(encoding="utf-8")


def write_explorer(path: str | os.PathLike, sentences: Sequence[ExplorerSentence], title: str = "") -> None:
    """Write the page to ``path`` (atomically)."""
    with atomic_open(path) as f:
        f.write(explorer_html(sentences, title))


_KEYS = ("← → sentences, ↑ ↓ target words; hover a word for where it attends, a cell for its weight. "
         "Marks: ● link, solid red frame gold sure, dashed red frame gold possible; with errors: ✕ a "
         "link the gold lacks, ○ a sure gold link missed. Colours: viridis, dark 0 to yellow 1.")

_CONTROLS = (
    '<nav><button id="prev" title="previous sentence (←)">◀</button> <select id="sent" '
    'aria-label="sentence"></select> <button id="next" title="next sentence (→)">▶</button> '
    '<label><input type="checkbox" id="links" checked> links</label> '
    '<label><input type="checkbox" id="gold" checked> gold</label> '
    '<label><input type="checkbox" id="errors"> errors</label> '
    '<label>zoom <input type="range" id="zoom" min="10" max="40" value="22"></label> '
    '<span id="where"></span></nav>')

