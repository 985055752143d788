"""``crsbench run``: plan, extract through the cache, evaluate every cell, record, aggregate.

The driver is the single writer of the store. Work is committed one cell at a time (one
transaction per cell), so a run killed at any moment resumes at the first cell whose
records are not all committed, and features already cached are not recomputed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from crsbench.config import BenchmarkConfig, config_hash
from crsbench.core.diskio import write_text_atomic
from crsbench.encoders.devices import require_device
from crsbench.evaluation.cell import CellSettings
from crsbench.evaluation.prediction_keeper import kept_predictions
from crsbench.features.pixel_memo import PIXEL_MEMO
from crsbench.runs import executors
from crsbench.runs.extraction import RunExtraction
from crsbench.runs.lora_stage import lora_plan, lora_planned_cells, run_lora_stage
from crsbench.runs.outdir import check_output_dir, claim_cache_dir, claim_output_dir
from crsbench.runs.plan import (
    CellOutcome,
    CellPlan,
    control_fractions,
    plan_cells,
    recorded_plan,
)
from crsbench.runs.prepare import PreparedDataset, prepare_datasets
from crsbench.runs.rows import Provenance, to_records
from crsbench.runs.weights_lock_stage import lock_run_weights
from crsbench.store import LAST_RUN_FILE, ResultsStore
from crsbench.store.cards import CardFacts
from crsbench.store.predictions import prediction_batch
from crsbench.store.reliability import rebuild_reliability_table
from crsbench.store.stored_plan import StoredPlan

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
        stop=cfg.probes.logistic.stop,
        layers=tuple(cfg.layers),
        recalibrators=tuple(cfg.recalibrators),
        mlp=None if mlp is None else mlp.model_dump(),
        knn=None if knn is None else knn.model_dump(),
        control_fractions=control_fractions(cfg),
    )


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


@dataclass(frozen=True)
class RunOptions:
    """How :func:`run_benchmark` runs a config (the options of ``crsbench run``).

    Attributes
    ----------
    executor : {"local", "ray"}
        Where cells are evaluated; the driver always writes the store.
    address : str, optional
        The Ray cluster's address (``executor="ray"``).
    progress : bool
        Show rich progress bars.
    force_new : bool
        Move aside a store written by another config (with its derived folders) instead of
        refusing; the ``moved`` event names what moved.
    force : bool
        Accept a non-empty output directory that crsbench did not write (nothing in it is
        ever overwritten; see :func:`crsbench.runs.outdir.claim_output_dir`).
    on_event : callable, optional
        Called with ``(event, info)`` at each stage, cell and plan event.
    skip_missing : bool
        When the preflight finds missing datasets or weights, run the cells that can run and
        record the others in ``RunSummary.skipped_cells`` (and ``last_run.json``) instead of
        raising.
    check : bool
        Run the preflight (:func:`crsbench.runs.preflight.preflight`) before any work; the
        ``preflight`` event carries its result.
    jobs : int, optional
        Worker processes fitting the frozen probes with the local executor (``None``: every
        available core; see :class:`crsbench.runs.executors.LocalExecutor`). The records do
        not depend on it.
    update_weights_lock : bool
        Replace the entries of ``weights.lock`` whose files changed instead of refusing.
    """

    executor: str = "local"
    address: str | None = None
    progress: bool = True
    force_new: bool = False
    force: bool = False
    on_event: ProgressFn | None = None
    skip_missing: bool = False
    check: bool = True
    jobs: int | None = None
    update_weights_lock: bool = False

    def emit(self, event: str, info: dict[str, Any]) -> None:
        """Send ``event`` to :attr:`on_event` (nothing when unset)."""
        if self.on_event is not None:
            self.on_event(event, info)


@dataclass
class _Run:
    """One ``crsbench run`` in progress: its config, hash, data, options and stage times."""

    cfg: BenchmarkConfig
    cfg_hash: str
    prepared: dict[str, PreparedDataset]
    opts: RunOptions
    extraction: RunExtraction
    stages: dict[str, float] = field(default_factory=dict)
    written: int = 0


def _split_done(
    cells: Sequence[CellPlan], done: set[str], cfg_hash: str
) -> tuple[list[CellPlan], int]:
    """The cells with a record still missing, and how many cells are complete already."""
    todo = [c for c in cells if not {i.key(cfg_hash) for i in c.identities} <= done]
    return todo, len(cells) - len(todo)


def _announce_plan(
    run: _Run, cells: Sequence[CellPlan], n_done: int, n_skipped: int, modalities: Mapping[str, str]
) -> int:
    """Emit the ``plan`` event; return the number of records the whole grid writes."""
    n_lora = sum(len(ids) for seeds in lora_plan(run.cfg, dict(modalities)).values()
                 for ids in seeds.values())  # fmt: skip
    n_total = sum(len(c.identities) for c in cells) + n_lora
    run.opts.emit(
        "plan",
        {
            "cells": len(cells),
            "done": n_done,
            "records": n_total,
            "lora_records": n_lora,
            "extractions": sum(c.n_extractions for c in cells),
            "skipped": n_skipped,
        },
    )
    return n_total


def _commit_cell(run: _Run, store: ResultsStore, out_cell: CellOutcome, announced: set) -> int:
    """Write one evaluated cell's records (and its predictions) in one transaction."""
    from crsbench import __version__

    c = out_cell.plan
    preds = kept_predictions(out_cell.results)
    prov = Provenance(config_hash=run.cfg_hash, package_version=__version__,
                      encoder_revision=out_cell.encoder_revision,
                      dataset_revision=run.prepared[c.dataset].dataset.revision,
                      anchors_version=run.cfg.anchors, precision=out_cell.precision)  # fmt: skip
    records = to_records(out_cell.results, prov)
    _report_quarantine(store, out_cell.quarantined, announced, run.opts.emit)
    batch = prediction_batch([r.run_key for r in records], preds)
    written = store.append(records, predictions=batch)
    run.opts.emit(
        "cell",
        {
            "encoder": c.encoder,
            "dataset": c.dataset,
            "records": len(records),
            "extract_s": out_cell.extract_s,
            "evaluate_s": out_cell.evaluate_s,
        },
    )
    return written


