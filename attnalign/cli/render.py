"""Rich tables and lines for the terminal: the CLI's views of library results."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from ..eval.plot import printable, settings_text
from ..eval.scoring import ScoreReport


def pct(x: float) -> str:
    return f"{100 * x:.2f}"


def score_table(report: ScoreReport) -> Table:
    """One row per system: AER, precision, recall, F1 (in %) and the link counts."""
    t = Table(title="Alignment scores (%)", caption=Text(report.signature), title_justify="left")
    t.add_column("system", no_wrap=True)
    for name in ("AER", "P", "R", "F1", "links", "sure", "possible", "sentences"):
        t.add_column(name, justify="right")
    best = min(s.total.aer for s in report.systems) if report.systems else None
    for s in report.systems:
        c = s.total
        aer = Text(pct(c.aer), style="bold" if len(report.systems) > 1 and c.aer == best else "")
        t.add_row(
            Text(printable(s.name)), aer, pct(c.precision), pct(c.recall), pct(c.f1),
            str(c.hyp), str(c.sure), str(c.possible), str(c.sentences),
        )
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
