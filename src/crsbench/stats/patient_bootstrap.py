"""Paired bootstrap over test patients × seeds: intervals, tiers and rank probabilities that
account for the test set being a sample (docs/protocol.md section 9, Uncertainty).

Each replicate ``b`` resamples every dataset's test patients with replacement
(:func:`crsbench.stats.resample.row_weights`, a pure function of (dataset, b), hence the same
patients for every encoder: *paired*) and, crossed with that, the seeds (the same seeds for
every encoder and cell). Per cell, every axis is recomputed on the resampled test rows: D and
C on the clean test set, retention at each label fraction, each robustness condition on the
same resampled images, the shift drop on resampled target patients. Full-label predictions that
do not vary over seeds are evaluated once. The per-replicate axes are scored with the fixed
anchors exactly as the point estimate is, and summarised as the seed-only bootstrap is
(:func:`crsbench.stats.bootstrap.paired_seed_bootstrap`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import partial

import numpy as np
import pandas as pd

from crsbench.core.errors import DataError
from crsbench.scoring.anchors import AXES, Anchors, load_anchors
from crsbench.stats.bootstrap import (
    BootstrapResult,
    _summarise,
    axes_cube,
    replicate_scores,
    widen_differences,
)
from crsbench.stats.cell_axes import (
    DEFAULT_CHUNK,
    cell_point_values,
    cell_replicate_axes,
)
from crsbench.stats.cell_pool import map_cells, pool_size
from crsbench.stats.cell_predictions import CellPredictions, EvalSplit
from crsbench.stats.cell_shares import group_shares, share_groups
from crsbench.stats.intervals import (
    DIFFERENCE_REACH,
    SEED_ONLY,
    TEST_PATIENTS_X_SEEDS,
    auroc_interval,
    basic_interval,
    corrected_estimate,
    ece_interval,
    ece_reach,
    reflected_replicates,
)
from crsbench.stats.resample import (
    DEFAULT_REPLICATES,
    SEED_STREAM,
    replicate_ids,
    resample_counts_for,
)
from crsbench.stats.robustness_interval import (
    CRS_TIE_KAPPA,
    TIE_KAPPA,
    RInterval,
    cell_r_drops,
    r_interval,
    r_percentile_cells,
    tie_aware_replicates,
)

INTERVAL_METHODS: dict[str, str] = {"test-patients": TEST_PATIENTS_X_SEEDS, "seed-only": SEED_ONLY}


@dataclass(frozen=True)
class PatientBootstrapResult(BootstrapResult):
    """:class:`BootstrapResult` plus the per-cell axes behind it.

    Attributes
    ----------
    cell_keys : list of (encoder, dataset)
        The order of the cells in ``axes`` and ``point_axes``.
    axes : numpy.ndarray
        ``(B, n_cells, 4)`` seed-mean axes of every replicate (D, C, L, R).
    point_axes : numpy.ndarray
        ``(n_cells, 4)`` seed-mean axes on the test sets as drawn.
    n_patients : dict
        Test patients per dataset (shift targets included).
    ece_shrunk, point_ece_shrunk : numpy.ndarray
        ``(B, n_cells)`` and ``(n_cells,)`` seed-mean ECE of the shrunk bootstrap world
        (:func:`crsbench.stats.weighted_metrics.weighted_shrunk_ece`), for the ECE interval.
    ece_reach : numpy.ndarray
        ``(n_cells,)`` how far each cell's ECE interval reaches towards the shrunk world's
        (:func:`crsbench.stats.intervals.ece_reach`; empty: 1 for every cell).
    extras, point_extras : dict (encoder, dataset, name) → ``(B,)`` array / float
        The verdict's other values (:data:`JPEG_DROP`, :data:`SHIFT_ECE_INCREASE` + target)
        on the same resamples, and as drawn.
    """

    cell_keys: list[tuple[str, str]] = field(default_factory=list)
    axes: np.ndarray = field(default_factory=lambda: np.empty((0, 0, 4)))
    point_axes: np.ndarray = field(default_factory=lambda: np.empty((0, 4)))
    n_patients: dict[str, int] = field(default_factory=dict)
    ece_shrunk: np.ndarray = field(default_factory=lambda: np.empty((0, 0)))
    point_ece_shrunk: np.ndarray = field(default_factory=lambda: np.empty(0))
    ece_reach: np.ndarray = field(default_factory=lambda: np.empty(0))
    extras: dict[tuple[str, str, str], np.ndarray] = field(default_factory=dict)
    point_extras: dict[tuple[str, str, str], float] = field(default_factory=dict)

    def r_interval(
        self, level: float = 0.95, kappa: float = TIE_KAPPA, percentile: bool | None = None
    ) -> RInterval:
        """Tie-aware interval of each cell's R and the plug-in's estimated bias
        (:func:`crsbench.stats.robustness_interval.r_interval`), from R's drops in ``extras``;
        with the percentile interval where R holds a shift drop (``percentile=None``,
        :func:`crsbench.stats.robustness_interval.r_percentile_cells`), or everywhere / nowhere."""
        c = AXES.index("robustness_drop")
        point, reps = cell_r_drops(self.cell_keys, self.point_extras, self.extras)
        pct = r_percentile_cells(self.cell_keys, self.extras) if percentile is None else percentile
        return r_interval(self.point_axes[:, c], self.axes[:, :, c], point, reps, level, kappa,
                          pct)  # fmt: skip

    def axis_intervals(self, level: float = 0.95) -> pd.DataFrame:
        """Bootstrap interval of each cell's four axes: D's is the percentile interval
        (:func:`crsbench.stats.intervals.auroc_interval`), C's, L's and R's basic
        (bias-corrected) ones, of which the ECE's is
        widened for the plug-in's bias (:func:`crsbench.stats.intervals.ece_interval`), R's
        holds near-tied drops (:meth:`r_interval`)."""
        lo, hi = basic_interval(self.point_axes, self.axes, level)
        d = AXES.index("auroc")  # D: the percentile interval
        lo[:, d], hi[:, d] = auroc_interval(self.axes[:, :, d], level)
        if self.point_ece_shrunk.size:
            c = AXES.index("ece")
            reach = self.ece_reach if self.ece_reach.size else 1.0
            lo[:, c], hi[:, c] = ece_interval(self.point_axes[:, c], self.axes[:, :, c],
                                              self.point_ece_shrunk, self.ece_shrunk, level,
                                              reach)  # fmt: skip
        if self.extras:
            r = self.r_interval(level)
            c = AXES.index("robustness_drop")
            lo[:, c], hi[:, c] = r.low, r.high
        rows = []
        for i, (enc, ds) in enumerate(self.cell_keys):
            for k, axis in enumerate(AXES):
                rows.append((enc, ds, axis, self.point_axes[i, k], lo[i, k], hi[i, k]))
        cols = ["encoder", "dataset", "axis", "value", "ci_low", "ci_high"]
        return pd.DataFrame(rows, columns=cols)


def _scores(
    cells: Sequence[CellPredictions], raw: list[np.ndarray], anchors: Anchors, rule: str = "fixed"
) -> tuple[np.ndarray, list[str]]:
    """Aggregate CRS per encoder of each replicate, ``(B, E)``, scored as the point estimate."""
    n_b = raw[0].shape[0]
    frame = pd.DataFrame(
        {
            "encoder": np.repeat([c.encoder for c in cells], n_b),
            "dataset": np.repeat([c.dataset for c in cells], n_b),
            "seed": np.tile(np.arange(n_b), len(cells)),
        }
    )
    frame[list(AXES)] = np.concatenate(raw, axis=0)
    cube = axes_cube(frame)
    return replicate_scores(cube, np.eye(n_b, dtype=int), anchors, rule), cube.encoders


def _elements(cell: CellPredictions) -> int:
    """Test rows × labels × predictions one replicate of the cell evaluates."""
    return int(sum(p.size for p in bootstrap_view(cell).probability_arrays()))


def bootstrap_view(cell: CellPredictions) -> CellPredictions:
    """The cell with only what the bootstrap reads (what a worker process is sent): no
    validation rows, no image ids or subgroup attributes."""

    def bare(split: EvalSplit) -> EvalSplit:
        return replace(split, image_ids=None, metadata={})

    return replace(
        cell, test=bare(cell.test), val=None,
        shift=None if cell.shift is None else (bare(cell.shift[0]), cell.shift[1]),
        more_shifts=tuple((bare(s), p) for s, p in cell.more_shifts),
        extra_shifts=tuple((bare(s), p) for s, p in cell.extra_shifts),
    )  # fmt: skip


def point_extras(cell: CellPredictions) -> dict[str, float]:
    """The seed-mean extras of :func:`cell_replicate_axes` on the test sets as drawn."""
    return cell_point_values(cell)[1]


def _check_cells(cells: Sequence[CellPredictions]) -> None:
    if not cells:
        raise DataError("the test-set bootstrap needs at least one cell of predictions.")
    seeds = {c.seeds for c in cells}
    if len(seeds) > 1:
        raise DataError(f"every cell must have the same seeds. Got {sorted(seeds)}.")
    keys = [(c.encoder, c.dataset) for c in cells]
    if len(set(keys)) != len(keys):
        raise DataError("each (encoder, dataset) cell may appear once.")


def patient_seed_bootstrap(
    cells: Sequence[CellPredictions],
    anchors: str | Anchors | None = None,
    n_replicates: int = DEFAULT_REPLICATES,
    seed: int = 0,
    top_k: int = 3,
    level: float = 0.95,
    chunk: int = DEFAULT_CHUNK,
    rule: str = "fixed",
    n_jobs: int | None = None,
) -> PatientBootstrapResult:
    """Paired bootstrap over test patients × seeds of the aggregate-CRS ranking.

    Parameters
    ----------
    cells : sequence of CellPredictions
        One per (encoder, dataset) of the grid, all with the same seeds.
    anchors : str, Anchors or None
        Fixed anchors (default: the shipped version).
    n_replicates : int
        Replicates (default 2,000; 10,000 for publication figures).
    seed : int
        The bootstrap's seed; replicate ``b`` is the same draw in every cell.
    top_k, level : int, float
        ``p_top3`` counts ranks ``<= top_k``; the intervals' level.
    chunk : int
        Replicates evaluated at once (memory ~ chunk × the patients of the largest split).
    rule : {"fixed", "cohort"}
        How each replicate's axes are scored (as the point estimate is).
    n_jobs : int or None
        Worker processes computing the cells (:func:`crsbench.stats.cell_pool.pool_size`;
        ``None``: every available core when the work repays starting them). Results are
        identical for every ``n_jobs``.

    Returns
    -------
    PatientBootstrapResult
        As :func:`crsbench.stats.paired_seed_bootstrap`; ``ranks`` also has ``interval``
        (the method's name); the per-replicate axes and test patients per dataset are kept.
        The CRS replicates are scored from R's tie-aware replicates
        (:func:`crs_replicates`). The CRS intervals, the intervals of the differences, the
        tiers, ``p_rank1``, ``p_top3``, ``mean_rank`` and ``p_a_better`` all come from the
        bias-corrected replicates ``2·CRS − CRS*``
        (:func:`crsbench.stats.intervals.reflected_replicates`): the intervals are basic
        intervals widened towards the percentile interval (the CRS's to the union, the
        differences' half way: :func:`crsbench.stats.bootstrap.widen_differences`) and no tier contradicts
        P(rank 1) (:func:`crsbench.stats.intervals.rank1_bound`). ``replicates`` holds the
        raw ``CRS*``; ``ranks["crs_corrected"]`` is ``2·CRS − mean(CRS*)``.
    """
    _check_cells(cells)
    anc = load_anchors(anchors)
    n_s = len(cells[0].seeds)
    ids = replicate_ids(n_replicates)
    seed_counts = resample_counts_for(SEED_STREAM, n_s, ids, seed)
    work = partial(group_shares, replicates=ids, seed_counts=seed_counts, seed=seed, chunk=chunk)
    sizes = [_elements(c) for c in cells]
    jobs = pool_size(n_replicates * sum(sizes), n_jobs)
    groups = share_groups(sizes, [c.dataset for c in cells], jobs)
    done = map_cells(work, [[bootstrap_view(cells[i]) for i in g] for g in groups], jobs)
    by_cell = {i: share for g, part in zip(groups, done, strict=True)
               for i, share in zip(g, part, strict=True)}  # fmt: skip
    shares = [by_cell[i] for i in range(len(cells))]
    axes = np.stack([s.axes for s in shares], axis=1)
    extras = {(c.encoder, c.dataset, k): v
              for c, s in zip(cells, shares, strict=True) for k, v in s.extras.items()}  # fmt: skip
    pextras = {(c.encoder, c.dataset, k): v
               for c, s in zip(cells, shares, strict=True) for k, v in s.point_extras.items()}  # fmt: skip
    keys = [(c.encoder, c.dataset) for c in cells]
    point_axes = np.concatenate([s.point_axes for s in shares])
    r_drops = cell_r_drops(keys, pextras, extras)
    point, raw, encoders = crs_replicates(cells, axes, point_axes, r_drops, anc, rule, chunk)
    base = _crs_summary(encoders, point, raw, top_k, level)
    return PatientBootstrapResult(
        base.ranks,
        base.pairwise,
        raw,
        cell_keys=keys,
        axes=axes,
        point_axes=point_axes,
        n_patients=count_test_patients(cells),
        ece_shrunk=np.stack([s.ece_shrunk for s in shares], axis=1),
        extras=extras,
        point_extras=pextras,
        point_ece_shrunk=np.array([s.point_ece_shrunk for s in shares]),
        ece_reach=ece_reach([c.task for c in cells], [_labels(c) for c in cells]),
    )


def _labels(cell: CellPredictions) -> int:
    """Label columns of a cell's test set (1 for a multi-class or one-label cell)."""
    y = np.asarray(cell.test.y)
    return int(y.shape[1]) if y.ndim == 2 else 1


def crs_replicates(
    cells: Sequence[CellPredictions],
    axes: np.ndarray,
    point_axes: np.ndarray,
    r_drops: tuple[list[np.ndarray], list[np.ndarray]],
    anchors: Anchors,
    rule: str = "fixed",
    chunk: int = DEFAULT_CHUNK,
    kappa: float = CRS_TIE_KAPPA,
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """The aggregate CRS per encoder as drawn ``(E,)`` and of every replicate ``(B, E)``
    (raw, not reflected), and the encoders; R's replicates are first re-drawn from its
    tie-aware roots (:func:`crsbench.stats.robustness_interval.tie_aware_replicates`,
    threshold ``kappa``; 0 scores the replicates as drawn).

    Parameters
    ----------
    cells : sequence of CellPredictions
        The cells, in the order of ``axes``' second dimension.
    axes, point_axes : numpy.ndarray
        ``(B, n_cells, 4)`` seed-mean axes of every replicate and ``(n_cells, 4)`` as drawn.
    r_drops : (list, list)
        Per cell, R's drops as drawn and their replicates
        (:func:`crsbench.stats.robustness_interval.cell_r_drops`).
    anchors, rule, chunk :
        As :func:`patient_seed_bootstrap`.
    kappa : float
        Tie threshold of R's replicates (:data:`CRS_TIE_KAPPA`).
    """
    c = AXES.index("robustness_drop")
    scored = np.array(axes, dtype=float, copy=True)
    if kappa:
        scored[:, :, c] = tie_aware_replicates(point_axes[:, c], axes[:, :, c], *r_drops, kappa)
    reps = [_scores(cells, list(scored[start : start + chunk].swapaxes(0, 1)), anchors, rule)[0]
            for start in range(0, len(scored), chunk)]  # fmt: skip
    point, encoders = _scores(cells, [point_axes[[i]] for i in range(len(cells))], anchors, rule)
    return point[0], np.concatenate(reps), encoders


def _crs_summary(encoders, point, raw, top_k: int, level: float) -> BootstrapResult:
    """Intervals, differences, tiers and rank probabilities on the reflected replicates; the
    CRS intervals are widened to the union with the percentile interval of the raw
    replicates, the differences' intervals (and the tiers read from them) half way to the
    percentile interval of the raw differences (:data:`DIFFERENCE_REACH`,
    :func:`crsbench.stats.bootstrap.widen_differences`)."""
    base = _summarise(encoders, point, reflected_replicates(point, raw), top_k, level)
    base = widen_differences(base, encoders, point, raw, level, DIFFERENCE_REACH)
    base.ranks["interval"] = TEST_PATIENTS_X_SEEDS
    fixed = dict(zip(encoders, corrected_estimate(point, raw), strict=True))
    base.ranks["crs_corrected"] = base.ranks["encoder"].map(fixed)
    return BootstrapResult(base.ranks, base.pairwise, raw)


def crs_summary_at(
    cells: Sequence[CellPredictions],
    res: PatientBootstrapResult,
    kappa: float,
    anchors: str | Anchors | None = None,
    rule: str = "fixed",
    top_k: int = 3,
    level: float = 0.95,
) -> BootstrapResult:
    """The CRS ranking of a finished bootstrap ``res`` re-scored with R's tie threshold
    ``kappa`` (for comparing thresholds on planted worlds: ``benchmarks/interval_coverage.py``)."""
    drops = cell_r_drops(res.cell_keys, res.point_extras, res.extras)
    point, raw, encoders = crs_replicates(cells, res.axes, res.point_axes, drops,
                                          load_anchors(anchors), rule, kappa=kappa)  # fmt: skip
    return _crs_summary(encoders, point, raw, top_k, level)


def count_test_patients(cells: Sequence[CellPredictions]) -> dict[str, int]:
    """Distinct test patients per dataset (and per shift target) of the cells."""
    out: dict[str, int] = {}
    for c in cells:
        out[c.dataset] = c.test.n_patients
        for split, _ in (*c.shifts, *c.extra_shifts):
            out[split.dataset] = split.n_patients
    return out


def per_seed_axes(cells: Sequence[CellPredictions]) -> pd.DataFrame:
    """The per-(encoder, dataset, seed) axes on the test sets as drawn: the input of the
    seed-only bootstrap (:func:`crsbench.stats.paired_seed_bootstrap`)."""
    rows = []
    for c in cells:
        axes = cell_replicate_axes(c, None)[0]
        for s, values in zip(c.seeds, axes, strict=True):
            rows.append({"encoder": c.encoder, "dataset": c.dataset, "seed": s,
                         **dict(zip(AXES, values, strict=True))})  # fmt: skip
    return pd.DataFrame(rows)
