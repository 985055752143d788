"""The questions a reader asks first, answered per dataset: which encoder leads on each axis,
how sure that is, and who else is not distinguishable from it.

Each question is one value per (encoder, dataset) cell (or per shift result) with a direction:
the overall pick (the cell's CRS), D, C, L and R, the AUROC drop under JPEG, and the ECE
increase on the shift target. The leader is the best point estimate; its interval and the
interval of its gap to the runner-up come from bootstrap replicates of the cells' axes
(:class:`AxisReplicates`): today the paired-seed bootstrap's resamples
(:func:`seed_axis_replicates`, the same draws as :func:`crsbench.stats.paired_seed_bootstrap`
with the same seed), or a test-patient bootstrap's per-cell axes
(:func:`from_patient_bootstrap`). The JPEG and shift-calibration questions come from the same
test-patient bootstrap's resamples when it carries them (its ``extras``), else from the seeds
only; each row names its interval method and what the interval is (``interval_kind``). On the
test-patient resamples every value gets the basic interval, a 95 % CI shown to cover on
planted truth, except the shift ECE increase: the basic interval of a difference of two ECEs
covered in about 80 % of cells (the two plug-in biases cancel in the estimate, and reflecting
the replicates' skew overshoots) and the percentile interval in about 98 %, above the band,
so that row shows the percentile spread as a bootstrap range, not a 95 % CI
(``benchmarks/interval_coverage.py``). Seed-only rows are seed-only ranges.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from crsbench.core.errors import DataError
from crsbench.core.shift_labels import source_reference_ece
from crsbench.protocol import JPEG
from crsbench.scoring.anchors import AXES, Anchors, load_anchors
from crsbench.scoring.crs import crs_components, fixed_utilities
from crsbench.scoring.dominance import dominance_counter
from crsbench.stats.bootstrap import axes_cube, resample_counts
from crsbench.stats.intervals import (
    BOOTSTRAP_RANGE,
    CI95,
    SEED_ONLY_RANGE,
    corrected_estimate,
    ece_interval,
    percentile_interval,
)
from crsbench.stats.patient_bootstrap import SEED_ONLY, TEST_PATIENTS_X_SEEDS
from crsbench.stats.replicate_values import JPEG_DROP, SHIFT_ECE_INCREASE
from crsbench.stats.robustness_interval import cell_r_drops, r_interval, r_percentile_cells
from crsbench.store.reader import select_runs

#: (key, question as the report asks it, value, True when higher is better).
QUESTIONS: tuple[tuple[str, str, str, bool], ...] = (
    ("pick", "Which encoder should I pick?", "CRS of the cell", True),
    ("discrimination", "Which discriminates best?", "D: AUROC", True),
    ("calibration", "Which is best calibrated?", "C: ECE", False),
    ("label_efficiency", "Which keeps its AUROC with few labels?", "L: retention", True),
    ("robustness", "Which is most robust overall?", "R: AUROC drop", False),
    ("jpeg", "Which is most robust to JPEG?", "AUROC drop under JPEG", False),
    ("shift_calibration", "Which keeps its calibration under shift?", "ECE increase on the "
     "shift target", False),
)  # fmt: skip


@dataclass(frozen=True)
class AxisReplicates:
    """Bootstrap replicates of every cell's four axes, and how to read them.

    Attributes
    ----------
    cell_keys : list of (encoder, dataset)
        Order of the cells in ``point`` and ``replicates``.
    point : numpy.ndarray
        ``(n_cells, 4)`` axes as estimated (order :data:`crsbench.scoring.AXES`).
    replicates : numpy.ndarray
        ``(B, n_cells, 4)`` axes of each replicate.
    method : str
        The interval method's name, shown beside every interval.
    basic : bool
        Basic (``2·θ̂ − q``) intervals when True, percentile intervals when False.
    ece_shrunk : (numpy.ndarray, numpy.ndarray) or None
        ``(n_cells,)`` point and ``(B, n_cells)`` replicates of the ECE in the shrunk
        bootstrap world: the leader's ECE interval is then
        :func:`crsbench.stats.intervals.ece_interval` (test-patient bootstrap only).
    ece_reach : numpy.ndarray or None
        ``(n_cells,)`` the ECE interval's reach towards the shrunk world
        (:func:`crsbench.stats.intervals.ece_reach`; None: 1 for every cell).
    extras : dict (encoder, dataset, name) → (point, ``(B,)`` replicates), optional
        The JPEG drop and shift ECE increases on the same resamples (test-patient bootstrap:
        :attr:`crsbench.stats.patient_bootstrap.PatientBootstrapResult.extras`); without
        them those two questions are resampled over seeds only.
    """

    cell_keys: list[tuple[str, str]]
    point: np.ndarray
    replicates: np.ndarray
    method: str
    basic: bool
    ece_shrunk: tuple[np.ndarray, np.ndarray] | None = None
    ece_reach: np.ndarray | None = None
    extras: dict[tuple[str, str, str], tuple[float, np.ndarray]] | None = None


def seed_counts(n_replicates: int, n_seeds: int, seed: int, chunk: int = 1_000) -> np.ndarray:
    """``(B, S)`` seed resample counts drawn exactly as the paired-seed bootstrap draws them."""
    rng = np.random.default_rng(seed)
    parts = [resample_counts(min(chunk, n_replicates - s), n_seeds, rng)
             for s in range(0, n_replicates, chunk)]  # fmt: skip
    return np.concatenate(parts)


def seed_axis_replicates(
    per_seed: pd.DataFrame, n_replicates: int = 2_000, seed: int = 0
) -> AxisReplicates:
    """Per-cell axes under the paired-seed bootstrap (percentile intervals, ``seed-only``).

    A cell with a NaN axis at any seed is NaN in every replicate, as its point estimate is.
    """
    cube = axes_cube(per_seed)
    counts = seed_counts(n_replicates, len(cube.seeds), seed).astype(float)
    complete = np.isfinite(cube.values).all(axis=(-1, -2))
    x0 = np.where(complete[:, :, None, None], cube.values, 0.0)
    reps = np.einsum("cesk,bs->bcek", x0, counts) / counts.sum(axis=1)[:, None, None, None]
    point = x0.mean(axis=2)
    ci, ei = np.nonzero(cube.exists)
    keys = [(cube.encoders[e], cube.datasets[c]) for c, e in zip(ci, ei, strict=True)]
    bad = ~complete[ci, ei]
    point, reps = point[ci, ei], reps[:, ci, ei]
    point[bad], reps[:, bad] = np.nan, np.nan
    return AxisReplicates(keys, point, reps, SEED_ONLY, basic=False)


def from_patient_bootstrap(result: object) -> AxisReplicates:
    """The per-cell axes of a test-patient × seed bootstrap
    (:class:`crsbench.stats.patient_bootstrap.PatientBootstrapResult`), basic intervals."""
    shrunk = np.asarray(getattr(result, "point_ece_shrunk", np.empty(0)))
    ece = (shrunk, np.asarray(result.ece_shrunk)) if shrunk.size else None
    reps, points = getattr(result, "extras", {}), getattr(result, "point_extras", {})
    extras = {k: (points[k], np.asarray(v)) for k, v in reps.items() if k in points}
    reach = np.asarray(getattr(result, "ece_reach", np.empty(0)))
    return AxisReplicates(list(result.cell_keys), np.asarray(result.point_axes),
                          np.asarray(result.axes), TEST_PATIENTS_X_SEEDS, basic=True,
                          ece_shrunk=ece, ece_reach=reach if reach.size else None,
                          extras=extras or None)  # fmt: skip


def axis_replicates_of(unc: object) -> AxisReplicates | None:
    """The per-cell axes of a :class:`crsbench.stats.uncertainty.Uncertainty` whose result is
    a test-patient × seed bootstrap (None for a seed-only result: the caller falls back to
    :func:`seed_axis_replicates`, named ``seed-only`` beside every interval)."""
    result = getattr(unc, "result", None)
    if getattr(result, "cell_keys", None) is None or getattr(result, "axes", None) is None:
        return None
    return from_patient_bootstrap(result)


def _cell_crs(reps: AxisReplicates, anchors: Anchors) -> tuple[np.ndarray, np.ndarray]:
    """Point ``(n,)`` and replicate ``(B, n)`` CRS of each cell, scored as the point estimate."""
    point = np.full(len(reps.cell_keys), np.nan)
    rep = np.full((reps.replicates.shape[0], len(reps.cell_keys)), np.nan)
    datasets = np.array([d for _, d in reps.cell_keys])
    for ds in np.unique(datasets):
        idx = np.flatnonzero(datasets == ds)
        counter = dominance_counter(anchors.panel_for(str(ds)))
        for raw, out in ((reps.point[idx], point), (reps.replicates[:, idx], rep)):
            u = fixed_utilities(raw, anchors)
            crs = crs_components(u, counter.share(u), anchors.weights)["CRS"]
            out[..., idx] = crs
    return point, rep


def _seed_values(values: pd.DataFrame, seeds: list, counts: np.ndarray):
    """Pivot ``encoder, group, seed, value`` to items; point and seed-resampled replicates."""
    wide = values.pivot_table(index=["encoder", "group"], columns="seed", values="value")
    wide = wide.reindex(columns=seeds)
    x = wide.to_numpy(dtype=float)
    ok = np.isfinite(x).all(axis=1)
    x0 = np.where(ok[:, None], x, 0.0)
    rep = (counts @ x0.T) / counts.sum(axis=1)[:, None]
    point = x0.mean(axis=1)
    point[~ok], rep[:, ~ok] = np.nan, np.nan
    return list(wide.index), point, rep


def _jpeg_drops(runs: pd.DataFrame) -> pd.DataFrame:
    clean = select_runs(runs).set_index(["encoder", "dataset", "seed"])["auroc"]
    jp = select_runs(runs, condition=JPEG)
    if jp.empty:
        return pd.DataFrame(columns=["encoder", "group", "seed", "value"])
    ref = clean.reindex(pd.MultiIndex.from_frame(jp[["encoder", "dataset", "seed"]])).to_numpy()
    jp = jp.assign(value=ref - jp["auroc"].to_numpy(dtype=float))
    out = jp.groupby(["encoder", "dataset", "seed"])["value"].mean(numeric_only=True)
    return out.reset_index().rename(columns={"dataset": "group"})


def _shift_ece_increase(runs: pd.DataFrame) -> pd.DataFrame:
    """Shift ECE minus the source's clean ECE on the same labels: the clean ECE over the
    compared labels recorded in a restricted shift row's details, else the clean row's."""
    clean = select_runs(runs).set_index(["encoder", "dataset", "seed"])["ece"]
    sh = select_runs(runs, condition="shift", own_eval=False)
    if sh.empty:
        return pd.DataFrame(columns=["encoder", "group", "seed", "value"])
    ref = clean.reindex(pd.MultiIndex.from_frame(sh[["encoder", "dataset", "seed"]])).to_numpy()
    if "details" in sh:
        own = [source_reference_ece(d) for d in sh["details"]]
        ref = np.array([r if o is None else o for r, o in zip(ref, own, strict=True)], float)
    return pd.DataFrame({"encoder": sh["encoder"].to_numpy(),
                         "group": (sh["dataset"] + "→" + sh["eval_dataset"]).to_numpy(),
                         "seed": sh["seed"].to_numpy(),
                         "value": sh["ece"].to_numpy(dtype=float) - ref})  # fmt: skip


def _extra_values(reps: AxisReplicates, question: str) -> tuple | None:
    """Items, points and ``(B, n)`` replicates of the JPEG (``jpeg``) or shift-calibration
    question from a test-patient bootstrap's extras; None when it has none for it."""
    found = []
    for (enc, ds, name), (point, rep) in sorted((reps.extras or {}).items()):
        if question == "jpeg" and name == JPEG_DROP:
            found.append(((enc, ds), point, rep))
        elif question == "shift_calibration" and name.startswith(SHIFT_ECE_INCREASE):
            found.append(((enc, f"{ds}→{name[len(SHIFT_ECE_INCREASE) :]}"), point, rep))
    if not found:
        return None
    items = [item for item, _, _ in found]
    return items, np.array([p for _, p, _ in found]), np.stack([r for _, _, r in found], axis=1)


