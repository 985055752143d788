"""The model of a profiled cell, rebuilt from the store and the feature cache, and proven equal.

The store keeps each fit's choices (the chosen C, the recalibrator's CV choice) and metrics,
not its weights. Both fits are deterministic on CPU, so :func:`refit_cell` refits them from
the cached features with the stored config: the full-label logistic probe on the training
split (C chosen on validation macro-AUROC over the config's grid, as the run did), then the
recalibrator on the calibration split with the run row's seed. It then proves the refit is
the run's model: the chosen C and the recalibrator's record must equal the stored ones, and
the refit's clean-test metrics must equal the stored metrics within :data:`METRIC_TOLERANCE`;
otherwise nothing is exported.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from crsbench.core.errors import DataError, StoreError

#: Largest difference allowed between a refit's clean-test metric and the stored one.
METRIC_TOLERANCE = 1e-9
_COMPARED = ("auroc", "ece", "brier", "nll")


@dataclass(frozen=True)
class CellRefit:
    """A refitted cell model with the rows it was fitted and evaluated on.

    ``test_ids`` and ``test_proba`` are the profile's clean-test evaluation of this model:
    image ids in test-split order and their (recalibrated) probabilities.
    """

    model: Any  # ModelArtefact
    test_ids: np.ndarray
    test_paths: np.ndarray
    test_proba: np.ndarray
    checked: dict[str, Any]


def _store_tables(store_dir: Path) -> tuple[Any, Any]:
    from crsbench.config import BenchmarkConfig
    from crsbench.store import STORE_FILE, read_tables

    found = read_tables(Path(store_dir) / STORE_FILE, ("meta", "runs"))
    if "meta" not in found or found["meta"].empty or "runs" not in found:
        raise StoreError(f"{Path(store_dir) / STORE_FILE} has no meta or runs table.")
    cfg = BenchmarkConfig.model_validate_json(str(found["meta"]["config_json"].iloc[0]))
    return cfg, found["runs"]


def _stored_row(runs: Any, encoder: str, dataset: str, seed: int, recal: str) -> Any:
    from crsbench.store import select_runs

    m = select_runs(runs, recalibrator=recal)
    m = m[(m["encoder"] == encoder) & (m["dataset"] == dataset) & (m["seed"] == seed)]
    if m.empty:
        known = sorted(runs["encoder"].unique())
        raise StoreError(
            f"the store has no clean full-label logistic row of encoder {encoder!r} on "
            f"{dataset!r} (seed {seed}, recalibrator {recal!r}). Encoders in it: {known}."
        )
    return m.iloc[0]


def _equal(a: float, b: Any) -> bool:
    b = float("nan") if b is None else float(b)
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= METRIC_TOLERANCE


def _prove(stored: Any, got: dict[str, Any], what: str) -> dict[str, Any]:
    """Refuse when a refit metric differs from the stored one; return the comparison."""
    out = {}
    for m in _COMPARED:
        if not _equal(got[m], stored[m]):
            raise DataError(
                f"the refit {what} does not reproduce the stored run: {m} {got[m]!r} vs "
                f"{stored[m]!r} stored. The features or code changed since the profile; "
                "run `crsbench profile` again, then export."
            )
        out[m] = got[m]
    return out


def _cell_inputs(cfg: Any, encoder: str, dataset: str) -> tuple[Any, Any, str, Any]:
    """The cell's arrays from the cache (every feature is a cache hit after a profile)."""
    from crsbench.runs.cell_inputs import cell_data
    from crsbench.runs.extract_cell import extract_cell_features, get_encoder
    from crsbench.runs.extraction import RunExtraction
    from crsbench.runs.plan import plan_cells
    from crsbench.runs.prepare import prepare_datasets

    prepared = {k: v for k, v in prepare_datasets(cfg).items() if k == dataset}
    modal = {dataset: prepared[dataset].dataset.card.modality}
    plan = next(c for c in plan_cells(cfg, modal) if (c.encoder, c.dataset) == (encoder, dataset))
    extraction = RunExtraction.from_config(cfg)
    feats, _ = extract_cell_features(extraction, plan, prepared[dataset], None, progress=False)
    enc = get_encoder(extraction, encoder)
    prep = prepared[dataset]
    return cell_data(plan, prep, feats, None), enc, feats["precision"]["precision"], prep.dataset


def _fit_probe(cfg: Any, cell: Any, seed: int, details: dict[str, Any]) -> tuple[Any, Any]:
    """The full-label logistic probe of ``seed``, refitted; refused when C differs."""
    from crsbench.evaluation.cell_scoring import targets
    from crsbench.probes import fit_probe_grid

    X, y = cell.features[1.0], targets(cell.labels, cell.task)
    lg = cfg.probes.logistic
    fit = fit_probe_grid(X[cell.train], y[cell.train], X[cell.val], y[cell.val], cell.task,
                         Cs=np.asarray(lg.c_grid), subsets={"full": cell.subsets[(1.0, seed)]},
                         n_outputs=cell.n_outputs, max_iter=lg.max_iter, tol=lg.tol,
                         stop=lg.stop)["full"]  # fmt: skip
    if not _equal(fit.C, details.get("C")):
        raise DataError(f"the refit probe chose C={fit.C}; the stored run chose "
                        f"{details.get('C')}. Run `crsbench profile` again, then export.")  # fmt: skip
    return fit, y


