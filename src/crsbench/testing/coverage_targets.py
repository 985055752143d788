"""The targets whose coverage the planted-truth harness records, and one record of a hit
(:mod:`crsbench.testing.coverage`, :mod:`crsbench.testing.coverage_candidates`)."""

from __future__ import annotations

from crsbench.scoring.anchors import AXES

JPEG_TARGET = "jpeg drop"
SHIFT_ECE_TARGET = "shift ece increase"
LEADER_GAP = "leader gap"
LEADER_IN_TIER1 = "leader in tier 1"
#: Targets whose hits are 95 % interval coverages (the leader-in-tier-1 share is not).
INTERVAL_TARGETS = ("CRS", *AXES, LEADER_GAP, JPEG_TARGET, SHIFT_ECE_TARGET)


def hit(scenario: str, world: int, method: str, target: str, lo, hi, truth) -> dict:
    """One record: whether ``[lo, hi]`` holds the population value ``truth``."""
    return {"scenario": scenario, "world": world, "method": method, "target": target,
            "covered": bool(lo <= truth <= hi)}  # fmt: skip
