"""Random-effects pooling of one quantity over sites: DerSimonian–Laird or REML.

Each site ``i`` reports an estimate ``y_i`` with its sampling variance ``v_i`` (the site's
bootstrap variance). The model is ``y_i = mu + u_i + e_i`` with ``u_i ~ N(0, tau²)`` (the
between-site spread) and ``e_i ~ N(0, v_i)``.

- **tau²**: DerSimonian–Laird's method of moments, or REML (Viechtbauer 2005, eq. 12: the
  Fisher-scoring fixed point, started at the DL value and truncated at 0), as R's metafor.
- **Pooled mean** ``mu``: inverse-variance weights ``1 / (v_i + tau²)``. Its interval is the
  Hartung–Knapp–Sidik–Jonkman one: the weighted residual variance scales the standard error
  and the quantile is Student's t with ``k − 1`` degrees of freedom. With 3–12 sites the plain
  normal interval covers the true mean too rarely (the benchmark ``benchmarks/consortium.py``
  measures both); statsmodels calls the same interval the ``hksj`` random-effects interval.
- **I²**: ``tau² / (tau² + s²)`` with ``s²`` the typical within-site variance (Higgins &
  Thompson 2002); for DL it equals ``(Q − (k − 1)) / Q`` when positive, as statsmodels
  reports it.
- **Prediction interval for a new site** (Higgins, Thompson & Spiegelhalter 2009):
  ``mu ± t_{k−2} · sqrt(tau² + SE(mu)²)``. ``k − 2`` degrees of freedom because both ``mu``
  and ``tau²`` are estimated from the ``k`` sites; it needs at least three sites (with two
  it is undefined and left NaN).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from crsbench.core.errors import DataError

#: The between-site variance estimators.
METHODS: tuple[str, ...] = ("reml", "dl")
_REML_TOL = 1e-15
_REML_MAX_ITER = 10_000


@dataclass(frozen=True)
class Pooled:
    """The random-effects summary of one quantity over ``k`` sites.

    Attributes
    ----------
    method : str
        ``"reml"`` or ``"dl"``.
    k : int
        Sites pooled.
    mean, se : float
        Pooled mean and its (model-based) standard error ``1 / sqrt(sum w)``.
    ci_low, ci_high : float
        Hartung–Knapp–Sidik–Jonkman interval of the mean (t with ``k − 1`` df).
    tau2, i2, q : float
        Between-site variance, I² (0–1) and Cochran's Q (fixed-effect weights).
    pi_low, pi_high : float
        Prediction interval for a new site's true value (t with ``k − 2`` df; NaN for k < 3).
    level : float
        Nominal level of both intervals.
    """

    method: str
    k: int
    mean: float
    se: float
    ci_low: float
    ci_high: float
    tau2: float
    i2: float
    q: float
    pi_low: float
    pi_high: float
    level: float


def _check(y: np.ndarray, v: np.ndarray) -> None:
    if y.shape != v.shape or y.ndim != 1 or len(y) < 2:
        raise DataError(f"pooling needs at least two sites, one estimate and variance each. "
                        f"Got {len(y)} estimates and {len(v)} variances.")  # fmt: skip
    if not (np.isfinite(y).all() and np.isfinite(v).all() and (v > 0).all()):
        raise DataError("pooling needs finite estimates and positive finite variances.")


def cochran_q(y: np.ndarray, v: np.ndarray) -> float:
    """Cochran's Q with fixed-effect weights ``1 / v``."""
    w = 1.0 / v
    mu = np.sum(w * y) / np.sum(w)
    return float(np.sum(w * (y - mu) ** 2))


def tau2_dl(y: np.ndarray, v: np.ndarray) -> float:
    """DerSimonian–Laird between-site variance (method of moments, truncated at 0)."""
    w = 1.0 / v
    c = np.sum(w) - np.sum(w**2) / np.sum(w)
    return float(max(0.0, (cochran_q(y, v) - (len(y) - 1)) / c))


def tau2_reml(y: np.ndarray, v: np.ndarray) -> float:
    """REML between-site variance: the fixed point of Viechtbauer (2005) eq. 12, from DL.

    ``tau² = sum w²((y − mu)² − v) / sum w² + 1 / sum w`` with ``w = 1 / (v + tau²)``,
    iterated to a relative change below 1e-15 and truncated at 0 (as metafor).
    """
    tau2 = tau2_dl(y, v)
    for _ in range(_REML_MAX_ITER):
        w = 1.0 / (v + tau2)
        mu = np.sum(w * y) / np.sum(w)
        new = np.sum(w**2 * ((y - mu) ** 2 - v)) / np.sum(w**2) + 1.0 / np.sum(w)
        new = max(0.0, float(new))
        if abs(new - tau2) <= _REML_TOL * (1.0 + tau2):
            return new
        tau2 = new
    return tau2


