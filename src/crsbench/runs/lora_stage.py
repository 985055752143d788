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
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from crsbench.config import BenchmarkConfig
from crsbench.core.errors import EncoderError
from crsbench.runs.cell import score, targets
from crsbench.runs.cell_scoring import shift_reference
from crsbench.runs.plan import _identity, cell_conditions, shift_targets_of
from crsbench.store.records import make_run_key

#: ``probe`` of the LoRA rows. The stored analyses (``axes_from_runs``, hence
#: ``regime_comparison``) read the main-protocol rows of a regime as ``probe='logistic'``; the
#: LoRA head *is* a linear softmax / sigmoid classifier on the adapted embedding, so the rows
#: use that name and are told apart by ``regime='lora'`` (see docs/adaptation.md).
LORA_PROBE = "logistic"
#: Training batch size of every fine-tune (a protocol constant: it changes the result).
TRAIN_BATCH_SIZE = 32
#: Early-stopping patience in epochs.
PATIENCE = 3
log = logging.getLogger("crsbench.lora")


def lora_identities(
    cfg: BenchmarkConfig,
    encoder: str,
    dataset: str,
    seed: int,
    conds: Sequence[tuple[str, int]],
    shift_targets: Sequence[str],
) -> Iterator[dict[str, Any]]:
    """Every run identity one LoRA seed of a cell writes, in the order they are produced."""

    def ident(*args: Any, **kw: Any) -> dict[str, Any]:
        return {**_identity(encoder, dataset, seed, LORA_PROBE, 1.0, *args, **kw), "regime": "lora"}

    for f in cfg.lora_fractions:
        yield ident(f)
        if f != 1.0:
            continue
        for name, sev in conds:
            yield ident(1.0, name, sev)
        for target in shift_targets:
            yield ident(1.0, "shift", 0, eval_dataset=target)
        for rec in cfg.recalibrators:
            yield ident(1.0, recalibrator=rec)
            for target in shift_targets:
                yield ident(1.0, "shift", 0, rec, eval_dataset=target)


def lora_plan(
    cfg: BenchmarkConfig, modalities: dict[str, str]
) -> dict[tuple[str, str], dict[int, list[dict[str, Any]]]]:
    """Identities of the LoRA regime: ``(encoder, dataset) -> {seed: identities}``.

    Empty unless ``regimes.lora.enabled``. Cells of ``exclude_cells`` are left out, as in the
    frozen regime. Encoders whose card says they have no learnable
    weights (``trainable=False``: the pixel baseline) are left out; ``modalities`` maps each
    probe dataset to its modality (it selects the perturbation conditions).
    """
    from crsbench.encoders import get_card

    lora = cfg.regimes.lora
    if not lora.enabled:
        return {}
    out: dict[tuple[str, str], dict[int, list[dict[str, Any]]]] = {}
    for spec in cfg.lora_encoders:
        if not get_card(spec.name).trainable:
            continue
        for name in cfg.probe_datasets:
            if not cfg.includes_cell(spec.name, name):
                continue
            conds = cell_conditions(cfg, modalities[name])
            targets = shift_targets_of(cfg, name)
            out[(spec.name, name)] = {
                s: list(lora_identities(cfg, spec.name, name, s, conds, targets))
                for s in lora.seeds
            }
    return out


def train_settings(cfg: BenchmarkConfig) -> Any:
    """The fine-tuning budget of ``cfg.regimes.lora`` (the same for every encoder)."""
    from crsbench.adapt import LoraTrainSettings, lr_grid

    spec = cfg.regimes.lora
    return LoraTrainSettings(
        epochs=spec.epochs,
        lrs=lr_grid(spec.lr, spec.lr_factors),
        batch_size=TRAIN_BATCH_SIZE,
        patience=PATIENCE,
    )


def _subsets(cfg: BenchmarkConfig, name: str, prep: Any, seed: int) -> dict[float, np.ndarray]:
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


@dataclass(frozen=True)
class _Shift:
    """One shift target of a LoRA cell: its decodable rows, targets and record details."""

    target: str
    rows: Any
    ok: np.ndarray
    y: np.ndarray
    details: dict[str, Any]
    compared: np.ndarray | None
    label_names: tuple[str, ...]


