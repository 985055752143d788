"""Paired-seed bootstrap of the CRS ranking, vectorised over replicates.

Each replicate draws seed indices with replacement, the same indices for every encoder and
cell (that is what makes it *paired*), recomputes the seed-mean axes, the CRS per cell and the
aggregate CRS per encoder, and ranks the encoders. Replicates are processed in chunks: a
``(B, S)`` matrix of resample counts contracts the ``(C, E, S, 4)`` per-seed axes with one
``einsum``; dominance uses the bit-mask counter; ranks come from one ``argsort``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from crsbench.core.errors import ConfigError, DataError
from crsbench.scoring.anchors import AXES, Anchors, load_anchors
from crsbench.scoring.crs import check_rule, crs_components, fixed_utilities, score_array
from crsbench.scoring.dominance import DominanceCounter, UniformDominance, dominance_counter
from crsbench.stats.intervals import DIFFERENCE_REACH, toward


@dataclass(frozen=True)
class AxesCube:
    """Per-seed axes as a dense array ``values[c, e, s, axis]`` (NaN where absent).

    ``exists[c, e]`` marks the cells with a row in the per-seed table (the grid's cells).
    """

    values: np.ndarray
    datasets: list[str]
    encoders: list[str]
    seeds: list
    exists: np.ndarray


def axes_cube(per_seed: pd.DataFrame) -> AxesCube:
    """Pivot a per-seed axes table (``encoder, dataset, seed`` + the four axes) to a cube."""
    missing = [c for c in ("encoder", "dataset", "seed", *AXES) if c not in per_seed]
    if missing:
        raise DataError(f"per-seed axes must have columns {missing}. Got {list(per_seed)}.")
    datasets = sorted(per_seed["dataset"].unique())
    encoders = sorted(per_seed["encoder"].unique())
    seeds = sorted(per_seed["seed"].unique())
    cube = np.full((len(datasets), len(encoders), len(seeds), len(AXES)), np.nan)
    ci = pd.Index(datasets).get_indexer(per_seed["dataset"])
    ei = pd.Index(encoders).get_indexer(per_seed["encoder"])
    si = pd.Index(seeds).get_indexer(per_seed["seed"])
    cube[ci, ei, si] = per_seed[list(AXES)].to_numpy(dtype=float)
    exists = np.zeros((len(datasets), len(encoders)), dtype=bool)
    exists[ci, ei] = True
    return AxesCube(cube, datasets, encoders, seeds, exists)


def resample_counts(n_replicates: int, n_seeds: int, rng: np.random.Generator) -> np.ndarray:
    """``(B, S)`` multiplicities of each seed in ``B`` resamples of ``S`` seeds with replacement."""
    idx = rng.integers(0, n_seeds, size=(n_replicates, n_seeds))
    flat = idx + (np.arange(n_replicates) * n_seeds)[:, None]
    return np.bincount(flat.ravel(), minlength=n_replicates * n_seeds).reshape(
        n_replicates, n_seeds
    )


def replicate_scores(
    cube: AxesCube,
    counts: np.ndarray,
    anchors: Anchors,
    rule: str = "fixed",
    counters: list[DominanceCounter | UniformDominance] | None = None,
) -> np.ndarray:
    """Aggregate CRS per encoder for each row of ``counts``: shape ``(B, E)``.

    Seeds are treated as :func:`crsbench.scoring.seed_means` treats them: a cell with a NaN
    axis at any seed is NaN in every replicate (as its point estimate is), and an encoder
    with a NaN cell has a NaN aggregate (cells absent from the grid are not counted).
    """
    complete = np.isfinite(cube.values).all(axis=(-1, -2))
    x0 = np.where(complete[:, :, None, None], cube.values, 0.0)
    w = counts.astype(float)
    num = np.einsum("cesk,bs->bcek", x0, w, optimize=True)
    den = w.sum(axis=1)[:, None, None, None]
    raw = np.where(complete[None, :, :, None], num / den, np.nan)
    if rule == "fixed":
        counters = counters or _counters(cube, anchors)
        u = fixed_utilities(raw, anchors)
        p = np.empty(raw.shape[:-1])
        by_counter: dict[int, list[int]] = {}
        for c, counter in enumerate(counters):  # cells sharing a panel are scored in one call
            by_counter.setdefault(id(counter), []).append(c)
        for cells in by_counter.values():
            p[:, cells] = counters[cells[0]].share(u[:, cells])
        crs = crs_components(u, p, anchors.weights)["CRS"]
    else:
        crs = score_array(raw, anchors, rule="cohort")["CRS"]
    exists = cube.exists[None]
    total = np.where(exists, np.nan_to_num(crs), 0.0).sum(axis=1)
    gap = (exists & ~np.isfinite(crs)).any(axis=1)
    return np.where(gap, np.nan, total / np.maximum(exists.sum(axis=1), 1))


def _counters(cube: AxesCube, anchors: Anchors) -> list[DominanceCounter | UniformDominance]:
    """One counter per cell; cells whose panel is the same object share one counter."""
    made: dict[int, DominanceCounter | UniformDominance] = {}
    out = []
    for d in cube.datasets:
        panel = anchors.panel_for(d)
        if id(panel) not in made:
            made[id(panel)] = dominance_counter(panel)
        out.append(made[id(panel)])
    return out


@dataclass(frozen=True)
class BootstrapResult:
    """Outcome of :func:`paired_seed_bootstrap`.

    Attributes
    ----------
    ranks : pandas.DataFrame
        Per encoder: point ``CRS``, ``rank``, ``p_rank1``, ``p_top3``, ``mean_rank``,
        ``crs_ci_low``, ``crs_ci_high``, ``tier``.
    pairwise : pandas.DataFrame
        Per ordered pair: ``diff`` (a − b, point), ``ci_low``, ``ci_high``, ``p_a_better``.
    replicates : numpy.ndarray
        ``(B, E)`` aggregate CRS of every replicate (columns in ``ranks`` order of encoders).
    """

    ranks: pd.DataFrame
    pairwise: pd.DataFrame
    replicates: np.ndarray


def paired_seed_bootstrap(
    per_seed: pd.DataFrame,
    anchors: str | Anchors | None = None,
    rule: str = "fixed",
    n_replicates: int = 10_000,
    seed: int = 0,
    top_k: int = 3,
    level: float = 0.95,
    chunk: int = 1_000,
) -> BootstrapResult:
    """Paired-seed bootstrap of the aggregate-CRS ranking (docs/protocol.md section 10).

    Parameters
    ----------
    per_seed : pandas.DataFrame
        Per (encoder, dataset, seed) axes, e.g. from :func:`crsbench.scoring.axes_from_runs`.
    anchors, rule
        As :func:`crsbench.scoring.crs_table`.
    n_replicates : int
        Bootstrap replicates (default 10,000).
    seed : int
        Seed of the resampling generator: the same seed gives the same result.
    top_k : int
        ``p_top3`` is the probability of a rank ``<= top_k``.
    level : float
        Confidence level of the percentile intervals.
    chunk : int
        Replicates processed at once (memory ~ chunk · cells · encoders · 4 floats).

    Returns
    -------
    BootstrapResult
    """
    check_rule(rule)
    if not isinstance(n_replicates, int) or n_replicates < 1:
        raise ConfigError(f"n_replicates must be a positive integer. Got {n_replicates!r}.")
    if not 0 < level < 1:
        raise ConfigError(f"level must be in (0, 1). Got {level!r} instead.")
    anc = load_anchors(anchors)
    cube = axes_cube(per_seed)
    rng = np.random.default_rng(seed)
    counters = _counters(cube, anc) if rule == "fixed" else None
    reps = np.empty((n_replicates, len(cube.encoders)))
    for start in range(0, n_replicates, chunk):
        b = min(chunk, n_replicates - start)
        counts = resample_counts(b, len(cube.seeds), rng)
        reps[start : start + b] = replicate_scores(cube, counts, anc, rule, counters)
    point = replicate_scores(cube, np.ones((1, len(cube.seeds)), dtype=int), anc, rule, counters)[0]
    return _summarise(cube.encoders, point, reps, top_k, level)


def rank_matrix(scores: np.ndarray) -> np.ndarray:
    """0-based ranks (0 = best = highest score) along the last axis; NaN scores rank last."""
    filled = np.where(np.isfinite(scores), scores, -np.inf)
    order = np.argsort(-filled, axis=-1, kind="stable")
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(scores.shape[-1]), axis=-1)
    return ranks


def _summarise(encoders, point, reps, top_k, level) -> BootstrapResult:
    alpha = (1 - level) / 2
    with warnings.catch_warnings():  # an unscored encoder's column is all NaN, by design
        warnings.simplefilter("ignore", RuntimeWarning)
        return _summary_tables(encoders, point, reps, top_k, alpha)


def _summary_tables(encoders, point, reps, top_k, alpha) -> BootstrapResult:
    ranks = rank_matrix(reps)
    table = pd.DataFrame(
        {
            "encoder": encoders,
            "CRS": point,
            "crs_ci_low": np.nanquantile(reps, alpha, axis=0),
            "crs_ci_high": np.nanquantile(reps, 1 - alpha, axis=0),
            "p_rank1": (ranks == 0).mean(axis=0),
            f"p_top{top_k}": (ranks < top_k).mean(axis=0),
            "mean_rank": ranks.mean(axis=0) + 1,
        }
    )
    diffs = reps[:, :, None] - reps[:, None, :]
    lo = np.nanquantile(diffs, alpha, axis=0)
    hi = np.nanquantile(diffs, 1 - alpha, axis=0)
    better = (diffs > 0).mean(axis=0)
    ia, ib = np.where(~np.eye(len(encoders), dtype=bool))
    pairwise = pd.DataFrame(
        {
            "encoder_a": np.asarray(encoders)[ia],
            "encoder_b": np.asarray(encoders)[ib],
            "diff": point[ia] - point[ib],
            "ci_low": lo[ia, ib],
            "ci_high": hi[ia, ib],
            "p_a_better": better[ia, ib],
        }
    )
    unranked = ~np.isfinite(point)  # an encoder with a NaN cell: no rank, tier or probability
    table["tier"] = pd.array(np.where(unranked, 0, tiers_from_bounds(point, lo)), dtype="Int64")
    table.loc[unranked, "tier"] = pd.NA
    table.loc[unranked, ["p_rank1", f"p_top{top_k}", "mean_rank"]] = np.nan
    table = table.sort_values("CRS", ascending=False, kind="stable").reset_index(drop=True)
    rank = pd.array(np.arange(1, len(table) + 1), dtype="Int64")
    rank[~np.isfinite(table["CRS"].to_numpy(dtype=float))] = pd.NA
    table.insert(2, "rank", rank)
    return BootstrapResult(table, pairwise, reps)


def widen_differences(
    base: BootstrapResult,
    encoders: list[str],
    point: np.ndarray,
    raw: np.ndarray,
    level: float,
    reach: float = DIFFERENCE_REACH,
) -> BootstrapResult:
    """Each CRS interval as the union of its basic interval (in ``base``) and the
    percentile interval of the raw replicates; each CRS difference's interval widened
    ``reach`` of the way from its basic ends towards the percentile interval of the raw
    differences (:data:`crsbench.stats.intervals.DIFFERENCE_REACH`; 1: the union); the tiers
    re-read from the widened lower bounds (docs/scoring.md, "Tiers and rank probabilities").

    The CRS's bootstrap distribution is lumpy and skewed (the dominance share moves in
    steps) and its biased axes pass their bias into it, so neither interval alone held 95 %
    on planted worlds; which is nearer is unknown, so both are taken, as for the ECE and R.
    A widened lower bound is never above the basic one, so tier 1 (headed by the point
    leader) only grows, and no tier contradicts P(rank 1): an encoder outside tier 1 still
    has its basic lower bound above 0 (:func:`crsbench.stats.intervals.rank1_bound`); lower
    tiers may regroup."""
    alpha = (1 - level) / 2
    idx = {e: i for i, e in enumerate(encoders)}
    pw, ranks = base.pairwise.copy(), base.ranks.copy()
    # integer positions also when there is no pair (one encoder: an empty float column)
    ia = pw["encoder_a"].map(idx).to_numpy(dtype=np.intp)
    ib = pw["encoder_b"].map(idx).to_numpy(dtype=np.intp)
    ri = ranks["encoder"].map(idx).to_numpy(dtype=np.intp)
    with warnings.catch_warnings():  # an unscored encoder's column is all NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        diffs = raw[:, ia] - raw[:, ib]
        low, high = (np.nanquantile(diffs, q, axis=0) for q in (alpha, 1 - alpha))
        pw["ci_low"] = np.fmin(pw["ci_low"], toward(pw["ci_low"], low, reach))
        pw["ci_high"] = np.fmax(pw["ci_high"], toward(pw["ci_high"], high, reach))
        ranks["crs_ci_low"] = np.fmin(ranks["crs_ci_low"], np.nanquantile(raw, alpha, axis=0)[ri])
        ranks["crs_ci_high"] = np.fmax(ranks["crs_ci_high"],
                                       np.nanquantile(raw, 1 - alpha, axis=0)[ri])  # fmt: skip
    lo = np.full((len(encoders), len(encoders)), np.nan)
    lo[ia, ib] = pw["ci_low"].to_numpy()
    ranked = np.isfinite(point)
    tiers = dict(zip(encoders, tiers_from_bounds(point, lo), strict=True))
    ranks["tier"] = pd.array([tiers[e] if ranked[idx[e]] else pd.NA for e in ranks["encoder"]],
                             dtype="Int64")  # fmt: skip
    return BootstrapResult(ranks, pw, base.replicates)


def tiers_from_bounds(point: np.ndarray, diff_lo: np.ndarray) -> np.ndarray:
    """Greedy tiers: the best unassigned encoder heads a tier that holds every unassigned
    encoder it does not beat significantly (lower CI bound of head − other ≤ 0). Encoders
    without a point score get tier 0 (none)."""
    order = np.argsort(-np.where(np.isfinite(point), point, -np.inf), kind="stable")
    order = order[np.isfinite(point[order])]
    tier = np.zeros(len(point), dtype=int)
    current = 0
    for head in order:
        if tier[head]:
            continue
        current += 1
        for other in order:
            if not tier[other] and (other == head or diff_lo[head, other] <= 0):
                tier[other] = current
    return tier
