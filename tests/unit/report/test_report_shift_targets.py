"""The report's multi-target shift part: drop heat map, Welch test and leave-one-target-out
per target, built from a store with three shift targets of CheXpert."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

TARGETS = ("mimic_cxr", "nih_cxr14", "padchest")


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from crsbench.cli.report_command import write_report
    from crsbench.testing import simulate_runs, write_store

    root = tmp_path_factory.mktemp("shift_report")
    df = simulate_runs(n_encoders=5, datasets=("isic2019", "chexpert"), seeds=2, rng_seed=2,
                       extra_shift_targets=TARGETS[1:])  # fmt: skip
    write_store(df, root / "store")
    return write_report(root / "store", root / "out", n_replicates=20)


def _robustness(html: str) -> str:
    found = re.search(r'<section id="robustness">(.*?)</section>', html, flags=re.S)
    assert found is not None
    return found.group(1)


def test_robustness_section_shows_every_target(report: Path) -> None:
    body = _robustness(report.read_text(encoding="utf-8"))
    assert "clean AUROC on those labels only" in body
    assert "Shift drop heat map" in body
    # no medical encoder among these five: the Welch test is one line, its CSV stays
    assert "No medical-vs-general comparison" in body and 'id="shift-test"' not in body
    for table_id in ("shift-loto",):
        table = re.search(rf'<table[^>]*id="{table_id}".*?</table>', body, flags=re.S)
        assert table is not None, table_id
        for target in TARGETS:
            assert f">{target}<" in table.group(0), (table_id, target)
    assert (report.parent / "figures" / "shift_drop.svg").stat().st_size > 2_000


def test_tables_hold_one_row_per_encoder_and_target(report: Path) -> None:
    tables = report.parent / "tables"
    drop = pd.read_csv(tables / "shift_drop.csv")
    assert list(drop.columns) == ["encoder", *(f"chexpert→{t}" for t in TARGETS)]
    assert len(drop) == 5 and drop.iloc[:, 1:].notna().all().all()
    assert list(pd.read_csv(tables / "shift_welch.csv")["target"]) == list(TARGETS)
    assert list(pd.read_csv(tables / "leave_one_target_out.csv")["target"]) == list(TARGETS)
    shift = pd.read_csv(tables / "shift.csv")
    assert set(
        shift.loc[shift["eval_dataset"] != "mimic_cxr", "compared_labels"].str.count(";")
    ) == {10}
