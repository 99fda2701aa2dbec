"""The report's comparison of systems: alignment files of any aligner (``report --pred``) beside the
model's default output, scored with intervals and paired tests, each with its per-sentence scores, its
wrong and missed word pairs and its error breakdown, and a gallery of the sentences where the systems
disagree most. Torch-free.

Files written (beside index.html):

* ``systems.csv``: each system's scores, their 95% intervals and its paired test against the first;
* ``systems_per_sentence.csv``, ``systems_wrong_pairs.csv``, ``systems_missed_pairs.csv``: by system;
* ``breakdown.csv``: each system's scores by band (:mod:`attnalign.eval.breakdown`);
* ``disagree_N.png``: the gallery, one panel per system over the gold (one system: its worst sentences).
"""

from __future__ import annotations

import html
import os
import shlex
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from ..data.alignments import Alignment
from ..data.corpus import Pairs, is_piped
from ..data.fileio import path_text, same_file
from ..errors import OptionError
from ..eval.breakdown import FREQUENT_MIN, RARE_MAX, breakdown
from ..eval.explorer import EXPLORER_FILE, ExplorerSentence
from ..eval.metrics import alignment_counts
from ..eval.plot import Panel
from ..eval.scoring import GoldOptions, ScoreReport, SystemScore, read_prediction
from ..eval.significance import LEVEL, SAMPLES, Bootstrap, signed_percent
from .plots import as_thumbnails, save_sentences
from .sweep import DEFAULT_OUTPUT, Config, Result
from .tables import gallery_order, word_pairs


def pred_results(preds: Sequence[str | os.PathLike], names: Sequence[str], gold: Sequence[Alignment],
                 pairs: Pairs, options: GoldOptions = GoldOptions()) -> list[Result]:
    """Each alignment file read as ``options`` say for the gold's sentences (range-checked against
    ``pairs``) and scored, named by ``names`` (default: :func:`row_names`)."""
    if names and len(names) != len(preds):
        raise OptionError(f"{len(names)} --pred-name for {len(preds)} --pred files",
                          hint="give one --pred-name per --pred, in the same order, or none")
    for k, path in enumerate(preds):  # one file is one system, however it is spelled
        for j in range(k):
            if same_file(preds[j], path):
                raise OptionError(f"--pred {path_text(preds[j])} and --pred {path_text(path)} are the same "
                                  "file", hint="give each system's file once")
    names = list(names) or row_names(preds)
    if len(set(names)) != len(names):
        raise OptionError("two --pred files have the same name", hint="name them apart with --pred-name")
    check_unique_names([], names)
    lengths = [len(s) for s, _ in pairs], [len(t) for _, t in pairs]
    results = []
    for path, name in zip(preds, names, strict=True):
        hyp, _ = read_prediction(path, len(gold), fmt=options.fmt, reverse=options.reverse,
                                 one_based=options.one_based, lengths=lengths, encoding=options.encoding)
        links = [sorted(h.links) for h in hyp]
        per = [alignment_counts(h, g) for h, g in zip(hyp, gold, strict=True)]
        results.append(Result(Config(None, 0, "", "none", label=name), per, links))
    return results


def row_names(paths: Sequence[str | os.PathLike]) -> list[str]:
    """Each file's row name on the page: its file name, with as many of its folders before it as tell
    the files apart (``a/out.align``, ``b/out.align``); a stream (stdin, a pipe, a process
    substitution's ``/dev/fd/63``) by the option it came from, ``--pred 2``. The full paths stay in the
    command line at the top of the page."""
    parts = [(f"--pred {k + 1}",) if is_piped(p) else Path(path_text(p)).parts or (path_text(p),)
             for k, p in enumerate(paths)]
    depth = 1
    while True:
        names = ["/".join(q[-depth:]) for q in parts]
        if len(set(names)) == len(names) or depth >= max(map(len, parts)):
            return names
        depth += 1


def check_unique_names(rows: Sequence[str], preds: Sequence[str]) -> None:
    """Every row of the page has a name of its own: a ``--pred`` named like one of the model's ``rows``
    (or like the default output, which every model's page has) would merge with it in the tables."""
    for name in preds:
        if name in rows or name.startswith(DEFAULT_OUTPUT):
            raise OptionError(f"--pred name {name!r} is the name of one of the model's rows",
                              hint="give the --pred another name with --pred-name")


def disagreement_order(systems: Sequence[Result], pairs: Pairs, n: int) -> list[int]:
    """The ``n`` sentences (2 words a side at least) where the systems' links differ most: the links
    that some but not all systems have, then the spread of their sentence AER."""
    def spread(k: int) -> tuple:
        sets = [set(map(tuple, r.links[k])) for r in systems]
        union, common = set().union(*sets), set.intersection(*sets)
        aers = [r.per_sentence[k].aer for r in systems]
        return -(len(union) - len(common)), -(max(aers) - min(aers)), k

    eligible = [k for k in range(len(pairs)) if len(pairs[k][0]) >= 2 and len(pairs[k][1]) >= 2]
    return [k for k in sorted(eligible, key=spread)[:n] if spread(k)[0] < 0]


