"""How much the verdict depends on the CRS weights, and the Pareto front of the four axes.

Under the fixed rule the components P, I, W of a cell do not depend on the weights, and an
encoder's aggregate CRS is the mean of its cells' CRS, so for weights ``w = (wP, wI, wW)``
the aggregate is ``w · (mean P, mean I, mean W)``: linear in ``w``. The sweep therefore scores
every encoder under many weightings at the cost of one matrix product.

Two regions of weightings are sampled, both *uniformly*:

- ``simplex``: every ``w >= 0`` with ``wP + wI + wW = 1`` (Dirichlet(1, 1, 1));
- ``near_default``: the part of that simplex within ``radius`` (default 0.1) of the anchors'
  weights on every component (0.60 / 0.25 / 0.15 ± 0.1), drawn by rejection from the uniform
  simplex, so no weighting is clipped or renormalised and the draw stays uniform there.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from crsbench.core.errors import ConfigError, DataError
from crsbench.scoring.anchors import AXES, Anchors, load_anchors

COMPONENTS: tuple[str, ...] = ("P", "I", "W")
REGIONS: tuple[str, ...] = ("simplex", "near_default")


def sample_weights(
    n: int,
    rng: np.random.Generator,
    near: Mapping[str, float] | None = None,
    radius: float = 0.1,
) -> np.ndarray:
    """``(n, 3)`` weightings (P, I, W) uniform on the simplex, or on its part within
    ``radius`` of ``near`` on every component (rejection sampling).

    Raises
    ------
    ConfigError
        ``n`` < 1, ``radius`` <= 0, or a region that holds no weighting.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ConfigError(f"n must be a positive integer. Got {n!r} instead.")
    if near is None:
        return rng.dirichlet(np.ones(3), size=n)
    if not radius > 0:
        raise ConfigError(f"radius must be > 0. Got {radius!r} instead.")
    centre = np.array([float(near[k]) for k in COMPONENTS])
    kept: list[np.ndarray] = []
    total, tries = 0, 0
    while total < n:
        draw = rng.dirichlet(np.ones(3), size=max(4 * n, 1024))
        inside = draw[(np.abs(draw - centre) <= radius).all(axis=1)]
        kept.append(inside)
        total += len(inside)
        tries += 1
        if tries > 1000 and total == 0:
            raise ConfigError(f"no weighting within {radius} of {dict(near)} on the simplex.")
    return np.concatenate(kept)[:n]


def _components(board: pd.DataFrame) -> tuple[list[str], np.ndarray]:
    missing = [c for c in ("encoder", *COMPONENTS) if c not in board]
    if missing:
        raise DataError(f"the board must have columns {missing}. Got {list(board.columns)}.")
    comp = board[list(COMPONENTS)].to_numpy(dtype=float)
    ok = np.isfinite(comp).all(axis=1)
    if ok.sum() < 1:
        raise DataError("no encoder has finite P, I and W: nothing to sweep.")
    return board.loc[ok, "encoder"].astype(str).tolist(), comp[ok]


def weight_sweep(board: pd.DataFrame, weights: np.ndarray) -> pd.DataFrame:
    """Rank every encoder under each weighting of ``weights``.

    Parameters
    ----------
    board : pandas.DataFrame
        One row per encoder with its mean components ``P``, ``I``, ``W`` (the leaderboard);
        encoders with a NaN component are left out (they have no CRS).
    weights : numpy.ndarray
        ``(n, 3)`` weightings (P, I, W), rows summing to 1.

    Returns
    -------
    pandas.DataFrame
        Per encoder: ``share_first`` (share of weightings under which it ranks first; a tie
        for first splits the weighting equally), ``rank_best``, ``rank_worst`` (its rank
        range, 1 = first, ties take the best rank), ``mean_rank``, ``crs_min``, ``crs_max``.
        Sorted by ``share_first``, best first.

    Examples
    --------
    >>> b = pd.DataFrame({"encoder": ["a", "b"], "P": [1.0, 0.0], "I": [0.0, 1.0],
    ...                   "W": [0.0, 0.0]})
    >>> weight_sweep(b, np.array([[0.7, 0.3, 0.0], [0.2, 0.8, 0.0]]))["share_first"].tolist()
    [0.5, 0.5]
    """
    encoders, comp = _components(board)
    w = np.asarray(weights, dtype=float)
    crs = w @ comp.T  # (n, E)
    best = crs.max(axis=1, keepdims=True)
    first = np.isclose(crs, best, rtol=0.0, atol=1e-12)
    share = (first / first.sum(axis=1, keepdims=True)).mean(axis=0)
    ranks = 1 + (crs[:, None, :] > crs[:, :, None] + 1e-12).sum(axis=2)  # (n, E): rank "min"
    out = pd.DataFrame(
        {
            "encoder": encoders,
            "share_first": share,
            "rank_best": ranks.min(axis=0),
            "rank_worst": ranks.max(axis=0),
            "mean_rank": ranks.mean(axis=0),
            "crs_min": crs.min(axis=0),
            "crs_max": crs.max(axis=0),
        }
    )
    return out.sort_values(["share_first", "mean_rank", "encoder"],
                           ascending=[False, True, True]).reset_index(drop=True)  # fmt: skip


