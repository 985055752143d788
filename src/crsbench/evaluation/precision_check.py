"""The bf16 check: extract a labelled probe batch in fp32 and in bf16, compare, decide.

Both feature sets come from :func:`crsbench.features.extract` itself (same decode,
perturbations, batch-norm folding and memory format as the real run), at the last layer,
under every condition of the batch. Criteria (thresholds in :mod:`crsbench.features.precision`):

* the minimum row cosine between bf16 and fp32 features over every image and condition;
* the largest |AUROC(bf16) - AUROC(fp32)| over the conditions, where each AUROC is the macro
  AUROC on the odd positions of the batch of a logistic probe (C = 1) fitted on the clean
  features of its even positions. When the labels make this impossible (one class in the
  fitting half, or no column with both classes in the evaluation half), the cosine alone
  decides and the decision says so.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from crsbench.core.errors import DataError
from crsbench.datasets.bounds import ImageBounds
from crsbench.features.cache import FeatureCache, make_key, sha256_text
from crsbench.features.precision import (
    PRECISION_CHECK_VERSION,
    PrecisionCheck,
    PrecisionDecision,
    bf16_candidate,
    check_requested,
    decide,
    read_figures,
    write_figures,
)
from crsbench.protocol import CLEAN


@dataclass(frozen=True)
class ProbeBatch:
    """Labelled images the check extracts: ``labels[i]`` belongs to ``image_ids[i]``.

    ``labels`` is a class vector (``multiclass``) or an N×L 0/1/NaN matrix (``multilabel``);
    ``conditions`` are those the cell extracts (clean always included); ``working_size`` is
    the run's working resolution they are decoded and perturbed at (None: the engine's
    default for the one encoder).
    """

    image_ids: Sequence[str]
    paths: Sequence[str]
    labels: np.ndarray
    task: str
    n_outputs: int
    dataset_revision: str
    conditions: tuple[tuple[str, int], ...] = ((CLEAN, 0),)
    working_size: int | None = None
    image_bounds: ImageBounds = ImageBounds()


def row_cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine of each row of ``a`` with the same row of ``b`` (1 where both are zero)."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    na, nb = np.linalg.norm(a, axis=1), np.linalg.norm(b, axis=1)
    dot = np.einsum("ij,ij->i", a, b)
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = dot / (na * nb)
    return np.where((na == 0) & (nb == 0), 1.0, np.nan_to_num(cos, nan=0.0))


def device_label(encoder: Any) -> str:
    """``cuda:<GPU name>`` or ``cpu:<native|emulated>-bf16``: what the bf16 kernels depend on."""
    import torch

    from crsbench.features.precision import cpu_has_native_bf16

    dev = torch.device(getattr(encoder, "device", "cpu"))
    if dev.type == "cuda":
        return f"cuda:{torch.cuda.get_device_name(dev)}"
    return f"{dev.type}:{'native' if cpu_has_native_bf16() else 'emulated'}-bf16"


def check_key(encoder: Any, batch: ProbeBatch, check: PrecisionCheck) -> tuple[str, dict]:
    """Key of the cached figures: check version and thresholds, the encoder's weights and
    preprocessing, device, torch version, pixel code and the probe batch."""
    import torch

    from crsbench.features.loader import feature_code_hash, file_fingerprint, resolve_perturb

    perturbed = any(name != CLEAN for name, _ in batch.conditions)
    parts = {
        "check_version": PRECISION_CHECK_VERSION,
        "check": {"min_cosine": check.min_cosine, "max_auroc_delta": check.max_auroc_delta},
        "encoder": encoder.card.name,
        "encoder_revision": str(getattr(encoder.card, "revision", "")),
        "weights_hash": str(encoder.weights_hash),
        "preprocess_hash": str(encoder.preprocess_hash),
        "device": device_label(encoder),
        "torch": torch.__version__,
        "feature_code": feature_code_hash(),
        "perturbation_version": resolve_perturb(None)[1] if perturbed else None,
        "dataset_revision": batch.dataset_revision,
        "probe_ids": sha256_text([str(i) for i in batch.image_ids]),
        "probe_files": sha256_text([file_fingerprint(str(p)) for p in batch.paths]),
        "conditions": [list(c) for c in batch.conditions],
        "working_size": batch.working_size,
    }
    return make_key(parts), parts


def _extract(encoder: Any, batch: ProbeBatch, cache: FeatureCache, precision: str) -> dict:
    from crsbench.features.engine import extract
    from crsbench.features.settings import ExtractSettings

    settings = ExtractSettings(
        conditions=batch.conditions, depths=(1.0,), batch_size=32, num_workers=0,
        progress=False, max_bad_fraction=1.0, precision=precision,
        working_size=batch.working_size, image_bounds=batch.image_bounds,
    )  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # emulated bf16: said once, upstream
        res = extract(encoder, list(batch.image_ids), list(batch.paths), cache=cache,
                      dataset_revision=batch.dataset_revision, settings=settings)  # fmt: skip
    return {c: res[(c, 1.0)] for c in batch.conditions}


def _auroc(fit_x, fit_y, evals: list, batch: ProbeBatch) -> list[float]:
    """Macro AUROC on each evaluation set of a logistic probe (C = 1) fitted on the fit rows."""
    from crsbench.metrics import macro_auroc
    from crsbench.probes import LogisticProbe

    probe = LogisticProbe(C=1.0, task=batch.task, n_outputs=batch.n_outputs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        probe.fit(fit_x, fit_y)
        return [float(macro_auroc(y, probe.predict_proba(x), batch.task)) for x, y in evals]


def measure(encoder: Any, batch: ProbeBatch, cache: FeatureCache) -> dict[str, Any]:
    """The check's figures: min row cosine, AUROC of fp32 and bf16 features (or why not)."""
    f32 = _extract(encoder, batch, cache, "fp32")
    b16 = _extract(encoder, batch, cache, "bf16")
    cos = min(float(row_cosine(f32[c].features, b16[c].features).min()) for c in f32)
    clean = batch.conditions[0]
    pos = {str(i): k for k, i in enumerate(batch.image_ids)}
    rows = np.array([pos[str(i)] for i in np.asarray(f32[clean].ids).tolist()])
    labels = np.asarray(batch.labels)[rows]
    fit, ev = np.arange(0, len(rows), 2), np.arange(1, len(rows), 2)
    figures: dict[str, Any] = {"min_cosine": cos, "n_images": int(len(rows)),
                               "auroc_fp32": None, "auroc_bf16": None}  # fmt: skip
    problem = _auroc_problem(labels[fit], labels[ev], batch.task)
    if problem:
        figures["auroc_problem"] = problem
        return figures
    aucs = {}
    for name, feats in (("fp32", f32), ("bf16", b16)):
        evals = [(np.asarray(feats[c].features)[ev], labels[ev]) for c in batch.conditions]
        try:
            aucs[name] = _auroc(np.asarray(feats[clean].features)[fit], labels[fit], evals, batch)
        except DataError as exc:
            figures["auroc_problem"] = f"probe cannot be fitted: {exc}"
            return figures
    if not np.isfinite(np.concatenate([aucs["fp32"], aucs["bf16"]])).all():
        figures["auroc_problem"] = "AUROC undefined on the evaluation half of the probe batch"
        return figures
    figures["auroc_step"] = auroc_step(labels[ev], batch.task)
    worst = int(np.argmax(np.abs(np.subtract(aucs["bf16"], aucs["fp32"]))))
    figures.update(auroc_fp32=aucs["fp32"][worst], auroc_bf16=aucs["bf16"][worst],
                   auroc_condition=list(batch.conditions[worst]))  # fmt: skip
    return figures


