"""Rich tables for the terminal (the CLI's stdout views of library results)."""

from __future__ import annotations

from rich.table import Table

from .scoring import ScoreReport


def pct(x: float) -> str:
    return f"{100 * x:.2f}"


def score_table(report: ScoreReport) -> Table:
    """One row per system: AER, precision, recall, F1 (in %) and the link counts."""
    t = Table(title="Alignment scores (%)", caption=report.signature, title_justify="left")
    t.add_column("system", no_wrap=True)
    for name in ("AER", "P", "R", "F1", "links", "sure", "possible", "sentences"):
        t.add_column(name, justify="right")
    best = min(s.total.aer for s in report.systems) if report.systems else None
    for s in report.systems:
        c = s.total
        aer = pct(c.aer)
        if len(report.systems) > 1 and c.aer == best:
            aer = f"[bold]{aer}[/bold]"
        t.add_row(
            s.name, aer, pct(c.precision), pct(c.recall), pct(c.f1),
            str(c.hyp), str(c.sure), str(c.possible), str(c.sentences),
        )
    return t