def weight_sensitivity(
    board: pd.DataFrame,
    anchors: str | Anchors | None = None,
    n_samples: int = 20_000,
    seed: int = 0,
    radius: float = 0.1,
) -> tuple[pd.DataFrame, dict]:
    """The weight sweep over both regions (:data:`REGIONS`) and its headline.

    Parameters
    ----------
    board : pandas.DataFrame
        The leaderboard (per-encoder mean ``P``, ``I``, ``W``).
    anchors : anchors source, optional
        Where the default weights come from (default: the shipped current version).
    n_samples : int
        Weightings per region.
    seed : int
        Seed of the sampling.
    radius : float
        Half-width of the ``near_default`` region on each weight.

    Returns
    -------
    (pandas.DataFrame, dict)
        The rows of :func:`weight_sweep` per region (column ``region``, plus ``n_samples``,
        ``radius``), and a headline: per region the encoders first under some weighting
        (``ever_first``) and the encoder first most often, with the default weights and leader.
    """
    anc = load_anchors(anchors)
    rng = np.random.default_rng(seed)
    parts, headline = [], {"default_weights": dict(anc.weights), "radius": radius}
    for region in REGIONS:
        near = anc.weights if region == "near_default" else None
        table = weight_sweep(board, sample_weights(n_samples, rng, near=near, radius=radius))
        table.insert(0, "region", region)
        parts.append(table)
        headline[region] = {
            "ever_first": table.loc[table["share_first"] > 0, "encoder"].tolist(),
            "most_often_first": table["encoder"].iloc[0],
            "share_first": float(table["share_first"].iloc[0]),
        }
    default = weight_sweep(board, np.array([[anc.weights[k] for k in COMPONENTS]]))
    headline["default_leader"] = default["encoder"].iloc[0]
    out = pd.concat(parts, ignore_index=True)
    out["n_samples"] = n_samples
    out["radius"] = radius
    return out, headline


def pareto_front(board: pd.DataFrame, anchors: str | Anchors | None = None) -> pd.DataFrame:
    """Which encoders no other encoder dominates on the four axes (means over their cells).

    An encoder dominates another when it is at least as good on every axis and better on one;
    "better" is higher AUROC and retention, lower ECE and robustness drop (the direction of
    each axis comes from the anchors' bounds). Encoders with a NaN axis are left out.

    Returns
    -------
    pandas.DataFrame
        Per encoder: the four axes, ``on_front`` and ``dominated_by`` (comma-separated),
        front members first.

    Examples
    --------
    >>> b = pd.DataFrame({"encoder": ["a", "b"], "auroc": [0.9, 0.8], "ece": [0.05, 0.06],
    ...                   "retention": [0.9, 0.9], "robustness_drop": [0.02, 0.02]})
    >>> pareto_front(b)[["encoder", "on_front", "dominated_by"]].values.tolist()
    [['a', True, ''], ['b', False, 'a']]
    """
    anc = load_anchors(anchors)
    missing = [c for c in ("encoder", *AXES) if c not in board]
    if missing:
        raise DataError(f"the board must have columns {missing}. Got {list(board.columns)}.")
    raw = board[list(AXES)].to_numpy(dtype=float)
    ok = np.isfinite(raw).all(axis=1)
    names = board.loc[ok, "encoder"].astype(str).tolist()
    sign = np.array([1.0 if anc.bounds[a].best > anc.bounds[a].worst else -1.0 for a in AXES])
    x = raw[ok] * sign  # higher is better on every column
    geq = (x[:, None, :] >= x[None, :, :]).all(axis=2)
    gt = (x[:, None, :] > x[None, :, :]).any(axis=2)
    dom = geq & gt  # dom[i, j]: i dominates j
    out = board.loc[ok, ["encoder", *AXES]].reset_index(drop=True)
    out["on_front"] = ~dom.any(axis=0)
    out["dominated_by"] = [", ".join(n for i, n in enumerate(names) if dom[i, j])
                           for j in range(len(names))]  # fmt: skip
    return out.sort_values(["on_front", "encoder"], ascending=[False, True]).reset_index(drop=True)