def _interval(point: float, rep: np.ndarray, level: float, basic: bool) -> tuple[float, ...]:
    """The percentile interval of ``rep`` (and NaN), or the basic one around ``point`` and
    the bias-corrected estimate ``2·point − mean(rep)`` it is centred on."""
    lo, hi = percentile_interval(rep, level)
    if not basic:
        return lo, hi, float("nan")
    return 2 * point - hi, 2 * point - lo, _centre(point, rep)


def _centre(point: float, rep: np.ndarray) -> float:
    """:func:`crsbench.stats.intervals.corrected_estimate` of one value."""
    return float(corrected_estimate(np.array([point]), np.asarray(rep)[:, None])[0])


#: Questions whose leader − runner-up gap, on the test-patient resamples, is printed as a 95 %
#: CI: its basic interval covered the planted gap in 90–98 % of worlds (pick 0.930,
#: discrimination 0.945, robustness 0.975, JPEG 0.980; 100 worlds, 500 replicates,
#: ``benchmarks/gap_coverage.py``, docs/scoring.md "Coverage of differences"). The others are
#: printed as bootstrap ranges (``gap_interval_kind``): calibration 0.840 (a difference of two
#: ECEs, as the shift ECE increase), label efficiency 0.995 (above the band), the shift ECE
#: increase (percentile).
GAPS_SHOWN_TO_COVER: frozenset[str] = frozenset({"pick", "discrimination", "robustness", "jpeg"})


