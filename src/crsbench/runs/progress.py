"""Rich progress display for a benchmark run (driven by the pipeline's events)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


class RunProgress:
    """Context manager turning pipeline events into a cell progress bar and stage lines."""

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console()
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[last]}"),
            console=self.console,
        )
        self.task: Any = None

    def __enter__(self) -> RunProgress:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.__exit__(*exc)

    def __call__(self, event: str, info: dict[str, Any]) -> None:
        """Handle one pipeline event (``moved``, ``plan``, ``cell`` or ``quarantine``)."""
        if event == "quarantine":
            self.console.print(quarantine_line(info), markup=False, highlight=False, soft_wrap=True)
        elif event == "moved":
            for source, target in info["moved"]:
                self.console.print(f"moved {escape(source)} -> {escape(target)} (another config)")
        elif event == "plan":
            todo = info["cells"] - info["done"]
            self.console.print(
                f"plan: {info['cells']} cells ({info['done']} already done, {todo} to run), "
                f"{info['records']} run records"
                + (
                    f" ({info['lora_records']} of the LoRA regime)"
                    if info.get("lora_records")
                    else ""
                )
                + f", {info['extractions']} feature sets"
            )
            self.task = self.progress.add_task("cells", total=todo, last="")
        elif event == "cell" and self.task is not None:
            last = (
                f"{info['encoder']} × {info['dataset']}: {info['records']} records "
                f"(extract {info['extract_s']:.1f}s, probes {info['evaluate_s']:.1f}s)"
            )
            self.progress.update(self.task, advance=1, last=last)
            if not self.console.is_terminal:  # a log file gets one line per cell
                self.console.print(f"cell done: {escape(str(last))}")


def quarantine_line(entry: dict[str, Any]) -> str:
    """One console line naming a quarantined image, its split and why (user text as is)."""
    reason = entry["error_class"] + (f": {entry['message']}" if entry.get("message") else "")
    return (
        f"quarantined {entry['dataset']} {entry['split']} image {entry['image_id']}: "
        f"{entry['path']} ({reason}); the cells run without it"
    )
