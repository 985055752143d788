"""The consortium's tables: pooled values, per-site values and the ranking's stability.

Written by ``combine`` as CSV (``pooled.csv``, ``sites.csv``, ``stability.csv``) and together
in ``consortium.json`` with the settings, the method and the sites' versions and sizes.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from crsbench.consortium.combine import Consortium
from crsbench.consortium.summary import QUANTITIES
from crsbench.store.outputs import write_output_file

POOLED_CSV, SITES_CSV, STABILITY_CSV, CONSORTIUM_JSON = (
    "pooled.csv", "sites.csv", "stability.csv", "consortium.json",
)  # fmt: skip
_POOLED_FIELDS = ("k", "mean", "se", "ci_low", "ci_high", "tau2", "i2", "q", "pi_low", "pi_high")


def pooled_table(c: Consortium) -> pd.DataFrame:
    """One row per encoder and quantity: the random-effects summary (NaN where not pooled)."""
    rows = []
    for r in c.pooled:
        values = {f: getattr(r.pooled, f) if r.pooled else np.nan for f in _POOLED_FIELDS}
        values["k"] = len(r.sites)
        rows.append({"encoder": r.encoder, "quantity": r.quantity, "method": c.method,
                     **values, "level": c.settings.level, "note": r.note})  # fmt: skip
    return pd.DataFrame(rows)


def sites_table(c: Consortium) -> pd.DataFrame:
    """One row per site, encoder and quantity: the site's value and bootstrap variance."""
    rows = [{"site": s.site, "encoder": e.encoder, "quantity": q,
             "value": e.estimates[q].value, "variance": e.estimates[q].variance}
            for s in c.sites for e in s.encoders for q in QUANTITIES]  # fmt: skip
    return pd.DataFrame(rows)


def stability_table(c: Consortium) -> pd.DataFrame:
    """One row per ranked encoder: rank, pooled CRS, P(rank 1), first-at count, LOSO ranks."""
    rows = [{"rank": r.rank, "encoder": r.encoder, "pooled_CRS": r.crs, "p_rank1": r.p_rank1,
             "first_at_sites": r.first_at, "loso_max_rank_change": r.loso_max_change,
             **{f"rank_without_{s}": k for s, k in r.loso_ranks.items()}}
            for r in c.stability]  # fmt: skip
    return pd.DataFrame(rows)


def _records(df: pd.DataFrame) -> list[dict[str, Any]]:
    return json.loads(df.to_json(orient="records"))


def consortium_document(c: Consortium) -> dict[str, Any]:
    """The JSON document of ``consortium.json`` (also what ``combine --json`` prints)."""
    sites = [{"site": s.site, "crsbench_version": s.crsbench_version,
              "test_sizes": {"images": s.sizes.images, "patients": s.sizes.patients,
                             "per_label": dict(s.sizes.per_label)},
              "encoders": [e.encoder for e in s.encoders]} for s in c.sites]  # fmt: skip
    ref = c.sites[0]
    return {
        "format": "crsbench-consortium", "format_version": 1, "method": c.method,
        "settings": c.settings.as_dict(), "anchors_version": ref.anchors_version,
        "protocol": dict(ref.protocol), "task": ref.task, "labels": list(ref.labels),
        "sites": sites, "pooled": _records(pooled_table(c)),
        "stability": _records(stability_table(c)), "notes": list(c.notes),
    }  # fmt: skip


def _csv_writer(df: pd.DataFrame) -> Callable[[Path], None]:
    def write(tmp: Path) -> None:
        df.to_csv(tmp, index=False)

    return write


def write_tables(c: Consortium, folder: Path) -> list[Path]:
    """Write the three CSV tables and ``consortium.json`` into ``folder``; return the paths."""
    out = []
    for name, df in ((POOLED_CSV, pooled_table(c)), (SITES_CSV, sites_table(c)),
                     (STABILITY_CSV, stability_table(c))):  # fmt: skip
        out.append(write_output_file(folder / name, _csv_writer(df)))
    text = json.dumps(consortium_document(c), indent=2) + "\n"
    out.append(write_output_file(folder / CONSORTIUM_JSON,
                                 lambda tmp: tmp.write_text(text, encoding="utf-8")))  # fmt: skip
    return out
