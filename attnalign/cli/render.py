"""Rich tables and lines for the terminal: the CLI's views of library results."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text

from ..eval.plot import printable, settings_text
from ..eval.scoring import ScoreReport, SystemScore
from ..eval.significance import LEVEL, Interval, signed_percent


def pct(x: float) -> str:
    return f"{100 * x:.2f}"


def with_interval(x: float, iv: Interval | None) -> str:
    """A score in % with its interval: ``5.70 [5.21, 6.19]``."""
    return pct(x) if iv is None else f"{pct(x)} [{pct(iv.low)}, {pct(iv.high)}]"


def p_text(p: float) -> str:
    return f"{p:.4f}" if p >= 0.0001 else "<0.0001"


COUNT_COLUMNS = ("links", "sure", "possible", "sentences")  # left out first where a table is too wide


def score_table(report: ScoreReport, intervals: bool = False, width: int | None = None) -> Group:
    """One row per system: AER, precision, recall, F1 (in %; with ``intervals`` each with its interval)
    and the link counts; after a paired test, each system's AER difference to the first, its interval and
    p-value; then the signature. Within ``width`` columns (None: no limit) every number stays whole:
    the counts are left out where the row is too wide, and where it is still too wide each system is a
    record of lines; the signature is wrapped at its ``|`` and never cut."""
    table = _scores(report, intervals, counts=True)
    if width is not None and _width(table) > width:
        table = _scores(report, intervals, counts=False)
        if _width(table) > width:
            table = _score_records(report, intervals)
    return Group(table, _wrapped(report.signature, width))


def _width(table: Table) -> int:
    from rich.console import Console

    return Console(width=10**4).measure(table).maximum


def _wrapped(signature: str, width: int | None) -> Text:
    """The signature in lines of at most ``width`` characters, each but the last ending in the ``|``
    after which it is broken (a field longer than a line alone has a line of its own): it is read and
    copied whole."""
    lines: list[str] = []
    for field in signature.split("|"):
        if lines and (width is None or len(lines[-1]) + len(field) + 2 <= width):
            lines[-1] += f"|{field}"
        else:
            lines.append(field)
    return Text("|\n".join(lines), style="dim", no_wrap=True, overflow="ignore")


def _cells(report: ScoreReport, s: SystemScore, intervals: bool) -> dict[str, str]:
    """One system's values, by column."""
    c = s.total
    ivs = (s.intervals or {}) if intervals else {}
    cells = {name: with_interval(getattr(c, m), ivs.get(m))
             for name, m in (("AER", "aer"), ("P", "precision"), ("R", "recall"), ("F1", "f1"))}
    cells |= {"links": str(c.hyp), "sure": str(c.sure), "possible": str(c.possible),
              "sentences": str(c.sentences)}
    if report.paired:
        d = s.paired
        cells |= ({"ΔAER": "baseline", "interval": "", "p": ""} if d is None else
                  {"ΔAER": signed_percent(d.delta),
                   "interval": f"[{signed_percent(d.interval.low)}, {signed_percent(d.interval.high)}]",
                   "p": p_text(d.p_value)})
    return cells


def _scores(report: ScoreReport, intervals: bool, counts: bool) -> Table:
    level = f"{round(100 * LEVEL)}%"
    title = "Alignment scores (%" + (f", {level} intervals" if intervals else "") + ")"
    t = Table(title=title, title_justify="left")
    t.add_column("system", no_wrap=True)
    names = ["AER", "P", "R", "F1", *(COUNT_COLUMNS if counts else ()),
             *(("ΔAER", "interval", "p") if report.paired else ())]
    for name in names:
        t.add_column(f"{level} interval" if name == "interval" else name, justify="right", no_wrap=True)
    best = min(s.total.aer for s in report.systems) if report.systems else None
    for s in report.systems:
        cells = _cells(report, s, intervals)
        bold = "bold" if len(report.systems) > 1 and s.total.aer == best else ""
        t.add_row(Text(printable(s.name)), *(Text(cells[n], style=bold if n == "AER" else "") for n in names))
    return t


def _score_records(report: ScoreReport, intervals: bool) -> Text:
    """The scores as one record of lines per system, for a terminal too narrow for the table."""
    level = f"{round(100 * LEVEL)}%"
    lines = ["Alignment scores (%" + (f", {level} intervals" if intervals else "") + ")"]
    for s in report.systems:
        cells = _cells(report, s, intervals)
        lines.append(printable(s.name))
        lines += [f"  {name} {cells[name]}" for name in ("AER", "P", "R", "F1")]
        lines += [f"  links {cells['links']}, sure {cells['sure']}",
                  f"  possible {cells['possible']}, sentences {cells['sentences']}"]
        if report.paired:
            lines.append(f"  ΔAER {cells['ΔAER']}" + (f" {cells['interval']}, p {cells['p']}"
                                                     if cells["p"] else ""))
    return Text("\n".join(lines))


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
