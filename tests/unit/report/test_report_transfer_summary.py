"""The operating-point summary of the report: labels with too few positives are named with
their counts, and a store where every label has enough (paper-size test sets) has none."""

from __future__ import annotations

import pandas as pd

from crsbench.report.sections_transfer import transfer_summary


def _lost(statuses: list[str]) -> pd.DataFrame:
    n = len(statuses)
    return pd.DataFrame({
        "encoder": "enc", "dataset": "chexpert", "shift_target": "mimic_cxr",
        "label": [f"L{i}" for i in range(n)], "status": statuses,
        "n_positives": [50 + i if s == "ok" else 3 + i for i, s in enumerate(statuses)],
        "sensitivity_test": [0.9] * n, "sensitivity_shift": [0.8 - 0.1 * i for i in range(n)],
        "sensitivity_lost": [0.1 + 0.1 * i for i in range(n)],
        "lost_ci_low": [0.05] * n, "lost_ci_high": [0.4] * n,
        "keeps_operating_point": [False] * n,
    })  # fmt: skip


def test_every_label_with_enough_positives_names_none():
    out = transfer_summary(_lost(["ok", "ok", "ok"]))
    assert out["too few positives"].tolist() == [""]
    assert out["labels with enough positives"].tolist() == ["3 of 3"]
    assert out["label losing most"].tolist() == ["L2"]


def test_labels_below_the_minimum_are_named_fewest_first():
    out = transfer_summary(_lost(["ok", "too few positives", "too few positives"]))
    assert out["too few positives"].tolist() == ["L1 (4), L2 (5)"]
    assert out["labels with enough positives"].tolist() == ["1 of 3"]


def test_rows_without_a_shift_target_name_are_left_out_without_failing():
    lost = pd.concat([_lost(["ok", "too few positives"]),
                      _lost(["too few positives"]).assign(shift_target=None)])  # fmt: skip
    out = transfer_summary(lost)
    assert out["shift_target"].tolist() == ["mimic_cxr"]
    assert out["too few positives"].tolist() == ["L1 (4)"]
