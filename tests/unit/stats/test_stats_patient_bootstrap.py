"""The paired bootstrap over test patients × seeds: exactness at unit weights, pairing across
processes, DeLong's analytic AUROC variance, seed-only vs test-patient significance (the reduced
coverage check on planted truth: test_stats_coverage_scenarios.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import norm
from sklearn.metrics import roc_auc_score

from crsbench.metrics import expected_calibration_error, macro_auroc
from crsbench.stats import paired_seed_bootstrap
from crsbench.stats.cell_axes import seed_resampled_axes
from crsbench.stats.patient_bootstrap import (
    TEST_PATIENTS_X_SEEDS,
    patient_seed_bootstrap,
    per_seed_axes,
)
from crsbench.stats.resample import SEED_STREAM, resample_counts_for, row_weights
from crsbench.stats.weighted_metrics import weighted_ece, weighted_macro_auroc
from crsbench.testing.planted import (
    PlantedEncoder,
    draw_world,
    planted_parameters,
    population_table,
)

SRC = Path(__file__).resolve().parents[3] / "src"


def _multilabel(rng, n=300, k=3):
    y = (rng.random((n, k)) < 0.3).astype(float)
    y[rng.random((n, k)) < 0.1] = np.nan
    p = np.clip(0.3 + 0.3 * np.nan_to_num(y) + rng.normal(0, 0.2, (n, k)), 0, 1).round(2)
    return y, p


def test_unit_weights_give_the_stored_metrics_exactly():
    rng = np.random.default_rng(0)
    y, p = _multilabel(rng)
    ones = np.ones((1, len(y)))
    assert weighted_macro_auroc(y, p, "multilabel", ones)[0] == pytest.approx(
        macro_auroc(y, p, "multilabel"), abs=1e-12
    )
    assert weighted_ece(y, p, "multilabel", ones)[0] == pytest.approx(
        expected_calibration_error(y, p, "multilabel"), abs=1e-12
    )
    yc = rng.integers(0, 4, 200)
    pc = rng.dirichlet(np.ones(4), 200)
    ones = np.ones((1, 200))
    assert weighted_macro_auroc(yc, pc, "multiclass", ones)[0] == pytest.approx(
        macro_auroc(yc, pc, "multiclass"), abs=1e-12
    )
    assert weighted_ece(yc, pc, "multiclass", ones)[0] == pytest.approx(
        expected_calibration_error(yc, pc, "multiclass"), abs=1e-12
    )


def test_patient_weights_equal_sklearn_on_the_resampled_rows():
    rng = np.random.default_rng(1)
    groups = np.repeat(np.arange(80), rng.integers(1, 4, 80)).astype(str)
    y = (rng.random(len(groups)) < 0.4).astype(float)
    s = y + rng.normal(0, 1, len(y))
    w = row_weights("isic2019", groups, range(5))
    got = weighted_macro_auroc(y[:, None], s[:, None], "multilabel", w.astype(float))
    for b in range(5):
        rows = np.repeat(np.arange(len(y)), w[b])
        assert got[b] == pytest.approx(roc_auc_score(y[rows], s[rows]), abs=1e-12)
        # a patient's images move together: equal weights within a patient
        for g in np.unique(groups):
            assert len(set(w[b, groups == g])) == 1


_CHILD = """
import sys, numpy as np
from crsbench.stats.resample import row_weights
rng = np.random.default_rng(int(sys.argv[1]))  # each 'encoder' lists its rows in another order
groups = np.repeat(np.arange(50), 2).astype(str)
order = rng.permutation(len(groups))
w = row_weights("chexpert", groups[order], range(20))
back = np.empty_like(w); back[:, order] = w
np.save(sys.argv[2], back)
"""


def test_pairing_holds_across_processes(tmp_path):
    outs = []
    for enc in (1, 2):
        out = tmp_path / f"enc{enc}.npy"
        env = {"PYTHONPATH": str(SRC), "PYTHONHASHSEED": str(enc)}
        subprocess.run([sys.executable, "-c", _CHILD, str(enc), str(out)], check=True, env=env)
        outs.append(np.load(out))
    np.testing.assert_array_equal(outs[0], outs[1])
    assert not np.array_equal(outs[0][0], outs[0][1])  # replicates differ from each other


_CELL_CHILD = """
import sys, numpy as np
from dataclasses import replace
from crsbench.stats.cell_predictions import EvalSplit
from crsbench.stats.patient_bootstrap import cell_replicate_axes
from crsbench.testing.planted import draw_world, planted_parameters
rng = np.random.default_rng(7)
params = planted_parameters(2, ("isic2019",), rng)
world = draw_world(params, 80, 2, rng)
cell = world.cells[int(sys.argv[1])]
# this process lists the test rows in its own order: pairing must follow patients, not rows
o = np.random.default_rng(int(sys.argv[1]) + 100).permutation(len(cell.test.groups))
t = cell.test
cell = replace(cell, test=EvalSplit(t.dataset, t.groups[o], t.y[o]), clean=cell.clean[o],
               fractions={f: p[:, o] for f, p in cell.fractions.items()},
               conditions={k: p[o] for k, p in cell.conditions.items()})
