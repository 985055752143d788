"""Control probes: ranking agreement with the logistic probe (hand-worked, scipy, real store)."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from crsbench.stats.agreement import rank1_agreement, rank_agreement
from crsbench.stats.control_probes import OVERALL, control_probe_agreement, probe_sentence

ENCODERS = ("efficientnet_lite0_imagenet", "random_vit", "random_cnn", "pixel")
#: Clean full-label AUROC per probe, best first under the logistic probe; kNN swaps the top two.
BASE = {
    "logistic": dict(zip(ENCODERS, (0.90, 0.85, 0.80, 0.75), strict=True)),
    "mlp": dict(zip(ENCODERS, (0.91, 0.86, 0.79, 0.74), strict=True)),
    "knn": dict(zip(ENCODERS, (0.84, 0.87, 0.78, 0.72), strict=True)),
}
DATASET_OFFSET = {"isic2019": 0.0, "aptos2019": -0.02, "chexpert": -0.04}
MODALITIES = {"isic2019": "dermoscopy", "aptos2019": "fundus", "chexpert": "chest_xray"}


# --- hand-worked agreement -------------------------------------------------------------------


def test_four_encoders_two_swaps_give_tau_one_third_and_two_reversed_pairs():
    a = {"A": 4.0, "B": 3.0, "C": 2.0, "D": 1.0}
    b = {"A": 3.0, "B": 4.0, "C": 1.0, "D": 2.0}  # (A, B) and (C, D) reversed
    out = rank_agreement(a, b)
    assert out["reversed_pairs"] == 2 and out["n_pairs"] == 6
    assert out["kendall_tau"] == pytest.approx((4 - 2) / 6)
    assert rank1_agreement(a, b) == {"rank1_a": "A", "rank1_b": "B", "rank1_agrees": False}


def test_rank1_ties_share_rank_one_and_only_common_finite_encoders_count():
    a = {"A": 0.9, "B": 0.9, "C": 0.5, "X": 1.0}
    b = {"A": 0.8, "B": 0.8, "C": 0.1, "X": float("nan")}
    out = rank1_agreement(a, b)
    assert out == {"rank1_a": "A = B", "rank1_b": "A = B", "rank1_agrees": True}


def test_kendall_tau_equals_scipy_on_random_rankings_with_ties():
    rng = np.random.default_rng(3)
    for _ in range(20):
        x, y = np.round(rng.normal(size=9), 1), np.round(rng.normal(size=9), 1)
        a = {f"e{i}": v for i, v in enumerate(x)}
        b = {f"e{i}": v for i, v in enumerate(y)}
        assert rank_agreement(a, b)["kendall_tau"] == pytest.approx(sps.kendalltau(x, y).statistic)


# --- a store written by the real writer, with the planner's identities -----------------------


def _auroc(ident: dict) -> float:
    """A metric that keeps every axis in the same order as the clean AUROC of its probe."""
    auc = BASE[ident["probe"]][ident["encoder"]] + DATASET_OFFSET[ident["dataset"]]
    auc += 0.001 * ident["seed"]
    if ident["fraction"] < 1.0:
        auc -= 0.02
    if ident["condition"] == "shift":
        auc -= 0.05
    elif ident["condition"] != "clean":
        auc -= 0.01 * ident["severity"]
    if ident["layer"] < 1.0:
        auc -= 0.03
    return auc


def _frame(cfg, config_hash: str) -> pd.DataFrame:
    from crsbench.runs.plan import plan_cells

    idents = [i.as_dict() for cell in plan_cells(cfg, MODALITIES) for i in cell.identities]
    frame = pd.DataFrame(idents)
    frame["auroc"] = [_auroc(i) for i in idents]
    frame["ece"] = np.where(frame["recalibrator"] == "none", 0.05, 0.03)
    frame["brier"], frame["nll"] = 0.1, 0.4
    frame["sens_at_spec90"] = frame["sens_at_spec95"] = np.nan
    frame["config_hash"] = config_hash
    frame["package_version"] = "0.1.0"
    frame["encoder_revision"] = frame["dataset_revision"] = "rev"
    frame["anchors_version"] = "v1"
    frame["wall_time_s"] = 0.1
    frame["created_at"] = datetime(2026, 1, 1)
    frame["schema_version"] = 1
    frame["details"] = "{}"
    return frame


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo config's planned records (2 seeds) with planted metrics, via ResultsStore."""
    from crsbench.config import config_hash, config_json, load_packaged_config
    from crsbench.store.writer import ResultsStore

    root = tmp_path_factory.mktemp("control")
    cfg = load_packaged_config("demo", output_dir=root).model_copy(update={"seeds": [0, 1]})
    chash = config_hash(cfg)
    out = root / "store"
    with ResultsStore(out, chash, config_json=config_json(cfg)) as st:
        st.append_frame(_frame(cfg, chash))
    return out