def write_systems(out: Path, systems: Sequence[Result], gold, pairs: Pairs, frequency: dict,
                  gallery: int, top: int, under: Callable[[int], tuple] | None = None,
                  plot_args: str | None = None, info=None) -> dict:
    """The CSVs and pictures of the comparison; returns the frames, the gallery's images and the
    :class:`ScoreReport` (intervals and paired tests). ``under(k)``: the attention matrix and EOS
    column to draw sentence ``k``'s links over (None: a blank grid); ``plot_args``: the ``plot
    sentence`` options that draw a gallery sentence, less ``--index``."""
    import pandas as pd

    report = ScoreReport(info, [SystemScore(r.config.name, r.total, r.per_sentence) for r in systems])
    report.resample(Bootstrap(), paired=len(systems) > 1)
    scores = report.frame()
    scores.round(6).to_csv(out / "systems.csv", index=False)
    per = pd.DataFrame([{"system": r.config.name, "sentence": k + 1, "index": k, **c.as_dict()}
                        for r in systems for k, c in enumerate(r.per_sentence)])
    per.drop(columns=["sentences"]).round(6).to_csv(out / "systems_per_sentence.csv", index=False)
    frames = {"scores": scores, "report": report}
    counted = {r.config.name: word_pairs(r, pairs, gold) for r in systems}
    for kind, pick in (("wrong_pairs", 0), ("missed_pairs", 1)):
        rows = [{"system": name, "source": a, "target": b, "count": c}
                for name, both in counted.items() for (a, b), c in both[pick].most_common(top)]
        frames[kind] = pd.DataFrame(rows, columns=["system", "source", "target", "count"])
        frames[kind].to_csv(out / f"systems_{kind}.csv", index=False)
    rows = []
    for r in systems:
        hyps = [Alignment.from_links(lk) for lk in r.links]
        rows += [{"system": r.config.name, "dimension": b.dimension, "band": b.band, **b.counts.as_dict(),
                  **({} if b.has_precision else {"precision": float("nan")})}
                 for b in breakdown(hyps, gold, pairs, frequency)]
    bd = pd.DataFrame(rows).drop(columns=["sentences"])
    # a band with no predicted links has no precision, one with no sure gold links no recall: blank, not 100
    bd.loc[bd.links == 0, "precision"] = float("nan")
    bd.loc[bd.sure == 0, "recall"] = float("nan")
    bd.loc[(bd.links == 0) & (bd.sure == 0), "aer"] = float("nan")
    frames["breakdown"] = bd
    frames["breakdown"].round(6).to_csv(out / "breakdown.csv", index=False)
    images = []
    # several systems: where they disagree; one: its worst sentences, as the model's gallery draws them
    order = (disagreement_order(systems, pairs, gallery) if len(systems) > 1
             else gallery_order(systems[0], pairs, gallery)["worst"])
    thumbnails, figures = as_thumbnails(len(order)), []
    for n, k in enumerate(order):
        src, tgt = list(pairs[k][0]), list(pairs[k][1])
        matrix, eos = under(k) if under is not None else (np.zeros((len(tgt), len(src))), None)
        panels = [Panel(matrix, src, tgt, r.links[k], gold[k], eos, r.config.name, {},
                        shaded=under is not None) for r in systems]
        name = f"disagree_{n + 1}.png"
        figures.append((panels, out / name, thumbnails))
        plot = (f"attnalign plot sentence {plot_args} --index {k}{' --thumbnail' if thumbnails else ''} "
                f"-o sentence{k}.png" if plot_args else "")
        images.append({"index": k, "png": name, "plot": plot,
                       "words": (" ".join(src), " ".join(tgt)),
                       "explorer": ExplorerSentence(k, panels, gold[k], f"systems {n + 1}: index {k}")})
    save_sentences(figures)
    frames["disagree"] = images
    return frames


def plot_args(preds: Sequence, source: list[str], gold_args: list[str]) -> str:
    """``plot sentence``'s options that draw the systems' links of one sentence (less ``--index``)."""
    return shlex.join([*(w for p in preds for w in ("--pred", str(p))), *map(str, source), *gold_args])


BREAKDOWN_METRICS = {"precision": "P", "recall": "R", "aer": "AER"}  # the page's columns of breakdown.csv