np.save(sys.argv[2], cell_replicate_axes(cell, range(30), seed=3))
"""


def test_two_encoders_cells_computed_in_separate_processes_are_paired(tmp_path):
    per_cell = []
    for i in (0, 1):  # encoder e00's cell and e01's, each in its own process
        out = tmp_path / f"cell{i}.npy"
        env = {"PYTHONPATH": str(SRC), "PYTHONHASHSEED": str(i)}
        subprocess.run([sys.executable, "-c", _CELL_CHILD, str(i), str(out)], check=True, env=env)
        per_cell.append(np.load(out))
    rng = np.random.default_rng(7)
    params = planted_parameters(2, ("isic2019",), rng)
    world = draw_world(params, 80, 2, rng)
    together = patient_seed_bootstrap(world.cells, n_replicates=30, seed=3)
    seeds = resample_counts_for(SEED_STREAM, 2, range(30), 3)
    for i, axes in enumerate(per_cell):
        np.testing.assert_allclose(seed_resampled_axes(axes, seeds), together.axes[:, i],
                                   rtol=0, atol=1e-12)  # fmt: skip
    # and the replicates did resample: the AUROC varies across them
    assert together.axes[:, 0, 0].std() > 0


def _delong_se(y: np.ndarray, s: np.ndarray) -> float:
    """DeLong's analytic standard error of one AUROC (structural components)."""
    pos, neg = s[y == 1], s[y == 0]
    psi = (pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :])
    v10, v01 = psi.mean(axis=1), psi.mean(axis=0)
    return float(np.sqrt(v10.var(ddof=1) / len(pos) + v01.var(ddof=1) / len(neg)))


def test_bootstrap_se_of_one_auroc_agrees_with_delong():
    rng = np.random.default_rng(2)
    n = 600
    y = (rng.random(n) < 0.3).astype(float)
    s = 1.2 * y + rng.normal(0, 1, n)
    w = row_weights("isic2019", np.arange(n).astype(str), range(2000)).astype(float)
    boot = weighted_macro_auroc(y[:, None], s[:, None], "multilabel", w)
    assert boot.std(ddof=1) == pytest.approx(_delong_se(y, s), rel=0.1)


def _two_encoder_params(gap: float, datasets=("isic2019",)) -> dict:
    def enc(delta: float) -> PlantedEncoder:
        conds = tuple(delta * (1 - 0.02 * s) for _ in range(5) for s in (1, 2, 3))
        return PlantedEncoder(delta, 0.8, 0.1, conds, tuple(delta * k for k in
                              (0.6, 0.75, 0.85, 0.93)), 0.08)  # fmt: skip

    return {(e, d): enc(1.2 + (gap if e == "e00" else 0.0)) for e in ("e00", "e01")
            for d in datasets}  # fmt: skip


def _lead_interval(result) -> tuple[float, float]:
    pw = result.pairwise
    row = pw[(pw["encoder_a"] == "e00") & (pw["encoder_b"] == "e01")].iloc[0]
    return float(row["ci_low"]), float(row["ci_high"])


