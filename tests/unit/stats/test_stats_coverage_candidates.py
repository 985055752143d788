"""The interval methods compared on the tuning worlds: the leader gap's candidates reach from
the basic interval (reach 0) to the union (reach 1), nest in between, and the printed gap is
the candidate at the adopted reach; and a
candidate choice the harness does not know is refused by name."""

from __future__ import annotations

import numpy as np
import pytest

from crsbench.stats.intervals import DIFFERENCE_REACH
from crsbench.stats.patient_bootstrap import TEST_PATIENTS_X_SEEDS, patient_seed_bootstrap
from crsbench.testing.coverage import LEADER_GAP, TUNING, run_scenario
from crsbench.testing.coverage_candidates import GAP_REACHES
from crsbench.testing.scenarios import SCENARIOS, draw_parameters, draw_world


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


def test_every_printed_difference_reaches_half_way_to_its_percentile_interval():
    """Each ordered pair's printed interval, recomputed from the bootstrap's raw CRS
    replicates: basic ends moved DIFFERENCE_REACH of the way towards the percentile ends,
    never narrower than the basic interval."""
    sc = SCENARIOS["near-tie aptos"]
    cells = draw_world(sc, draw_parameters(sc, np.random.default_rng(2)), np.random.default_rng(3))
    res = patient_seed_bootstrap(cells, n_replicates=200, seed=4, n_jobs=1)
    enc = sorted(res.ranks["encoder"])  # the replicates' columns
    crs = res.ranks.set_index("encoder")["CRS"]
    moved = 0
    for _, row in res.pairwise.iterrows():
        a, b = enc.index(row["encoder_a"]), enc.index(row["encoder_b"])
        d = res.replicates[:, a] - res.replicates[:, b]
        point = crs[row["encoder_a"]] - crs[row["encoder_b"]]
        q_lo, q_hi = np.quantile(d, [0.025, 0.975])
        b_lo, b_hi = 2 * point - q_hi, 2 * point - q_lo
        want_lo = min(b_lo, b_lo + DIFFERENCE_REACH * (q_lo - b_lo))
        want_hi = max(b_hi, b_hi + DIFFERENCE_REACH * (q_hi - b_hi))
        assert row["ci_low"] == pytest.approx(want_lo, abs=1e-12)
        assert row["ci_high"] == pytest.approx(want_hi, abs=1e-12)
        moved += (want_lo < b_lo) + (want_hi > b_hi)
    assert moved > 0  # the percentile part widened some end


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
