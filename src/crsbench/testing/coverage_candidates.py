"""The interval methods compared on the tuning worlds (seed stream
:data:`crsbench.testing.coverage.TUNING`): each candidate's hits are recorded as method
``candidate: …`` beside the printed intervals' (``benchmarks/interval_coverage.py --tune
--candidates``)."""

from __future__ import annotations

import numpy as np

from crsbench.scoring.anchors import AXES
from crsbench.stats.intervals import basic_interval, percentile_interval, toward
from crsbench.stats.patient_bootstrap import PatientBootstrapResult, crs_summary_at
from crsbench.stats.replicate_values import SHIFT_ECE_INCREASE
from crsbench.testing.coverage_targets import LEADER_GAP, SHIFT_ECE_TARGET, hit
from crsbench.testing.scenarios import Truth

#: How far the leader gap's interval reaches from the basic interval towards the
#: percentile one (1: their union; the printed one is
#: :data:`crsbench.stats.intervals.DIFFERENCE_REACH`).
GAP_REACHES = (0.0, 0.25, 0.5, 0.75, 1.0)
#: How far C's union (basic ∪ shrunk world) reaches up towards the percentile interval's top.
ECE_TOP_REACHES = (0.25, 0.5, 0.75)


def gap_candidate_hits(name, w, res: PatientBootstrapResult, truth: Truth, level) -> list:
    """The leader gap's interval from the basic interval of the CRS differences to its union
    with their percentile interval, at each reach of :data:`GAP_REACHES` (method
    ``candidate: gap reach …``; the printed interval is the one at
    :data:`crsbench.stats.intervals.DIFFERENCE_REACH`)."""
    first, second = truth.crs.sort_values(ascending=False).index[:2]
    gap = truth.crs[first] - truth.crs[second]
    t = res.ranks.set_index("encoder")
    enc = sorted(t.index)  # the replicates' columns
    d = res.replicates[:, enc.index(first)] - res.replicates[:, enc.index(second)]
    point = np.array(t.loc[first, "CRS"] - t.loc[second, "CRS"])
    b_lo, b_hi = (float(v) for v in basic_interval(point, d, level))
    p_lo, p_hi = percentile_interval(d, level)
    out = []
    for f in GAP_REACHES:
        lo, hi = min(b_lo, toward(b_lo, p_lo, f)), max(b_hi, toward(b_hi, p_hi, f))
        out.append(hit(name, w, f"candidate: gap reach {f:g}", LEADER_GAP, lo, hi, gap))
    return out


#: Tie thresholds of the R replicates behind the CRS compared on the tuning worlds.
CRS_KAPPAS = (0.0, 1.0, 2.0, 3.0)