def _frozen_stage(run: _Run, store: ResultsStore, todo: list[CellPlan]) -> None:
    """Extract and evaluate every cell still to do, committing each as it arrives.

    Stage times are wall times: ``extract`` sums the cells' extractions (one after another in
    the local executor) and ``probes_and_metrics`` is the rest of the stage (probes, in worker
    processes or not, and commits); with the Ray executor, where cells overlap, it is the sum
    of the cells' evaluation times instead.
    """
    ex = executors.make_executor(run.opts.executor, address=run.opts.address, jobs=run.opts.jobs)
    t_extract = t_eval = 0.0
    announced: set[tuple[str, str]] = set()
    settings = cell_settings(run.cfg)
    t0 = time.perf_counter()
    try:
        for out_cell in ex.run_cells(run.extraction, todo, run.prepared, settings,
                                     progress=run.opts.progress):  # fmt: skip
            run.written += _commit_cell(run, store, out_cell, announced)
            t_extract += out_cell.extract_s
            t_eval += out_cell.evaluate_s
    finally:
        ex.close()
    run.stages["extract"] = t_extract
    wall = time.perf_counter() - t0
    run.stages["probes_and_metrics"] = wall - t_extract if run.opts.executor == "local" else t_eval


def _timed(run: _Run, name: str, fn: Callable[[], object]) -> None:
    """Run ``fn`` as stage ``name``: its time goes to the summary and a ``stage`` event."""
    t0 = time.perf_counter()
    fn()
    run.stages[name] = time.perf_counter() - t0
    run.opts.emit("stage", {"name": name, "seconds": run.stages[name]})


def _lora_stage(run: _Run, store: ResultsStore) -> None:
    run.opts.emit("stage_start", {"name": "lora_adaptation"})
    run.written += run_lora_stage(run.cfg, run.prepared, store, cfg_hash=run.cfg_hash,
                                  progress=run.opts.progress)  # fmt: skip


def card_facts(cfg: BenchmarkConfig, prepared: Mapping[str, PreparedDataset]) -> CardFacts:
    """What the analyses read from the cards, for the store: each encoder's family group (its
    card) and each prepared dataset's label names in output order."""
    from crsbench.encoders import get_card

    groups = {e.name: get_card(e.name).family_group for e in cfg.encoders}
    labels = {name: tuple(p.dataset.label_names) for name, p in prepared.items()}
    return CardFacts(groups, labels)


