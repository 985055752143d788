"""One name per quantity: the per-cell mean over shift targets vs one target's AUROC."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from crsbench.config import parse_config
from crsbench.runs.plan import recorded_plan
from crsbench.scoring import axes_from_runs
from crsbench.scoring.axes import AXIS_TABLE_COLUMNS
from crsbench.stats import shift_auroc_by_encoder
from crsbench.testing import simulate_runs

MODALITIES = {"chexpert": "chest_xray", "mimic_cxr": "chest_xray", "nih_cxr14": "chest_xray"}


def _plan(tmp_path: Path, encoder: str, targets: tuple[str, ...]):
    cfg = parse_config(
        {
            "encoders": [encoder],
            "datasets": {n: {"root": f"d/{n}"} for n in ("chexpert", *targets)},
            "shifts": [{"source": "chexpert", "target": t} for t in targets],
            "seeds": [0],
            "perturbations": {"include_extra": False},
        },
        base_dir=tmp_path,
    )
    return recorded_plan(cfg, MODALITIES)


def test_the_mean_over_targets_is_named_so_and_one_target_keeps_shift_auroc(tmp_path):
    df = simulate_runs(n_encoders=1, datasets=("chexpert",), seeds=1, rng_seed=0,
                       extra_shift_targets=("nih_cxr14",))  # fmt: skip
    main = (df["probe"] == "logistic") & (df["recalibrator"] == "none") & (df["layer"] == 1.0)
    df.loc[main & (df["eval_dataset"] == "mimic_cxr"), "auroc"] = 0.70
    df.loc[main & (df["eval_dataset"] == "nih_cxr14"), "auroc"] = 0.60
    encoder = str(df["encoder"].iloc[0])
    assert "shift_auroc" not in AXIS_TABLE_COLUMNS
    row = axes_from_runs(df, plan=_plan(tmp_path, encoder, ("mimic_cxr", "nih_cxr14"))).iloc[0]
    assert row["shift_auroc_mean_targets"] == pytest.approx((0.70 + 0.60) / 2)
    per_target = shift_auroc_by_encoder(df).set_index("eval_dataset")["shift_auroc"]
    assert per_target.to_dict() == pytest.approx({"mimic_cxr": 0.70, "nih_cxr14": 0.60})
    # a planned third target no cell evaluated: NaN, never the mean of the two present
    three = _plan(tmp_path, encoder, ("mimic_cxr", "nih_cxr14", "padchest"))
    assert np.isnan(axes_from_runs(df, plan=three).iloc[0]["shift_auroc_mean_targets"])