def candidate_hits(name, w, cells, res: PatientBootstrapResult, truth: Truth, level) -> list:
    """Hits of the interval methods compared on the tuning worlds (methods ``candidate: …``):
    the CRS and the leader gap scored from R's tie-aware replicates at each κ; R's union with
    its percentile interval; D's and the leader gap's percentile interval and its union with
    the basic one."""
    out = []
    first, second = truth.crs.sort_values(ascending=False).index[:2]
    gap = truth.crs[first] - truth.crs[second]
    for kappa in CRS_KAPPAS:
        s = crs_summary_at(cells, res, kappa, level=level)
        m = f"candidate: CRS from R kappa={kappa:g}"
        t = s.ranks.set_index("encoder")
        out += [hit(name, w, m, "CRS", t.loc[e, "crs_ci_low"], t.loc[e, "crs_ci_high"], v)
                for e, v in truth.crs.items()]  # fmt: skip
        pw = s.pairwise.set_index(["encoder_a", "encoder_b"]).loc[(first, second)]
        out.append(hit(name, w, m, LEADER_GAP, pw["ci_low"], pw["ci_high"], gap))
        if kappa == 2:  # the CRS interval's union with the percentile one
            cols = sorted(t.index)
            for e, v in truth.crs.items():
                lo, hi = percentile_interval(s.replicates[:, cols.index(e)], level)
                u = (min(lo, t.loc[e, "crs_ci_low"]), max(hi, t.loc[e, "crs_ci_high"]))
                out.append(hit(name, w, "candidate: basic + percentile", "CRS", *u, v))
        if kappa == 0:
            enc = sorted(t.index)  # the replicates' columns
            d = s.replicates[:, enc.index(first)] - s.replicates[:, enc.index(second)]
            lo, hi = percentile_interval(d, level)
            out.append(hit(name, w, "candidate: percentile", LEADER_GAP, lo, hi, gap))
            u = (min(lo, pw["ci_low"]), max(hi, pw["ci_high"]))
            out.append(hit(name, w, "candidate: basic + percentile", LEADER_GAP, *u, gap))
    out += _two_world_hits(name, w, cells, res, truth, level, first, second)
    out += gap_candidate_hits(name, w, res, truth, level)
    out += ece_candidate_hits(name, w, res, truth, level)
    pop = truth.axes.set_index(["encoder", "dataset"])
    lo_b, hi_b = basic_interval(res.point_axes, res.axes, level)
    r = res.r_interval(level, percentile=True)
    for i, key in enumerate(res.cell_keys):
        lo, hi = percentile_interval(res.axes[:, i, 0], level)
        truth_d = pop.loc[key, "auroc"]
        out.append(hit(name, w, "candidate: percentile", "auroc", lo, hi, truth_d))
        out.append(hit(name, w, "candidate: basic + percentile", "auroc", min(lo, lo_b[i, 0]),
                        max(hi, hi_b[i, 0]), truth_d))  # fmt: skip
        lo, hi = _logit_basic(res.point_axes[i, 0], res.axes[:, i, 0], level)
        out.append(hit(name, w, "candidate: logit basic", "auroc", lo, hi, truth_d))
        out.append(hit(name, w, "candidate: basic + percentile", "robustness_drop", r.low[i],
                        r.high[i], pop.loc[key, "robustness_drop"]))  # fmt: skip
    return out


def ece_candidate_hits(name, w, res: PatientBootstrapResult, truth: Truth, level) -> list:
    """C's interval: the basic interval of each world alone (as drawn; shrunk), the
    midpoint of the two worlds' intervals, their union at several reaches, and the union
    widened by the percentile interval of the replicates (both ends, or its top only),
    beside the interval that is printed."""
    if not res.point_ece_shrunk.size:
        return []
    e = AXES.index("ece")
    pop = truth.axes.set_index(["encoder", "dataset"])["ece"]
    lo, hi = basic_interval(res.point_axes[:, e], res.axes[:, :, e], level)
    alpha = (1 - level) / 2
    s_lo = res.point_axes[:, e] - (np.nanquantile(res.ece_shrunk, 1 - alpha, axis=0)
                                   - res.point_ece_shrunk)  # fmt: skip
    s_hi = res.point_axes[:, e] - (np.nanquantile(res.ece_shrunk, alpha, axis=0)
                                   - res.point_ece_shrunk)  # fmt: skip
    p_lo = np.nanquantile(res.axes[:, :, e], alpha, axis=0)
    p_hi = np.nanquantile(res.axes[:, :, e], 1 - alpha, axis=0)
    out = []
    for i, key in enumerate(res.cell_keys):
        t = pop[key]
        out.append(hit(name, w, "candidate: ECE basic", "ece", max(lo[i], 0), hi[i], t))
        out.append(hit(name, w, "candidate: ECE shrunk world", "ece", max(s_lo[i], 0), s_hi[i], t))
        out.append(hit(name, w, "candidate: ECE midpoint", "ece", max((lo[i] + s_lo[i]) / 2, 0),
                        (hi[i] + s_hi[i]) / 2, t))  # fmt: skip
        for f in (0.5, 0.6, 0.7, 0.75, 0.8, 0.9, 1.0):
            f_lo, f_hi = toward(lo[i], s_lo[i], f), toward(hi[i], s_hi[i], f)
            m = "candidate: ECE basic + midpoint" if f == 0.5 else f"candidate: ECE basic + {f:g}"
            out.append(hit(name, w, m, "ece", max(min(lo[i], f_lo), 0), max(hi[i], f_hi), t))
        u_lo, u_hi = max(min(lo[i], s_lo[i]), 0), max(hi[i], s_hi[i])
        out.append(hit(name, w, "candidate: ECE union + percentile", "ece", min(u_lo, p_lo[i]),
                       max(u_hi, p_hi[i]), t))  # fmt: skip
        out.append(hit(name, w, "candidate: ECE union + percentile top", "ece", u_lo,
                       max(u_hi, p_hi[i]), t))  # fmt: skip
        for g in ECE_TOP_REACHES:
            out.append(hit(name, w, f"candidate: ECE union + {g:g} percentile top", "ece", u_lo,
                           max(u_hi, u_hi + g * (p_hi[i] - u_hi)), t))  # fmt: skip
    for (enc, ds, extra), reps in res.extras.items():
        if extra.startswith(SHIFT_ECE_INCREASE):
            point = np.array([res.point_extras[(enc, ds, extra)]])
            a, b = (float(v[0]) for v in basic_interval(point, reps[:, None], level))
            value = truth.extras[(enc, ds)][extra]
            out.append(hit(name, w, "candidate: ECE basic", SHIFT_ECE_TARGET, a, b, value))
            c, d = percentile_interval(reps, level)
            out.append(hit(name, w, "candidate: ECE midpoint", SHIFT_ECE_TARGET, (a + c) / 2,
                            (b + d) / 2, value))  # fmt: skip
    return out


