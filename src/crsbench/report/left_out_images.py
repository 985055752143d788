"""One line per dataset on the images its runs left out (read from the run records)."""

from __future__ import annotations

import json

import pandas as pd

#: Order of the per-split counts in a line (the keys of ``details["n_quarantined"]``).
_ORDER = ("train", "val", "calib", "test", "shift")


def _counts(text: object) -> dict[str, int] | None:
    try:
        details = json.loads(str(text)) if text else {}
    except ValueError:
        return None
    counts = details.get("n_quarantined") if isinstance(details, dict) else None
    return counts if isinstance(counts, dict) else None


def quarantine_lines(runs: pd.DataFrame) -> list[str]:
    """``"isic2019: 4 image(s) quarantined (train 1, val 1, calib 1, test 1)"`` per dataset.

    The counts are ``details["n_quarantined"]`` of the dataset's run records (the largest
    over its cells, which agree unless the data changed between them); ``shift`` counts the
    shift target's evaluation rows. A dataset whose records carry no counts (written by an
    older crsbench) is said to be "not recorded".
    """
    if runs.empty or "details" not in runs:
        return []
    lines = []
    for dataset, rows in runs.groupby("dataset", sort=True):
        parsed = [c for c in map(_counts, rows["details"].drop_duplicates()) if c is not None]
        if not parsed:
            lines.append(f"{dataset}: quarantined images not recorded")
            continue
        merged = {k: max(int(c.get(k, 0)) for c in parsed) for k in _ORDER}
        in_splits = sum(merged[k] for k in _ORDER[:4])
        parts = ", ".join(f"{k} {merged[k]}" for k in _ORDER if k != "shift" or merged[k])
        lines.append(f"{dataset}: {in_splits} image(s) quarantined ({parts})")
    return lines
