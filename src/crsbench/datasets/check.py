"""``check``: validate a dataset on disk and summarise it (the ``datasets check`` command).

The labels are loaded with the adapter (any malformed label file is reported, not raised),
then every image is probed: existence, size > 0, image magic / header and end-of-image
marker; ``decode=True`` adds a full decode. ``report.ok`` is False on anything that would
make results wrong; unreadable images follow the rule of ``crsbench run``
(:mod:`crsbench.datasets.bad_images`): within the budget they are warnings, above it an error.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from crsbench.core.errors import DataError

from .bad_images import MAX_BAD_FRACTION, bad_image_budget, too_many_bad
from .base import Dataset, load
from .bounds import ImageBounds
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
        """True when there is no error, no duplicate id and no more bad files than
        :mod:`crsbench.datasets.bad_images` lets ``crsbench run`` quarantine."""
        too_many = too_many_bad(len(self.file_problems), self.n_images)
        return not (self.errors or too_many or self.duplicate_ids)

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

    def head_lines(self) -> list[str]:
        """The lines above the label table: status, size, revision, splits."""
        out = [f"dataset {self.name} at {self.root}: {'OK' if self.ok else 'FAILED'}"]
        if self.n_images:
            out.append(f"images: {self.n_images} ({self.task}), groups: {self.n_groups}")
            out.append(f"revision: {self.revision[:16]}")
            out.append("splits: " + ", ".join(f"{k}={v}" for k, v in self.split_counts.items()))
        return out

    def summary_line(self) -> str:
        """Size, task, groups, splits and revision in one line (the terminal's wording)."""
        splits = ", ".join(f"{k}={v}" for k, v in self.split_counts.items())
        return (f"{self.n_images} images ({self.task}), {self.n_groups} groups; "
                f"splits: {splits}; revision {self.revision[:16]}")  # fmt: skip

    def label_rows(self) -> list[dict[str, Any]]:
        """One row per label: ``label``, ``positives``, ``masked``, ``prevalence``."""
        return [{"label": label, "positives": self.n_positive[label],
                 "masked": self.n_masked[label], "prevalence": f"{self.prevalence[label]:.4f}"}
                for label in self.label_names]  # fmt: skip

    def tail_lines(self) -> list[str]:
        """The lines below the label table: file problems, errors, warnings, notes."""
        return self.to_text().splitlines()[len(self.head_lines()) + self._table_height() :]

    def _table_height(self) -> int:
        return 1 + len(self.label_names) if self.n_images else 0

    def to_text(self) -> str:
        """Plain-text report."""
        out = self.head_lines()
        if self.n_images:
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
            parts.append(Text(self.summary_line()))
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


def _check_official_groups(report: CheckReport, data: Dataset, splits: np.ndarray) -> None:
    """Patients in two official splits: an error exactly when ``crsbench run`` refuses them.

    The split policy decides (``crsbench.splits``): a patient whose official rows map to two
    of our splits is refused by ``run`` and is an error here; one whose rows the policy can
    keep together (e.g. CheXpert train + valid: the whole patient goes to test) is a warning.
    Patients are named by the sha256 prefix of their id, as every split message does.
    """
    from crsbench.splits import hash_group, make_splits

    pairs = np.unique(np.stack([data.groups.astype(str), splits], axis=1), axis=0)
    ids, n_splits = np.unique(pairs[:, 0], return_counts=True)
    leaking = ids[n_splits > 1]
    report.leaked_groups = len(leaking)
    try:
        make_splits(data, seed=0)
    except DataError as exc:
        if "official split" in str(exc):  # leakage in the source: run refuses the data
            report.errors.append(str(exc))
            return
        report.warnings.append(f"`crsbench run` with the default split fractions: {exc}")
    if len(leaking):
        shown = ", ".join(hash_group(g) for g in leaking[:5])
        report.warnings.append(
            f"{len(leaking)} group(s) (patients) appear in more than one official split "
            f"(first sha256[:12] of their ids: {shown}); the split policy keeps each of them "
            "in one split, so `crsbench run` accepts the data."
        )


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
        _check_official_groups(report, data, splits)
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
    name: str,
    root: str | Path,
    *,
    decode: bool = False,
    workers: int = 8,
    image_bounds: ImageBounds | None = None,
    **options: Any,
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
    image_bounds : ImageBounds, optional
        The image geometry a run would accept (its config's ``image_bounds``; default: the
        built-in bounds).
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
    report.file_problems = probe_images(data.paths, decode=decode, workers=workers,
                                        bounds=image_bounds)  # fmt: skip
    _judge_bad_files(report)
    return report


def _judge_bad_files(report: CheckReport) -> None:
    """Apply the bad-image rule of ``crsbench run`` to the files found bad (listed below)."""
    n_bad = len(report.file_problems)
    if not n_bad:
        return
    budget = bad_image_budget(report.n_images)
    share = f"{MAX_BAD_FRACTION:.0%} of {report.n_images} images = {budget}"
    if too_many_bad(n_bad, report.n_images):
        report.errors.append(
            f"{n_bad} unreadable image(s), more than `crsbench run` quarantines ({share}): "
            "a run on this dataset fails. Fix or remove the files listed above."
        )
    else:
        report.warnings.append(
            f"{n_bad} unreadable image(s), within what `crsbench run` quarantines ({share}): "
            "a run leaves them out of every split, names them and counts them per split."
        )