@pytest.fixture(scope="module")
def runs(store: Path) -> pd.DataFrame:
    from crsbench.store import load_runs

    return load_runs(store)


def _row(table: pd.DataFrame, probe: str, dataset: str, ranking: str) -> pd.Series:
    sel = table[(table["probe"] == probe) & (table["dataset"] == dataset)]
    return sel[sel["ranking"] == ranking].iloc[0]


def test_planted_rankings_under_each_probe(runs: pd.DataFrame) -> None:
    table, coverage = control_probe_agreement(runs)
    assert sorted(table["probe"].unique()) == ["knn", "mlp"]
    assert set(table["dataset"]) == {*MODALITIES, OVERALL}
    # every axis of both control probes comes from their own rows, in every cell
    assert coverage["from_probe"].all() and (coverage["note"] == "").all()
    assert (coverage["n_cells_probe"] == 12).all() and (coverage["n_cells_logistic"] == 12).all()
    for dataset in (*MODALITIES, OVERALL):
        for ranking in ("auroc", "crs"):
            mlp = _row(table, "mlp", dataset, ranking)
            assert mlp["kendall_tau"] == pytest.approx(1.0)
            assert (mlp["reversed_pairs"], mlp["n_pairs"], mlp["n_encoders"]) == (0, 6, 4)
            assert bool(mlp["rank1_agrees"]) and mlp["probe_rank1"] == ENCODERS[0]
            knn = _row(table, "knn", dataset, ranking)  # one pair of six reversed: tau 4/6
            assert knn["kendall_tau"] == pytest.approx(4 / 6)
            assert (knn["reversed_pairs"], knn["n_pairs"]) == (1, 6)
            assert not bool(knn["rank1_agrees"])
            assert (knn["logistic_rank1"], knn["probe_rank1"]) == (ENCODERS[0], ENCODERS[1])
    assert _row(table, "knn", OVERALL, "auroc")["n_cells"] == 12
    sentence = probe_sentence(table, "knn", "kNN-5")
    assert sentence == (
        "Under kNN-5, the overall AUROC ranking of 4 encoders has Kendall tau 0.67 with the "
        "logistic probe's, 1 of 6 pairs reversed, a different rank-1 encoder (random_vit "
        "instead of efficientnet_lite0_imagenet); the CRS ranking has Kendall tau 0.67 with "
        "the logistic probe's, 1 of 6 pairs reversed, a different rank-1 encoder (random_vit "
        "instead of efficientnet_lite0_imagenet)."
    )


def test_control_crs_uses_the_control_probes_own_axes(runs: pd.DataFrame) -> None:
    """Reverse kNN's robustness only: its AUROC ranking is unchanged, its CRS ranking moves."""
    from crsbench.scoring import axes_from_runs, load_anchors, score_cells

    worse = runs.copy()
    knn_pert = (worse["probe"] == "knn") & ~worse["condition"].isin(["clean"])
    hit = knn_pert & (worse["encoder"] == ENCODERS[1])
    worse.loc[hit, "auroc"] -= 0.2  # random_vit collapses under perturbation with kNN only
    table, _ = control_probe_agreement(worse)
    assert _row(table, "knn", OVERALL, "auroc")["kendall_tau"] == pytest.approx(4 / 6)
    crs = _row(table, "knn", OVERALL, "crs")
    cells = score_cells(axes_from_runs(worse, probe="knn"), load_anchors())
    expect = cells.groupby("encoder")["CRS"].mean()
    logistic = score_cells(axes_from_runs(worse), load_anchors()).groupby("encoder")["CRS"].mean()
    ref = rank_agreement(logistic.to_dict(), expect.to_dict())
    assert crs["kendall_tau"] == pytest.approx(ref["kendall_tau"])
    assert crs["reversed_pairs"] == ref["reversed_pairs"]
    assert crs["probe_rank1"] == expect.idxmax() == ENCODERS[0]
    # random_vit falls from 2nd to last: pairs (vit, cnn) and (vit, pixel) reverse, tau 2/6
    assert (crs["reversed_pairs"], crs["kendall_tau"]) == (2, pytest.approx(1 / 3))
    assert bool(crs["rank1_agrees"])


