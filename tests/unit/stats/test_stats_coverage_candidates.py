"""The interval methods compared on the tuning worlds: the leader gap's candidates reach from
the basic interval (reach 0) to the printed union (reach 1) and nest in between, and a
candidate choice the harness does not know is refused by name."""

from __future__ import annotations

import pytest

from crsbench.stats.patient_bootstrap import TEST_PATIENTS_X_SEEDS
from crsbench.testing.coverage import LEADER_GAP, TUNING, run_scenario
from crsbench.testing.scenarios import SCENARIOS


@pytest.fixture(scope="module")
def tuning_run():
    return run_scenario(SCENARIOS["binary"], 4, n_replicates=100, stream=TUNING,
                        worlds_per_draw=2, first_world=9_000, candidates="ece,gap")  # fmt: skip


def _gap(run, method):
    h = run.hits
    return h[(h["target"] == LEADER_GAP) & (h["method"] == method)].set_index("world")["covered"]


def test_gap_reach_one_is_the_printed_interval(tuning_run):
    printed = _gap(tuning_run, TEST_PATIENTS_X_SEEDS)
    assert _gap(tuning_run, "candidate: gap reach 1").equals(printed)


def test_gap_candidates_nest_from_basic_to_union(tuning_run):
    # a wider reach covers wherever a narrower one does
    reaches = ("0", "0.25", "0.5", "0.75", "1")
    covered = [_gap(tuning_run, f"candidate: gap reach {r}") for r in reaches]
    for narrow, wide in zip(covered, covered[1:], strict=False):
        assert (wide | ~narrow).all()


def test_ece_union_with_percentile_holds_the_union(tuning_run):
    h = tuning_run.hits[tuning_run.hits["target"] == "ece"]
    by = {m: g.reset_index(drop=True)["covered"] for m, g in h.groupby("method")}
    union = by["candidate: ECE basic + 1"]
    assert (by["candidate: ECE union + percentile top"] | ~union).all()
    assert (
        by["candidate: ECE union + percentile"] | ~by["candidate: ECE union + percentile top"]
    ).all()


def test_unknown_candidates_are_refused_by_name():
    with pytest.raises(ValueError, match="'ece', 'gap'. Got 'eec'"):
        run_scenario(SCENARIOS["binary"], 1, n_replicates=20, candidates="eec")