def ranking_with_weights(
    cells: pd.DataFrame,
    weights: Mapping[str, float],
    anchors: str | Anchors | None = None,
    axes: tuple[str, ...] = AXES,
) -> pd.DataFrame:
    """The leaderboard's CRS and rank under other weights, and optionally fewer axes.

    The report's "Your weights" panel computes the same in the page; this is its reference.

    Parameters
    ----------
    cells : pandas.DataFrame
        One row per (encoder, dataset) cell with ``encoder``, ``dataset`` and the four raw
        axes; an encoder with a NaN axis in any cell gets no CRS and no rank.
    weights : mapping
        ``P``, ``I``, ``W`` weights summing to 1.
    anchors : anchors source, optional
        Bounds and reference (default: the shipped current version).
    axes : tuple of str
        The axes the CRS is computed on (a subset of :data:`AXES`). All four: the scoring
        function itself (:func:`crsbench.scoring.crs_table`); fewer: utilities on those axes
        with the exact uniform reference (:func:`crsbench.scoring.crs.crs_on_axes`), which needs
        anchors whose reference is exact (v2).

    Returns
    -------
    pandas.DataFrame
        ``encoder``, ``CRS`` (mean over its cells) and ``rank`` (1 = best, ties share the best
        rank), best first.

    Raises
    ------
    ConfigError
        ``axes`` is empty or names an unknown axis, or a subset with a panel reference.
    """
    from crsbench.scoring.crs import crs_on_axes, crs_table, fixed_utilities
    from crsbench.scoring.dominance import UniformReference

    anc = load_anchors(anchors)
    unknown = [a for a in axes if a not in AXES]
    if unknown or not axes:
        raise ConfigError(f"axes must be a non-empty subset of {AXES}. Got {axes!r} instead.")
    frame = cells[["encoder", "dataset", *AXES]].reset_index(drop=True)
    ok = frame[list(AXES)].notna().all(axis=1)
    crs = np.full(len(frame), np.nan)
    if tuple(axes) == AXES:
        crs[ok.to_numpy()] = crs_table(frame[ok], anc, weights=weights)["CRS"].to_numpy()
    else:
        refs = [anc.panel_for(ds) for ds in frame["dataset"].unique()]
        if not all(isinstance(r, UniformReference) for r in refs):
            raise ConfigError(f"anchors {anc.version} use a panel reference; a subset of the "
                              "axes needs the exact uniform reference (anchors v2).")  # fmt: skip
        u = fixed_utilities(frame[list(AXES)].to_numpy(dtype=float), anc)
        keep = [AXES.index(a) for a in axes]
        crs = crs_on_axes(u, keep, anc.with_weights(weights).weights)["CRS"]
    means = pd.Series(crs).groupby(frame["encoder"]).mean(skipna=False)
    out = pd.DataFrame({"encoder": means.index.astype(str), "CRS": means.to_numpy()})
    out["rank"] = out["CRS"].rank(ascending=False, method="min").astype("Int64")
    return out.sort_values(["CRS", "encoder"], ascending=[False, True],
                           na_position="last").reset_index(drop=True)  # fmt: skip
