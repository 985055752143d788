"""A reduced run of the difference-coverage benchmark (``benchmarks/gap_coverage.py``): the
95% CIs of CRS differences, the leader's gap and the at-a-glance table's gaps cover the planted
differences in most worlds, and every at-a-glance gap is labelled as the report labels it."""

from __future__ import annotations

from crsbench.testing.gap_coverage import run_gap_coverage, summarise


def test_reduced_gap_coverage_on_planted_truth():
    hits = run_gap_coverage(4, n_encoders=3, datasets=("chexpert",), n_patients=150,
                            n_seeds=2, n_replicates=150, seed=3)  # fmt: skip
    table = summarise(hits).set_index("target")
    assert table.loc["CRS difference (every pair)", "n"] == 4 * 6
    assert table.loc["leader's CRS gap (section 4)", "n"] == 4
    ci = table[table["kind"] == "95% CI"]
    assert ci["coverage"].min() >= 0.7, ci
    assert table.loc["at-a-glance gap: shift_calibration", "kind"] == "bootstrap range"
    assert {"at-a-glance gap: pick", "at-a-glance gap: robustness", "at-a-glance gap: jpeg"} <= set(
        ci.index
    )
    for q in ("calibration", "label_efficiency"):  # not shown to cover: printed as a range
        assert table.loc[f"at-a-glance gap: {q}", "kind"] == "bootstrap range"
