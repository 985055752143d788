"""The one read-only reader of a results store, and :func:`select_runs`, the row filter.

Scoring, the analyses, the report and the cohort profile read a store only through this
module: :func:`read_tables` / :func:`read_queries` (read-only connection; a missing, locked or
damaged file is always reported the same way), :func:`load_runs` (table ``runs``, checked),
:func:`read_meta`, :func:`read_card_facts`, :func:`read_plan`, :func:`read_reliability` and
:func:`skipped_cells`. :func:`select_runs`
keeps the rows of one slice of the protocol; its defaults are the main protocol's clean,
full-label rows (frozen regime, logistic probe, last layer, no recalibration, each dataset
scored on itself: ``docs/protocol.md``, "Scoring").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from crsbench.core.errors import DataError, StoreError
from crsbench.protocol import CLEAN, FROZEN
from crsbench.store.cards import CARDS_TABLE, CardFacts, attach_encoder_groups
from crsbench.store.columns import IDENTITY_COLUMNS, RELIABILITY_COLUMNS, RELIABILITY_TABLE
from crsbench.store.files import (
    LAST_RUN_FILE,
    STORE_FILE,
    damaged_store,
    locked_store,
    refuse_newer_schema,
)
from crsbench.store.stored_plan import PLAN_TABLE, StoredPlan

#: Columns every reader of ``runs`` relies on.
REQUIRED_COLUMNS: tuple[str, ...] = (*IDENTITY_COLUMNS, "auroc", "ece")


def read_tables(path: Path | str, tables: tuple[str, ...]) -> dict[str, pd.DataFrame]:
    """Read whole tables of a store file read-only; absent tables are left out.

    Raises
    ------
    StoreError
        The file is missing, locked by a writer, or damaged (with the way to recover).
    """
    return read_queries(path, {t: f'SELECT * FROM "{t}"' for t in tables}, needs=None)


def read_queries(
    path: Path | str, queries: dict[str, str], needs: dict[str, tuple[str, ...]] | None
) -> dict[str, pd.DataFrame]:
    """Run read-only SELECT ``queries`` (name → SQL built by crsbench, never user text) on a
    store file; a query whose tables (``needs[name]``, default: the table called ``name``)
    are not all present is left out of the result.

    Raises
    ------
    StoreError
        The file is missing, locked by a writer, or damaged (with the way to recover).
    """
    import duckdb

    path = Path(path)
    if not path.is_file():
        raise StoreError(
            f"results store {path} must exist. It does not: run `crsbench run` first, "
            f"or pass the directory that holds {STORE_FILE}."
        )
    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error as exc:
        if "lock" in str(exc).lower():
            raise locked_store(path) from None
        raise damaged_store(path, exc) from None
    try:
        present = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables")
                   .fetchall()}  # fmt: skip
        wanted = needs or {}
        return {
            name: con.execute(sql).df()
            for name, sql in queries.items()
            if set(wanted.get(name, (name,))) <= present
        }
    except duckdb.Error as exc:
        raise damaged_store(path, exc) from None
    finally:
        con.close()


def load_runs(store_dir: str | Path) -> pd.DataFrame:
    """Table ``runs`` of ``store_dir``'s store, read-only, its columns checked, with an
    ``encoder_group`` column from the store's card facts when it has them.

    Raises
    ------
    StoreError
        The store file or table is missing, locked or unreadable, or of a newer schema.
    DataError
        A column of :data:`REQUIRED_COLUMNS` is missing.
    """
    path = Path(store_dir) / STORE_FILE
    found = read_tables(path, ("meta", "runs", CARDS_TABLE))
    if "meta" in found and len(found["meta"]) and "schema_version" in found["meta"]:
        refuse_newer_schema(path, found["meta"]["schema_version"].iloc[0])
    if "runs" not in found:
        raise StoreError(f"results store {path} must have a table 'runs'. It has none.")
    facts = CardFacts.from_table(found[CARDS_TABLE]) if CARDS_TABLE in found else None
    return attach_encoder_groups(check_runs(found["runs"], str(path)), facts)


def read_card_facts(store_dir: str | Path) -> CardFacts | None:
    """The card facts of ``store_dir``'s store (:mod:`crsbench.store.cards`); ``None`` for a
    store written before they were recorded."""
    found = read_tables(Path(store_dir) / STORE_FILE, (CARDS_TABLE,))
    return CardFacts.from_table(found[CARDS_TABLE]) if CARDS_TABLE in found else None


def read_plan(store_dir: str | Path) -> StoredPlan | None:
    """The plan recorded in ``store_dir``'s store (:mod:`crsbench.store.stored_plan`); ``None`` for a
    store written before it was recorded."""
    found = read_tables(Path(store_dir) / STORE_FILE, (PLAN_TABLE,))
    return StoredPlan.from_table(found[PLAN_TABLE]) if PLAN_TABLE in found else None


def check_runs(runs: pd.DataFrame, source: str = "runs") -> pd.DataFrame:
    """``runs`` itself; raise :class:`DataError` when a required column is missing."""
    missing = [c for c in REQUIRED_COLUMNS if c not in runs.columns]
    if missing:
        raise DataError(f"{source} must have columns {missing}. Got {list(runs.columns)} instead.")
    return runs


#: The main protocol's probe, layer and recalibrator (with the frozen regime): the rows
#: :func:`select_runs` keeps by default and whose predictions the store keeps.
MAIN_PROBE = "logistic"
MAIN_LAYER = 1.0
NO_RECALIBRATION = "none"


def select_runs(
    runs: pd.DataFrame,
    regime: str = FROZEN,
    probe: str | None = MAIN_PROBE,
    layer: float | None = MAIN_LAYER,
    fraction: float | None = 1.0,
    condition: str | None = CLEAN,
    recalibrator: str | None = NO_RECALIBRATION,
    own_eval: bool | None = True,
) -> pd.DataFrame:
    """The rows of ``runs`` matching every given filter (``None`` = any value).

    The defaults select the main protocol's clean, full-label rows. ``layer`` and
    ``fraction`` match to floating-point tolerance; ``own_eval=True`` keeps rows scored on
    their own dataset, ``False`` rows scored on another (shift targets).
    """
    check_runs(runs)
    keep = runs["regime"] == regime
    if probe is not None:
        keep &= runs["probe"] == probe
    if layer is not None:
        keep &= np.isclose(runs["layer"].astype(float), layer)
    if fraction is not None:
        keep &= np.isclose(runs["fraction"].astype(float), fraction)
    if condition is not None:
        keep &= runs["condition"] == condition
    if recalibrator is not None:
        keep &= runs["recalibrator"] == recalibrator
    if own_eval is True:
        keep &= runs["eval_dataset"] == runs["dataset"]
    elif own_eval is False:
        keep &= runs["eval_dataset"] != runs["dataset"]
    return runs.loc[keep]


def is_results_store(path: str | Path) -> bool:
    """Whether the file ``path`` is a crsbench results store: a DuckDB file with a ``meta``
    table, or one DuckDB cannot open (a damaged store is still crsbench's: the store's own
    checks explain it)."""
    import duckdb

    if not Path(path).is_file():
        return False
    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error:
        return True
    try:
        q = "SELECT count(*) FROM information_schema.tables WHERE table_name = 'meta'"
        return bool(con.execute(q).fetchall()[0][0])
    finally:
        con.close()


def read_meta(store_dir: str | Path) -> dict[str, Any]:
    """The ``meta`` row of ``store_dir``'s store (an empty dict when the table is absent)."""
    found = read_tables(Path(store_dir) / STORE_FILE, ("meta",))
    meta = found.get("meta")
    return meta.iloc[0].to_dict() if meta is not None and len(meta) else {}


