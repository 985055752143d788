"""The Clinical Reliability Score: utilities, components P / I / W, and the two rules.

``fixed`` (the published rule): utilities from the anchors' fixed bounds, dominance against
the anchors' fixed reference panel, so a score never depends on which other encoders are
scored. ``cohort`` (the alternative the paper tests): min–max utilities over the current
panel of the same cell (dataset) and dominance over the other members of that panel.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from crsbench.core.errors import ConfigError, DataError
from crsbench.scoring.anchors import AXES, UTILITY_COLUMNS, Anchors, Reference, load_anchors
from crsbench.scoring.dominance import (
    UniformDominance,
    UniformReference,
    cohort_dominance,
    dominance_counter,
)

RULES: tuple[str, ...] = ("fixed", "cohort")
SCORE_COLUMNS: tuple[str, ...] = (*UTILITY_COLUMNS, "P", "I", "W", "CRS")


def check_rule(rule: str) -> str:
    """Return ``rule`` if it is ``"fixed"`` or ``"cohort"``, else raise :class:`ConfigError`."""
    if rule not in RULES:
        raise ConfigError(f"rule must be one of {RULES}. Got {rule!r} instead.")
    return rule


def fixed_utilities(raw: np.ndarray, anchors: Anchors) -> np.ndarray:
    """Utilities of raw axes ``(..., 4)`` (order :data:`AXES`) under the fixed anchors."""
    raw = np.asarray(raw, dtype=float)
    return np.stack([anchors.bounds[a].utility(raw[..., j]) for j, a in enumerate(AXES)], -1)


def cohort_utilities(raw: np.ndarray, anchors: Anchors) -> np.ndarray:
    """Min–max utilities over the cohort axis ``-2`` of ``raw`` (shape ``(..., n, 4)``).

    The direction of each axis (higher or lower is better) comes from the anchors' bounds.
    Absent members (any NaN) are ignored; an axis without spread gives every member 0.5.
    """
    raw = np.asarray(raw, dtype=float)
    present = np.isfinite(raw).all(axis=-1, keepdims=True)
    x = np.where(present, raw, np.nan)
    with np.errstate(invalid="ignore"):
        lo = np.nanmin(np.where(present, x, np.inf), axis=-2, keepdims=True)
        hi = np.nanmax(np.where(present, x, -np.inf), axis=-2, keepdims=True)
        span = hi - lo
        up = (x - lo) / np.where(span > 0, span, 1.0)
    higher = np.array([anchors.bounds[a].best > anchors.bounds[a].worst for a in AXES])
    u = np.where(higher, up, 1.0 - up)
    u = np.where(span > 0, u, 0.5)
    return np.where(present, u, np.nan)


def crs_components(
    u: np.ndarray, p: np.ndarray, weights: Mapping[str, float]
) -> dict[str, np.ndarray]:
    """Ideal proximity, worst axis and CRS from utilities ``u`` (``(..., d)``) and dominance ``p``.

    ``I = 1 - ||1 - u||_2 / sqrt(d)`` (``/ 2`` on the four axes), ``W = min(u)``,
    ``CRS = wP·P + wI·I + wW·W``.
    """
    u = np.asarray(u, dtype=float)
    cols = [u[..., j] for j in range(u.shape[-1])]  # explicit: reductions over a short
    gap = sum((1.0 - c) ** 2 for c in cols)  # last axis are slow in numpy
    ideal = 1.0 - np.sqrt(gap) / np.sqrt(len(cols))  # the largest distance: sqrt(d)
    worst = cols[0]
    for c in cols[1:]:
        worst = np.minimum(worst, c)
    crs = weights["P"] * p + weights["I"] * ideal + weights["W"] * worst
    return {"P": p, "I": ideal, "W": worst, "CRS": crs}


def crs_on_axes(
    u: np.ndarray, keep: Sequence[int], weights: Mapping[str, float]
) -> dict[str, np.ndarray]:
    """CRS components on the axes ``keep`` only (indices into the last axis of ``u``), with
    the exact uniform reference of anchors v2 on those axes: ``P = prod(u_keep)``,
    ``I = 1 - ||1 - u_keep||_2 / sqrt(k)``, ``W = min(u_keep)``.

    Examples
    --------
    >>> out = crs_on_axes(np.array([0.5, 0.8, 1.0, 0.2]), [0, 2], {"P": 0.6, "I": 0.25, "W": 0.15})
    >>> round(float(out["P"]), 3), round(float(out["W"]), 3)
    (0.5, 0.5)
    """
    keep = list(keep)
    if not keep:
        raise ConfigError("keep must name at least one axis. Got none.")
    us = np.asarray(u, dtype=float)[..., keep]
    p = UniformDominance(UniformReference(len(keep))).share(us)
    return crs_components(us, p, weights)


def score_array(
    raw: np.ndarray,
    anchors: Anchors,
    rule: str = "fixed",
    panels: list[Reference] | None = None,
) -> dict[str, np.ndarray]:
    """Vectorised CRS of raw axes ``(..., C, E, 4)``: ``C`` cells (datasets), ``E`` encoders.

    Missing (encoder, cell) pairs are NaN and stay NaN. ``panels`` gives one fixed reference
    panel per cell (default: ``anchors.panel`` for each; an array, or the exact uniform
    reference of anchors v2). Returns ``u`` and ``P I W CRS``.
    """
    check_rule(rule)
    raw = np.asarray(raw, dtype=float)
    if rule == "fixed":
        u = fixed_utilities(raw, anchors)
        n_cells = raw.shape[-3]
        panels = panels or [anchors.panel] * n_cells
        p = np.empty(raw.shape[:-1])
        for c in range(n_cells):
            p[..., c, :] = dominance_counter(panels[c]).share(u[..., c, :, :])
    else:
        u = cohort_utilities(raw, anchors)
        p = cohort_dominance(u)
    out = crs_components(u, p, anchors.weights)
    out["u"] = u
    return out


def _check_axes_frame(axes: pd.DataFrame) -> None:
    if not isinstance(axes, pd.DataFrame):
        raise DataError(f"axes must be a pandas DataFrame. Got {type(axes).__name__} instead.")
    missing = [c for c in ("encoder", *AXES) if c not in axes.columns]
    if missing:
        raise DataError(f"axes must have columns {missing}. Got {list(axes.columns)} instead.")
    for col in AXES:
        values = pd.to_numeric(axes[col], errors="coerce").to_numpy(dtype=float)
        bad = np.flatnonzero(~np.isfinite(values))
        if bad.size:
            r = bad[0]
            raise DataError(
                f"axes row {r + 1}, column '{col}' must be a finite number. "
                f"Got {axes[col].iloc[r]!r} instead."
            )


def crs_table(
    axes: pd.DataFrame,
    anchors: str | Anchors | None = None,
    rule: str = "fixed",
    weights: Mapping[str, float] | None = None,
) -> pd.DataFrame:
    """Add utilities, CRS components and the CRS to an axes table.

    Parameters
    ----------
    axes : pandas.DataFrame
        One row per encoder, or per encoder and cell (then with a ``dataset`` column), with
        columns ``encoder``, ``auroc``, ``ece``, ``retention``, ``robustness_drop``.
    anchors : str, path or Anchors, optional
        ``None`` = the shipped current version.
    rule : {"fixed", "cohort"}
        Fixed anchors and reference panel, or min–max and dominance over the rows of the
        same ``dataset`` (the whole table when there is no ``dataset`` column).
    weights : mapping, optional
        ``P``, ``I``, ``W`` weights overriding the anchors' weights.

    Returns
    -------
    pandas.DataFrame
        A copy of ``axes`` with ``u_auroc``, ``u_ece``, ``u_retention``, ``u_robustness``,
        ``P``, ``I``, ``W``, ``CRS``, ``rule`` and ``anchors_version`` added.

    Examples
    --------
    >>> import pandas as pd
    >>> t = crs_table(pd.DataFrame({"encoder": ["a"], "auroc": [0.9], "ece": [0.05],
    ...                             "retention": [0.9], "robustness_drop": [0.05]}))
    >>> round(float(t["I"].iloc[0]), 4)
    0.8
    """
    check_rule(rule)
    _check_axes_frame(axes)
    anc = load_anchors(anchors)
    if weights is not None:
        anc = anc.with_weights(weights)
    out = axes.copy().reset_index(drop=True)
    raw_all = out[list(AXES)].to_numpy(dtype=float)
    groups = out.groupby("dataset", sort=False).indices if "dataset" in out else {None: None}
    cols = {c: np.full(len(out), np.nan) for c in SCORE_COLUMNS}
    for ds, idx in groups.items():
        idx = np.arange(len(out)) if idx is None else np.asarray(idx)
        raw = raw_all[idx]
        if rule == "fixed":
            u = fixed_utilities(raw, anc)
            p = dominance_counter(anc.panel_for(ds)).share(u)
        else:
            u = cohort_utilities(raw, anc)
            p = cohort_dominance(u)
        comp = crs_components(u, p, anc.weights)
        for j, c in enumerate(UTILITY_COLUMNS):
            cols[c][idx] = u[:, j]
        for c in ("P", "I", "W", "CRS"):
            cols[c][idx] = comp[c]
    for c in SCORE_COLUMNS:
        out[c] = cols[c]
    out["rule"] = rule
    out["anchors_version"] = anc.version
    return out
