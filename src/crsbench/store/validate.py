"""Column-wise validation of a DataFrame of run rows (the bulk path of the results store).

The rules are those of :class:`~crsbench.store.records.RunRecord`: each column's declared rule
(:data:`~crsbench.store.columns.RUNS_TABLE`, checked by :data:`crsbench.store.rules.
COLUMN_CHECKS`) and the rules across columns, applied with vectorised pandas operations so a
million rows validate in seconds. Errors name the column, the first
offending 1-based rows and how many rows are affected.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from crsbench.core.errors import StoreError
from crsbench.protocol import UNPERTURBED_CONDITIONS
from crsbench.store.columns import (
    FLOAT_IDENTITY_COLUMNS,
    IDENTITY_COLUMNS,
    REQUIRED_METRICS,
    RUN_COLUMNS,
    RUNS_TABLE,
)
from crsbench.store.records import details_json, keys_for_columns
from crsbench.store.rules import COLUMN_CHECKS, quarantine_problems


def _rows(mask: np.ndarray) -> str:
    idx = np.flatnonzero(mask)
    first = ", ".join(str(i + 1) for i in idx[:5])
    more = f" (and {len(idx) - 5} more)" if len(idx) > 5 else ""
    return f"rows {first}{more}; {len(idx)} row(s) in all"


def _undefined_ok(details: pd.Series, metric: str, mask: np.ndarray) -> np.ndarray:
    """For rows in ``mask``, whether ``details`` gives ``undefined[metric]``."""
    ok = np.zeros(len(details), dtype=bool)
    for i in np.flatnonzero(mask):
        try:
            und = json.loads(details.iat[i]).get("undefined") or {}
        except (ValueError, AttributeError, TypeError):
            continue
        ok[i] = isinstance(und, dict) and bool(und.get(metric))
    return ok


class _Problems(list[str]):
    """The broken rules found so far, each with its first offending rows."""

    def check(self, bad: np.ndarray | pd.Series, what: str) -> None:
        """Record ``what`` when any row of the boolean mask ``bad`` is set."""
        bad = np.asarray(bad, dtype=bool)
        if bad.any():
            self.append(f"{what}: {_rows(bad)}")

    def raise_any(self) -> None:
        """Raise one :class:`StoreError` listing every problem, if there is one."""
        if self:
            raise StoreError("invalid run rows:\n  " + "\n  ".join(self))


def validate_frame(frame: pd.DataFrame, config_hash: str) -> pd.DataFrame:
    """Check a frame of run rows and return it with ``run_key`` filled, columns in order.

    Parameters
    ----------
    frame : pandas.DataFrame
        Columns :data:`RUN_COLUMNS` (``run_key`` optional). ``details`` is JSON text.
    config_hash : str
        The store's config hash; every row must carry it.

    Raises
    ------
    StoreError
        Listing every broken rule with the first offending rows.
    """
    missing = [c for c in RUN_COLUMNS if c not in frame.columns and c != "run_key"]
    extra = [c for c in frame.columns if c not in RUN_COLUMNS]
    if missing or extra:
        raise StoreError(
            f"run frame must have columns {list(RUN_COLUMNS)}. Missing {missing}, unexpected {extra}."
        )
    df = frame.reset_index(drop=True)
    problems = _Problems()
    for col in RUNS_TABLE:
        if col.name in df.columns:  # run_key is optional
            for bad, what in COLUMN_CHECKS[col.rule](col.name, df[col.name]):
                problems.check(bad, what)
    _check_across_columns(df, config_hash, problems)
    canonical_details = _check_details(df, problems)
    problems.raise_any()
    keys = keys_for_columns({c: df[c] for c in IDENTITY_COLUMNS}, config_hash)
    if "run_key" in df.columns:
        problems.check(
            df["run_key"].to_numpy() != np.asarray(keys, dtype=object),
            "run_key must match the identity",
        )
        problems.raise_any()
    return _normalised(df, keys, canonical_details)


def _check_across_columns(df: pd.DataFrame, config_hash: str, problems: _Problems) -> None:
    """The rules that read two columns or the store: severity against condition, a missing
    required metric's reason, the store's config hash."""
    unpert = df["condition"].isin(UNPERTURBED_CONDITIONS).to_numpy()
    sev = pd.to_numeric(df["severity"], errors="coerce").to_numpy()
    problems.check(unpert & (sev != 0), "severity must be 0 for clean/shift")
    problems.check(~unpert & (sev < 1), "severity must be >= 1 for a perturbation")
    for m in REQUIRED_METRICS:
        absent = ~df[m].notna().to_numpy()
        problems.check(
            absent & ~_undefined_ok(df["details"], m, absent),
            f"{m} missing without details['undefined']",
        )
    problems.check(
        df["config_hash"] != config_hash, f"config_hash must be the store's {config_hash[:12]}"
    )


def _check_details(df: pd.DataFrame, problems: _Problems) -> dict[object, str]:
    """Check each distinct ``details`` text; return text → canonical JSON ("" when invalid)."""
    canonical: dict[object, str] = {}
    bad_counts: dict[object, bool] = {}
    for text in df["details"].dropna().unique():
        try:
            parsed = json.loads(text)
            canonical[text] = details_json(parsed) if isinstance(parsed, dict) else ""
            bad_counts[text] = isinstance(parsed, dict) and bool(quarantine_problems(parsed))
        except (ValueError, TypeError, StoreError):
            canonical[text] = ""
    bad_details = df["details"].map(canonical).fillna("") == ""
    problems.check(bad_details.to_numpy(), "details must be a JSON object without NaN/Inf")
    problems.check(
        df["details"].map(bad_counts).eq(True).to_numpy(),
        "details['n_quarantined'] must map split names to ints >= 0",
    )
    return canonical


def _normalised(df: pd.DataFrame, keys: list[str], canonical: dict[object, str]) -> pd.DataFrame:
    """The valid frame as stored: run keys, canonical details, 12-digit layer and fraction,
    naive UTC timestamps, columns in :data:`RUN_COLUMNS` order."""
    out = df.copy()
    out["run_key"] = keys
    out["details"] = out["details"].map(canonical)
    for c in FLOAT_IDENTITY_COLUMNS:
        values = out[c].astype(float)
        out[c] = values.map({u: float(f"{u:.12g}") for u in values.unique()})
    created = pd.to_datetime(out["created_at"])
    if getattr(created.dt, "tz", None) is not None:
        created = created.dt.tz_convert("UTC").dt.tz_localize(None)
    out["created_at"] = created
    return out[list(RUN_COLUMNS)]
