"""``crsbench profile``: check a local cohort, then run the benchmark's pipeline on it.

The run itself is :func:`crsbench.runs.pipeline.run_benchmark` on the config of
:func:`crsbench.cohort.profile_config.cohort_config` (one ``folder`` dataset), so a profile is resumable
like ``crsbench run`` and its store is a benchmark store: ``crsbench score``, ``report`` and
``status`` read it. Every check of :mod:`crsbench.cohort.checks` runs first; a refused cohort
leaves nothing written.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from crsbench.cohort import checks
from crsbench.cohort.profile_config import COHORT_DATASET, cohort_config
from crsbench.cohort.spec import CohortSpec
from crsbench.core.errors import DataError
from crsbench.store.outputs import write_output_file

#: The cohort's summary, written next to the store.
COHORT_FILE = "cohort.json"


@dataclass(frozen=True)
class ProfileResult:
    """What one ``crsbench profile`` did: the run's summary, the cohort and the choices."""

    run: Any
    cohort: checks.CohortSummary
    reasons: list[str]
    verdict: Path | None = None


def _load(spec: CohortSpec, max_images: int | None) -> tuple[Any, np.ndarray]:
    """The cohort through the ``folder`` adapter (capped) and its rows' CSV data rows."""
    from crsbench.cohort.profile_config import folder_options
    from crsbench.datasets import load
    from crsbench.runs.prepare import cap_rows, subset_dataset

    try:
        ds = load(COHORT_DATASET, spec.images, **folder_options(spec), check_files=False)
    except DataError as exc:
        raise checks.CohortError(
            str(exc),
            "correct the cell named above in the CSV (multi-label columns hold 0 or 1; "
            "blank cells need missing: mask; --classes lists the allowed classes), then rerun.",
        ) from None
    rows = cap_rows(np.asarray(ds.image_ids), np.asarray(ds.groups), max_images)
    if len(rows) < len(ds):
        ds = subset_dataset(ds, rows, max_images)
    return ds, rows


def check_cohort(spec: CohortSpec, split_seed: int = 0) -> tuple[Any, checks.CohortSummary]:
    """Every check of a cohort; raises :class:`~crsbench.cohort.checks.CohortError`."""
    from crsbench.calibration import load_recal_protocol
    from crsbench.splits import make_splits

    csv = Path(spec.data)
    ds, rows = _load(spec, spec.max_images)
    if spec.group_column and not spec.labels_per_image:
        checks.check_patient_labels(ds, csv, spec.group_column, rows)
    checks.check_two_classes(ds, csv, spec.label_columns)
    checks.check_class_counts(ds, csv, spec.label_columns)
    try:
        splits = make_splits(ds, seed=split_seed)
    except DataError as exc:
        raise checks.CohortError(str(exc), "add images from more patients.") from None
    warnings = checks.check_split_classes(ds, splits, csv, load_recal_protocol().min_per_class)
    warnings += checks.check_images(ds, csv, spec.path_column, rows, spec.image_bounds)
    labels = checks.label_matrix(ds)
    return ds, checks.CohortSummary(
        n_images=len(ds),
        n_patients=len(np.unique(np.asarray(ds.groups))),
        task=ds.task,
        labels=tuple(ds.label_names),
        prevalence={n: float(np.nanmean(labels[:, j])) for j, n in enumerate(ds.label_names)},
        positives={n: int(np.nansum(labels[:, j])) for j, n in enumerate(ds.label_names)},
        split_sizes=dict(splits.sizes()),
        warnings=tuple(warnings),
    )


def profile_cohort(
    spec: CohortSpec,
    *,
    on_event: Callable[[str, dict[str, Any]], None] | None = None,
    progress: bool = False,
    force: bool = False,
    skip_missing: bool = False,
    verdict: bool = True,
    update_weights_lock: bool = False,
    jobs: int | None = None,
) -> ProfileResult:
    """Check the cohort, run the pipeline on it (resumable), write ``cohort.json`` and the verdict.

    Parameters
    ----------
    spec : CohortSpec
    on_event : callable, optional
        Receives the run's events (see :func:`~crsbench.runs.pipeline.run_benchmark`) and
        ``cohort`` (the summary and the reasons) before the run starts.
    force, skip_missing, update_weights_lock : bool
        As for ``crsbench run``.
    verdict : bool
        Write the verdict page (``verdict.html``) after the run.
    jobs : int, optional
        Worker processes fitting the probes (``None``: every available core); the records
        do not depend on it.
    """
    from crsbench.runs.pipeline import RunOptions, run_benchmark

    emit = on_event or (lambda *_: None)
    ds, summary = check_cohort(spec)
    cfg, reasons = cohort_config(spec, summary.n_images)
    emit("cohort", {"summary": summary, "reasons": reasons})
    opts = RunOptions(progress=progress, force=force, on_event=emit, skip_missing=skip_missing,
                      jobs=jobs, update_weights_lock=update_weights_lock)  # fmt: skip
    run = run_benchmark(cfg, opts)
    info = {**summary.as_dict(), "choices": reasons, "csv": str(Path(spec.data).resolve()),
            "images": str(Path(spec.images).resolve()), "label_columns": list(spec.label_columns),
            "group_column": spec.group_column, "revision": ds.revision,
            "image_bounds": spec.image_bounds.as_dict(),
            "metadata_columns": [str(c) for c in ds.metadata.columns]}  # fmt: skip
    text = json.dumps(info, indent=2)
    write_output_file(run.out_dir / COHORT_FILE, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    page = None
    if verdict:
        from crsbench.cohort.verdict_page import write_verdict

        page = write_verdict(run.out_dir)
    return ProfileResult(run, summary, reasons, page)
