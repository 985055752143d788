"""The institutional-shift test reads the paper's shift only: extra targets are never pooled."""

from __future__ import annotations

import numpy as np
import pandas as pd

from crsbench.stats.shift import paper_shift_auroc


def test_extra_targets_are_not_pooled_into_the_welch_input() -> None:
    shift = pd.DataFrame({
        "encoder": ["a", "a", "b", "b"],
        "dataset": ["chexpert"] * 4,
        "eval_dataset": ["mimic_cxr", "nih_cxr14", "mimic_cxr", "nih_cxr14"],
        "shift_auroc": [0.70, 0.50, 0.65, np.nan],
    })  # fmt: skip
    assert paper_shift_auroc(shift) == {"a": 0.70, "b": 0.65}


def test_a_nan_paper_shift_stays_nan() -> None:
    shift = pd.DataFrame({"encoder": ["a", "a"], "dataset": ["chexpert"] * 2,
                          "eval_dataset": ["mimic_cxr"] * 2, "shift_auroc": [0.7, np.nan]})  # fmt: skip
    assert np.isnan(paper_shift_auroc(shift)["a"])