def test_small_test_set_seed_only_calls_a_lead_that_test_patients_do_not():
    params = _two_encoder_params(gap=0.02)
    world = draw_world(params, 60, 5, np.random.default_rng(3), population_table(params))
    seed_only = paired_seed_bootstrap(per_seed_axes(world.cells), n_replicates=400, seed=0)
    patients = patient_seed_bootstrap(world.cells, n_replicates=400, seed=0)
    lo_s, hi_s = _lead_interval(seed_only)
    lo_p, hi_p = _lead_interval(patients)
    assert lo_s > 0 or hi_s < 0  # seed-only: "significant"
    assert lo_p <= 0 <= hi_p  # test patients × seeds: not distinguishable
    assert (patients.ranks["interval"] == TEST_PATIENTS_X_SEEDS).all()
    assert set(patients.ranks["tier"]) == {1}


def test_large_test_set_with_a_real_gap_is_significant():
    params = _two_encoder_params(gap=0.5)
    world = draw_world(params, 2000, 3, np.random.default_rng(4), population_table(params))
    res = patient_seed_bootstrap(world.cells, n_replicates=200, seed=0)
    lo, _ = _lead_interval(res)
    assert lo > 0
    assert dict(zip(res.ranks["encoder"], res.ranks["tier"], strict=True)) == {"e00": 1, "e01": 2}
    assert res.n_patients == {"isic2019": 2000}


def test_delong_reference_itself_matches_the_binormal_variance():
    # a sanity check of the reference: large-sample SE against Hanley-McNeil's formula
    rng = np.random.default_rng(6)
    n = 4000
    y = (rng.random(n) < 0.5).astype(float)
    s = 1.0 * y + rng.normal(0, 1, n)
    a = norm.cdf(1 / np.sqrt(2))
    n1, n0 = y.sum(), n - y.sum()
    q1, q2 = a / (2 - a), 2 * a * a / (1 + a)
    hm = np.sqrt((a * (1 - a) + (n1 - 1) * (q1 - a * a) + (n0 - 1) * (q2 - a * a)) / (n1 * n0))
    assert _delong_se(y, s) == pytest.approx(hm, rel=0.1)


def test_verdict_extras_as_drawn_are_the_jpeg_drop_and_shift_ece_increase():
    """By hand from sklearn's AUROC and the protocol's ECE on one planted CheXpert cell."""
    from sklearn.metrics import roc_auc_score

    from crsbench.stats.patient_bootstrap import point_extras
    from crsbench.stats.replicate_values import JPEG_DROP, R_DROP, R_SHIFT_DROP, SHIFT_ECE_INCREASE

    params = planted_parameters(2, ("chexpert",), np.random.default_rng(3))
    world = draw_world(params, 200, 2, np.random.default_rng(4))
    cell = world.cells[0]
    y = cell.test.y[:, 0]
    clean = roc_auc_score(y, cell.clean[:, 0])
    jpeg = [clean - roc_auc_score(y, p[:, 0]) for (n, _), p in cell.conditions.items()
            if n == "jpeg"]  # fmt: skip
    split, shift_p = cell.shift
    increase = expected_calibration_error(split.y, shift_p, "multilabel") - (
        expected_calibration_error(cell.test.y, cell.clean, "multilabel")
    )
    got = point_extras(cell)
    assert len(jpeg) == 3 and got[JPEG_DROP] == pytest.approx(np.mean(jpeg), abs=1e-12)
    assert got[SHIFT_ECE_INCREASE + "mimic_cxr"] == pytest.approx(increase, abs=1e-12)
    # R's 16 drops (the conditions in sorted order, then the MIMIC shift), for R's interval
    drops = [clean - roc_auc_score(y, p[:, 0]) for _, p in sorted(cell.conditions.items())]
    drops.append(clean - roc_auc_score(split.y[:, 0], shift_p[:, 0]))
    keys = [f"{R_DROP}{i:02d}" for i in range(15)] + [f"{R_DROP}15{R_SHIFT_DROP}"]
    assert set(got) == {JPEG_DROP, SHIFT_ECE_INCREASE + "mimic_cxr", *keys}
    assert [got[k] for k in keys] == pytest.approx(drops, abs=1e-12)
