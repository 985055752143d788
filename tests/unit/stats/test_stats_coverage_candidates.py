"""The interval methods compared on the tuning worlds: the leader gap's candidates reach from
the basic interval (reach 0) to the union (reach 1), nest in between, and the printed gap is
the candidate at the adopted reach; and a
candidate choice the harness does not know is refused by name."""

from __future__ import annotations

import pytest

from crsbench.stats.intervals import DIFFERENCE_REACH
from crsbench.stats.patient_bootstrap import TEST_PATIENTS_X_SEEDS
from crsbench.testing.coverage import LEADER_GAP, TUNING, run_scenario
from crsbench.testing.coverage_candidates import GAP_REACHES
from crsbench.testing.scenarios import SCENARIOS


@pytest.fixture(scope="module")
def tuning_run():
    return run_scenario(SCENARIOS["binary"], 4, n_replicates=100, stream=TUNING,
                        worlds_per_draw=2, first_world=9_000, candidates="ece,gap")  # fmt: skip


def _gap(run, method):
    h = run.hits
    return h[(h["target"] == LEADER_GAP) & (h["method"] == method)].set_index("world")["covered"]


def test_the_printed_gap_is_the_candidate_at_the_adopted_reach(tuning_run):
    printed = _gap(tuning_run, TEST_PATIENTS_X_SEEDS)
    assert DIFFERENCE_REACH in GAP_REACHES
    assert _gap(tuning_run, f"candidate: gap reach {DIFFERENCE_REACH:g}").equals(printed)


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
