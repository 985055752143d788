"""The consortium page: self-contained HTML in the report's style (``consortium.html``).

Sections: the verdict (the leader by pooled CRS and what a new site should expect), the pooled
CRS with its intervals and heterogeneity, the pooled axes, the CRS at each site, the ranking's
stability over sites, the sites, and how the numbers were made.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import pandas as pd

from crsbench.consortium.combine import Consortium
from crsbench.consortium.tables import (
    CONSORTIUM_JSON,
    POOLED_CSV,
    SITES_CSV,
    STABILITY_CSV,
    pooled_table,
    sites_table,
    stability_table,
)
from crsbench.report.html import (
    Section,
    files_html,
    kv_html,
    note_html,
    page_html,
    stats_html,
    table_html,
)
from crsbench.store.outputs import write_output_file

PAGE_FILE = "consortium.html"
_POOLED_HEADERS = {
    "encoder": "encoder", "quantity": "quantity", "k": "sites", "mean": "pooled",
    "ci_low": "95% low", "ci_high": "95% high", "pi_low": "new site low",
    "pi_high": "new site high", "tau": "between-site SD (tau)", "i2": "I² (0–1)", "note": "note",
}  # fmt: skip


def _verdict(c: Consortium) -> Section:
    if not c.stability:
        return Section("verdict", "Verdict", "No encoder was profiled at every site.", [])
    top = c.stability[0]
    row = c.row(top.encoder, "CRS")
    p = row.pooled if row else None
    expect = (
        f"a new site should expect a CRS between {p.pi_low:.3f} and {p.pi_high:.3f}"
        if p is not None and p.k >= 3
        else "a prediction interval needs three sites"
    )
    lede = (f"Highest pooled CRS: {top.encoder} ({top.crs:.3f}); {expect} "
            f"({c.settings.level:.0%} prediction interval). It ranks first in "
            f"{top.p_rank1:.0%} of site-bootstrap replicates and at {top.first_at} of "
            f"{len(c.sites)} sites on their own.")  # fmt: skip
    stats = [("sites", str(len(c.sites))), ("encoders ranked", str(len(c.stability))),
             ("leader", top.encoder), ("method", c.method.upper())]  # fmt: skip
    return Section("verdict", "Verdict", lede, [stats_html(stats)])


def _pooled(c: Consortium, quantities: tuple[str, ...], sid: str, title: str) -> Section:
    df = pooled_table(c)
    df["tau"] = np.sqrt(df["tau2"])
    df = df[df["quantity"].isin(quantities)][list(_POOLED_HEADERS)]
    lede = (f"Random-effects pooling over sites ({c.method.upper()} between-site variance); "
            "the pooled interval is Hartung–Knapp (t, k − 1 df), the new-site interval the "
            "confidence-distribution prediction interval (Nagashima et al. 2019), which carries "
            "the uncertainty of the between-site variance; on planted consortia of 3–12 sites "
            "they covered 93.5–95.0 % and 93.7–95.2 %.")  # fmt: skip
    body = table_html(df, headers=_POOLED_HEADERS, sortable=True, table_id=f"{sid}-table")
    return Section(sid, title, lede, [body])


def _per_site(c: Consortium) -> Section:
    df = sites_table(c)
    wide = df[df["quantity"] == "CRS"].pivot(index="encoder", columns="site", values="value")
    wide = wide.reindex(columns=[s.site for s in c.sites]).reset_index()
    body = table_html(wide, sortable=True, table_id="per-site")
    return Section("sites-crs", "CRS at each site", "Each site's own CRS (fixed anchors).", [body])


def _stability(c: Consortium) -> Section:
    df = stability_table(c)
    lede = ("Ranks by pooled CRS; P(rank 1) over site-bootstrap replicates (sites drawn with "
            "replacement); the rank of each encoder when one site is left out.")  # fmt: skip
    parts = [table_html(df, sortable=True, table_id="stability")] if not df.empty else []
    return Section("stability", "Stability over sites", lede, parts)


def _sites(c: Consortium) -> Section:
    rows = pd.DataFrame([{"site": s.site, "test images": s.sizes.images,
                          "test patients": s.sizes.patients, "crsbench": s.crsbench_version,
                          "encoders": ", ".join(e.encoder for e in s.encoders)}
                         for s in c.sites])  # fmt: skip
    ref = c.sites[0]
    facts = [("task", ref.task), ("labels", ", ".join(ref.labels)),
             ("anchors", ref.anchors_version),
             ("protocol", ", ".join(f"{k} {v}" for k, v in ref.protocol.items())),
             ("settings", ", ".join(f"{k} {v}" for k, v in c.settings.as_dict().items()))]  # fmt: skip
    parts = [kv_html(facts), table_html(rows)] + [note_html(n) for n in c.notes]
    parts.append(files_html([POOLED_CSV, SITES_CSV, STABILITY_CSV, CONSORTIUM_JSON]))
    lede = "What each site sent (counts below the small-cell threshold are not shown: —)."
    return Section("sites", "Sites", lede, parts)


def consortium_html(c: Consortium) -> str:
    """The page of ``c``."""
    sections = [_verdict(c), _pooled(c, ("CRS",), "pooled-crs", "Pooled CRS"),
                _pooled(c, ("auroc", "ece", "retention", "robustness_drop"), "pooled-axes",
                        "Pooled axes"),
                _per_site(c), _stability(c), _sites(c)]  # fmt: skip
    now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return page_html("CRS-Bench consortium verdict",
                     f"{len(c.sites)} sites: " + ", ".join(s.site for s in c.sites), sections,
                     f"crsbench combine, written {now}.")  # fmt: skip


def write_page(c: Consortium, folder: Path) -> Path:
    """Write ``consortium.html`` into ``folder`` (atomically); return its path."""
    page = consortium_html(c)
    return write_output_file(Path(folder) / PAGE_FILE,
                             lambda tmp: tmp.write_text(page, encoding="utf-8"))  # fmt: skip