def auroc_step(y: np.ndarray, task: str) -> float:
    """Smallest change of the macro AUROC on labels ``y`` that one swapped (positive,
    negative) pair can cause: ``min_j 1 / (K * n_pos_j * n_neg_j)`` over the K columns with
    both classes. Above the AUROC threshold, the criterion means identical rankings."""
    if task == "multilabel":
        y = np.asarray(y, float)
        pos, neg = np.nansum(y == 1, axis=0), np.nansum(y == 0, axis=0)
    else:
        y = np.asarray(y)
        pos = np.array([np.sum(y == k) for k in np.unique(y)])
        neg = len(y) - pos
    pairs = (pos * neg)[(pos > 0) & (neg > 0)]
    return float(1.0 / (len(pairs) * pairs.max())) if len(pairs) else float("nan")


def _auroc_problem(fit_y: np.ndarray, eval_y: np.ndarray, task: str) -> str:
    """Why no AUROC can be measured on this split of the probe batch ("" when it can)."""
    if task == "multilabel":
        fit_y, eval_y = np.asarray(fit_y, float), np.asarray(eval_y, float)
        both = [np.nanmin(y, axis=0) < np.nanmax(y, axis=0) for y in (fit_y, eval_y)]
        if not (both[0] & both[1]).any():
            return "no label has both classes in both halves of the probe batch"
        return ""
    n_fit, n_eval = len(np.unique(fit_y)), len(np.unique(eval_y))
    if n_fit < 2 or n_eval < 2:
        return f"single class in the probe batch ({n_fit} in the fitting half, {n_eval} in the evaluation half)"
    return ""


def decide_precision(
    requested: str,
    encoder: Any,
    batch: ProbeBatch | None,
    cache: FeatureCache,
    check: PrecisionCheck | None = None,
) -> PrecisionDecision:
    """Resolve ``requested`` (``auto``/``fp32``/``bf16``) for ``encoder`` on ``batch``.

    ``fp32`` skips the check. ``auto`` runs it only where bf16 is a candidate
    (:func:`~crsbench.features.precision.bf16_candidate`: CUDA) and keeps bf16 only if it
    passes; elsewhere fp32. ``bf16`` is kept as asked; the check still runs and its figures are
    recorded (a warning when it fails). Figures are cached under ``cache.root/precision``.
    """
    import torch

    check = check or PrecisionCheck()
    check_requested(requested)
    device_type = torch.device(getattr(encoder, "device", "cpu")).type
    if requested == "fp32":
        return decide(requested, None, check, "fp32 requested: no check")
    if requested == "auto" and not bf16_candidate(device_type):
        return decide(requested, None, check, f"bf16 not considered on {device_type}: fp32")
    if batch is None or len(batch.image_ids) < 2:
        return decide(requested, None, check, "no probe batch: bf16 cannot be checked")
    key, parts = check_key(encoder, batch, check)
    figures = read_figures(cache.root, key)
    if figures is None:
        figures = measure(encoder, batch, cache)
        write_figures(cache.root, key, parts, figures)
    decision = decide(requested, figures, check)
    if requested == "bf16" and not decision.passed:
        warnings.warn(f"precision='bf16' forced for {encoder.card.name}: {decision.reason}",
                      RuntimeWarning, stacklevel=2)  # fmt: skip
    return decision
