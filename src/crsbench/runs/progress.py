"""Progress display for a benchmark run (driven by the pipeline's events).

On a terminal: a rich progress bar of cells. Anywhere else (a pipe, a log file, CI): no bar
and no carriage-return redraws, one plain line per stage and per cell instead.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from crsbench.core.verbosity import NORMAL, QUIET, VERBOSE


class RunProgress:
    """Context manager turning pipeline events into a cell progress bar and stage lines.

    Parameters
    ----------
    console : rich Console, optional
    verbosity : int
        :data:`QUIET`, :data:`NORMAL` or :data:`VERBOSE` (one line per cell on a terminal too).
    bars : bool
        Draw the bar when the console is a terminal (``--no-progress`` turns it off).
    """

    def __init__(
        self, console: Console | None = None, *, verbosity: int = NORMAL, bars: bool = True
    ) -> None:
        self.console = console or Console()
        self.verbosity = verbosity
        self.bars = bars and verbosity > QUIET and self.console.is_terminal
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[last]}"),
            console=self.console,
            disable=not self.bars,
        )
        self.task: Any = None

    def __enter__(self) -> RunProgress:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.__exit__(*exc)

    def say(self, text: str, level: int = NORMAL) -> None:
        """Print one line (literally) when the verbosity is at least ``level``."""
        if self.verbosity >= level:
            self.console.print(escape(text), soft_wrap=True)

    def __call__(self, event: str, info: dict[str, Any]) -> None:
        """Handle one pipeline event: ``preflight``, ``quarantine``, ``moved``, ``plan``,
        ``stage_start``, ``stage`` or ``cell``."""
        if event == "preflight":
            report = info["report"]
            for i, line in enumerate(report.lines()):
                self.say(line, NORMAL if i == 0 or not report.ok else VERBOSE)
        elif event == "quarantine":  # changes what a cell is computed on: shown even --quiet
            self.say(quarantine_line(info), QUIET)
        elif event == "moved":
            for source, target in info["moved"]:
                self.say(f"moved {source} -> {target} ({info.get('reason') or 'another config'})")
        elif event == "plan":
            self._plan(info)
        elif event == "stage_start":
            self.say(f"stage {info['name']} ...")
        elif event == "stage":
            self.say(f"stage {info['name']} done ({info['seconds']:.1f} s)", VERBOSE)
        elif event == "cell" and self.task is not None:
            last = (
                f"{info['encoder']} × {info['dataset']}: {info['records']} records "
                f"(extract {info['extract_s']:.1f}s, probes {info['evaluate_s']:.1f}s)"
            )
            self.progress.update(self.task, advance=1, last=escape(last))
            if not self.bars or self.verbosity >= VERBOSE:
                self.say(f"cell done: {last}")

    def _plan(self, info: dict[str, Any]) -> None:
        todo = info["cells"] - info["done"]
        lora = f" ({info['lora_records']} of the LoRA regime)" if info.get("lora_records") else ""
        skipped = (
            f"; {info['skipped']} cells skipped (missing inputs)" if info.get("skipped") else ""
        )
        self.say(
            f"plan: {info['cells']} cells ({info['done']} already done, {todo} to run), "
            f"{info['records']} run records{lora}, {info['extractions']} feature sets{skipped}"
        )
        self.task = self.progress.add_task("cells", total=todo, last="")


def quarantine_line(entry: dict[str, Any]) -> str:
    """One console line naming a quarantined image, its split and why (user text as is)."""
    reason = entry["error_class"] + (f": {entry['message']}" if entry.get("message") else "")
    return (
        f"quarantined {entry['dataset']} {entry['split']} image {entry['image_id']}: "
        f"{entry['path']} ({reason}); the cells run without it"
    )