class _Cell:
    """Images, targets and split rows of one (encoder, dataset), shared by its seeds."""

    def __init__(
        self,
        cfg: BenchmarkConfig,
        name: str,
        prep: Any,
        shift_preps: Any,
        size: int,
        input_size: int,
    ) -> None:
        from crsbench.adapt import ImageRows

        ds = prep.dataset
        self.name, self.task, self.n_outputs = name, ds.task, len(ds.label_names)
        self.size = int(size)  # the run's working size: images are decoded and perturbed at it
        self.input_size = int(input_size)  # the encoder's, after its own preprocessing
        self.conds = cell_conditions(cfg, ds.card.modality)
        self.y = targets(ds.labels, ds.task)
        self.clean = ImageRows(ds.paths, ds.image_ids, size)
        sp = prep.splits
        self.train = np.asarray(sp.train)
        self.val = self._ok(self.clean, sp.val)
        self.calib = self._ok(self.clean, sp.calib)
        test = self._ok(self.clean, sp.test)
        multi = ImageRows(ds.paths[test], ds.image_ids[test], size, (("clean", 0), *self.conds))
        keep = multi.ok(np.arange(len(test)))
        self.test, self.test_multi, self.test_local = test[keep], multi, np.flatnonzero(keep)
        self.shifts = [self._shift(ds, t, size) for t in (shift_preps or {}).values()]

    def _shift(self, ds: Any, target: Any, size: int) -> _Shift:
        """One shift target's decodable evaluation rows, labels compared like the frozen
        probes' (:func:`crsbench.runs.cell_inputs.shift_cells`)."""
        from crsbench.adapt import ImageRows
        from crsbench.runs.cell_inputs import shift_labels

        tds, rows = target.dataset, np.asarray(target.eval_rows)
        srows = ImageRows(tds.paths[rows], tds.image_ids[rows], size)
        ok = self._ok(srows, np.arange(len(rows)))
        scored = {"shift_rows": target.shift_provenance(np.isin(np.arange(len(rows)), ok))}
        y, compared = shift_labels(ds, tds, tds.labels[rows][ok])
        return _Shift(tds.name, srows, ok, targets(y, ds.task), scored, compared,
                      tuple(ds.label_names))  # fmt: skip

    @staticmethod
    def _ok(images: Any, rows: Any) -> np.ndarray:
        rows = np.asarray(rows, dtype=np.int64)
        return rows[images.ok(rows)]

    def train_rows(self, subset: np.ndarray) -> np.ndarray:
        return self._ok(self.clean, self.train[subset])


def _seed_rows(
    cfg: BenchmarkConfig,
    cell: _Cell,
    model: Any,
    ids: list[dict[str, Any]],
    seed: int,
    subsets: dict[float, np.ndarray],
    ckpt_root: Path,
    extra: dict[str, Any],
    progress: bool,
) -> list[dict[str, Any]]:
    """Fine-tune every fraction of one seed and score every planned identity."""
    from crsbench.adapt import (
        merged_copy,
        predict_proba,
        predict_proba_conditions,
        save_checkpoint,
        train_lora,
    )
    from crsbench.runs.cell_recal import lora_recalibrated_rows

    s = train_settings(cfg)
    from crsbench.features.runner import forward_chunk

    # evaluation batches sized like the frozen extraction's forward passes (CPU cache budget)
    bs = forward_chunk(cfg.batch_size, cell.input_size, model.device.type == "cuda")
    by_id = {(i["fraction"], i["condition"], i["severity"], i["recalibrator"],
              i["eval_dataset"]): i for i in ids}  # fmt: skip
    rows: list[dict[str, Any]] = []

    def emit(key: tuple, y: np.ndarray, prob: np.ndarray, t0: float, det: dict) -> None:
        key = key if len(key) == 5 else (*key, cell.name)  # eval_dataset: the cell's own
        metrics = score(y, prob, cell.task)
        metrics["details"].update(det)
        rows.append({**by_id[key], **metrics, "wall_time_s": time.perf_counter() - t0})

    for f in cfg.lora_fractions:
        t0 = time.perf_counter()
        tr = cell.train_rows(subsets[f])
        ckpt = ckpt_root / f"seed{seed}" / f"fraction{f:g}"
        fit = train_lora(model, cell.clean, tr, cell.y[tr], cell.clean, cell.val, cell.y[cell.val],
                         settings=s, seed=seed, ckpt_dir=ckpt, progress=progress)  # fmt: skip
        save_checkpoint(ckpt / "adapter.pt", model.trainable_state())
        det = {**extra, **fit.as_details()}
        adapted = merged_copy(model)  # evaluates at the frozen encoder's cost
        if f != 1.0:
            prob = predict_proba(adapted, cell.clean, cell.test, bs)
            emit((f, "clean", 0, "none"), cell.y[cell.test], prob, t0, det)
            continue
        probs = predict_proba_conditions(adapted, cell.test_multi, cell.test_local, bs)
        y_test = cell.y[cell.test]
        emit((1.0, "clean", 0, "none"), y_test, probs[0], t0, det)
        for (name, sev), prob in zip(cell.conds, probs[1:], strict=True):
            emit((1.0, name, sev, "none"), y_test, prob, time.perf_counter(), det)
        shift_probs = []
        for sh in cell.shifts:
            t1 = time.perf_counter()
            shift_probs.append(predict_proba(adapted, sh.rows, sh.ok, bs))
            ref = shift_reference(sh, y_test, lambda p=probs[0]: p)
            emit((1.0, "shift", 0, "none", sh.target), sh.y, shift_probs[-1], t1,
                 {**det, **sh.details, **ref})  # fmt: skip
        calib_prob = predict_proba(adapted, cell.clean, cell.calib, bs)
        shifted = [
            (sh.target, sh.y, prob,
             lambda cp, sh=sh, y_test=y_test: {**sh.details, **shift_reference(
                 sh, y_test, None if cp is None else (lambda: cp))})
            for sh, prob in zip(cell.shifts, shift_probs, strict=True)
        ]  # fmt: skip
        rows += lora_recalibrated_rows(
            cfg.recalibrators, cell.task, seed, (calib_prob, cell.y[cell.calib]),
            (y_test, probs[0]), shifted,
            lambda rec, where, target=None: by_id[(1.0, where, 0, rec, target or cell.name)], det,
        )  # fmt: skip
    return rows


