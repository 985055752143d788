"""``profile`` resumes like ``crsbench run`` (it is :func:`run_benchmark`), and its verdict's
CRS intervals come from the paired test-patient × seed bootstrap on the stored predictions.

A run is killed after its first committed cell (``KeyboardInterrupt`` from the event hook, as
Ctrl-C or SIGTERM arrive); the same command again completes only the other encoder's cell, and a
third run writes nothing new.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pandas as pd
import pytest

from crsbench.cohort.profile import profile_cohort
from crsbench.cohort.spec import CohortSpec
from crsbench.cohort.verdict_page import verdict_data as compute_verdict
from crsbench.scoring import axes_from_runs
from crsbench.stats.cohort_verdict import N_REPLICATES
from crsbench.stats.patient_bootstrap import TEST_PATIENTS_X_SEEDS
from crsbench.stats.uncertainty import crs_uncertainty
from crsbench.store import load_runs
from crsbench.testing.cohort import write_cohort

ENCODERS = ("pixel", "random_cnn")


def _spec(root: Path) -> CohortSpec:
    csv, images = write_cohort(root / "data", 120, classes=("benign", "malignant"),
                               images_per_patient=2)  # fmt: skip
    return CohortSpec(data=csv, images=images, label_columns=("diagnosis",),
                      group_column="patient", encoders=ENCODERS, out=root / "out",
                      seeds=(0, 1), device="cpu")  # fmt: skip


def _rows(out: Path) -> pd.DataFrame:
    with duckdb.connect(str(out / "results.duckdb"), read_only=True) as con:
        return con.execute("SELECT run_key, encoder, created_at FROM runs").df()


def _kill_after_first_cell(event: str, info: dict) -> None:
    if event == "cell":
        raise KeyboardInterrupt


@pytest.fixture(scope="module")
def resumed(tmp_path_factory: pytest.TempPathFactory):
    """(spec, rows after the kill, the resumed run, rows after it, the third run, its rows)."""
    spec = _spec(tmp_path_factory.mktemp("resume"))
    with pytest.raises(KeyboardInterrupt):
        profile_cohort(spec, on_event=_kill_after_first_cell)
    killed = _rows(spec.out)
    second = profile_cohort(spec)
    after_second = _rows(spec.out)
    third = profile_cohort(spec)
    return spec, killed, second, after_second, third, _rows(spec.out)


@pytest.mark.slow
def test_a_killed_profile_completes_only_what_is_missing(resumed) -> None:
    spec, killed, second, after, _, _ = resumed
    assert killed["encoder"].nunique() == 1  # one cell committed before the kill
    first_encoder = killed["encoder"].iloc[0]
    assert second.run.n_records_written == len(after) - len(killed) > 0
    assert set(after.loc[~after["run_key"].isin(killed["run_key"]), "encoder"]) == (
        set(ENCODERS) - {first_encoder}
    )
    kept = after.set_index("run_key").loc[killed["run_key"], "created_at"]
    assert list(kept) == list(killed["created_at"])  # the committed cell was not redone
    assert len(after) == second.run.n_records_total and not after["run_key"].duplicated().any()
    assert second.verdict is not None and second.verdict.is_file()


@pytest.mark.slow
def test_a_complete_profile_run_again_writes_nothing(resumed) -> None:
    _, _, _, after_second, third, after_third = resumed
    assert third.run.n_records_written == 0
    pd.testing.assert_frame_equal(after_third, after_second)


@pytest.mark.slow
def test_verdict_intervals_are_the_test_patient_bootstrap(resumed) -> None:
    spec = resumed[0]
    d = compute_verdict(spec.out)
    assert d.interval == TEST_PATIENTS_X_SEEDS and d.interval_note == ""
    runs = load_runs(spec.out)
    ref = crs_uncertainty(axes_from_runs(runs), None, store=spec.out, n_replicates=N_REPLICATES,
                          seed=0).result.ranks.set_index("encoder")  # fmt: skip
    board = d.board.set_index("encoder")
    for enc in ENCODERS:
        assert board.loc[enc, "interval"] == TEST_PATIENTS_X_SEEDS
        assert board.loc[enc, "crs_ci_low"] == ref.loc[enc, "crs_ci_low"]
        assert board.loc[enc, "crs_ci_high"] == ref.loc[enc, "crs_ci_high"]
        assert board.loc[enc, "crs_ci_low"] < board.loc[enc, "CRS"] < board.loc[enc, "crs_ci_high"]
    with duckdb.connect(str(spec.out / "results.duckdb"), read_only=True) as con:
        groups = con.execute("SELECT groups FROM eval_splits WHERE dataset = 'folder' "
                             "AND split = 'test' LIMIT 1").fetchone()[0]  # fmt: skip
    assert d.n_patients == {"folder": len(set(groups))}
    page = (spec.out / "verdict.html").read_text(encoding="utf-8")
    assert "paired bootstrap over test patients × seeds" in page
    assert f"test patients: folder {len(set(groups))}" in page
