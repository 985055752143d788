"""``crsbench export-summary``: a cohort profile's store → one :class:`SiteSummary`.

The point values are the profile's own (the verdict's board: the four axes and the CRS on the
fixed anchors); the variances are those of the paired bootstrap over test patients × seeds
(:func:`crsbench.stats.uncertainty.crs_uncertainty`) with the settings' replicates: the
per-replicate CRS of each encoder and its per-replicate axes (mean over the encoder's cells).
Test-split sizes come from the stored test rows; counts below the small-cell threshold are
suppressed. Nothing patient-level leaves this module: the records hold numbers and names only.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from crsbench.consortium.settings import ConsortiumSettings, load_settings
from crsbench.consortium.summary import (
    QUANTITIES,
    EncoderSummary,
    Estimate,
    SiteSummary,
    TestSizes,
)
from crsbench.core.errors import DataError
from crsbench.scoring.anchors import AXES, Anchors


def _board(runs: pd.DataFrame, store_dir: Path, anchors: Anchors):
    """The encoders' axes and CRS (fixed anchors) and the per-seed axes that can be ranked."""
    from crsbench.scoring import aggregate_by_encoder, score_cells
    from crsbench.scoring.planned import planned_axes, ranked_per_seed

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        per_seed = planned_axes(runs, store_dir)
        cells = score_cells(per_seed, anchors)
        board = aggregate_by_encoder(cells)
    return board, ranked_per_seed(per_seed, cells)


def _bootstrap(per_seed: pd.DataFrame, store_dir: Path, anchors: Anchors, n_replicates: int):
    from crsbench.stats.patient_bootstrap import TEST_PATIENTS_X_SEEDS
    from crsbench.stats.uncertainty import crs_uncertainty

    unc = crs_uncertainty(per_seed, anchors, store=store_dir, interval="test-patients",
                          n_replicates=n_replicates, seed=0)  # fmt: skip
    if unc.method != TEST_PATIENTS_X_SEEDS:
        raise DataError(f"{store_dir}: a site summary needs the bootstrap over test patients, "
                        f"and {unc.note}. Profile the cohort again with this crsbench.")  # fmt: skip
    return unc.result


def _variances(res) -> dict[str, dict[str, float]]:
    """Encoder → quantity → bootstrap variance (ddof 1)."""
    encoders = sorted({e for e, _ in res.cell_keys})
    out: dict[str, dict[str, float]] = {}
    for j, enc in enumerate(encoders):
        idx = [i for i, (e, _) in enumerate(res.cell_keys) if e == enc]
        axes = res.axes[:, idx, :].mean(axis=1)
        out[enc] = {a: float(np.var(axes[:, k], ddof=1)) for k, a in enumerate(AXES)}
        out[enc]["CRS"] = float(np.var(res.replicates[:, j], ddof=1))
    return out


def _suppress(name: str, n: int, min_cell: int, suppressed: list[str]) -> int | None:
    if n < min_cell:
        suppressed.append(name)
        return None
    return n


def _sizes(store_dir: Path, cell: tuple[str, str], seeds: list[int], labels: tuple[str, ...],
           min_cell: int) -> tuple[TestSizes, tuple[str, ...], str]:  # fmt: skip
    """Test-split counts of the profile's dataset (suppressed below ``min_cell``), the names
    of the suppressed counts and the task."""
    from crsbench.stats.store_predictions import load_store_predictions

    pred = load_store_predictions(store_dir, [cell], seeds).cells[cell]
    y, groups = np.asarray(pred.test.y), np.asarray(pred.test.groups).astype(str)
    if y.ndim == 2:
        counts = [int(np.nansum(y[:, j])) for j in range(y.shape[1])]
    else:
        counts = [int(np.sum(y == j)) for j in range(len(labels))]
    hidden: list[str] = []
    sizes = TestSizes(
        _suppress("test_sizes.images", len(y), min_cell, hidden),
        _suppress("test_sizes.patients", len(np.unique(groups)), min_cell, hidden),
        {name: _suppress(f"test_sizes.per_label.{name}", n, min_cell, hidden)
         for name, n in zip(labels, counts, strict=True)},
    )  # fmt: skip
    return sizes, tuple(hidden), pred.task


def _weights(lock_entry: dict | None) -> dict[str, str] | None:
    if not lock_entry or not lock_entry.get("files"):
        return None
    return {str(f["file"]): str(f["sha256"]) for f in lock_entry["files"]}


def build_summary(store_dir: Path | str, site: str,
                  settings: ConsortiumSettings | None = None) -> SiteSummary:  # fmt: skip
    """The site summary of the cohort profile in ``store_dir`` (see the module).

    Raises
    ------
    DataError
        The store is not a one-dataset profile, has no scored encoder, or has no per-sample
        predictions for the test-patient bootstrap.
    """
    from crsbench import __version__
    from crsbench.protocol import RECAL_VERSION, SEVERITIES_VERSION
    from crsbench.scoring.anchors import anchors_for_runs
    from crsbench.store import load_runs, read_card_facts

    settings = settings or load_settings()
    store_dir = Path(store_dir)
    if not site.strip():
        raise DataError("--site must name the site (e.g. hospital_a). Got an empty name.")
    runs = load_runs(store_dir)
    datasets = sorted(runs["dataset"].unique())
    if len(datasets) != 1:
        raise DataError(f"{store_dir}: a site summary reads a cohort profile (one dataset); "
                        f"this store holds {len(datasets)}: {datasets}.")  # fmt: skip
    anchors = anchors_for_runs(None, runs)
    board, per_seed = _board(runs, store_dir, anchors)
    board = board[board["CRS"].notna()]
    if board.empty:
        raise DataError(f"{store_dir}: no encoder has a CRS (every planned cell must be run); "
                        "run `crsbench profile` to the end first.")  # fmt: skip
    res = _bootstrap(per_seed, store_dir, anchors, settings.n_replicates)
    var = _variances(res)
    facts = read_card_facts(store_dir)
    labels = tuple(facts.label_names.get(datasets[0], ())) if facts else ()
    seeds = sorted(int(s) for s in per_seed["seed"].unique())
    cell = next(k for k in res.cell_keys if k[0] in set(board["encoder"]))
    sizes, hidden, task = _sizes(store_dir, cell, seeds, labels, settings.min_cell_size)
    locks = dict(facts.weights_lock) if facts else {}
    encoders = tuple(
        EncoderSummary(str(r["encoder"]), _weights(locks.get(r["encoder"])),
                       {q: Estimate(float(r[q]), var[r["encoder"]][q]) for q in QUANTITIES})
        for _, r in board.sort_values("encoder").iterrows() if r["encoder"] in var
    )  # fmt: skip
    return SiteSummary(
        site=site.strip(), task=task, labels=labels, anchors_version=anchors.version,
        protocol={"recalibration": RECAL_VERSION, "severities": SEVERITIES_VERSION},
        crsbench_version=__version__, interval="test patients x seeds bootstrap",
        n_replicates=settings.n_replicates, sizes=sizes, suppressed=hidden,
        settings=settings.as_dict(), encoders=encoders,
    )  # fmt: skip