def _adapted_encoder(cfg: BenchmarkConfig, spec: Any) -> tuple[Any, str]:
    """A fresh encoder (never the frozen pipeline's cached one) with LoRA adapters."""
    from crsbench.adapt import wrap_with_lora
    from crsbench.encoders import build
    from crsbench.runs.extract_cell import encoder_revision, resolve_device

    enc = build(spec.name, device=resolve_device(cfg.device), weights_path=spec.weights_path,
                allow_remote_code=spec.allow_remote_code)  # fmt: skip
    enc = enc.set_input_size(spec.input_size)
    # the base weights, and the arithmetic fine-tuning uses (bf16 autocast on CUDA, fp32 on
    # CPU: crsbench.adapt), in the frozen rows' form so mixed precisions are never averaged
    precision = "bf16" if str(enc.device).startswith("cuda") else "fp32"
    revision = encoder_revision(enc, precision)
    lora = cfg.regimes.lora
    wrap_with_lora(enc, rank=lora.rank, alpha=lora.alpha, dropout=lora.dropout)
    return enc, revision


def run_lora_stage(
    cfg: BenchmarkConfig,
    prepared: dict[str, Any],
    store: Any,
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
    from crsbench import __version__
    from crsbench.adapt import LoraClassifier
    from crsbench.runs.extract_cell import run_working_size
    from crsbench.runs.pipeline import to_records

    lora = cfg.regimes.lora
    if not lora.enabled:
        return 0
    modalities = {n: prepared[n].dataset.card.modality for n in cfg.probe_datasets}
    planned = lora_plan(cfg, modalities)
    done = store.done_keys()
    written = 0
    adapted = {e for e, _ in planned}
    for spec in cfg.lora_encoders:
        encoder = None
        if spec.name not in adapted:
            log.warning("lora regime: skipping encoder %r: it has no learnable weights", spec.name)
            continue
        for name in cfg.probe_datasets:
            if (spec.name, name) not in planned:  # a cell of exclude_cells
                continue
            prep = prepared[name]
            plan = planned[(spec.name, name)]
            todo = [s for s in lora.seeds
                    if not {make_run_key(i, cfg_hash) for i in plan[s]} <= done]  # fmt: skip
            if not todo:
                continue
            if encoder is None:
                try:
                    encoder, revision = _adapted_encoder(cfg, spec)
                except EncoderError as exc:
                    log.warning("lora regime: skipping encoder %r: %s", spec.name, exc)
                    break
                mod = encoder.module
                extra = {"lora": {"rank": lora.rank, "alpha": lora.alpha,
                                  "dropout": lora.dropout, "epochs": lora.epochs,
                                  "targets": list(mod.crsbench_lora_targets),
                                  "targets_source": mod.crsbench_lora_source}}  # fmt: skip
            shift_preps = {t: prepared[t] for t in shift_targets_of(cfg, name)}
            cell = _Cell(cfg, name, prep, shift_preps, run_working_size(cfg),
                         encoder.input_size)  # fmt: skip
            model = LoraClassifier(encoder, cell.n_outputs, cell.task)
            root = Path(cfg.output_dir) / "lora" / cfg_hash[:12] / spec.name / name
            for seed in todo:
                rows = _seed_rows(cfg, cell, model, plan[seed], seed,
                                  _subsets(cfg, name, prep, seed), root, extra, progress)  # fmt: skip
                records = to_records(rows, cfg_hash=cfg_hash, encoder_revision=revision,
                                     dataset_revision=prep.dataset.revision,
                                     anchors_version=cfg.anchors, package_version=__version__)  # fmt: skip
                written += store.append(records)
                log.info("lora regime: %s × %s seed %d: %d records", spec.name, name, seed,
                         len(records))  # fmt: skip
    return written
