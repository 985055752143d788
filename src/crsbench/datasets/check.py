"""``check``: validate a dataset on disk and summarise it (the ``datasets check`` command).

The labels are loaded with the adapter (any malformed label file is reported, not raised),
then every image is probed: existence, size > 0, image magic / header and end-of-image
marker; ``decode=True`` adds a full decode. ``report.ok`` is False on anything that would
make results wrong.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from crsbench.core.errors import DataError

from .base import Dataset, load
from .files import FileProblem, probe_images

SHOWN = 5


@dataclass
class CheckReport:
    """What ``check`` found. ``ok`` is False when anything would make results wrong."""

    name: str
    root: str
    options: dict[str, Any] = field(default_factory=dict)
    n_images: int = 0
    task: str = ""
    revision: str = ""
    split_counts: dict[str, int] = field(default_factory=dict)
    n_groups: int = 0
    label_names: tuple[str, ...] = ()
    n_positive: dict[str, int] = field(default_factory=dict)
    n_masked: dict[str, int] = field(default_factory=dict)
    prevalence: dict[str, float] = field(default_factory=dict)
    file_problems: list[FileProblem] = field(default_factory=list)
    duplicate_ids: int = 0
    leaked_groups: int = 0
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    decoded: bool = False

    @property
    def ok(self) -> bool:
        """True when there is no error, no bad file, no duplicate id and no group leak."""
        return not (self.errors or self.file_problems or self.duplicate_ids or self.leaked_groups)

    @property
    def problem_counts(self) -> dict[str, int]:
        """Number of bad files per error class (missing, empty, truncated, ...)."""
        return dict(Counter(p.error_class for p in self.file_problems))

    def _problem_lines(self) -> list[str]:
        lines = []
        for kind, count in sorted(self.problem_counts.items()):
            lines.append(f"{kind}: {count} file(s)")
            shown = [p for p in self.file_problems if p.error_class == kind][:SHOWN]
            lines += [f"  row {p.row + 1}: {p.path} ({p.message})" for p in shown]
            if count > SHOWN:
                lines.append(f"  ... and {count - SHOWN} more")
        return lines

    def to_text(self) -> str:
        """Plain-text report."""
        out = [f"dataset {self.name} at {self.root}: {'OK' if self.ok else 'FAILED'}"]
        if self.n_images:
            out.append(f"images: {self.n_images} ({self.task}), groups: {self.n_groups}")
            out.append(f"revision: {self.revision[:16]}")
            out.append("splits: " + ", ".join(f"{k}={v}" for k, v in self.split_counts.items()))
            out.append("label              positives   masked   prevalence")
            for label in self.label_names:
                out.append(
                    f"{label[:18]:<18} {self.n_positive[label]:>9} {self.n_masked[label]:>8} "
                    f"{self.prevalence[label]:>12.4f}"
                )
            files = "decoded" if self.decoded else "header-checked"
            out.append(f"files ({files}): {len(self.file_problems)} problem(s)")
        out += self._problem_lines()
        if self.duplicate_ids:
            out.append(f"duplicate image ids: {self.duplicate_ids}")
        if self.leaked_groups:
            out.append(f"groups in more than one official split: {self.leaked_groups}")
        out += [f"error: {e}" for e in self.errors]
        out += [f"warning: {w}" for w in self.warnings]
        out += [f"note: {n}" for n in self.notes]
        return "\n".join(out)

    def to_rich(self) -> Any:
        """A rich renderable (table of labels plus problem lines)."""
        from rich.console import Group
        from rich.table import Table
        from rich.text import Text

        status = "[bold green]OK[/]" if self.ok else "[bold red]FAILED[/]"
        head = Text("dataset ")
        head.append(str(self.name), style="bold")
        head.append(f" at {self.root}: ")
        head.append_text(Text.from_markup(status))
        parts: list[Any] = [head]
        if self.n_images:
            splits = ", ".join(f"{k}={v}" for k, v in self.split_counts.items())
            parts.append(
                Text(
                    f"{self.n_images} images ({self.task}), {self.n_groups} groups; "
                    f"splits: {splits}; revision {self.revision[:16]}"
                )
            )
            table = Table(title="labels")
            for column in ("label", "positives", "masked", "prevalence"):
                table.add_column(column, justify="left" if column == "label" else "right")
            for label in self.label_names:
                table.add_row(
                    Text(str(label)),
                    str(self.n_positive[label]),
                    str(self.n_masked[label]),
                    f"{self.prevalence[label]:.4f}",
                )
            parts.append(table)
            files = "decoded" if self.decoded else "header-checked"
            parts.append(Text(f"files ({files}): {len(self.file_problems)} problem(s)"))
        lines = self._problem_lines()
        if self.duplicate_ids:
            lines.append(f"duplicate image ids: {self.duplicate_ids}")
        if self.leaked_groups:
            lines.append(f"groups in more than one official split: {self.leaked_groups}")
        parts += [Text(line, style="red") for line in lines]
        parts += [Text(f"error: {e}", style="bold red") for e in self.errors]
        parts += [Text(f"warning: {w}", style="yellow") for w in self.warnings]
        parts += [Text(f"note: {n}", style="dim") for n in self.notes]
        return Group(*parts)


def _summarise(report: CheckReport, data: Dataset) -> None:
    report.n_images = len(data)
    report.task = data.task
    report.revision = data.revision
    report.options = dict(data.options)
    report.label_names = data.label_names
    report.n_groups = len(np.unique(data.groups))
    report.notes += list(data.notes)
    if "official_split" in data.metadata.columns:
        splits = data.metadata["official_split"].to_numpy(dtype=str)
        names, counts = np.unique(splits, return_counts=True)
        report.split_counts = {str(k): int(v) for k, v in zip(names, counts, strict=True)}
        pairs = np.unique(np.stack([data.groups, splits], axis=1), axis=0)
        _, n_splits = np.unique(pairs[:, 0], return_counts=True)
        report.leaked_groups = int((n_splits > 1).sum())
        if report.leaked_groups:
            report.errors.append(
                f"{report.leaked_groups} group(s) (patients) appear in more than one official "
                "split; the official splits must be group-disjoint."
            )
    else:
        report.split_counts = {"all": len(data)}
    labels = data.labels
    masked = np.isnan(labels)
    positives = np.nansum(labels, axis=0)
    labelled = (~masked).sum(axis=0)
    for j, label in enumerate(data.label_names):
        report.n_positive[label] = int(positives[j])
        report.n_masked[label] = int(masked[:, j].sum())
        report.prevalence[label] = float(positives[j] / labelled[j]) if labelled[j] else 0.0
        if label not in data.provided_label_names:
            continue
        if positives[j] == 0:
            report.warnings.append(f"label {label!r} has no positive image")
    missing = [name for name in data.label_names if name not in data.provided_label_names]
    if missing:
        report.notes.append(f"labels not provided by this dataset (all NaN): {', '.join(missing)}")
    report.duplicate_ids = len(data) - len(np.unique(data.image_ids))


def check(
    name: str, root: str | Path, *, decode: bool = False, workers: int = 8, **options: Any
) -> CheckReport:
    """Validate dataset ``name`` under ``root``; never raises for bad data, reports it.

    Parameters
    ----------
    name : str
        Registered dataset name.
    root : str or Path
        Dataset root.
    decode : bool, default False
        Fully decode every image (slow) instead of header + end-marker checks.
    workers : int, default 8
        Threads probing files.
    **options
        Adapter options (``uncertainty``, ...); ``check_files`` is ignored, files are probed.

    Returns
    -------
    CheckReport
    """
    options.pop("check_files", None)
    report = CheckReport(name=name, root=str(root), decoded=decode)
    try:
        data = load(name, root, check_files=False, **options)
    except DataError as exc:
        report.errors.append(str(exc))
        return report
    _summarise(report, data)
    report.file_problems = probe_images(data.paths, decode=decode, workers=workers)
    return report
