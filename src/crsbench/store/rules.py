"""The per-row rules of the ``runs`` columns, each checked one way for a record and one way for
a frame.

Every :class:`~crsbench.store.columns.Rule` of the declaration (:data:`~crsbench.store.columns.
RUNS_TABLE`) has a value check (:data:`VALUE_CHECKS`: one record's value → its problems, used by
:class:`~crsbench.store.records.RunRecord`) and a column check (:data:`COLUMN_CHECKS`: a frame's
column → a mask of the rows breaking it, used by :func:`~crsbench.store.validate.validate_frame`).
A column declared with an existing rule needs nothing here. Rules across columns (severity
against condition, a missing required metric's reason, the store's config hash, the run key)
stay with the validators.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

import numpy as np
import pandas as pd

from crsbench.core.types import SPLIT_NAMES
from crsbench.protocol import REGIMES
from crsbench.store.columns import SCHEMA_VERSION, Rule

#: Keys of ``details["n_quarantined"]``: the splits and the shift target's rows.
QUARANTINE_KEYS: tuple[str, ...] = (*SPLIT_NAMES, "shift")
_HEX64 = re.compile(r"^[0-9a-f]{64}$")

ValueCheck = Callable[[str, Any], list[str]]
#: A column check: ``(name, column) -> [(rows breaking the rule, what the rule says)]``.
ColumnCheck = Callable[[str, pd.Series], list[tuple[np.ndarray, str]]]


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _name(col: str, v: Any) -> list[str]:
    ok = isinstance(v, str) and bool(v)
    return [] if ok else [f"{col} must be a non-empty string. Got {v!r} instead"]


def _count(col: str, v: Any) -> list[str]:
    ok = isinstance(v, int) and not isinstance(v, bool) and v >= 0
    return [] if ok else [f"{col} must be an integer >= 0. Got {v!r} instead"]


def _unit(col: str, v: Any) -> list[str]:
    ok = _is_number(v) and 0.0 < v <= 1.0
    return [] if ok else [f"{col} must be a number in (0, 1]. Got {v!r} instead"]


def _regime(col: str, v: Any) -> list[str]:
    return [] if v in REGIMES else [f"{col} must be one of {REGIMES}. Got {v!r} instead"]


def _metric(col: str, v: Any) -> list[str]:
    ok = v is None or (_is_number(v) and math.isfinite(v))
    return [] if ok else [f"{col} must be a finite number or None. Got {v!r} instead"]


def _hash(col: str, v: Any) -> list[str]:
    ok = isinstance(v, str) and bool(_HEX64.match(v))
    return [] if ok else [f"{col} must be 64 lowercase hex characters. Got {v!r} instead"]


def _filled(col: str, v: Any) -> list[str]:
    ok = isinstance(v, str) and bool(v.strip())
    return [] if ok else [f"{col} must be filled (provenance). Got {v!r} instead"]


def _seconds(col: str, v: Any) -> list[str]:
    if not _is_number(v) or not v >= 0:
        return [f"{col} must be a number >= 0. Got {v!r} instead"]
    return [] if math.isfinite(v) else [f"{col} must be finite. Got {v!r} instead"]


def _timestamp(col: str, v: Any) -> list[str]:
    return [] if isinstance(v, datetime) else [f"{col} must be a datetime. Got {v!r} instead"]


def _version(col: str, v: Any) -> list[str]:
    return [] if v == SCHEMA_VERSION else [f"{col} must be {SCHEMA_VERSION}. Got {v!r} instead"]


def _details(col: str, v: Any) -> list[str]:
    if isinstance(v, str):
        try:
            v = json.loads(v)
        except ValueError:
            return [f"{col} must be JSON text. Got {v[:80]!r} instead"]
    if not isinstance(v, Mapping):
        return [f"{col} must be a mapping. Got {type(v).__name__} instead"]
    return quarantine_problems(v)


def _no_value(col: str, v: Any) -> list[str]:
    """The run key: computed from the identity, never given."""
    return []


#: Rule → the problems of one record's value (empty when it keeps the rule).
VALUE_CHECKS: dict[Rule, ValueCheck] = {
    Rule.NAME: _name,
    Rule.COUNT: _count,
    Rule.UNIT: _unit,
    Rule.REGIME: _regime,
    Rule.METRIC: _metric,
    Rule.REQUIRED_METRIC: _metric,
    Rule.HASH: _hash,
    Rule.FILLED: _filled,
    Rule.SECONDS: _seconds,
    Rule.TIMESTAMP: _timestamp,
    Rule.VERSION: _version,
    Rule.DETAILS: _details,
    Rule.KEY: _no_value,
}


def quarantine_problems(details: Mapping[str, Any]) -> list[str]:
    """How ``details["n_quarantined"]`` breaks the schema, if present (empty when valid).

    It maps split names (:data:`QUARANTINE_KEYS`) to the number of images of that split the
    cell left out (integers >= 0).
    """
    counts = details.get("n_quarantined")
    if counts is None:
        return []
    if not isinstance(counts, Mapping):
        return [f"details['n_quarantined'] must be a mapping. Got {counts!r} instead"]
    out = []
    for key, n in counts.items():
        if key not in QUARANTINE_KEYS:
            out.append(
                f"details['n_quarantined'] keys must be among {QUARANTINE_KEYS}. Got {key!r}"
            )
        elif isinstance(n, bool) or not isinstance(n, int) or n < 0:
            out.append(f"details['n_quarantined'][{key!r}] must be an int >= 0. Got {n!r}")
    return out


def _blank(col: pd.Series) -> np.ndarray:
    return col.isna().to_numpy() | (col.astype(str).str.strip() == "").to_numpy()


def _num(col: pd.Series) -> pd.Series:
    return pd.to_numeric(col, errors="coerce")


def _filled_column(name: str, col: pd.Series) -> list[tuple[np.ndarray, str]]:
    return [(_blank(col), f"{name} must be filled")]


def _count_column(name: str, col: pd.Series) -> list[tuple[np.ndarray, str]]:
    num = _num(col)
    bad = num.isna() | (num < 0) | (num != np.floor(num))
    return [(bad.to_numpy(), f"{name} must be an integer >= 0")]


def _unit_column(name: str, col: pd.Series) -> list[tuple[np.ndarray, str]]:
    num = _num(col)
    return [((~((num > 0) & (num <= 1))).to_numpy(), f"{name} must be in (0, 1]")]


def _regime_column(name: str, col: pd.Series) -> list[tuple[np.ndarray, str]]:
    return [((~col.isin(REGIMES)).to_numpy(), f"{name} must be one of {REGIMES}")]


def _metric_column(name: str, col: pd.Series) -> list[tuple[np.ndarray, str]]:
    vals = _num(col).to_numpy(dtype=float)
    return [(col.notna().to_numpy() & ~np.isfinite(vals), f"{name} must be finite or missing")]


def _seconds_column(name: str, col: pd.Series) -> list[tuple[np.ndarray, str]]:
    vals = _num(col).to_numpy(dtype=float)
    bad = ~(np.isfinite(vals) & (vals >= 0))
    return [(bad, f"{name} must be a finite number >= 0")]


def _timestamp_column(name: str, col: pd.Series) -> list[tuple[np.ndarray, str]]:
    bad = pd.to_datetime(col, errors="coerce").isna().to_numpy()
    return [(bad, f"{name} must be a timestamp")]


def _version_column(name: str, col: pd.Series) -> list[tuple[np.ndarray, str]]:
    return _count_column(name, col) + [
        ((_num(col) != SCHEMA_VERSION).to_numpy(), f"{name} must be {SCHEMA_VERSION}")
    ]


def _no_column(name: str, col: pd.Series) -> list[tuple[np.ndarray, str]]:
    """A rule the frame validator checks against the store (config hash, run key)."""
    return []


#: Rule → the rows of a frame's column breaking it (with the rule's words). The details'
#: JSON and the config hash are checked by the frame validator itself.
COLUMN_CHECKS: dict[Rule, ColumnCheck] = {
    Rule.NAME: _filled_column,
    Rule.COUNT: _count_column,
    Rule.UNIT: _unit_column,
    Rule.REGIME: _regime_column,
    Rule.METRIC: _metric_column,
    Rule.REQUIRED_METRIC: _metric_column,
    Rule.HASH: _no_column,
    Rule.FILLED: _filled_column,
    Rule.SECONDS: _seconds_column,
    Rule.TIMESTAMP: _timestamp_column,
    Rule.VERSION: _version_column,
    Rule.DETAILS: _filled_column,
    Rule.KEY: _no_column,
}
