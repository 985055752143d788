"""``crsbench run``: plan, extract through the cache, evaluate every cell, record, aggregate.

The driver is the single writer of the store. Work is committed one cell at a time (one
transaction per cell), so a run killed at any moment resumes at the first cell whose
records are not all committed, and features already cached are not recomputed.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crsbench.config import BenchmarkConfig, config_hash
from crsbench.runs.cell import CellSettings
from crsbench.runs.outdir import check_output_dir, claim_output_dir
from crsbench.runs.plan import control_fractions, plan_cells
from crsbench.runs.prediction_keeper import PREDICTIONS_KEY, pop_predictions
from crsbench.runs.prepare import prepare_datasets
from crsbench.store import LAST_RUN_FILE, METRIC_COLUMNS, ResultsStore, RunRecord, make_run_key
from crsbench.store.predictions import prediction_batch
from crsbench.store.reliability import rebuild_reliability_table

ProgressFn = Callable[[str, dict[str, Any]], None]


@dataclass
class RunSummary:
    """What one ``crsbench run`` did."""

    out_dir: Path
    n_cells: int
    n_cells_done_before: int
    n_records_written: int
    n_records_total: int
    stage_seconds: dict[str, float] = field(default_factory=dict)
    #: Cells left out by ``--skip-missing`` (encoder, dataset, reason); never imputed.
    skipped_cells: list[dict[str, str]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """JSON-friendly form."""
        return {**self.__dict__, "out_dir": str(self.out_dir)}


def cell_settings(cfg: BenchmarkConfig) -> CellSettings:
    """The probe budget and evaluation settings shared by every cell."""
    mlp = cfg.probes.mlp
    knn = cfg.probes.knn
    return CellSettings(
        seeds=tuple(cfg.seeds),
        fractions=tuple(cfg.fractions),
        Cs=tuple(cfg.probes.logistic.c_grid),
        max_iter=cfg.probes.logistic.max_iter,
        tol=cfg.probes.logistic.tol,
        layers=tuple(cfg.layers),
        recalibrators=tuple(cfg.recalibrators),
        mlp=None
        if mlp is None
        else {
            "hidden": mlp.hidden_size,
            "max_epochs": mlp.epochs,
            "lr": mlp.lr,
            "alpha": mlp.weight_decay,
        },
        knn=None if knn is None else {"k": knn.k, "metric": knn.metric},
        control_fractions=control_fractions(cfg),
    )


def _clean_metric(value: Any) -> float | None:
    if value is None:
        return None
    v = float(value)
    return v if math.isfinite(v) else None


def to_records(
    rows: list[dict[str, Any]],
    *,
    cfg_hash: str,
    encoder_revision: str,
    dataset_revision: str,
    anchors_version: str,
    package_version: str,
    precision: Mapping[str, Any] | None = None,
) -> list[RunRecord]:
    """Run rows of :func:`evaluate_cell` → validated :class:`RunRecord` objects.

    ``precision``, the cell's precision decision, goes into every record's
    ``details["precision"]``."""
    out = []
    for row in rows:
        row = dict(row)
        row.pop(PREDICTIONS_KEY, None)  # per-sample predictions go to their own tables
        details = dict(row.pop("details", {}))
        wall = float(row.pop("wall_time_s", 0.0))
        undefined = dict(details.get("undefined") or {})
        for m in METRIC_COLUMNS:
            v = _clean_metric(row.get(m))
            if v is None and row.get(m) is not None and m not in undefined:
                undefined[m] = "not defined on this evaluation set (see excluded / warnings)"
            row[m] = v
        if undefined:
            details["undefined"] = undefined
        if precision:
            details["precision"] = dict(precision)
        out.append(
            RunRecord(
                **row,
                config_hash=cfg_hash,
                package_version=package_version,
                encoder_revision=encoder_revision,
                dataset_revision=dataset_revision,
                anchors_version=anchors_version,
                wall_time_s=wall,
                details=details,
            )
        )
    return out


def _pin_working_size(cfg: BenchmarkConfig) -> BenchmarkConfig:
    """``cfg`` with ``perturbations.working_size`` set to the run's W, computed from every
    encoder of the config, so a run that skips encoders perturbs exactly as the full run does
    (records keep the full config's hash, computed before)."""
    from crsbench.runs.extract_cell import run_working_size

    if cfg.perturbations.working_size is not None:
        return cfg
    pert = cfg.perturbations.model_copy(update={"working_size": run_working_size(cfg)})
    return cfg.model_copy(update={"perturbations": pert})


def _runnable(
    cfg: BenchmarkConfig, emit: ProgressFn, skip_missing: bool
) -> tuple[BenchmarkConfig, list[dict[str, str]]]:
    """Preflight ``cfg``: raise when something is missing, or (skip_missing) drop it."""
    from crsbench.core.errors import ConfigError
    from crsbench.runs.preflight import preflight, runnable_config

    t0 = time.perf_counter()
    pre = preflight(cfg)
    emit("preflight", {"report": pre, "seconds": time.perf_counter() - t0})
    if pre.ok:
        return cfg, []
    if not skip_missing:
        raise ConfigError(
            "\n".join(pre.lines())
            + "\nNothing was run. Put the missing files in place, or pass --skip-missing to run "
            "the cells that can run (the others are recorded as skipped)."
        )
    return runnable_config(cfg, pre), pre.skipped_cells(cfg)


def _report_quarantine(
    store: ResultsStore,
    entries: Sequence[Mapping[str, str]],
    announced: set[tuple[str, str]],
    emit: ProgressFn,
) -> None:
    """Keep a cell's quarantined images in the store and announce each image once per run
    (event ``quarantine``: dataset, split, image_id, path, error_class, message)."""
    from crsbench.store.quarantine import record_quarantine

    record_quarantine(store, entries)
    for entry in entries:
        key = (entry["dataset"], entry["image_id"])
        if key not in announced:
            announced.add(key)
            emit("quarantine", dict(entry))


def run_benchmark(
    cfg: BenchmarkConfig,
    *,
    executor: str = "local",
    address: str | None = None,
    progress: bool = True,
    force_new: bool = False,
    force: bool = False,
    on_event: ProgressFn | None = None,
    skip_missing: bool = False,
    check: bool = True,
) -> RunSummary:
    """Run the whole grid of ``cfg`` into ``cfg.output_dir / results.duckdb`` (resumable).

    Parameters
    ----------
    cfg : BenchmarkConfig
        A validated config (see :func:`crsbench.config.load_config`).
    executor : {"local", "ray"}
        Where cells are evaluated; the driver always writes the store.
    progress : bool
        Show rich progress bars.
    force_new : bool
        Move aside a store written by another config (with its derived folders) instead of
        refusing; the ``moved`` event names what moved.
    force : bool
        Accept a non-empty output directory that crsbench did not write (nothing in it is
        ever overwritten; see :func:`crsbench.runs.outdir.claim_output_dir`).
    skip_missing : bool
        When the preflight finds missing datasets or weights, run the cells that can run and
        record the others in ``RunSummary.skipped_cells`` (and ``last_run.json``) instead of
        raising.
    check : bool
        Run the preflight (:func:`crsbench.runs.preflight.preflight`) before any work; the
        ``preflight`` event carries its result.

    Raises
    ------
    ConfigError
        When the preflight finds something missing and ``skip_missing`` is False; the message
        lists everything missing at once with where to put it.
    """
    from crsbench import __version__
    from crsbench.runs.executors import make_executor

    t_start = time.perf_counter()
    stages: dict[str, float] = {}
    emit = on_event or (lambda *_: None)
    h = config_hash(cfg)
    cfg_json = cfg.model_dump_json()
    roots = [d.root for d in cfg.datasets.values()]
    check_output_dir(cfg.output_dir, dataset_roots=roots, force=force)
    cfg = _pin_working_size(cfg)  # W of the whole config, whatever --skip-missing leaves out
    cfg, skipped = _runnable(cfg, emit, skip_missing) if check else (cfg, [])
    out = claim_output_dir(cfg.output_dir, dataset_roots=roots, force=force)
    t0 = time.perf_counter()
    prepared = prepare_datasets(cfg)
    stages["datasets_and_splits"] = time.perf_counter() - t0
    emit("stage", {"name": "datasets_and_splits", "seconds": stages["datasets_and_splits"]})
    modalities = {name: p.dataset.card.modality for name, p in prepared.items()}
    cells = plan_cells(cfg, modalities)
    settings = cell_settings(cfg)
    written = done_before = 0
    with ResultsStore(out, h, config_json=cfg_json, force_new=force_new) as store:
        if store.moved_aside:
            emit("moved", {"moved": [(str(a), str(b)) for a, b in store.moved_aside]})
        done = store.done_keys()
        todo = []
        for c in cells:
            keys = {make_run_key(i, h) for i in c.identities}
            if keys <= done:
                done_before += 1
            else:
                todo.append(c)
        from crsbench.runs.lora_stage import lora_plan

        n_lora = sum(len(ids) for seeds in lora_plan(cfg, modalities).values()
                     for ids in seeds.values())  # fmt: skip
        n_total = sum(len(c.identities) for c in cells) + n_lora
        emit(
            "plan",
            {
                "cells": len(cells),
                "done": done_before,
                "records": n_total,
                "lora_records": n_lora,
                "extractions": sum(c.n_extractions for c in cells),
                "skipped": len(skipped),
            },
        )
        ex = make_executor(executor, address=address)
        t_extract = t_eval = 0.0
        announced: set[tuple[str, str]] = set()
        try:
            for out_cell in ex.run_cells(cfg, todo, prepared, settings, progress=progress):
                c = out_cell.plan
                preds = pop_predictions(out_cell.rows)
                records = to_records(
                    out_cell.rows,
                    cfg_hash=h,
                    encoder_revision=out_cell.encoder_revision,
                    dataset_revision=prepared[c.dataset].dataset.revision,
                    anchors_version=cfg.anchors,
                    package_version=__version__,
                    precision=out_cell.precision,
                )
                _report_quarantine(store, out_cell.quarantined, announced, emit)
                batch = prediction_batch([r.run_key for r in records], preds)
                written += store.append(records, predictions=batch)
                t_extract += out_cell.extract_s
                t_eval += out_cell.evaluate_s
                emit(
                    "cell",
                    {
                        "encoder": c.encoder,
                        "dataset": c.dataset,
                        "records": len(records),
                        "extract_s": out_cell.extract_s,
                        "evaluate_s": out_cell.evaluate_s,
                    },
                )
        finally:
            ex.close()
        stages["extract"] = t_extract
        stages["probes_and_metrics"] = t_eval
        if cfg.regimes.lora.enabled:
            from crsbench.runs.lora_stage import run_lora_stage

            emit("stage_start", {"name": "lora_adaptation"})

            t0 = time.perf_counter()
            written += run_lora_stage(cfg, prepared, store, cfg_hash=h, progress=progress)
            stages["lora_adaptation"] = time.perf_counter() - t0
            emit("stage", {"name": "lora_adaptation", "seconds": stages["lora_adaptation"]})
        t0 = time.perf_counter()
        store.aggregate()
        rebuild_reliability_table(store.con)
        for fmt in ("parquet", "csv"):
            store.export(fmt, out / "export")
        stages["aggregate_and_export"] = time.perf_counter() - t0
    stages["total"] = time.perf_counter() - t_start
    summary = RunSummary(out, len(cells), done_before, written, n_total, stages, skipped)
    (out / LAST_RUN_FILE).write_text(json.dumps(summary.as_dict(), indent=2))
    return summary
