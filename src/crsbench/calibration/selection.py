"""Recalibration chosen by cross-validation on the calibration split, identity as fallback.

For one method, every candidate regularisation of the protocol's grid is scored by the mean
negative log-likelihood of its pooled out-of-fold predictions (stratified K-fold, shuffled
with the run's seed); the best candidate is refitted on the whole split only if its CV loss
is strictly below the identity map's, otherwise the identity map is kept. Multi-label: each
label on its own (its labelled rows, folds stratified by that label), so one label can keep
the identity while another is recalibrated. A split with fewer rows of some class than the
protocol's minimum raises :class:`CalibrationSplitTooSmall` instead of returning a map.
The candidates × folds fits of Dirichlet calibration and vector scaling are solved together
(:mod:`crsbench.calibration.batched`); ``batched=False`` fits them one by one (the reference).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import expit, softmax
from sklearn.model_selection import StratifiedKFold

from crsbench.calibration.base import CalibratorBase, to_logits
from crsbench.calibration.batched import oof_batched
from crsbench.calibration.recal_settings import (
    RecalProtocol,
    check_calibration_size,
    load_recal_protocol,
)
from crsbench.calibration.registry import CALIBRATORS
from crsbench.core.types import check_task
from crsbench.core.validation import check_features, check_targets

_EPS = 1e-15
#: Candidates whose CV losses differ by at most this fraction tie: the earlier in the grid is
#: kept. (Dirichlet with K = 2, e.g. a multi-label label's fit, does not depend on λ at all:
#: its λ candidates differ only by float rounding, ~1e-16 relative, in either solver.)
TIE_TOL = 1e-12


@dataclass(frozen=True)
class _Choice:
    """Outcome of the CV choice for one problem (the multi-class task, or one label)."""

    model: CalibratorBase | None  # None: the identity map
    params: Mapping[str, float]
    cv_nll_identity: float
    cv_nll_fitted: float

    def record(self) -> dict[str, Any]:
        return {
            "choice": "identity" if self.model is None else "fitted",
            "params": dict(self.params),
            "cv_nll_identity": round(self.cv_nll_identity, 10),
            "cv_nll_fitted": round(self.cv_nll_fitted, 10),
        }


@dataclass(frozen=True)
class RecalibrationFit:
    """A fitted, cross-validated recalibration: ``predict_proba(scores)`` and ``record()``.

    Attributes
    ----------
    method, task : str
    input : {"auto", "probs", "logits"}
        How the scores were read (see :func:`crsbench.calibration.to_logits`).
    choices : tuple of _Choice
        One for a multi-class task, one per label for a multi-label task.
    protocol : RecalProtocol
    seed : int
        Seed of the CV folds.
    """

    method: str
    task: str
    input: str
    n_outputs: int
    choices: tuple[_Choice, ...]
    protocol: RecalProtocol
    seed: int

    @property
    def choice(self) -> str:
        """``"fitted"``, ``"identity"`` or (multi-label, some of each) ``"mixed"``."""
        kinds = {"identity" if c.model is None else "fitted" for c in self.choices}
        return kinds.pop() if len(kinds) == 1 else "mixed"

    def predict_proba(self, scores: object) -> np.ndarray:
        """Recalibrated N×K probabilities (the identity map where CV kept it)."""
        S = check_features(scores, "scores", self.n_outputs).astype(np.float64)
        Z = to_logits(S, self.task, self.input)
        if self.task == "multiclass":
            model = self.choices[0].model
            return softmax(Z, axis=1) if model is None else model.predict_proba(Z)
        out = expit(Z)
        for j, c in enumerate(self.choices):
            if c.model is not None:
                out[:, j] = c.model.predict_proba(Z[:, j : j + 1])[:, 0]
        return out

    def record(self) -> dict[str, Any]:
        """JSON-serialisable account of the choice (stored in the run row's details)."""
        per = [c.record() for c in self.choices]
        head = {**self.protocol.summary(), "seed": int(self.seed), "choice": self.choice}
        if self.task == "multiclass":
            return {**head, **per[0]}
        return {**head, "labels": per}


def fit_recalibrator(
    method: str,
    scores: object,
    y: object,
    task: str,
    seed: int,
    protocol: RecalProtocol | None = None,
    input: str = "auto",
    batched: bool = True,
) -> RecalibrationFit:
    """Fit ``method`` on calibration-split scores with CV-chosen regularisation.

    Parameters
    ----------
    method : {"temperature", "vector", "isotonic", "dirichlet"}
    scores : array-like (N, K)
        Calibration-split probabilities or logits.
    y : array-like
        Class indices (multiclass) or an N×L 0/1/NaN matrix (multilabel).
    task : {"multiclass", "multilabel"}
    seed : int
        Seeds the stratified folds (the run row's seed).
    protocol : RecalProtocol, optional
        Default: the packaged ``recal_v1.yaml``.
    input : {"auto", "probs", "logits"}
    batched : bool, default True
        Fit the grid × folds problems of Dirichlet calibration and vector scaling together
        (:mod:`crsbench.calibration.batched`); False fits each with the calibrator itself,
        one by one (the reference path; the same choice and probabilities to ~1e-9).

    Returns
    -------
    RecalibrationFit

    Raises
    ------
    CalibrationSplitTooSmall
        If some class (label side) has fewer rows than ``protocol.min_per_class``.
    """
    check_task(task)
    proto = protocol or load_recal_protocol()
    cls = CALIBRATORS.get(method)
    S = check_features(scores, "scores").astype(np.float64)
    yy = check_targets(y, task, S.shape[0], "y", S.shape[1])
    check_calibration_size(yy, task, S.shape[1], proto.min_per_class)
    Z = to_logits(S, task, input)
    spec = _Spec(method if batched else "", cls, proto.grids[method], task, proto.n_folds, seed)
    if task == "multiclass":
        choices: Sequence[_Choice] = [_choose(spec, Z, yy, yy)]
    else:
        choices = []
        for j in range(Z.shape[1]):
            m = ~np.isnan(yy[:, j])
            t = yy[m, j : j + 1]
            choices.append(_choose(spec, Z[m, j : j + 1], t, t[:, 0]))
    return RecalibrationFit(method, task, input, S.shape[1], tuple(choices), proto, int(seed))


@dataclass(frozen=True)
class _Spec:
    """What one CV choice fits: the batched solver's method name ("" for one by one), the
    calibrator class, its candidate grid, the task, the number of folds and their seed."""

    batched: str
    cls: type
    grid: Sequence[Mapping[str, float]]
    task: str
    n_folds: int
    seed: int


def _choose(spec: _Spec, Z: np.ndarray, y: np.ndarray, strata: np.ndarray) -> _Choice:
    """Best candidate by CV NLL; refitted on all rows only if it beats the identity map.

    Candidates are compared in grid order: a later one replaces the best only if its CV loss
    is lower by more than a fraction :data:`TIE_TOL` of the best, so of tied candidates the
    first in the grid is kept; the identity map wins a tie with the best (strict ``<``).
    """
    task, grid = spec.task, spec.grid
    kfold = StratifiedKFold(spec.n_folds, shuffle=True, random_state=spec.seed)
    folds = list(kfold.split(Z, strata))
    identity = row_nll(softmax(Z, axis=1) if task == "multiclass" else expit(Z), y, task).mean()
    oof_all = oof_batched(spec.batched, grid, Z, y, task, folds)
    best_loss, best_params = np.inf, grid[0]
    for g, params in enumerate(grid):
        oof = _oof_one_by_one(spec, params, Z, y, folds) if oof_all is None else oof_all[g]
        loss = row_nll(oof, y, task).mean()
        if loss < best_loss * (1.0 - TIE_TOL):
            best_loss, best_params = loss, params
    model = None
    if best_loss < identity:
        model = spec.cls(task=task, input="logits", **best_params).fit(Z, y)
    return _Choice(model, best_params, float(identity), float(best_loss))


def _oof_one_by_one(
    spec: _Spec,
    params: Mapping[str, float],
    Z: np.ndarray,
    y: np.ndarray,
    folds: Sequence[tuple[np.ndarray, np.ndarray]],
) -> np.ndarray:
    """Out-of-fold probabilities of one candidate, one calibrator fit per fold."""
    oof = np.empty_like(Z)
    for train, held in folds:
        c = spec.cls(task=spec.task, input="logits", **params).fit(Z[train], y[train])
        oof[held] = c.predict_proba(Z[held])
    return oof


def row_nll(P: np.ndarray, y: np.ndarray, task: str) -> np.ndarray:
    """Per-row negative log-likelihood (multi-class) or per-entry cross-entropy (one label).

    Probabilities are clipped to [1e-15, 1 − 1e-15], as in
    :func:`crsbench.metrics.negative_log_likelihood`.
    """
    P = np.clip(P, _EPS, 1.0 - _EPS)
    if task == "multiclass":
        return -np.log(P[np.arange(len(y)), y])
    return -(y * np.log(P) + (1.0 - y) * np.log1p(-P)).ravel()