def _two_world_hits(name, w, cells, res, truth, level, first, second) -> list:
    """The CRS and leader gap as the union of the basic intervals of two bootstrap worlds:
    the replicates as drawn, and replicates whose ECE is the shrunk world's and whose R is
    tie-aware (κ = 2); the gap also with the percentile interval of the first world."""
    from crsbench.scoring.anchors import load_anchors
    from crsbench.stats.patient_bootstrap import crs_replicates
    from crsbench.stats.robustness_interval import cell_r_drops, tie_aware_replicates

    e, r = AXES.index("ece"), AXES.index("robustness_drop")
    drops = cell_r_drops(res.cell_keys, res.point_extras, res.extras)
    anc = load_anchors(None)
    scored = np.array(res.axes, dtype=float, copy=True)
    scored[:, :, r] = tie_aware_replicates(res.point_axes[:, r], res.axes[:, :, r], *drops, 2.0)
    scored[:, :, e] = res.point_axes[:, e] + (res.ece_shrunk - res.point_ece_shrunk)
    point, raw_a, enc = crs_replicates(cells, res.axes, res.point_axes, drops, anc, kappa=0.0)
    _, raw_b, _ = crs_replicates(cells, scored, res.point_axes, drops, anc, kappa=0.0)
    la, ha = basic_interval(point, raw_a, level)
    lb, hb = basic_interval(point, raw_b, level)
    m = "candidate: two worlds"
    out = [hit(name, w, m, "CRS", min(la[enc.index(x)], lb[enc.index(x)]),
                max(ha[enc.index(x)], hb[enc.index(x)]), v) for x, v in truth.crs.items()]  # fmt: skip
    i, j = enc.index(first), enc.index(second)
    gp = np.array(point[i] - point[j])
    ends: list[tuple[float, float]] = [
        tuple(float(v) for v in basic_interval(gp, rw[:, i] - rw[:, j], level))  # type: ignore[misc]
        for rw in (raw_a, raw_b)
    ]
    ends.append(percentile_interval(raw_a[:, i] - raw_a[:, j], level))
    lo, hi = min(float(a) for a, _ in ends), max(float(b) for _, b in ends)
    out.append(hit(name, w, m, LEADER_GAP, lo, hi, truth.crs[first] - truth.crs[second]))
    return out


def _logit_basic(point: float, reps: np.ndarray, level: float) -> tuple[float, float]:
    """The basic interval of logit(D), mapped back (an AUROC is bounded by 1)."""
    eps = 1e-9
    z = lambda v: np.log(np.clip(v, eps, 1 - eps) / (1 - np.clip(v, eps, 1 - eps)))  # noqa: E731
    lo, hi = basic_interval(np.array(z(point)), z(reps), level)
    return float(1 / (1 + np.exp(-lo))), float(1 / (1 + np.exp(-hi)))