def interval_kind(method: str, basic: bool) -> str:
    """What an at-a-glance row's intervals are: a 95 % CI (basic, test patients × seeds), a
    bootstrap range (percentile) or a seed-only range."""
    if method == SEED_ONLY:
        return SEED_ONLY_RANGE
    return CI95 if basic else BOOTSTRAP_RANGE


def _glance_rows(question, items, point, rep, method, basic, level, lead_interval=None) -> list:
    """Leader, runner-up and gap per group; ``lead_interval(i)`` overrides the leader's."""
    key, text, value_name, higher = question
    kind = interval_kind(method, basic)
    gap_kind = kind if kind != CI95 or key in GAPS_SHOWN_TO_COVER else BOOTSTRAP_RANGE
    sign = 1.0 if higher else -1.0
    rows = []
    groups = sorted({g for _, g in items})
    for group in groups:
        idx = [i for i, (_, g) in enumerate(items) if g == group and np.isfinite(point[i])]
        if not idx:
            continue
        order = sorted(idx, key=lambda i: (-sign * point[i], items[i][0]))
        lead = order[0]
        lo, hi, fixed = (lead_interval(lead) if lead_interval is not None
                         else _interval(point[lead], rep[:, lead], level, basic))  # fmt: skip
        row = {"dataset": group, "question": key, "asks": text, "value_name": value_name,
               "higher_is_better": higher, "leader": items[lead][0], "value": point[lead],
               "ci_low": lo, "ci_high": hi, "value_corrected": fixed, "runner_up": None,
               "runner_up_value": np.nan, "gap": np.nan, "gap_ci_low": np.nan,
               "gap_ci_high": np.nan, "gap_corrected": np.nan,
               "distinguishable": None, "n_encoders": len(idx), "interval": method,
               "interval_kind": kind, "gap_interval_kind": gap_kind}  # fmt: skip
        if len(order) > 1:
            second = order[1]
            gap_rep = sign * (rep[:, lead] - rep[:, second])
            gap = sign * (point[lead] - point[second])
            glo, ghi, gfix = _interval(gap, gap_rep, level, basic)
            row.update(runner_up=items[second][0], runner_up_value=point[second], gap=gap,
                       gap_ci_low=glo, gap_ci_high=ghi, gap_corrected=gfix,
                       distinguishable=bool(glo > 0))  # fmt: skip
        rows.append(row)
    return rows


