"""Subgroups, worst-subgroup CRS, operating-point transfer and flips on a 4-encoder toy store
written through the real writer, with planted values worked by hand
(:func:`crsbench.testing.prediction_store.toy_cells` documents what is planted)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from crsbench.datasets.chexpert import CHEXPERT_LABELS

ENCODERS = ("resnet50", "vit_b16", "clip", "dinov2")


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    from crsbench.stats.store_predictions import load_store_predictions
    from crsbench.testing.prediction_store import toy_cells, write_prediction_store

    store = tmp_path_factory.mktemp("toy") / "store"
    write_prediction_store(store, toy_cells())
    found = load_store_predictions(store, [(e, "chexpert") for e in ENCODERS], [0])
    assert not found.missing
    return store, found.cells


def test_planted_subgroup_gap_and_too_small(toy):
    from crsbench.stats.subgroups import TOO_SMALL, subgroup_analysis

    res = subgroup_analysis(toy[1], n_replicates=100)
    sub = res.subgroups.set_index(["encoder", "attribute", "subgroup"])
    assert sub.loc[("resnet50", "sex", "female"), "auroc"] == pytest.approx(1.0)
    assert sub.loc[("resnet50", "sex", "male"), "auroc"] == pytest.approx(0.0)
    assert sub.loc[("vit_b16", "sex", "male"), "auroc"] == pytest.approx(1.0)
    # 5 PA patients < 30: too small for every encoder, never a number
    pa = res.subgroups[res.subgroups["subgroup"] == "PA"]
    assert len(pa) == 4 and (pa["status"] == TOO_SMALL).all() and pa["auroc"].isna().all()
    worst = res.worst[(res.worst.metric == "auroc") & (res.worst.attribute == "sex")]
    w = worst.set_index("encoder")
    assert w.loc["resnet50", "worst_subgroup"] == "male"
    assert w.loc["resnet50", "gap"] == pytest.approx(1.0)
    assert w.loc["resnet50", "gap_lo"] > 0.5
    # only the permutation test calls a gap real: every reassignment of the 80 patients'
    # sex gives a smaller AUROC gap than the planted 1.0
    assert w.loc["resnet50", "p_value"] < 0.01 and w.loc["resnet50", "real_difference"]
    assert w.loc["dinov2", "gap"] == pytest.approx(0.0)
    assert w.loc["dinov2", "p_value"] == pytest.approx(1.0)
    assert not w.loc["dinov2", "real_difference"]
    assert (res.worst.loc[res.worst.attribute == "view", "n_subgroups"] == 1).all()


def test_subgroup_r_uses_the_cell_drop_where_the_target_lacks_the_subgroup(toy):
    from crsbench.stats.subgroups import subgroup_analysis

    res = subgroup_analysis({k: v for k, v in toy[1].items() if k[0] == "resnet50"},
                            n_replicates=10)  # fmt: skip
    male = res.subgroups[res.subgroups.subgroup == "male"].iloc[0]
    # perturbed = clean: 15 drops of 0; the shift target has no sex: the cell's drop,
    # overall clean AUROC 0.75 (1200 of 1600 pairs) minus 1.0 on MIMIC-CXR = -0.25
    assert male.shift_drops_own == 0 and male.shift_targets == 1
    assert male.robustness_drop == pytest.approx(0.5 * (-0.25 / 16) + 0.5 * 0.0)


def test_worst_subgroup_crs_is_the_protocol_crs_of_the_worst_axes(toy):
    from crsbench.scoring import axes_from_runs, score_cells
    from crsbench.scoring.anchors import load_anchors
    from crsbench.scoring.crs import crs_table
    from crsbench.stats.subgroup_crs import worst_subgroup_crs, worst_subgroup_ranking
    from crsbench.stats.subgroups import subgroup_analysis
    from crsbench.store import load_runs

    cells = score_cells(axes_from_runs(load_runs(toy[0])))
    res = subgroup_analysis(toy[1], n_replicates=50)
    per_cell, reps = worst_subgroup_crs(res, cells, load_anchors())
    row = per_cell.set_index("encoder").loc["resnet50"]
    assert row.auroc_worst == pytest.approx(0.0) and row.auroc_worst_subgroup == "sex=male"
    ref = crs_table(pd.DataFrame({
        "encoder": ["resnet50"], "dataset": ["chexpert"], "auroc": [row.auroc_worst],
        "ece": [row.ece_worst], "retention": [row.retention],
        "robustness_drop": [row.robustness_drop_worst]}))  # fmt: skip
    assert row.crs_worst_subgroup == pytest.approx(float(ref["CRS"].iloc[0]), abs=1e-12)
    assert row.crs_worst_subgroup_lo <= row.crs_worst_subgroup <= row.crs_worst_subgroup_hi
    ranking = worst_subgroup_ranking(per_cell, reps)
    assert ranking["encoder"].iloc[-1] == "resnet50"  # its male patients sink it
    assert ranking.set_index("encoder").loc["resnet50", "rank_worst_subgroup"] == 4


def test_planted_threshold_transfer_with_label_names(toy):
    from crsbench.stats.operating_points import operating_point_transfer, sensitivity_lost

    table = operating_point_transfer(toy[1])
    sens = table[table.target_kind == "sensitivity"]
    assert set(sens["label"]) == set(CHEXPERT_LABELS)  # names, never indices
    assert np.allclose(sens["threshold"], 0.2)  # 18 of the 20 validation positives >= 0.2
    # 20 positives per label: the hand-worked losses need a minimum of 20 (default 40)
    assert sensitivity_lost(table)["keeps_operating_point"].isna().all()
    lost = sensitivity_lost(table, min_positives=20).set_index(["encoder", "shift_target", "label"])
    assert lost.loc[("vit_b16", "mimic_cxr", "Edema"), "sensitivity_lost"] == pytest.approx(0.4)
    assert lost.loc[("clip", "nih_cxr14", "Edema"), "sensitivity_lost"] == pytest.approx(0.25)
    assert lost.loc[("clip", "mimic_cxr", "Edema"), "sensitivity_lost"] == pytest.approx(0.0)
    keeps = lost.groupby(["encoder", "shift_target"])["keeps_operating_point"].all()
    assert not keeps[("vit_b16", "mimic_cxr")] and not keeps[("clip", "nih_cxr14")]
    assert keeps[("dinov2", "mimic_cxr")] and keeps[("dinov2", "nih_cxr14")]


def test_planted_flips_keep_the_auroc(toy):
    from crsbench.protocol import PAPER_CONDITIONS
    from crsbench.stats.flips import prediction_flips
    from crsbench.testing.prediction_store import FLIP_CONDITION_INDEX

    table = prediction_flips(toy[1])
    labels = table[table["label"] != "all"]
    assert set(labels["label"]) == set(CHEXPERT_LABELS)  # one row per label, by name
    flips = table[table["label"] == "all"].set_index(["encoder", "condition", "severity"])
    cond, sev = PAPER_CONDITIONS[FLIP_CONDITION_INDEX]
    row = flips.loc[("dinov2", cond, sev)]
    # every label carries the same planted scores: the share of decisions, of images with any
    # label changed and of each label are all 8 of 80
    assert row.flip_share == pytest.approx(8 / 80)
    assert row.any_label_flip_share == pytest.approx(8 / 80)
    per = labels.set_index(["encoder", "condition", "severity"]).loc[("dinov2", cond, sev)]
    assert np.allclose(per["flip_share"], 8 / 80)
    assert row.auroc_drop == pytest.approx(0.0)  # 0.15 still ranks above every negative
    others = flips.drop(index=("dinov2", cond, sev))
    assert np.allclose(others["flip_share"], 0.0)


def test_analyze_writes_every_table(toy, tmp_path):
    from crsbench.stats import run_analyses
    from crsbench.store import load_runs

    summary = run_analyses(load_runs(toy[0]), tmp_path, n_replicates=20, store=toy[0])
    real = summary["analyses"]["subgroups"]["real_subgroup_differences"]
    assert real == ["resnet50/chexpert/sex/auroc"]
    for name in (
        "subgroup_cells",
        "subgroups",
        "subgroup_crs",
        "subgroup_ranking",
        "operating_point_transfer",
        "operating_points",
        "prediction_flips",
    ):
        assert (tmp_path / f"{name}.csv").is_file(), (name, summary["skipped"])
    ranking = pd.read_csv(tmp_path / "subgroup_ranking.csv")
    assert ranking["encoder"].iloc[-1] == "resnet50"
    ops = pd.read_csv(tmp_path / "operating_points.csv")
    assert set(ops["shift_target"]) == {"mimic_cxr", "nih_cxr14"}
    op = summary["analyses"]["operating_points"]
    assert (op["settings_version"], op["min_positives"]) == ("v1", 40)
    assert op["labels_too_few_positives"] == len(ops) and op["keep_operating_point"] == []
    assert set(ops["label"]) <= set(CHEXPERT_LABELS)


def test_identical_subgroups_give_no_real_difference_in_summary_or_report(tmp_path):
    # the toy store with resnet50's planted sex gap removed: every subgroup is identical.
    # Before, the report said an interval of max − min excluding 0 "means a real difference"
    # and such intervals excluded 0 in every world without a difference.
    import dataclasses

    from crsbench.cli.report_command import write_report
    from crsbench.stats import run_analyses
    from crsbench.store import load_runs
    from crsbench.testing.prediction_store import toy_cells, write_prediction_store

    cells = toy_cells()
    cells["resnet50"] = dataclasses.replace(cells["resnet50"], test=cells["dinov2"].test)
    store = write_prediction_store(tmp_path / "store", cells).parent
    summary = run_analyses(load_runs(store), tmp_path / "a", n_replicates=10, store=store)
    assert summary["analyses"]["subgroups"]["real_subgroup_differences"] == []
    worst = pd.read_csv(tmp_path / "a" / "subgroups.csv")
    assert not worst["real_difference"].any() and worst["p_value"].notna().any()
    html = write_report(store, tmp_path / "r", n_replicates=10).read_text(encoding="utf-8")
    sub = html[html.index('id="subgroups"') : html.index("<section", html.index('id="subgroups"'))]
    assert "not shown (p = " in sub and "real difference" not in sub


def test_subgroups_in_worker_processes_equal_one_process(toy):
    from crsbench.stats.subgroups import subgroup_analysis

    one = subgroup_analysis(toy[1], n_replicates=20, n_jobs=1)
    two = subgroup_analysis(toy[1], n_replicates=20, n_jobs=2)  # the cells shared out
    pd.testing.assert_frame_equal(one.subgroups, two.subgroups)
    pd.testing.assert_frame_equal(one.worst, two.worst)
    assert one.axes.keys() == two.axes.keys()
    for key, axes in one.axes.items():
        for axis, (values, where) in axes.items():
            np.testing.assert_array_equal(values, two.axes[key][axis][0])
            assert where == two.axes[key][axis][1]
