"""Rich progress on stderr for long work (training, extraction)."""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.text import Text


class RichTrainReporter:
    """Draws training progress (direction, step, loss, tokens/s, ETA) and validation lines on stderr."""

    def __init__(self, console: Console | None = None):
        self.console = console or Console(stderr=True, markup=False)
        self.progress: Progress | None = None
        self.task = None

    def start(self, direction: str, total_steps: int, done_steps: int) -> None:
        self.progress = Progress(
            TextColumn(f"[bold]{direction}[/bold]"), BarColumn(), MofNCompleteColumn(),
            TextColumn("loss {task.fields[loss]}"), TextColumn("{task.fields[tps]} tok/s"),
            TimeRemainingColumn(), console=self.console, transient=False)
        self.task = self.progress.add_task(direction, total=total_steps, completed=done_steps,
                                           loss="-", tps="-")
        self.progress.start()

    def note(self, message: str) -> None:
        self.console.print(Text(message))

    def step(self, step: int, loss: float, tokens_per_s: float) -> None:
        self.progress.update(self.task, completed=step, loss=f"{loss:.3f}", tps=f"{tokens_per_s:,.0f}")

    def validation(self, row: dict) -> None:
        parts = [f"epoch {row['epoch']}", f"step {row['step']}", f"train loss {row['train_loss']:.3f}"]
        if row.get("dev_loss") is not None:
            parts += [f"dev loss {row['dev_loss']:.3f}", f"dev ppl {row['dev_ppl']:.2f}"]
        if row.get("dev_aer") is not None:
            parts.append(f"dev AER {100 * row['dev_aer']:.2f}")
        line = Text(f"{row['direction']}: " + ", ".join(parts))
        if row.get("best"):
            line.append(", ").append("best", style="green")
        self.progress.console.print(line)

    def end(self) -> None:
        if self.progress is not None:
            self.progress.stop()
