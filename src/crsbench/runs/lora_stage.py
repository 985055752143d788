"""The adaptation-regime stage: LoRA fine-tunes evaluated on the frozen protocol's conditions.

For each encoder (``regimes.lora.encoders``, default all) × probe dataset × LoRA seed, the
encoder is fine-tuned with LoRA adapters and a linear head (:mod:`crsbench.adapt`) at **every
label fraction of** ``regimes.lora.fractions`` (default: all of the config's; the same nested
subsamples as the frozen probes, so the label-efficiency axis exists for the adapted model),
then evaluated exactly like the frozen main probe: clean test at every fraction; at the full
fraction also every (perturbation, severity) of :func:`crsbench.runs.plan.cell_conditions`, the
shift target, and each recalibrator fitted on the calibration split (clean and shift). Rows
carry ``regime="lora"``, ``probe=LORA_PROBE``, ``layer=1.0``.

Work is committed per (encoder, dataset, seed); identities already in the store are skipped;
each fine-tune checkpoints every epoch under ``output_dir/lora/<config hash>/...`` and resumes.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from crsbench.config import BenchmarkConfig
from crsbench.core.errors import EncoderError
from crsbench.evaluation.identity import CellIdentity, RunIdentity
from crsbench.protocol import LORA
from crsbench.runs.lora_seed import LoraCell, SeedWork, seed_rows
from crsbench.runs.plan import cell_conditions, shift_targets_of
from crsbench.runs.prepare import PreparedDataset
from crsbench.runs.rows import Provenance, to_records
from crsbench.store import ResultsStore
from crsbench.store.details import LoraAdapters, RunDetails
from crsbench.store.stored_plan import PlannedCell

#: ``probe`` of the LoRA rows. The stored analyses (``axes_from_runs``, hence
#: ``regime_comparison``) read the main-protocol rows of a regime as ``probe='logistic'``; the
#: LoRA head *is* a linear softmax / sigmoid classifier on the adapted embedding, so the rows
#: use that name and are told apart by ``regime='lora'`` (see docs/adaptation.md).
LORA_PROBE = "logistic"
log = logging.getLogger("crsbench.lora")


def lora_identities(
    cfg: BenchmarkConfig,
    encoder: str,
    dataset: str,
    seed: int,
    conds: Sequence[tuple[str, int]],
    shift_targets: Sequence[str],
) -> Iterator[RunIdentity]:
    """Every run identity one LoRA seed of a cell writes, in the order they are produced."""
    cell = CellIdentity(encoder, dataset, regime=LORA)
    for f in cfg.lora_fractions:
        yield cell.run(seed, probe=LORA_PROBE, fraction=f)
        if f != 1.0:
            continue
        for name, sev in conds:
            yield cell.run(seed, probe=LORA_PROBE, condition=name, severity=sev)
        for target in shift_targets:
            yield cell.shift(seed, LORA_PROBE, target)
        for rec in cfg.recalibrators:
            yield cell.run(seed, probe=LORA_PROBE, recalibrator=rec)
            for target in shift_targets:
                yield cell.shift(seed, LORA_PROBE, target, rec)


LoraPlan = dict[tuple[str, str], dict[int, list[RunIdentity]]]


def lora_plan(cfg: BenchmarkConfig, modalities: dict[str, str]) -> LoraPlan:
    """Identities of the LoRA regime: ``(encoder, dataset) -> {seed: identities}``.

    Empty unless ``regimes.lora.enabled``. Only the datasets of ``regimes.lora.datasets``
    (default all probe datasets); cells of ``exclude_cells`` are left out, as in the frozen
    regime. Encoders whose card says they have no learnable
    weights (``trainable=False``: the pixel baseline) are left out; ``modalities`` maps each
    probe dataset to its modality (it selects the perturbation conditions).
    """
    from crsbench.encoders import get_card

    lora = cfg.regimes.lora
    if not lora.enabled:
        return {}
    out: LoraPlan = {}
    for spec in cfg.lora_encoders:
        if not get_card(spec.name).trainable:
            continue
        for name in cfg.lora_datasets:
            if not cfg.includes_cell(spec.name, name):
                continue
            conds = cell_conditions(cfg, modalities[name])
            targets = shift_targets_of(cfg, name)
            out[(spec.name, name)] = {
                s: list(lora_identities(cfg, spec.name, name, s, conds, targets))
                for s in lora.seeds
            }
    return out


def lora_planned_cells(cfg: BenchmarkConfig, modalities: dict[str, str]) -> list[PlannedCell]:
    """What the store records of :func:`lora_plan` (``regime="lora"`` cells of table
    ``plan``): per adapted cell the LoRA seeds, fine-tuned fractions, conditions and shift
    targets, so the LoRA regime is scored against what was planned."""
    return [
        PlannedCell(enc, ds, tuple(int(s) for s in seeds), tuple(float(f) for f in
                    cfg.lora_fractions), cell_conditions(cfg, modalities[ds]),
                    shift_targets_of(cfg, ds), regime=LORA)
        for (enc, ds), seeds in sorted(lora_plan(cfg, modalities).items())
    ]  # fmt: skip


def _subsets(
    cfg: BenchmarkConfig, name: str, prep: PreparedDataset, seed: int
) -> dict[float, np.ndarray]:
    """Label subsamples of ``seed`` (drawn like the frozen ones, over all of the config's
    fractions, when the seed is LoRA-only), for the fractions the LoRA regime fine-tunes."""
    fractions = cfg.lora_fractions
    if all((f, seed) in prep.subsets for f in fractions):
        return {f: prep.subsets[(f, seed)] for f in fractions}
    from crsbench.splits import label_subsamples

    ds = prep.dataset
    sub = label_subsamples(ds.labels[prep.splits.train], ds.task, fractions=cfg.fractions,
                           seeds=[seed], key=f"{name}|{cfg.split_seed}")  # fmt: skip
    return {f: sub[(f, seed)] for f in fractions}


def _adapted_encoder(cfg: BenchmarkConfig, spec: Any) -> tuple[Any, str]:
    """A fresh encoder (never the frozen pipeline's cached one) with LoRA adapters."""
    from crsbench.adapt import wrap_with_lora
    from crsbench.encoders import build
    from crsbench.runs.extract_cell import encoder_revision, resolve_device

    enc = build(spec.name, pretrained=spec.weights == "pretrained",
                device=resolve_device(cfg.device), weights_path=spec.weights_path,
                allow_remote_code=spec.allow_remote_code, recipe=spec.recipe)  # fmt: skip
    enc = enc.set_input_size(spec.input_size)
    # the base weights, and the arithmetic fine-tuning uses (bf16 autocast on CUDA, fp32 on
    # CPU: crsbench.adapt), in the frozen rows' form so mixed precisions are never averaged
    precision = "bf16" if str(enc.device).startswith("cuda") else "fp32"
    revision = encoder_revision(enc, precision, random=spec.weights == "random")
    lora = cfg.regimes.lora
    wrap_with_lora(enc, rank=lora.rank, alpha=lora.alpha, dropout=lora.dropout)
    return enc, revision


@dataclass(frozen=True)
class _LoraRun:
    """The LoRA stage of one run: its config, data, store and plan."""

    cfg: BenchmarkConfig
    prepared: Mapping[str, PreparedDataset]
    store: ResultsStore
    cfg_hash: str
    progress: bool
    planned: LoraPlan
    done: set[str]


def _lora_details(lora: Any, encoder: Any) -> RunDetails:
    """What every LoRA row records of its adapters (``details["lora"]``)."""
    mod = encoder.module
    return RunDetails(lora=LoraAdapters(
        rank=lora.rank, alpha=lora.alpha, dropout=lora.dropout, epochs=lora.epochs,
        targets=tuple(mod.crsbench_lora_targets), targets_source=mod.crsbench_lora_source,
    ))  # fmt: skip


def _encoder_rows(run: _LoraRun, spec: Any) -> int:
    """Fine-tune and evaluate one encoder on every planned dataset; return rows written."""
    from crsbench import __version__
    from crsbench.adapt import LoraClassifier
    from crsbench.runs.extract_cell import run_working_size

    cfg, encoder, written = run.cfg, None, 0
    for name in cfg.probe_datasets:
        plan = run.planned.get((spec.name, name))
        if plan is None:  # a cell of exclude_cells
            continue
        todo = [s for s in cfg.regimes.lora.seeds
                if not {i.key(run.cfg_hash) for i in plan[s]} <= run.done]  # fmt: skip
        if not todo:
            continue
        if encoder is None:
            try:
                encoder, revision = _adapted_encoder(cfg, spec)
            except EncoderError as exc:
                log.warning("lora regime: skipping encoder %r: %s", spec.name, exc)
                break
            extra = _lora_details(cfg.regimes.lora, encoder)
        prep = run.prepared[name]
        shift_preps = {t: run.prepared[t] for t in shift_targets_of(cfg, name)}
        cell = LoraCell(cfg, name, prep, shift_preps, run_working_size(cfg), encoder.input_size)
        model = LoraClassifier(encoder, cell.n_outputs, cell.task)
        root = Path(cfg.output_dir) / "lora" / run.cfg_hash[:12] / spec.name / name
        prov = Provenance(config_hash=run.cfg_hash, package_version=__version__,
                          encoder_revision=revision, dataset_revision=prep.dataset.revision,
                          anchors_version=cfg.anchors)  # fmt: skip
        for seed in todo:
            work = SeedWork(seed, plan[seed], _subsets(cfg, name, prep, seed), root)
            records = to_records(seed_rows(cfg, cell, model, work, extra, run.progress), prov)
            written += run.store.append(records)
            log.info("lora regime: %s × %s seed %d: %d records", spec.name, name, seed,
                     len(records))  # fmt: skip
    return written


def run_lora_stage(
    cfg: BenchmarkConfig,
    prepared: Mapping[str, PreparedDataset],
    store: ResultsStore,
    *,
    cfg_hash: str,
    progress: bool = True,
) -> int:
    """Fine-tune and evaluate every (encoder, probe dataset, LoRA seed); return rows written.

    Parameters
    ----------
    cfg : BenchmarkConfig
        Does nothing unless ``cfg.regimes.lora.enabled``.
    prepared : dict
        :func:`crsbench.runs.prepare.prepare_datasets` of ``cfg``.
    store : ResultsStore
        Opened for writing with ``cfg_hash``; rows are appended one (encoder, dataset, seed)
        at a time. Call :meth:`ResultsStore.aggregate` afterwards.
    cfg_hash : str
        :func:`crsbench.config.config_hash` of ``cfg``.
    progress : bool
        Progress bars per epoch and a line per committed seed.

    Notes
    -----
    Encoders LoRA cannot adapt (``pixel``: no weights; no trainable target) are skipped with a
    logged warning naming the reason; ``regimes.lora.encoders`` and ``regimes.lora.fractions``
    restrict the stage (see :func:`lora_plan`).
    """
    if not cfg.regimes.lora.enabled:
        return 0
    modalities = {n: prepared[n].dataset.card.modality for n in cfg.probe_datasets}
    planned = lora_plan(cfg, modalities)
    run = _LoraRun(cfg, prepared, store, cfg_hash, progress, planned, store.done_keys())
    adapted = {e for e, _ in planned}
    written = 0
    for spec in cfg.lora_encoders:
        if spec.name not in adapted:
            log.warning("lora regime: skipping encoder %r: it has no learnable weights", spec.name)
            continue
        written += _encoder_rows(run, spec)
    return written
