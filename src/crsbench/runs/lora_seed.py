"""One LoRA seed of a cell: its images, the fine-tune at every fraction, and its rows.

:func:`seed_rows` fine-tunes the adapted encoder at every label fraction of the LoRA regime
and scores every planned identity of the seed (clean test at every fraction; at the full
fraction also every condition, every shift target and every recalibrator), exactly like the
frozen main probe. :mod:`crsbench.runs.lora_stage` plans, commits and resumes the seeds.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from crsbench.config import BenchmarkConfig
from crsbench.evaluation.cell_recal import (
    AdaptedPredictions,
    AdaptedShift,
    AdaptedShiftDetails,
    lora_recalibrated_rows,
)
from crsbench.evaluation.cell_scoring import (
    Evaluation,
    RowScorer,
    shift_details,
    targets,
)
from crsbench.evaluation.identity import RunIdentity
from crsbench.features.runner import forward_chunk
from crsbench.protocol import CLEAN
from crsbench.runs.plan import cell_conditions
from crsbench.runs.prepare import PreparedDataset
from crsbench.store.details import LoraFit, RunDetails, ShiftDetails
from crsbench.store.run_result import RunResult

if TYPE_CHECKING:  # crsbench.adapt imports torch: loaded only when a seed is fine-tuned
    from crsbench.adapt import LoraTrainSettings

#: Training batch size of every fine-tune (a protocol constant: it changes the result).
TRAIN_BATCH_SIZE = 32
#: Early-stopping patience in epochs.
PATIENCE = 3


def train_settings(cfg: BenchmarkConfig) -> LoraTrainSettings:
    """The fine-tuning budget of ``cfg.regimes.lora`` (the same for every encoder)."""
    from crsbench.adapt import LoraTrainSettings, lr_grid

    spec = cfg.regimes.lora
    return LoraTrainSettings(
        epochs=spec.epochs,
        lrs=lr_grid(spec.lr, spec.lr_factors),
        batch_size=TRAIN_BATCH_SIZE,
        patience=PATIENCE,
    )


@dataclass(frozen=True)
class _Shift:
    """One shift target of a LoRA cell: its decodable rows, targets and record details."""

    target: str
    rows: Any
    ok: np.ndarray
    y: np.ndarray
    details: ShiftDetails
    compared: np.ndarray | None
    label_names: tuple[str, ...]


class LoraCell:
    """Images, targets and split rows of one (encoder, dataset), shared by its seeds."""

    def __init__(
        self,
        cfg: BenchmarkConfig,
        name: str,
        prep: PreparedDataset,
        shift_preps: Mapping[str, PreparedDataset],
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
        self.bounds = cfg.image_bounds  # the run's: the frozen extraction refuses the same files
        self.clean = ImageRows(ds.paths, ds.image_ids, size, bounds=self.bounds)
        sp = prep.splits
        self.train = np.asarray(sp.train)
        self.val = self._ok(self.clean, sp.val)
        self.calib = self._ok(self.clean, sp.calib)
        test = self._ok(self.clean, sp.test)
        multi = ImageRows(ds.paths[test], ds.image_ids[test], size, ((CLEAN, 0), *self.conds),
                          bounds=self.bounds)  # fmt: skip
        keep = multi.ok(np.arange(len(test)))
        self.test, self.test_multi, self.test_local = test[keep], multi, np.flatnonzero(keep)
        self.shifts = [self._shift(ds, t, size) for t in (shift_preps or {}).values()]

    def _shift(self, ds: Any, target: PreparedDataset, size: int) -> _Shift:
        """One shift target's decodable evaluation rows, labels compared like the frozen
        probes' (:func:`crsbench.runs.cell_inputs.shift_cells`)."""
        from crsbench.adapt import ImageRows
        from crsbench.runs.cell_inputs import shift_labels

        tds, rows = target.dataset, np.asarray(target.eval_rows)
        srows = ImageRows(tds.paths[rows], tds.image_ids[rows], size, bounds=self.bounds)
        ok = self._ok(srows, np.arange(len(rows)))
        scored = target.shift_details(np.isin(np.arange(len(rows)), ok))
        y, compared = shift_labels(ds, tds, tds.labels[rows][ok])
        return _Shift(tds.name, srows, ok, targets(y, ds.task), scored, compared,
                      tuple(ds.label_names))  # fmt: skip

    @staticmethod
    def _ok(images: Any, rows: Any) -> np.ndarray:
        rows = np.asarray(rows, dtype=np.int64)
        return rows[images.ok(rows)]

    def train_rows(self, subset: np.ndarray) -> np.ndarray:
        return self._ok(self.clean, self.train[subset])


@dataclass(frozen=True)
class SeedWork:
    """One LoRA seed of a cell: its planned identities, label subsamples per fraction and
    the folder its checkpoints go under."""

    seed: int
    ids: list[RunIdentity]
    subsets: dict[float, np.ndarray]
    ckpt_root: Path


