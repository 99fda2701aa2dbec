"""The report's pictures (matplotlib): AER by layer and by length, attention statistics, the gallery."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..data.corpus import Pairs
from ..eval.explorer import ExplorerSentence
from ..eval.plot import html_heatmap, printable, save_figure
from ..eval.thumbnail import save_thumbnail
from ..workflows.views import sentence_figure
from .sweep import Result
from .tables import gallery_order


def write_plots(out: Path, tables: dict, best: Result, draw, stats, pairs: Pairs, gold, layered: bool,
                gallery: int) -> dict:
    """The PNGs: AER by layer (Transformers), AER by length, attention statistics, the gallery; and
    ``images["explorer"]``, the gallery's sentences for the explorer page, worst first. ``draw(ks)``:
    for each of sentences ks its picture's panel and the panels the explorer shows beside it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    scores, by_length = tables["scores"], tables["by_length"]
    images = {}
    if layered:
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
    ax.set_title(f"AER by sentence length ({printable(best.config.name)})")
    save_figure(fig, out / "aer_by_length.png")
    images["aer_by_length"] = "aer_by_length.png"
    fig = attention_stats_figure(*stats)
    save_figure(fig, out / "attention_stats.png")
    images["attention_stats"] = "attention_stats.png"

    images["gallery"] = gallery_order(best, pairs, gallery)
    images["thumbnails"] = thumbnails = as_thumbnails(sum(map(len, images["gallery"].values())))
    images["explorer"] = []
    figures = []
    for kind, ks in images["gallery"].items():
        for n, (k, (p, more)) in enumerate(zip(ks, draw(ks), strict=True)):  # each list at once: batched
            name = f"{kind}_{n + 1}.png"
            figures.append(([p], out / name, thumbnails))
            images[f"{kind}_{n + 1}"] = name
            # a large gallery's matrices are in the explorer alone: thousands on the page would weigh it down
            images[f"{kind}_{n + 1}_html"] = "" if thumbnails else html_heatmap(p)
            images["explorer"].append(ExplorerSentence(k, [p, *more], gold[k], f"{kind} {n + 1}: index {k}"))
    save_sentences(figures)
    return images


# A gallery of at least this many figures is drawn by one process per core: drawing is nearly all of a
# large gallery's time, and each figure is drawn on its own.
PARALLEL_FIGURES = 24
# ... and from this many on as thumbnails (plot sentence --thumbnail): a matplotlib figure's layout costs
# tens of times a thumbnail's pixels, which a gallery of thousands could not wait for
THUMBNAIL_FIGURES = 100


def as_thumbnails(figures: int) -> bool:
    """Whether a gallery of ``figures`` pictures is drawn as thumbnails."""
    return figures >= THUMBNAIL_FIGURES


def _save_sentence(job) -> None:
    panels, path, thumbnail = job  # as its caption's plot sentence saves it
    if thumbnail:
        save_thumbnail(panels, path)
    else:
        save_figure(sentence_figure(panels, False), path)


def _quiet_worker() -> None:
    """A drawing process leaves Ctrl-C to the command (which stops it): no traceback of its own."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def save_sentences(figures: list[tuple]) -> None:
    """Save each ``(panels, path, thumbnail)`` as ``plot sentence`` saves it (with ``--thumbnail`` where
    ``thumbnail``): in this process, or from
    :data:`PARALLEL_FIGURES` figures on in one process per core (torch-free ones: the same bytes)."""
    from ..dist import usable_cores

    cores = usable_cores()
    if len(figures) < PARALLEL_FIGURES or cores < 2:
        for job in figures:
            _save_sentence(job)
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(min(cores, len(figures)), mp_context=multiprocessing.get_context("spawn"),
                               initializer=_quiet_worker)
    try:
        # chunks of a few: a Ctrl-C or an error stops the work soon, each process stays fed
        for _ in pool.map(_save_sentence, figures, chunksize=max(4, len(figures) // (16 * cores))):
            pass
    finally:  # an error or Ctrl-C: the figures not yet started are dropped, the workers end
        pool.shutdown(wait=True, cancel_futures=True)


def attention_stats_figure(entropy: np.ndarray, eos: np.ndarray):
    """Histograms of the forward direction's attention entropy and EOS mass per target word."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, NullFormatter

    fig, axes = plt.subplots(1, 2, figsize=(8, 3), layout="constrained")
    axes[0].hist(entropy, bins=40, color="#4a78b5")
    axes[0].set_xlabel("attention entropy per target word (nats)")
    axes[0].set_title("forward direction: entropy", fontsize=9)
    axes[1].hist(eos, bins=40, color="#d95f02")
    axes[1].set_yscale("log")  # most words put almost nothing on EOS; the tail is what matters
    # plain numbers: the log axis's default labels are TeX, which the words' settings turn off
    axes[1].yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axes[1].yaxis.set_minor_formatter(NullFormatter())
    axes[1].set_xlabel("attention mass on EOS per target word")
    axes[1].set_title("forward direction: EOS mass (log count)", fontsize=9)
    for a in axes:
        a.set_ylabel("target words")
    return fig
