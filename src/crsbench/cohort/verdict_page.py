"""The verdict page of a cohort profile: the verdict computed once and stored in the
profile's ``computed/`` folder (:func:`crsbench.stats.compute.stored_verdict`), then written
by the report (:func:`crsbench.report.verdict.save_verdict`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from crsbench.report.verdict import save_verdict
from crsbench.report.verdict_data import VerdictData, verdict_from_computed
from crsbench.stats.compute import stored_verdict


def verdict_data(store_dir: Path | str, compare: Path | None = None,
                 interval: str = "test-patients",
                 say: Callable[[str], None] | None = None) -> VerdictData:  # fmt: skip
    """The verdict of the profile in ``store_dir`` as the page shows it: read from the
    profile's ``computed/`` folder, computed and stored first when absent or stale (``say``
    is told which). ``compare`` and ``interval`` as
    :func:`crsbench.stats.cohort_verdict.compute_verdict`."""
    return verdict_from_computed(stored_verdict(Path(store_dir), compare, interval, say=say))


def write_verdict(store_dir: Path | str, compare: Path | None = None, out: Path | None = None,
                  interval: str = "test-patients") -> Path:  # fmt: skip
    """Write the verdict page of the profile in ``store_dir`` (default
    ``store_dir/verdict.html``) from its stored verdict; return the path."""
    return save_verdict(verdict_data(store_dir, compare, interval), store_dir, out)