class _SeedRows:
    """The results of one LoRA seed, each scored under its planned identity."""

    def __init__(self, cell: LoraCell, work: SeedWork, batch: int) -> None:
        self.cell, self.seed, self.batch = cell, work.seed, batch
        self.by_id = {(i.fraction, i.condition, i.severity, i.recalibrator, i.eval_dataset): i
                      for i in work.ids}  # fmt: skip
        self.scorer = RowScorer(cell.task)
        self.rows: list[RunResult] = []

    def ident(self, key: tuple[float, str, int, str, str | None]) -> RunIdentity:
        """The planned identity of (fraction, condition, severity, recalibrator, eval
        dataset); eval dataset None is the cell's own."""
        f, cond, sev, rec, target = key
        return self.by_id[(f, cond, sev, rec, target or self.cell.name)]

    def recal_ident(self, rec: str, where: str, target: str | None = None) -> RunIdentity:
        """The identity of a recalibrated row (``where``: ``"clean"`` or ``"shift"``)."""
        return self.ident((1.0, where, 0, rec, target))

    def add(self, key: tuple, y: np.ndarray, prob: np.ndarray, t0: float, det: RunDetails) -> None:
        """Score ``prob`` into the result of ``key`` (see :meth:`ident`; eval dataset
        optional)."""
        ident = self.ident(key if len(key) == 5 else (*key, None))
        self.rows.append(self.scorer(Evaluation(ident, y, lambda: prob, det, t0)).result)


def _shift_details(sh: _Shift, y_test: np.ndarray) -> AdaptedShiftDetails:
    """A recalibrated shift row's extra details from the recalibrated clean probabilities."""

    def details(cp: np.ndarray | None) -> RunDetails:
        return shift_details(sh, y_test, None if cp is None else (lambda: cp))

    return details


def _full_label_rows(
    out: _SeedRows, adapted: Any, recalibrators: Sequence[str], det: RunDetails, t0: float
) -> None:
    """The full-fraction rows of an adapted model: clean test, every condition, every shift
    target and every recalibrator (clean and shift)."""
    from crsbench.adapt import predict_proba, predict_proba_conditions

    cell, bs = out.cell, out.batch
    probs = predict_proba_conditions(adapted, cell.test_multi, cell.test_local, bs)
    y_test = cell.y[cell.test]
    out.add((1.0, CLEAN, 0, "none"), y_test, probs[0], t0, det)
    for (name, sev), prob in zip(cell.conds, probs[1:], strict=True):
        out.add((1.0, name, sev, "none"), y_test, prob, time.perf_counter(), det)
    shifts = []
    for sh in cell.shifts:
        t1 = time.perf_counter()
        prob = predict_proba(adapted, sh.rows, sh.ok, bs)
        ref = shift_details(sh, y_test, lambda p=probs[0]: p)
        out.add((1.0, "shift", 0, "none", sh.target), sh.y, prob, t1, det.merged(ref))
        shifts.append(AdaptedShift(sh.target, sh.y, prob, _shift_details(sh, y_test)))
    calib_prob = predict_proba(adapted, cell.clean, cell.calib, bs)
    preds = AdaptedPredictions(cell.task, out.seed, calib_prob, cell.y[cell.calib], y_test,
                               probs[0], tuple(shifts))  # fmt: skip
    out.rows += lora_recalibrated_rows(recalibrators, preds, out.recal_ident, det)


def seed_rows(
    cfg: BenchmarkConfig,
    cell: LoraCell,
    model: Any,
    work: SeedWork,
    extra: RunDetails,
    progress: bool,
) -> list[RunResult]:
    """Fine-tune every fraction of one seed and score every planned identity."""
    from crsbench.adapt import merged_copy, predict_proba, save_checkpoint, train_lora

    s = train_settings(cfg)
    # evaluation batches sized like the frozen extraction's forward passes (CPU cache budget)
    bs = forward_chunk(cfg.batch_size, cell.input_size, model.device.type == "cuda")
    out = _SeedRows(cell, work, bs)
    for f in cfg.lora_fractions:
        t0 = time.perf_counter()
        tr = cell.train_rows(work.subsets[f])
        ckpt = work.ckpt_root / f"seed{work.seed}" / f"fraction{f:g}"
        fit = train_lora(model, cell.clean, tr, cell.y[tr], cell.clean, cell.val, cell.y[cell.val],
                         settings=s, seed=work.seed, ckpt_dir=ckpt, progress=progress)  # fmt: skip
        save_checkpoint(ckpt / "adapter.pt", model.trainable_state())
        det = replace(extra, fit=LoraFit.from_json(fit.as_details()))
        adapted = merged_copy(model)  # evaluates at the frozen encoder's cost
        if f != 1.0:
            prob = predict_proba(adapted, cell.clean, cell.test, bs)
            out.add((f, CLEAN, 0, "none"), cell.y[cell.test], prob, t0, det)
        else:
            _full_label_rows(out, adapted, cfg.recalibrators, det, t0)
    return out.rows