def _ece_lead_interval(reps: AxisReplicates, level: float):
    """The ECE interval of a cell (:func:`crsbench.stats.intervals.ece_interval`), or None
    when the replicates carry no shrunk world (then the method's own interval)."""
    if reps.ece_shrunk is None:
        return None
    c = AXES.index("ece")
    s_point, s_rep = reps.ece_shrunk

    def interval(i: int) -> tuple[float, float, float]:
        reach = 1.0 if reps.ece_reach is None else float(reps.ece_reach[i])
        lo, hi = ece_interval(reps.point[[i], c], reps.replicates[:, [i], c], s_point[[i]],
                              s_rep[:, [i]], level, reach)  # fmt: skip
        return float(lo[0]), float(hi[0]), _centre(reps.point[i, c], reps.replicates[:, i, c])

    return interval


def _auroc_lead_interval(reps: AxisReplicates, level: float):
    """D's interval of a cell on the test-patient bootstrap: the percentile interval
    (:func:`crsbench.stats.intervals.auroc_interval`); None otherwise (the method's own)."""
    if not reps.basic:
        return None
    c = AXES.index("auroc")

    def interval(i: int) -> tuple[float, float, float]:
        lo, hi = percentile_interval(reps.replicates[:, i, c], level)
        return lo, hi, _centre(reps.point[i, c], reps.replicates[:, i, c])

    return interval


def _r_lead_interval(reps: AxisReplicates, level: float):
    """R's interval of a cell (:func:`crsbench.stats.robustness_interval.r_interval`, which
    holds near-tied drops), or None when the replicates carry no drops (seed-only)."""
    extras = reps.extras or {}
    points, drops = cell_r_drops(reps.cell_keys, {k: p for k, (p, _) in extras.items()},
                                 {k: r for k, (_, r) in extras.items()})  # fmt: skip
    if not any(d.size for d in points):
        return None
    c = AXES.index("robustness_drop")

    pct = r_percentile_cells(reps.cell_keys, extras)

    def interval(i: int) -> tuple[float, float, float]:
        r = r_interval(reps.point[[i], c], reps.replicates[:, [i], c], [points[i]], [drops[i]],
                       level, percentile=pct[[i]])  # fmt: skip
        return float(r.low[0]), float(r.high[0]), float(reps.point[i, c] - r.bias[0])

    return interval