def breakdown_tables(bd) -> dict:
    """breakdown.csv's rows as the page shows them: one table per dimension, its own bands in the CSV's
    order, a column per system and metric (in %); a cell without a value says why: ``no links`` (no
    predicted links, for P; none predicted or gold, for AER), ``no sure gold`` (for R); the type bands'
    precision, which their definition fixes, has no column."""
    import pandas as pd

    def cell(row, metric: str):
        v = row[metric]
        if v == v:  # not NaN
            return 100 * float(v)
        if metric == "precision":
            return "no links" if row["links"] == 0 else "n/a"
        if metric == "recall":
            return "no sure gold"
        return "no links"

    systems = list(dict.fromkeys(bd.system))
    tables = {}
    for dim, rows in bd.groupby("dimension", sort=False):
        bands = list(dict.fromkeys(rows.band))
        by = {(r["system"], r["band"]): r for _, r in rows.iterrows()}
        table = pd.DataFrame(
            [{"band": b, **{f"{s}: {short}": cell(by[(s, b)], m) if (s, b) in by else "no links"
                            for s in systems for m, short in BREAKDOWN_METRICS.items()}} for b in bands])
        tables[dim] = table.loc[:, ~(table == "n/a").all()]  # a metric the dimension never has: no column
    return tables


def systems_html(frames: dict, html_table, readable) -> str:
    """The comparison's section of the page."""
    report = frames["report"]
    table = readable(frames["scores"], ["system"], gold=False)
    if report.paired:
        tests = [s.paired for s in report.systems]
        table["ΔAER vs the first"] = ["baseline" if t is None else signed_percent(t.delta) for t in tests]
        table["ΔAER 95% interval"] = ["" if t is None else f"[{signed_percent(t.interval.low)}, "
                                      f"{signed_percent(t.interval.high)}]" for t in tests]
        table["p"] = ["" if t is None else f"{t.p_value:.4f}" for t in tests]
    tables = breakdown_tables(frames["breakdown"])
    gallery = "".join(
        f'<figure class="g"><a href="{g["png"]}"><img src="{g["png"]}" loading="lazy" '
        f'alt="disagreement {n + 1}: index {g["index"]}"></a><figcaption><b>index {g["index"]}</b> '
        f'(<a href="{EXPLORER_FILE}#{g["index"]}">explore</a>)'
        + (f' (<code>{html.escape(g["plot"])}</code>)' if g["plot"] else "")
        + f'<br>{html.escape(g["words"][0])}<br>{html.escape(g["words"][1])}</figcaption></figure>'
        for n, g in enumerate(frames["disagree"]))
    sections = [
        "<h2>Systems compared</h2><p><a href=\"systems.csv\">systems.csv</a>; scores in %, each AER with its "
        f"{round(100 * LEVEL)}% interval from {SAMPLES:,} bootstrap resamples of the gold's sentences"
        + ("; every system against the first by the paired bootstrap (Koehn 2004): the difference in AER, "
           "its interval and the two-sided p-value" if report.paired else "") + ".</p>",
        f'<div class="wrap">{html_table(table)}</div>',
        '<h2>Breakdown</h2><p><a href="breakdown.csv">breakdown.csv</a>: precision, recall and AER (%) by '
        f"the source word's frequency in the text (rare: at most {RARE_MAX} times; frequent: {FREQUENT_MIN} "
        "times or more), by the "
        "gold's link type (from its links: 1-many, a source word with several links; extra: predicted links "
        "the gold lacks, on a word it leaves unaligned or between aligned words) and by the distance from "
        "the diagonal in source words. Each table sorts by a click on a column. The link types have no "
        "precision column: the gold's shape fixes it (100 on its links, 0 on the extra ones).</p>",
        *(f'<h3>By {html.escape(dim)}</h3><div class="wrap">{html_table(t)}</div>'
          for dim, t in tables.items()),
        '<h2>Word pairs by system</h2><p><a href="systems_wrong_pairs.csv">systems_wrong_pairs.csv</a>, '
        '<a href="systems_missed_pairs.csv">systems_missed_pairs.csv</a>, '
        '<a href="systems_per_sentence.csv">systems_per_sentence.csv</a></p>',
    ]
    for kind, title in (("wrong_pairs", "wrongly linked"), ("missed_pairs", "missed sure gold pairs")):
        df = frames[kind]
        for name, grp in df.groupby("system", sort=False):
            sections.append(f"<details><summary>{html.escape(str(name))}: most frequently {title}</summary>"
                            f"{html_table(grp.drop(columns=['system']))}</details>")
    if gallery and len(frames["scores"]) > 1:
        sections.append("<h2>Where the systems disagree</h2><p>The sentences whose links differ most between "
                        "the systems, each system's links over the gold on the same grid.</p>" + gallery)
    elif gallery:
        sections.append("<h2>Its worst sentences</h2><p>The sentences with the most wrong and missed links, "
                        "the system's links over the gold.</p>" + gallery)
    return "\n".join(sections)