def test_missing_perturbed_rows_give_auroc_ranking_only_with_reason(runs: pd.DataFrame) -> None:
    control = runs["probe"] != "logistic"
    dropped = runs[~(control & ~runs["condition"].isin(["clean"]))]
    table, coverage = control_probe_agreement(dropped)
    cov = coverage.set_index(["probe", "axis"])
    assert not cov.loc[("mlp", "robustness_drop"), "from_probe"]
    assert "no mlp perturbed or shift rows" in cov.loc[("mlp", "robustness_drop"), "note"]
    assert cov.loc[("mlp", "retention"), "from_probe"]
    auroc = _row(table, "mlp", OVERALL, "auroc")
    assert auroc["kendall_tau"] == pytest.approx(1.0)
    crs = table[(table["probe"] == "mlp") & (table["ranking"] == "crs")]
    assert crs["kendall_tau"].isna().all() and crs["n_pairs"].isna().all()
    assert crs["note"].str.contains("CRS under mlp not computed").all()
    assert crs["note"].str.contains("robustness_drop").all()


def test_a_seed_only_one_probe_has_is_left_out_loudly(runs: pd.DataFrame) -> None:
    gone = (runs["probe"] == "knn") & (runs["seed"] == 1) & (runs["encoder"] == "pixel")
    _, coverage = control_probe_agreement(runs[~gone])
    note = coverage.set_index(["probe", "axis"]).loc[("knn", "auroc"), "note"]
    assert "3 (encoder, dataset, seed) keys" in note and "21 shared keys" in note


def test_store_without_control_probes_gives_empty_tables(runs: pd.DataFrame) -> None:
    table, coverage = control_probe_agreement(runs[runs["probe"] == "logistic"])
    assert table.empty and coverage.empty


def test_analyze_writes_the_csv_and_summary(store: Path, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    import crsbench.cli.analysis_commands  # noqa: F401  (registers the command)
    from crsbench.cli.app import app

    res = CliRunner().invoke(app, ["analyze", "--store", str(store), "--out",
                                   str(tmp_path / "an"), "--replicates", "20"])  # fmt: skip
    assert res.exit_code == 0, res.output
    printed = " ".join(res.output.split())  # the console wraps long lines
    assert "Under kNN, the overall AUROC ranking of 4 encoders has Kendall tau 0.67" in printed
    csv = pd.read_csv(tmp_path / "an" / "control_probe_agreement.csv")
    assert list(csv.columns[:10]) == [
        "probe", "dataset", "ranking", "kendall_tau", "reversed_pairs", "n_pairs",
        "rank1_agrees", "logistic_rank1", "probe_rank1", "n_encoders",
    ]  # fmt: skip
    assert len(csv) == 2 * 2 * 4  # probes x rankings x (3 datasets + overall)
    assert (tmp_path / "an" / "control_probe_coverage.csv").is_file()
    summary = json.loads((tmp_path / "an" / "summary.json").read_text(encoding="utf-8"))
    knn = summary["analyses"]["control_probe_agreement"]["knn"]
    assert knn["overall"]["crs"]["reversed_pairs"] == 1 and knn["axes_not_computed"] == {}
    assert knn["axes_from_probe"] == ["auroc", "ece", "retention", "robustness_drop"]
    # a store written without the plan table says what is expected falls back to
    from crsbench.store.stored_plan import NO_PLAN_NOTE

    assert summary["notes"] == [NO_PLAN_NOTE] and "has no 'plan' table" in res.stderr


def test_report_section_from_the_store(store: Path, tmp_path: Path) -> None:
    """The section as the report builds it (the whole page is built in tests/unit/report)."""
    from crsbench.cli.report_command import report_data
    from crsbench.report.sections import Writer
    from crsbench.report.sections_control import control_probes

    data = report_data(store, n_replicates=0)
    html = control_probes(data, Writer(tmp_path)).render()
    assert html.startswith('<section id="control-probes">')
    # k comes from the store's resolved config (meta table)
    assert "Under kNN-5, the overall AUROC ranking of 4 encoders" in html
    assert "1 of 6" in html and "no (random_vit vs efficientnet_lite0_imagenet)" in html
    assert 'class="note"' not in html  # every axis came from the control probes' own rows
    written = pd.read_csv(tmp_path / "tables" / "control_probe_agreement.csv")
    assert len(written) == 16
