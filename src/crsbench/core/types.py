"""Frozen value types shared across stages."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Task = Literal["multiclass", "multilabel"]
TASKS: tuple[str, ...] = ("multiclass", "multilabel")
#: The four splits of a dataset (patient-level, :mod:`crsbench.splits`).
SPLIT_NAMES: tuple[str, ...] = ("train", "val", "calib", "test")


def check_task(task: str) -> Task:
    """Return ``task`` if valid, else raise ``ValueError`` in the sklearn style."""
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}. Got {task!r} instead.")
    return task  # type: ignore[return-value]


@dataclass(frozen=True)
class Condition:
    """One evaluation condition of the test images.

    ``name`` is ``"clean"``, a perturbation name, or ``"shift"``; ``severity`` is 0 for
    clean and shift, 1–3 for perturbations.
    """

    name: str = "clean"
    severity: int = 0

    @property
    def key(self) -> str:
        """Stable string form, e.g. ``"clean"`` or ``"blur@2"``."""
        return self.name if self.severity == 0 else f"{self.name}@{self.severity}"
