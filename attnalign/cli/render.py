"""Rich tables and lines for the terminal: the CLI's views of library results."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from ..eval.plot import printable, settings_text
from ..eval.scoring import ScoreReport, SystemScore
from ..eval.significance import LEVEL, Interval


def pct(x: float) -> str:
    return f"{100 * x:.2f}"


def with_interval(x: float, iv: Interval | None) -> str:
    """A score in % with its interval: ``5.70 [5.21, 6.19]``."""
    return pct(x) if iv is None else f"{pct(x)} [{pct(iv.low)}, {pct(iv.high)}]"


def signed(x: float) -> str:
    return f"{100 * x:+.2f}"


def p_text(p: float) -> str:
    return f"{p:.4f}" if p >= 0.0001 else "<0.0001"


def score_table(report: ScoreReport, intervals: bool = False) -> Table:
    """One row per system: AER, precision, recall, F1 (in %; with ``intervals`` each with its interval)
    and the link counts; after a paired test, each system's AER difference to the first, its interval and
    p-value."""
    level = f"{round(100 * LEVEL)}%"
    title = "Alignment scores (%" + (f", {level} intervals" if intervals else "") + ")"
    signature = Text(report.signature, no_wrap=True, overflow="ignore")  # one line, to copy whole
    t = Table(title=title, caption=signature, title_justify="left")
    t.add_column("system", no_wrap=True)
    for name in ("AER", "P", "R", "F1", "links", "sure", "possible", "sentences"):
        t.add_column(name, justify="right")
    if report.paired:
        for name in ("ΔAER", f"{level} interval", "p"):
            t.add_column(name, justify="right")
    best = min(s.total.aer for s in report.systems) if report.systems else None
    for s in report.systems:
        c = s.total
        ivs = (s.intervals or {}) if intervals else {}
        aer = Text(with_interval(c.aer, ivs.get("aer")),
                   style="bold" if len(report.systems) > 1 and c.aer == best else "")
        row = [Text(printable(s.name)), aer, *(with_interval(getattr(c, m), ivs.get(m))
                                               for m in ("precision", "recall", "f1")),
               str(c.hyp), str(c.sure), str(c.possible), str(c.sentences)]
        if report.paired:
            d = s.paired
            row += (["baseline", "", ""] if d is None else
                    [signed(d.delta), f"[{signed(d.interval.low)}, {signed(d.interval.high)}]",
                     p_text(d.p_value)])
        t.add_row(*row)
    return t


def breakdown_table(s: SystemScore) -> Table:
    """One system's scores (%) by band: :mod:`attnalign.eval.breakdown`."""
    t = Table(title=Text(f"Breakdown of {printable(s.name)} (%)"), title_justify="left",
              caption=Text("frequency: the source word's count in the text; distance: source words off "
                           "the diagonal; extra: predicted links the gold lacks; a type band has no "
                           "precision (its links are all gold links, or in the extra bands none)"))
    for name in ("by", "band", "links", "sure", "possible", "P", "R", "AER"):
        t.add_column(name, justify="left" if name in ("by", "band") else "right")
    for b in s.bands or []:
        c = b.counts
        t.add_row(b.dimension, b.band, str(c.hyp), str(c.sure), str(c.possible),
                  pct(c.precision) if c.hyp and b.has_precision else "-", pct(c.recall) if c.sure else "-",
                  pct(c.aer) if c.hyp or c.sure else "-")
    return t


def train_table(model, summary: dict) -> Table:
    """One row per trained direction: best step, dev loss and AER, steps, time."""
    t = Table(title=Text(f"Trained {model}"), title_justify="left")
    for col in ("direction", "best step", "dev loss", "dev AER (%)", "steps", "time (s)"):
        t.add_column(col, justify="right")
    for d, r in summary["directions"].items():
        aer = "-" if r.get("dev_aer") is None else f"{100 * r['dev_aer']:.2f}"
        loss = "-" if r.get("dev_loss") is None else f"{r['dev_loss']:.3f}"
        t.add_row(d, str(r["best_step"]), loss, aer, str(r["steps"]), f"{r['elapsed_s']:.1f}")
    return t


def links_table(pair, settings: dict) -> Table:
    """One aligned pair's links with their words and weights (``align sentence``)."""
    table = Table(title="Links", caption=Text(settings_text(settings)), title_justify="left")
    for col in ("src", "source word", "tgt", "target word", "weight"):
        table.add_column(col, justify="right" if col in ("src", "tgt", "weight") else "left")
    for i, j in sorted(pair.links, key=lambda link: (link[1], link[0])):
        weight = f"{pair.scores.get((i, j), 0.0):.3f}"
        table.add_row(str(i), Text(printable(pair.src[i])), str(j), Text(printable(pair.tgt[j])), weight)
    return table


def align_summary_text(summary) -> str:
    """The closing lines of ``align corpus`` on stderr."""
    return (f"aligned {summary.pairs} pairs ({summary.skipped} skipped) in {summary.seconds:.1f} s "
            f"({summary.pairs_per_s:,.0f} pairs/s); {summary.links} links; "
            f"attention mass on EOS {100 * summary.eos_mass:.1f}% per target word, "
            f"{summary.eos_argmax} target words left unlinked by an EOS argmax\n"
            "settings: " + settings_text(summary.settings))
