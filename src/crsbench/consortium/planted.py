"""Planted consortia in the site-summary format: known mean, between-site variance and sizes.

Each site ``i`` of ``k`` has a true value ``theta_i ~ N(mu, tau²)`` of every quantity and
reports ``y_i ~ N(theta_i, v_i)`` with ``v_i = sigma² / n_i`` (``n_i`` its test patients,
drawn between ``min_patients`` and ``max_patients``), as :class:`SiteSummary` records that go
through the JSON format (written and read back) before pooling.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from crsbench.consortium.settings import load_settings
from crsbench.consortium.summary import (
    QUANTITIES,
    EncoderSummary,
    Estimate,
    SiteSummary,
    TestSizes,
)

#: Planted population means per quantity (a plausible good encoder).
TRUE_MEANS: dict[str, float] = {
    "auroc": 0.82, "ece": 0.06, "retention": 0.9, "robustness_drop": 0.05, "CRS": 0.55,
}  # fmt: skip


@dataclass(frozen=True)
class PlantedConsortium:
    """Site summaries and the truth behind them (per encoder and quantity: site values)."""

    sites: tuple[SiteSummary, ...]
    mu: dict[tuple[str, str], float]
    tau: float


def site_summary(site: str, values: dict[str, dict[str, tuple[float, float]]],
                 labels: tuple[str, ...] = ("benign", "malignant"), n_patients: int = 200,
                 weights: dict[str, dict[str, str] | None] | None = None) -> SiteSummary:  # fmt: skip
    """A summary of ``values`` (encoder → quantity → (value, variance)) with plain metadata."""
    settings = load_settings()
    weights = weights or {}
    encoders = tuple(EncoderSummary(e, weights.get(e), {q: Estimate(*vals[q]) for q in QUANTITIES})
                     for e, vals in sorted(values.items()))  # fmt: skip
    return SiteSummary(
        site=site, task="multiclass", labels=labels, anchors_version="v2",
        protocol={"recalibration": "v1", "severities": "v1"}, crsbench_version="0.1.0",
        interval="test patients x seeds bootstrap", n_replicates=settings.n_replicates,
        sizes=TestSizes(n_patients, n_patients, {x: n_patients // len(labels) for x in labels}),
        suppressed=(), settings=settings.as_dict(), encoders=encoders,
    )  # fmt: skip


def planted_consortium(rng: np.random.Generator, k: int, tau: float, sigma: float = 0.3,
                       encoders: tuple[str, ...] = ("enc_a", "enc_b"), min_patients: int = 100,
                       max_patients: int = 2000) -> PlantedConsortium:  # fmt: skip
    """``k`` planted sites (see the module); encoder ``j``'s means are shifted by ``-0.03 j``."""
    n = rng.integers(min_patients, max_patients + 1, k)
    mu = {(e, q): TRUE_MEANS[q] - 0.03 * j for j, e in enumerate(encoders) for q in QUANTITIES}
    per_site: list[dict[str, dict[str, tuple[float, float]]]] = [{} for _ in range(k)]
    for (e, q), m in mu.items():
        theta = m + rng.normal(0.0, tau, k)
        v = sigma**2 / n
        y = theta + rng.normal(0.0, np.sqrt(v))
        for i in range(k):
            per_site[i].setdefault(e, {})[q] = (float(y[i]), float(v[i]))
    sites = tuple(site_summary(f"site_{i:02d}", per_site[i], n_patients=int(n[i]))
                  for i in range(k))  # fmt: skip
    return PlantedConsortium(sites, mu, tau)


def through_files(sites: tuple[SiteSummary, ...], folder: Path) -> tuple[SiteSummary, ...]:
    """Write each summary to ``folder`` as JSON and read it back (the format's round trip)."""
    from crsbench.consortium.summary import read_summary, write_summary

    return tuple(read_summary(write_summary(s, folder / f"{s.site}.json")) for s in sites)


def with_site(s: SiteSummary, **changes: Any) -> SiteSummary:
    """``s`` with fields replaced (the refusal tests' mismatches)."""
    return replace(s, **changes)


def round_trip(sites: tuple[SiteSummary, ...]) -> tuple[SiteSummary, ...]:
    """Each summary through its JSON text and back, in memory (the format, without files)."""
    import json

    from crsbench.consortium.summary import summary_from_dict, summary_to_dict

    return tuple(summary_from_dict(json.loads(json.dumps(summary_to_dict(s), allow_nan=False)))
                 for s in sites)  # fmt: skip