def at_a_glance_table(
    runs: pd.DataFrame,
    replicates: AxisReplicates,
    anchors: str | Anchors | None = None,
    seed: int = 0,
    level: float = 0.95,
) -> pd.DataFrame:
    """One row per (dataset, question): the leader, its interval, the runner-up and whether
    the two are distinguishable (the interval of the leader's gap excludes 0).

    Parameters
    ----------
    runs : pandas.DataFrame
        A store's ``runs`` table (for the JPEG and shift-calibration questions).
    replicates : AxisReplicates
        Per-cell axes and their replicates: :func:`seed_axis_replicates` or
        :func:`from_patient_bootstrap`.
    anchors : anchors source, optional
        Scores the cells' CRS (default: the shipped current version).
    seed : int
        Seed of the seed resampling of the JPEG and shift questions (the paired-seed
        bootstrap's draws when ``replicates`` came from the same seed).
    level : float
        Interval level.

    Returns
    -------
    pandas.DataFrame
        Columns ``dataset`` (``source→target`` for the shift question), ``question``,
        ``asks``, ``value_name``, ``higher_is_better``, ``leader``, ``value``, ``ci_low``,
        ``ci_high``, ``value_corrected`` (the bias-corrected value the leader's 95 % CI implies:
        ``2·θ̂ − mean(θ*)``, for R ``R̂ − bias`` of the tie-aware root; NaN beside a range),
        ``runner_up``, ``runner_up_value``, ``gap`` (leader better by, > 0),
        ``gap_ci_low``, ``gap_ci_high``, ``gap_corrected`` (the same for the gap), ``distinguishable``, ``n_encoders``, ``interval``
        (the bootstrap), ``interval_kind`` (``95% CI``, ``bootstrap range`` or
        ``seed-only range``: :func:`interval_kind`) and ``gap_interval_kind`` (the same for
        the gap: a 95 % CI only for :data:`GAPS_SHOWN_TO_COVER`).
    """
    anc = load_anchors(anchors)
    if not replicates.cell_keys:
        raise DataError("the at-a-glance table needs at least one cell with bootstrap replicates.")
    items = list(replicates.cell_keys)
    crs_point, crs_rep = _cell_crs(replicates, anc)
    rows = _glance_rows(QUESTIONS[0], items, crs_point, crs_rep, replicates.method,
                     replicates.basic, level)  # fmt: skip
    for j, question in enumerate(QUESTIONS[1:5]):
        lead = {"auroc": _auroc_lead_interval, "ece": _ece_lead_interval,
                "robustness_drop": _r_lead_interval}.get(AXES[j])  # fmt: skip
        lead = lead(replicates, level) if lead is not None else None
        rows += _glance_rows(question, items, replicates.point[:, j], replicates.replicates[:, :, j],
                          replicates.method, replicates.basic, level, lead)  # fmt: skip
    seeds = sorted(select_runs(runs)["seed"].unique())
    counts = seed_counts(replicates.replicates.shape[0], max(len(seeds), 1), seed).astype(float)
    for question, values in ((QUESTIONS[5], _jpeg_drops), (QUESTIONS[6], _shift_ece_increase)):
        resampled = _extra_values(replicates, question[0])
        if resampled is not None:  # on the test-patient bootstrap's resamples
            basic = question[0] == "jpeg"  # shift ECE increase: a range (module notes)
            rows += _glance_rows(question, *resampled, replicates.method, basic, level)
            continue
        table = values(runs)
        if not table.empty:  # the seeds only
            rows += _glance_rows(question, *_seed_values(table, seeds, counts), SEED_ONLY, False,
                              level)  # fmt: skip
    if not rows:  # no cell with an encoder to compare: nothing to answer
        return pd.DataFrame()
    order = {q[0]: i for i, q in enumerate(QUESTIONS)}
    out = pd.DataFrame(rows)
    out["_q"] = out["question"].map(order)
    return out.sort_values(["dataset", "_q"]).drop(columns="_q").reset_index(drop=True)


__all__ = ["AXES", "QUESTIONS", "AxisReplicates", "axis_replicates_of", "from_patient_bootstrap",
           "seed_axis_replicates", "at_a_glance_table"]  # fmt: skip
