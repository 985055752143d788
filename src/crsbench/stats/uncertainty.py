"""The uncertainty of the leaderboard: which bootstrap, on what, and what it lets one say.

By default (``interval="test-patients"``) intervals, tiers, P(rank 1), P(top 3) and the
leader's gap come from the paired bootstrap over test patients × seeds
(:func:`crsbench.stats.patient_bootstrap.patient_seed_bootstrap`) on the per-sample
predictions the store keeps. ``interval="seed-only"`` selects the paper's seed-only bootstrap
(:func:`crsbench.stats.bootstrap.paired_seed_bootstrap`). A store without predictions (written
by an older crsbench) falls back to seed-only, and :attr:`Uncertainty.note` says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from crsbench.core.errors import ConfigError
from crsbench.core.workers import check_jobs
from crsbench.scoring.anchors import AXES, Anchors, load_anchors
from crsbench.stats.bootstrap import BootstrapResult, paired_seed_bootstrap
from crsbench.stats.patient_bootstrap import (
    INTERVAL_METHODS,
    SEED_ONLY,
    TEST_PATIENTS_X_SEEDS,
    patient_seed_bootstrap,
)
from crsbench.stats.resample import DEFAULT_REPLICATES
from crsbench.stats.store_predictions import load_store_predictions

#: The option values of ``--interval`` (default first).
INTERVAL_CHOICES: tuple[str, ...] = tuple(INTERVAL_METHODS)


@dataclass
class Uncertainty:
    """A bootstrap result with the method that produced it.

    Attributes
    ----------
    method : str
        ``"test patients × seeds"`` or ``"seed-only"`` (shown next to every interval).
    result : BootstrapResult
        Ranks (with basic intervals for the test-set bootstrap), pairwise differences.
    n_replicates : int
    note : str
        Empty, or why the test-set bootstrap was not used (a fallback to seed-only).
    n_patients : dict
        Test patients per dataset (and shift target); empty for seed-only.
    """

    method: str
    result: BootstrapResult
    n_replicates: int
    note: str = ""
    n_patients: dict[str, int] = field(default_factory=dict)

    def ranks(self) -> pd.DataFrame:
        """``result.ranks`` with the ``interval`` column naming the method."""
        ranks = self.result.ranks.copy()
        ranks["interval"] = self.method
        return ranks


def check_interval(interval: str) -> str:
    """``interval`` when it is a known method, else :class:`ConfigError` naming the choices."""
    if interval not in INTERVAL_METHODS:
        raise ConfigError(
            f"interval must be one of {list(INTERVAL_CHOICES)}. Got {interval!r} instead."
        )
    return interval


def _rankable(per_seed: pd.DataFrame) -> pd.DataFrame:
    """The rows of the encoders whose every cell has all four axes at every seed: only they
    are resampled, so an incomplete encoder never enters another's P(rank 1) / P(top 3)
    (every row when no encoder is complete: then nothing is ranked)."""
    cells, _seeds = _complete_cells(per_seed)
    keep = per_seed["encoder"].isin({e for e, _d in cells})
    return per_seed[keep].reset_index(drop=True) if keep.any() else per_seed


def _complete_cells(per_seed: pd.DataFrame) -> tuple[list[tuple[str, str]], list]:
    """Cells of the encoders whose every cell has all four axes at every seed (the encoders
    that get a rank; the others have none in either bootstrap), and the seeds."""
    seeds = sorted(per_seed["seed"].unique())
    ok = per_seed.groupby(["encoder", "dataset"])[list(AXES)].apply(
        lambda g: bool(np.isfinite(g.to_numpy(dtype=float)).all()) and len(g) == len(seeds)
    )
    by_encoder = ok.groupby(level="encoder").all()
    keep = set(by_encoder[by_encoder].index)
    return [(e, d) for e, d in ok.index if e in keep], seeds


def _fallback(reason: str) -> str:
    return (
        f"intervals and tiers come from the seed-only bootstrap because {reason}; seed-only "
        "intervals ignore that the test set is a sample and are too narrow"
    )


def crs_uncertainty(
    per_seed: pd.DataFrame,
    anchors: str | Anchors | None = None,
    *,
    store: str | Path | None = None,
    interval: str = "test-patients",
    rule: str = "fixed",
    n_replicates: int = DEFAULT_REPLICATES,
    seed: int = 0,
    n_jobs: int | None = None,
) -> Uncertainty:
    """Bootstrap the aggregate-CRS ranking with the method ``interval`` names.

    Parameters
    ----------
    per_seed : pandas.DataFrame
        :func:`crsbench.scoring.axes_from_runs` of the store (the point estimate's axes).
    anchors, rule
        As :func:`crsbench.scoring.crs_table`.
    store : path, optional
        The store directory whose per-sample predictions feed the test-set bootstrap.
    interval : {"test-patients", "seed-only"}
        The method; ``test-patients`` falls back to seed-only (with :attr:`Uncertainty.note`)
        when ``store`` has no predictions for a scored cell.
    n_replicates, seed : int
        Replicates and bootstrap seed.
    n_jobs : int or None
        Worker processes of the test-set bootstrap (``None``: every available core when the
        work repays it; :func:`crsbench.stats.cell_pool.pool_size`). Results do not depend on it.
    """
    check_interval(interval)
    check_jobs(n_jobs)
    anc = load_anchors(anchors)
    return _crs_uncertainty(per_seed, anc, store, interval, rule, n_replicates, seed, n_jobs)


def _crs_uncertainty(
    per_seed: pd.DataFrame,
    anc: Anchors,
    store: str | Path | None,
    interval: str,
    rule: str,
    n_replicates: int,
    seed: int,
    n_jobs: int | None,
) -> Uncertainty:
    """The bootstrap of :func:`crs_uncertainty` (its arguments checked and loaded; ``n_jobs``
    does not change the result, so it is not part of the sharing key)."""

    per_seed = _rankable(per_seed)

    def seed_only(note: str = "") -> Uncertainty:
        res = paired_seed_bootstrap(per_seed, anc, rule, n_replicates=n_replicates, seed=seed)
        return Uncertainty(SEED_ONLY, res, n_replicates, note)

    if interval == "seed-only":
        return seed_only()
    if store is None:
        return seed_only(_fallback("no store with per-sample predictions was given"))
    cells, seeds = _complete_cells(per_seed)
    if not cells:
        return seed_only(_fallback("no encoder has every cell scored"))
    found = load_store_predictions(store, cells, seeds, compact=True)
    if not found.available:
        return seed_only(_fallback(
            "this store has no per-sample predictions (it was written by a crsbench that did "
            "not store them; run again into a new --out to get test-set intervals)"))  # fmt: skip
    if found.missing:
        named = "; ".join(f"{k}: {v}" for k, v in list(found.missing.items())[:3])
        return seed_only(_fallback(f"{len(found.missing)} scored cells lack predictions ({named})"))
    chosen = [found.cells[c] for c in cells]
    res = patient_seed_bootstrap(chosen, anc, n_replicates=n_replicates, seed=seed, rule=rule,
                                 n_jobs=n_jobs)  # fmt: skip
    return Uncertainty(TEST_PATIENTS_X_SEEDS, res, n_replicates, "", dict(res.n_patients))


def indistinguishable_sentences(unc: Uncertainty, level: float = 0.95) -> list[str]:
    """One sentence per tier with more than one encoder: which encoders this test set cannot
    tell apart from the tier's head (their difference's interval includes 0)."""
    ranks = unc.result.ranks
    ranks = ranks[ranks["tier"].notna()]
    out = []
    on_what = "this test set" if unc.method == TEST_PATIENTS_X_SEEDS else "these seeds"
    for tier, group in ranks.groupby("tier", sort=True):
        if len(group) < 2:
            continue
        head, others = group["encoder"].iloc[0], list(group["encoder"].iloc[1:])
        out.append(
            f"Tier {int(tier)}: on {on_what}, {head} is not distinguishable from "
            f"{', '.join(others)} (the {level:.0%} interval of each CRS difference with {head} "
            f"includes 0; {unc.method} bootstrap)."
        )
    return out