def read_reliability(store_dir: str | Path) -> pd.DataFrame | None:
    """Table ``reliability`` of ``store_dir``'s store, or None when the store has none.

    Raises
    ------
    StoreError
        The table lacks one of :data:`~crsbench.store.columns.RELIABILITY_COLUMNS`.
    """
    path = Path(store_dir) / STORE_FILE
    table = read_tables(path, (RELIABILITY_TABLE,)).get(RELIABILITY_TABLE)
    if table is not None:
        absent = [c for c in RELIABILITY_COLUMNS if c not in table.columns]
        if absent:
            raise StoreError(
                f"results store {path}: table {RELIABILITY_TABLE!r} must have columns "
                f"{list(RELIABILITY_COLUMNS)}. Got {list(table.columns)} instead "
                f"(missing {absent})."
            )
    return table


def skipped_cells(store_dir: Path | str) -> dict[tuple[str, str], str]:
    """(encoder, dataset) → reason for the cells the last ``run --skip-missing`` left out.

    Read from ``last_run.json`` next to the store; an absent or unreadable file gives ``{}``.
    """
    path = Path(store_dir) / LAST_RUN_FILE
    try:
        rows = json.loads(path.read_text(encoding="utf-8")).get("skipped_cells", [])
    except (OSError, ValueError, AttributeError):
        return {}
    return {
        (str(r["encoder"]), str(r["dataset"])): str(r.get("reason", ""))
        for r in rows
        if isinstance(r, dict) and "encoder" in r and "dataset" in r
    }
