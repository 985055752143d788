"""``crsbench combine``: pool the site summaries into the consortium's verdict.

Per encoder and quantity (the four axes and the CRS): the random-effects summary over the
sites that profiled the encoder (:func:`crsbench.consortium.meta.pool`). A quantity some site
reports with zero bootstrap variance (e.g. an AUROC of 1.0 in every replicate) is not pooled:
inverse-variance weights are then undefined; the note names the site.

The ranking is by pooled CRS over the encoders every site profiled. Its stability: the ranks
when each site in turn is left out (leave-one-site-out), the share of site-bootstrap
replicates (sites drawn with replacement, pooled again) in which each encoder ranks first,
and at how many sites it ranks first on its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from crsbench.consortium.compare import check_comparable
from crsbench.consortium.meta import Pooled, pool, pooled_means
from crsbench.consortium.settings import ConsortiumSettings, load_settings
from crsbench.consortium.summary import QUANTITIES, SiteSummary


@dataclass(frozen=True)
class PooledRow:
    """One encoder's pooled quantity (``pooled`` None when it could not be pooled)."""

    encoder: str
    quantity: str
    sites: tuple[str, ...]
    pooled: Pooled | None
    note: str = ""


@dataclass(frozen=True)
class StabilityRow:
    """How firmly one ranked encoder holds its place over the sites."""

    encoder: str
    rank: int
    crs: float
    p_rank1: float
    first_at: int
    loso_ranks: dict[str, int]

    @property
    def loso_max_change(self) -> int:
        """Largest rank change when one site is left out."""
        return max((abs(r - self.rank) for r in self.loso_ranks.values()), default=0)


@dataclass(frozen=True)
class Consortium:
    """Everything ``combine`` found (tables and page are written from it)."""

    sites: tuple[SiteSummary, ...]
    settings: ConsortiumSettings
    method: str
    pooled: tuple[PooledRow, ...]
    stability: tuple[StabilityRow, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)

    def row(self, encoder: str, quantity: str) -> PooledRow | None:
        """The pooled row of ``encoder`` and ``quantity``."""
        return next((r for r in self.pooled if (r.encoder, r.quantity) == (encoder, quantity)),
                    None)  # fmt: skip


def site_values(sites: Sequence[SiteSummary], encoder: str, quantity: str):
    """(site names, values, variances) of ``encoder``'s ``quantity`` at the sites that have it."""
    found = [(s.site, e.estimates[quantity]) for s in sites if (e := s.encoder(encoder))]
    return (tuple(n for n, _ in found), np.array([x.value for _, x in found]),
            np.array([x.variance for _, x in found]))  # fmt: skip


def _pool_row(sites, encoder: str, quantity: str, method: str, level: float) -> PooledRow:
    names, y, v = site_values(sites, encoder, quantity)
    if len(names) < 2:
        return PooledRow(encoder, quantity, names, None, f"profiled at {len(names)} site(s); "
                         "pooling needs two")  # fmt: skip
    zero = [n for n, x in zip(names, v, strict=True) if not x > 0]
    if zero:
        return PooledRow(encoder, quantity, names, None, "zero bootstrap variance at "
                         f"{', '.join(zero)} (the value did not vary over replicates): "
                         "inverse-variance weights are undefined, not pooled")  # fmt: skip
    return PooledRow(encoder, quantity, names, pool(y, v, method, level))


def _pooled_mean(y: np.ndarray, v: np.ndarray, method: str) -> float:
    return float(pooled_means(y[None, :], v[None, :], method)[0])


def _ranks(values: dict[str, float]) -> dict[str, int]:
    order = sorted(values, key=lambda e: (-values[e], e))
    return {e: i + 1 for i, e in enumerate(order)}


def _stability(sites, encoders: list[str], method: str, n_rep: int) -> tuple[StabilityRow, ...]:
    if not encoders:
        return ()
    data = {e: site_values(sites, e, "CRS") for e in encoders}
    k = len(sites)
    full = _ranks({e: _pooled_mean(data[e][1], data[e][2], method) for e in encoders})
    loso = {}
    for i, s in enumerate(sites):
        keep = np.arange(k) != i
        loso[s.site] = _ranks({e: _pooled_mean(data[e][1][keep], data[e][2][keep], method)
                               for e in encoders})  # fmt: skip
    idx = np.random.default_rng(0).integers(0, k, (n_rep, k))
    means = np.stack([pooled_means(data[e][1][idx], data[e][2][idx], method) for e in encoders])
    leader = np.argmax(means, axis=0)  # ties: the first encoder in name order, as the ranks
    wins = {e: int(np.sum(leader == j)) for j, e in enumerate(encoders)}
    first = [max(encoders, key=lambda e: (data[e][1][i], e)) for i in range(k)]
    return tuple(sorted(
        (StabilityRow(e, full[e], _pooled_mean(data[e][1], data[e][2], method), wins[e] / n_rep,
                      first.count(e), {s: r[e] for s, r in loso.items()}) for e in encoders),
        key=lambda r: r.rank))  # fmt: skip


def combine(sites: Sequence[SiteSummary], settings: ConsortiumSettings | None = None,
            method: str | None = None) -> Consortium:  # fmt: skip
    """Pool the site summaries (refused when they are not comparable; see module).

    Parameters
    ----------
    sites : sequence of SiteSummary
    settings : ConsortiumSettings, optional
        Default: the packaged ``resources/consortium/v1.yaml``.
    method : {"reml", "dl"}, optional
        Between-site variance estimator (default: the settings').
    """
    settings = settings or load_settings()
    method = method or settings.method
    sites = tuple(sites)
    check_comparable(sites)
    encoders = sorted({e.encoder for s in sites for e in s.encoders})
    rows = tuple(_pool_row(sites, e, q, method, settings.level)
                 for e in encoders for q in QUANTITIES)  # fmt: skip
    everywhere = [e for e in encoders if all(s.encoder(e) for s in sites)]
    notes = [f"{e} is not ranked: not profiled at every site" for e in encoders
             if e not in everywhere]  # fmt: skip
    stability = _stability(sites, everywhere, method, settings.n_site_replicates)
    notes += [f"{r.encoder} {r.quantity}: {r.note}" for r in rows if r.note]
    return Consortium(sites, settings, method, rows, stability, tuple(notes))