def reml_loglik(tau2: float, y: np.ndarray, v: np.ndarray) -> float:
    """The restricted log-likelihood of ``tau2`` (up to a constant)."""
    w = 1.0 / (v + tau2)
    mu = np.sum(w * y) / np.sum(w)
    return float(-0.5 * (np.sum(np.log(v + tau2)) + np.log(np.sum(w)) + np.sum(w * (y - mu) ** 2)))


def between_site_variance(y: np.ndarray, v: np.ndarray, method: str) -> float:
    """tau² by ``method`` (``"reml"`` or ``"dl"``)."""
    if method == "reml":
        return tau2_reml(y, v)
    if method == "dl":
        return tau2_dl(y, v)
    raise DataError(f"method must be one of {list(METHODS)}. Got {method!r} instead.")


def typical_within_variance(v: np.ndarray) -> float:
    """Higgins & Thompson's typical within-site variance ``(k−1) Σw / ((Σw)² − Σw²)``."""
    w = 1.0 / v
    return float((len(v) - 1) * np.sum(w) / (np.sum(w) ** 2 - np.sum(w**2)))


def pool(y: np.ndarray | list[float], v: np.ndarray | list[float], method: str = "reml",
         level: float = 0.95) -> Pooled:  # fmt: skip
    """Random-effects summary of estimates ``y`` with sampling variances ``v`` (see module).

    Raises
    ------
    DataError
        Fewer than two sites, a non-finite value or a variance that is not positive.
    """
    y, v = np.asarray(y, dtype=float), np.asarray(v, dtype=float)
    _check(y, v)
    k = len(y)
    tau2 = between_site_variance(y, v, method)
    w = 1.0 / (v + tau2)
    mean = float(np.sum(w * y) / np.sum(w))
    se = float(1.0 / np.sqrt(np.sum(w)))
    se_hk = float(np.sqrt(np.sum(w * (y - mean) ** 2) / ((k - 1) * np.sum(w))))
    half = stats.t.isf((1 - level) / 2, k - 1) * se_hk
    if k >= 3:
        pi_half = stats.t.isf((1 - level) / 2, k - 2) * np.sqrt(tau2 + se**2)
    else:
        pi_half = np.nan
    s2 = typical_within_variance(v)
    return Pooled(method, k, mean, se, mean - half, mean + half, tau2, tau2 / (tau2 + s2),
                  cochran_q(y, v), mean - pi_half, mean + pi_half, level)  # fmt: skip


def pooled_means(y: np.ndarray, v: np.ndarray, method: str) -> np.ndarray:
    """Random-effects means of many resamples at once: rows of ``(B, k)`` estimates ``y`` and
    variances ``v`` (the same tau² estimators as :func:`pool`, vectorised over rows)."""
    y, v = np.atleast_2d(np.asarray(y, float)), np.atleast_2d(np.asarray(v, float))
    w = 1.0 / v
    mu_fe = np.sum(w * y, axis=1) / np.sum(w, axis=1)
    q = np.sum(w * (y - mu_fe[:, None]) ** 2, axis=1)
    c = np.sum(w, axis=1) - np.sum(w**2, axis=1) / np.sum(w, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        tau2 = np.where(c > 0, np.maximum(0.0, (q - (y.shape[1] - 1)) / c), 0.0)
    if method == "reml":
        tau2 = _reml_rows(y, v, tau2)
    elif method != "dl":
        raise DataError(f"method must be one of {list(METHODS)}. Got {method!r} instead.")
    w = 1.0 / (v + tau2[:, None])
    return np.sum(w * y, axis=1) / np.sum(w, axis=1)


def _reml_rows(y: np.ndarray, v: np.ndarray, tau2: np.ndarray) -> np.ndarray:
    """:func:`tau2_reml`'s fixed point for every row, iterated until every row converged."""
    for _ in range(_REML_MAX_ITER):
        w = 1.0 / (v + tau2[:, None])
        mu = np.sum(w * y, axis=1) / np.sum(w, axis=1)
        new = np.sum(w**2 * ((y - mu[:, None]) ** 2 - v), axis=1) / np.sum(w**2, axis=1)
        new = np.maximum(0.0, new + 1.0 / np.sum(w, axis=1))
        done = np.abs(new - tau2) <= _REML_TOL * (1.0 + tau2)
        tau2 = new
        if done.all():
            break
    return tau2