def _recorded_plan(cfg: BenchmarkConfig) -> StoredPlan:
    """The frozen grid's plan and the LoRA regime's cells (table ``plan``)."""
    from crsbench.datasets import DATASETS

    modalities = {n: DATASETS.get(n).card.modality for n in cfg.datasets}
    frozen = recorded_plan(cfg, modalities)
    return StoredPlan.ordered((*frozen.cells, *lora_planned_cells(cfg, modalities)))


def _aggregate_and_export(store: ResultsStore, out: Path) -> None:
    store.aggregate()
    rebuild_reliability_table(store.con)
    for fmt in ("parquet", "csv"):
        store.export(fmt, out / "export")


def run_benchmark(cfg: BenchmarkConfig, options: RunOptions | None = None) -> RunSummary:
    """Run the whole grid of ``cfg`` into ``cfg.output_dir / results.duckdb`` (resumable).

    Parameters
    ----------
    cfg : BenchmarkConfig
        A validated config (see :func:`crsbench.config.load_config`).
    options : RunOptions, optional
        Executor, progress, output-directory and preflight options (defaults: local, with
        progress bars and the preflight).

    Raises
    ------
    ConfigError
        When the preflight finds something missing and ``skip_missing`` is False; the message
        lists everything missing at once with where to put it.
    """
    from crsbench.core.extras import require_extra

    opts = options or RunOptions()
    require_extra("encoders", "crsbench run")  # before any folder: features need torch
    t_start = time.perf_counter()
    h = config_hash(cfg)
    cfg_json = cfg.model_dump_json()
    roots = [d.root for d in cfg.datasets.values()]
    check_output_dir(cfg.output_dir, dataset_roots=roots, force=opts.force)
    claim_cache_dir(cfg.cache_dir, create=False)
    require_device(cfg.device)  # before any folder: a cuda run on a machine without a GPU
    cfg = _pin_working_size(cfg)  # W of the whole config, whatever --skip-missing leaves out
    planned = _recorded_plan(cfg)  # what each cell must hold, skipped cells included
    cfg, skipped = _runnable(cfg, opts.emit, opts.skip_missing) if opts.check else (cfg, [])
    out = claim_output_dir(cfg.output_dir, dataset_roots=roots, force=opts.force)
    claim_cache_dir(cfg.cache_dir, create=True)
    run = _Run(cfg, h, {}, opts, RunExtraction.from_config(cfg))
    _timed(run, "datasets_and_splits", lambda: run.prepared.update(prepare_datasets(cfg)))
    modalities = {name: p.dataset.card.modality for name, p in run.prepared.items()}
    cells = plan_cells(cfg, modalities)
    revisions = {name: p.dataset.revision for name, p in run.prepared.items()}
    with ResultsStore(out, h, config_json=cfg_json, force_new=opts.force_new,
                      dataset_revisions=revisions) as store:  # fmt: skip
        if store.moved_aside:
            opts.emit("moved", {"moved": [(str(a), str(b)) for a, b in store.moved_aside],
                                "reason": store.moved_because})  # fmt: skip
        locked = lock_run_weights(run.extraction, out, opts.update_weights_lock)
        store.record_cards(replace(card_facts(cfg, run.prepared), weights_lock=locked))
        store.record_plan(planned)
        todo, done_before = _split_done(cells, store.done_keys(), h)
        n_total = _announce_plan(run, cells, done_before, len(skipped), modalities)
        with PIXEL_MEMO.sharing():  # every encoder (frozen or adapted) sees the same W x W
            _frozen_stage(run, store, todo)  # pixels: decode and perturb each image once
            if cfg.regimes.lora.enabled:
                _timed(run, "lora_adaptation", lambda: _lora_stage(run, store))
        t0 = time.perf_counter()
        _aggregate_and_export(store, out)
        run.stages["aggregate_and_export"] = time.perf_counter() - t0
    run.stages["total"] = time.perf_counter() - t_start
    summary = RunSummary(out, len(cells), done_before, run.written, n_total, run.stages, skipped)
    write_text_atomic(out / LAST_RUN_FILE, json.dumps(summary.as_dict(), indent=2))
    return summary