def _fit_recal(cell: Any, fit: Any, y: Any, name: str, seed: int,
               details: dict[str, Any]) -> Any:  # fmt: skip
    """The recalibrator ``name`` on the calibration split (None for ``none``)."""
    from crsbench.calibration import CalibrationSplitTooSmall, fit_recalibrator

    if name == "none":
        return None
    X = cell.features[1.0]
    try:
        recal = fit_recalibrator(name, fit.predict_proba(X[cell.calib]), y[cell.calib],
                                 cell.task, seed)  # fmt: skip
    except CalibrationSplitTooSmall as exc:
        raise DataError(
            f"recalibrator {name!r} is undefined on this cohort ({exc}); the "
            "profile's recalibrated rows are NaN for the same reason. Export with "
            "--recalibrator none, or profile a cohort with more images per class."
        ) from None
    if recal.record() != details.get("recal"):
        raise DataError(f"the refit {name} recalibration differs from the stored "
                        "one (details.recal). Run `crsbench profile` again, then export.")  # fmt: skip
    return recal


def _refit(cfg: Any, cell: Any, stored: Any, recalibrator: str,
           seed: int) -> tuple[Any, Any, np.ndarray, dict[str, Any]]:  # fmt: skip
    """Probe, recalibrator, test probabilities and the proven metrics, under the run's numeric
    settings (:func:`crsbench.evaluation.cell.probe_numerics`, the helper the run fits under)."""
    from crsbench.evaluation.cell import probe_numerics
    from crsbench.evaluation.cell_scoring import score

    details = json.loads(stored["details"]) if isinstance(stored["details"], str) else {}
    with probe_numerics():
        fit, y = _fit_probe(cfg, cell, seed, details)
        recal = _fit_recal(cell, fit, y, recalibrator, seed, details)
        proba = fit.predict_proba(cell.features[1.0][cell.test])
        if recal is not None:
            proba = recal.predict_proba(proba)
        checked = _prove(stored, score(y[cell.test], proba, cell.task), f"{cell.encoder} model")
    return fit, recal, proba, checked


def refit_cell(store_dir: Path, encoder: str, recalibrator: str = "none",
               seed: int | None = None, dataset: str | None = None) -> CellRefit:  # fmt: skip
    """Refit the stored cell's model and prove it equal to the run's (see the module).

    Raises
    ------
    StoreError
        The store lacks the cell's row.
    DataError
        The refit does not reproduce the stored choices or metrics.
    """
    from crsbench import __version__
    from crsbench.cohort.artefact import ModelArtefact
    from crsbench.probes._basis import standardisation
    from crsbench.runs.extract_cell import encoder_revision, run_working_size

    cfg, runs = _store_tables(Path(store_dir))
    dataset = dataset or cfg.probe_datasets[0]
    seed = int(cfg.seeds[0] if seed is None else seed)
    if encoder not in [e.name for e in cfg.encoders]:
        raise StoreError(f"encoder {encoder!r} is not in the store's config "
                         f"({', '.join(e.name for e in cfg.encoders)}).")  # fmt: skip
    stored = _stored_row(runs, encoder, dataset, seed, recalibrator)
    cell, enc, precision, ds = _cell_inputs(cfg, encoder, dataset)
    fit, recal, proba, checked = _refit(cfg, cell, stored, recalibrator, seed)
    mean, scale, _ = standardisation(cell.features[1.0][cell.train][cell.subsets[(1.0, seed)]])
    model = ModelArtefact(
        encoder={"name": encoder, "weights_sha256": enc.weights_hash,
                 "input_size": int(getattr(enc, "input_size", enc.card.input_size)),
                 "working_size": run_working_size(cfg), "precision": precision,
                 "revision": encoder_revision(enc, precision)},
        task=ds.task, labels=list(ds.label_names),
        probe={"C": fit.C, "seed": seed, "n_train": int(fit.n_rows),
               "converged": bool(np.all(fit.converged)), "flags": list(fit.flags),
               "skipped": {str(k): v for k, v in fit.skipped.items()}},
        coef=np.asarray(fit.coef, dtype=np.float64), intercept=np.asarray(fit.intercept),
        mean=mean, scale=scale, recalibrator=recal,
        provenance={"store": str(Path(store_dir).resolve()), "dataset": dataset,
                    "config_hash": str(stored["config_hash"]),
                    "dataset_revision": str(stored["dataset_revision"]),
                    "package_version": __version__, "recalibrator": recalibrator,
                    "test_metrics_reproduced": checked, "metric_tolerance": METRIC_TOLERANCE},
    )  # fmt: skip
    return CellRefit(
        model, np.asarray(ds.image_ids)[cell.test], np.asarray(ds.paths)[cell.test], proba, checked
    )
