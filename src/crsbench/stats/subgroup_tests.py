"""The permutation test of subgroup labels and the bias-corrected gap (``docs/scoring.md``,
"Subgroups: when is a difference real").

Under the null hypothesis that subgroup membership is independent of a patient's labels and
predictions (identical subgroups), every reassignment of the observed subgroup labels among
the test patients is as likely as the observed one. :func:`permuted_labels` draws such
reassignments: each patient's sequence of row labels moves as a whole to another patient
with the same number of test rows (a patient-level attribute such as sex moves with the
patient; a per-image one such as the view keeps its within-patient pattern). A gap statistic
recomputed on each reassignment gives the null distribution, and
:func:`permutation_p_value` the share of reassignments (the observed one included) whose gap
is at least the observed one: a valid p-value whatever the subgroup sizes, the metric's
small-sample bias or the patient clustering, so "p < 0.05" has a false-positive rate ≤ 5 %.
"""

from __future__ import annotations

import hashlib

import numpy as np

from crsbench.protocol import SUBGROUP_ALPHA
from crsbench.stats.intervals import basic_interval
from crsbench.stats.resample import patient_index
from crsbench.stats.weighted_metrics import ReplicateWeights

#: Reassignments of the subgroup labels per test (the smallest p-value is 1 / (P + 1)).
DEFAULT_SUBGROUP_PERMUTATIONS = 999
#: A subgroup difference is called real when its permutation p-value is below this.
ALPHA = SUBGROUP_ALPHA


def _rng(seed: int, stream: str) -> np.random.Generator:
    key = int.from_bytes(hashlib.sha256(stream.encode("utf-8")).digest()[:8], "little")
    return np.random.default_rng([int(seed), key])


def permuted_labels(
    labels: np.ndarray, groups: np.ndarray, n_perm: int, seed: int = 0, stream: str = ""
) -> np.ndarray:
    """``(1 + P, n)`` subgroup codes of each row: row 0 as observed, then ``n_perm``
    reassignments of whole patients' label sequences among patients with as many rows.

    Parameters
    ----------
    labels : array of str
        The subgroup of each row (blank = not recorded; it is reassigned like any value).
    groups : array
        The patient of each row.
    n_perm : int
        Reassignments.
    seed, stream : int, str
        The random stream (a pure function of both).

    Returns
    -------
    numpy.ndarray
        Integer codes into ``numpy.unique(labels)``, in the narrowest signed type.
    """
    uniq, codes = np.unique(np.asarray(labels).astype(str), return_inverse=True)
    codes = codes.astype(_code_type(len(uniq)))  # (1 + P) rows: the narrowest signed type
    _, inv = patient_index(groups)
    order = np.argsort(inv, kind="stable")
    counts = np.bincount(inv)
    starts = np.r_[0, np.cumsum(counts)[:-1]]
    out = np.empty((1 + n_perm, len(codes)), dtype=codes.dtype)
    out[0] = codes
    rng = _rng(seed, stream)
    for k in np.unique(counts):
        pats = np.flatnonzero(counts == k)
        rows = order[starts[pats][:, None] + np.arange(k)]  # (patients, k)
        perm = rng.permuted(np.tile(np.arange(len(pats)), (n_perm, 1)), axis=1)
        out[1:, rows] = codes[rows][perm]
    return out


def _code_type(n_codes: int) -> type:
    """The narrowest signed integer type holding codes ``0 … n_codes - 1`` (and -1)."""
    for kind in (np.int8, np.int16, np.int32):
        if n_codes - 1 <= np.iinfo(kind).max:
            return kind
    return np.int64


def membership_weights(perm: np.ndarray, codes: list[int], groups: np.ndarray) -> ReplicateWeights:
    """0/1 weights of the rows in each subgroup under each reassignment, stacked subgroup by
    subgroup: ``len(codes) · (1 + P)`` rows. Patient columns (a patient's rows are one
    cluster of the debiased ECE) when every patient's rows share one label, else row columns."""
    _, inv = patient_index(groups)
    first = np.unique(inv, return_index=True)[1]
    per_patient = bool(np.all(perm[0] == perm[0][first][inv]))
    cols = perm[:, first] if per_patient else perm
    stacked = np.concatenate([(cols == c).astype(np.uint8) for c in codes])
    return ReplicateWeights.of(stacked, inv if per_patient else None)


def gaps(values: np.ndarray) -> np.ndarray:
    """Max − min over subgroups (rows of ``values``, ``(G, R)``) per column, NaN-aware."""
    finite = np.isfinite(values)
    ok = finite.sum(axis=0) >= 2
    hi = np.where(finite, values, -np.inf).max(axis=0)
    lo = np.where(finite, values, np.inf).min(axis=0)
    return np.where(ok, hi - lo, np.nan)


def permutation_p_value(stat: np.ndarray) -> float:
    """``(1 + #{π : T_π ≥ T_obs}) / (1 + P)`` of ``stat`` = ``[T_obs, T_1 … T_P]`` (NaN when
    the observed statistic is NaN; reassignments with a NaN statistic are left out)."""
    obs, null = stat[0], stat[1:]
    if not np.isfinite(obs):
        return float("nan")
    null = null[np.isfinite(null)]
    return float((1 + np.sum(null >= obs - 1e-12)) / (1 + len(null)))


def bias_corrected_gap(gap: np.ndarray, level: float = 0.95) -> tuple[float, float, float]:
    """The bootstrap bias-corrected gap ``2·ĝ − mean(g*)`` and the basic interval
    ``[2·ĝ − q_hi, 2·ĝ − q_lo]`` of ``gap`` = ``[ĝ, g*_1 … g*_B]`` (the bootstrap's
    replicates). The max − min of noisy subgroup values is biased upward; the replicates
    repeat that bias on top of ``ĝ``, and subtracting it removes most of it (not all: see
    ``benchmarks/subgroups.py``). Either may be slightly negative when no gap is visible."""
    point, reps = gap[0], gap[1:]
    if not np.isfinite(point) or not np.isfinite(reps).any():
        return float("nan"), float("nan"), float("nan")
    lo, hi = basic_interval(np.asarray(point), reps[np.isfinite(reps)], level)
    return float(2 * point - np.nanmean(reps)), float(lo), float(hi)
