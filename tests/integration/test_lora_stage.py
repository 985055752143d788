"""The LoRA stage on tiny synthetic data: rows beside the frozen ones, regime comparison, resume."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("peft")

from crsbench.config import config_hash, parse_config
from crsbench.runs.lora_stage import LORA_PROBE, lora_identities, run_lora_stage
from crsbench.runs.pipeline import RunOptions, run_benchmark
from crsbench.runs.plan import cell_conditions
from crsbench.runs.prepare import prepare_datasets
from crsbench.store.writer import ResultsStore

pytestmark = pytest.mark.slow  # ~1-2 min of CPU: a frozen run plus 12 short fine-tunes

SIZES = {"isic2019": 40, "chexpert_train": 60, "chexpert_valid": 10, "mimic_cxr": 30, "side": 32}
ENCODERS = ("random_vit", "random_cnn")


def _config(data: Path, out: Path) -> dict:
    return {
        "encoders": ["random_vit", {"name": "random_cnn", "input_size": 32}, "pixel"],
        "datasets": {
            "isic2019": {"root": str(data / "isic2019")},
            "chexpert": {"root": str(data / "chexpert")},
            "mimic_cxr": {"root": str(data / "mimic_cxr")},
        },
        "shifts": [{"source": "chexpert", "target": "mimic_cxr"}],
        "seeds": [0],
        "fractions": [0.25, 1.0],
        "layers": [1.0],
        "perturbations": {
            "names": ["gaussian_blur", "jpeg"],
            "severities": [3],
            "include_extra": False,
        },  # fmt: skip
        "recalibrators": ["temperature"],
        "probes": {
            "logistic": {"c_grid": [0.1, 10.0], "max_iter": 100, "tol": 1e-4},
            "mlp": None,
            "knn": None,
        },  # fmt: skip
        "regimes": {"lora": {"enabled": True, "epochs": 1, "seeds": [5], "lr": 1e-3}},
        "output_dir": str(out),
        "device": "cpu",
        "num_workers": 0,
    }


@pytest.fixture(scope="module")
def both_regimes(tmp_path_factory):
    from crsbench.datasets.synthetic import write_all

    root = tmp_path_factory.mktemp("lora_stage")
    write_all(root / "data", size=SIZES, seed=0)
    cfg = parse_config(_config(root / "data", root / "out"), base_dir=root)
    summary = run_benchmark(
        cfg, RunOptions(progress=False)
    )  # runs the LoRA stage (regimes.lora.enabled)
    h = config_hash(cfg)
    prepared = prepare_datasets(cfg)
    with ResultsStore(cfg.output_dir, h) as store:
        again = run_lora_stage(cfg, prepared, store, cfg_hash=h, progress=False)
        runs = store.runs_frame()
    assert again == 0  # the stage skips what the pipeline already committed
    n = summary.n_records_written - int((runs["regime"] == "frozen").sum())
    return cfg, h, prepared, n, runs


def test_lora_rows_are_exactly_the_planned_identities(both_regimes):
    cfg, h, prepared, n, runs = both_regimes
    lora = runs[runs["regime"] == "lora"]
    planned = set()
    for enc in ENCODERS:
        for ds, targets in (("isic2019", ()), ("chexpert", ("mimic_cxr",))):
            conds = cell_conditions(cfg, prepared[ds].dataset.card.modality)
            assert conds == (("gaussian_blur", 3), ("jpeg", 3))
            for seed in (5,):
                planned |= {i.key(h)
                            for i in lora_identities(cfg, enc, ds, seed, conds, targets)}  # fmt: skip
    assert set(lora["run_key"]) == planned and n == len(lora) == len(planned)
    # per seed: isic 2 fractions + 2 conditions + 1 recalibrator = 5; chexpert adds shift
    # rows for the plain and the recalibrated model = 7; 2 encoders x 1 seed x 12 = 24
    assert len(lora) == 2 * (5 + 7) == 24
    assert set(lora["encoder"]) == set(ENCODERS)  # pixel skipped: it has no weights
    assert (lora["probe"] == LORA_PROBE).all() and (lora["layer"] == 1.0).all()
    _assert_undefined_exactly_where_calibration_is_too_small(lora, prepared)
    frozen = runs[runs["regime"] == "frozen"]
    rev = dict(zip(frozen["encoder"], frozen["encoder_revision"], strict=False))
    assert all(rev[e] == r for e, r in zip(lora["encoder"], lora["encoder_revision"], strict=True))


def _too_small_reason(prep) -> str | None:
    """The protocol's refusal of this dataset's calibration split, computed independently of
    the stage from the prepared splits and labels (None: the split is large enough)."""
    from crsbench.calibration import (
        CalibrationSplitTooSmall,
        check_calibration_size,
        load_recal_protocol,
    )
    from crsbench.evaluation.cell_scoring import targets

    ds = prep.dataset
    y = targets(ds.labels, ds.task)[np.asarray(prep.splits.calib)]
    try:
        check_calibration_size(y, ds.task, len(ds.label_names), load_recal_protocol().min_per_class)
    except CalibrationSplitTooSmall as exc:
        return str(exc)
    return None


def _assert_undefined_exactly_where_calibration_is_too_small(lora, prepared) -> None:
    """Plain LoRA rows are all defined; a dataset's recalibrated rows (clean and shift) are
    all NaN with the protocol's reason for every metric when its calibration split is below
    the minimum, and all defined otherwise."""
    import json

    metrics = ["auroc", "ece", "brier", "nll", "sens_at_spec90", "sens_at_spec95"]
    plain = lora[lora["recalibrator"] == "none"]
    assert plain["auroc"].between(0, 1).all() and plain["ece"].notna().all()
    reasons = {}
    for ds, recal in lora[lora["recalibrator"] != "none"].groupby("dataset"):
        reasons[ds] = reason = _too_small_reason(prepared[ds])
        details = [json.loads(d) for d in recal["details"]]
        if reason is None:
            assert recal["auroc"].between(0, 1).all() and recal["ece"].notna().all()
            assert all(d["recal_choice"] != "undefined" for d in details)
        else:
            assert recal[metrics].isna().all().all()
            assert all(d["recal_choice"] == "undefined" for d in details)
            assert all(d["undefined"] == dict.fromkeys(metrics, reason) for d in details)
    assert set(reasons) == {"isic2019", "chexpert"}


def test_lora_details_record_the_fit(both_regimes):
    import json

    *_, runs = both_regimes
    row = runs[(runs["regime"] == "lora") & (runs["condition"] == "clean")].iloc[0]
    det = json.loads(row["details"])
    assert det["lora"]["rank"] == 8 and det["lora"]["targets"]
    assert det["lr"] in (1e-3, 3e-3, 1e-2) and det["n_train"] > 0
    # the LoRA shift rows score the same MIMIC rows as the frozen ones (the official test split)
    shift = runs[runs["condition"] == "shift"]
    scored = {(r, json.dumps(json.loads(d)["shift_rows"], sort_keys=True))
              for r, d in zip(shift["regime"], shift["details"], strict=True)}  # fmt: skip
    assert {r for r, _ in scored} == {"frozen", "lora"} and len({d for _, d in scored}) == 1
    assert json.loads(next(iter(scored))[1])["rows"] == "official_test"


def test_every_lora_details_object_is_typed(both_regimes):
    """Each stored ``details`` of both regimes reads back as typed sections and writes the same
    text; the LoRA rows carry the adapters and a LoRA fit."""
    import json

    from crsbench.store import RunDetails
    from crsbench.store.details import LoraFit
    from crsbench.store.records import details_json

    *_, runs = both_regimes
    for regime, text in zip(runs["regime"], runs["details"], strict=True):
        typed = RunDetails.from_json(json.loads(text))
        assert details_json(typed.as_json()) == text
        assert (typed.lora is not None) == (regime == "lora")
        assert isinstance(typed.fit, LoraFit) == (regime == "lora")


def test_regime_comparison_on_both_regimes(both_regimes):
    from crsbench.stats import regime_comparison

    *_, runs = both_regimes
    table = regime_comparison(runs)
    per_domain = table[table["score"] == "auroc"].set_index("scope")
    assert set(per_domain.index) == {"isic2019", "chexpert"}
    assert (per_domain["n"] == 2).all()
    assert per_domain["kendall_tau"].isin([-1.0, 1.0]).all()  # two encoders: tau is +-1
    for ds, r in per_domain.iterrows():
        sel = runs[(runs["dataset"] == ds) & (runs["probe"] == "logistic")
                   & (runs["condition"] == "clean") & (runs["fraction"] == 1.0)
                   & (runs["recalibrator"] == "none") & (runs["layer"] == 1.0)]  # fmt: skip
        auc = sel.groupby(["regime", "encoder"])["auroc"].mean()
        gain = np.mean([auc["lora", e] - auc["frozen", e] for e in ENCODERS])
        assert r["auroc_gain"] == pytest.approx(gain)
        lead = [auc[regime][list(ENCODERS)].idxmax() for regime in ("frozen", "lora")]
        same = lead[0] == lead[1]
        assert r["leader_changed"] == (not same)
    # this small grid lacks the protocol's fractions and conditions: no CRS in either regime,
    # and the 'all' row says why instead of ranking CRS values that are not the protocol's
    crs = table[table["scope"] == "all"]
    assert len(crs) == 1 and crs["n"].iloc[0] == 0 and np.isnan(crs["kendall_tau"].iloc[0])
    assert "L: fractions 0.01, 0.05, 0.1 missing" in crs["note"].iloc[0]


def test_crsbench_analyze_writes_the_regime_table(both_regimes, tmp_path):
    from typer.testing import CliRunner

    from crsbench.cli.app import app

    cfg, *_ = both_regimes
    res = CliRunner().invoke(app, ["analyze", "--store", str(cfg.output_dir), "--out",
                                   str(tmp_path), "--replicates", "20"])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "done regime_comparison" in res.output.replace("\n", " ")
    import pandas as pd

    table = pd.read_csv(tmp_path / "regime_comparison.csv")
    assert {"isic2019", "chexpert", "all"} == set(table["scope"])


def test_second_call_writes_nothing_and_checkpoints_exist(both_regimes):
    cfg, h, prepared, _, _ = both_regimes
    with ResultsStore(cfg.output_dir, h) as store:
        assert run_lora_stage(cfg, prepared, store, cfg_hash=h, progress=False) == 0
    ckpt = Path(cfg.output_dir) / "lora" / h[:12] / "random_vit" / "isic2019" / "seed5"
    assert (ckpt / "fraction1" / "adapter.pt").is_file()
    assert (ckpt / "fraction1" / "lr0.pt").is_file()
