"""``crsbench store repair``: move a damaged store aside and rebuild it from the last export."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from crsbench.core.diskio import disk_error
from crsbench.core.errors import StoreError
from crsbench.store.files import STORE_FILE, locked_store
from crsbench.store.lock import StoreLock
from crsbench.store.maintenance import maintenance_lock, store_folder
from crsbench.store.predictions import restore_predictions
from crsbench.store.reliability import rebuild_reliability_table
from crsbench.store.schema import Transaction
from crsbench.store.validate import validate_frame
from crsbench.store.writer import ResultsStore


@dataclass
class RepairReport:
    """What :func:`repair_store` did."""

    store: Path
    healthy: bool = False
    moved: list[tuple[Path, Path]] = field(default_factory=list)
    source: Path | None = None
    n_runs: int = 0
    n_predictions: int = 0

    def lines(self) -> list[str]:
        """Plain sentences for the console."""
        if self.healthy:
            return [f"{self.store} is readable: nothing to repair."]
        out = [f"moved {a} -> {b}" for a, b in self.moved]
        if self.source is None:
            out.append(
                f"no export to rebuild from; `crsbench run` with the same config recreates "
                f"{self.store} from the feature cache."
            )
        else:
            out.append(f"rebuilt {self.store} with {self.n_runs} run records from {self.source}")
            out.append(
                f"restored {self.n_predictions} per-sample predictions"
                if self.n_predictions
                else "the export has no per-sample predictions: score and report fall back to "
                "the seed-only bootstrap until `crsbench run` is repeated in a new --out"
            )
        return out


def _healthy(store: Path) -> bool:
    """Whether ``store`` opens and its ``meta`` and ``runs`` tables read; a store DuckDB
    reports as locked by another process is refused (it is in use, not damaged)."""
    import duckdb

    if not store.is_file():
        return False
    try:
        con = duckdb.connect(str(store), read_only=True)
    except duckdb.Error as exc:
        if "lock" in str(exc).lower():
            raise locked_store(store) from None
        return False
    try:
        for table in ("meta", "runs"):  # read every row: damage shows on reading
            con.execute(f"SELECT * FROM {table}").fetchall()
        return True
    except duckdb.Error:
        return False
    finally:
        con.close()


def _move_damaged(store: Path) -> list[tuple[Path, Path]]:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
    target = store.parent / "damaged"
    moved = []
    for name in (store.name, store.name + ".wal"):
        source = store.parent / name
        if source.exists():
            dest = target / f"{stamp}.{name}"
            try:
                target.mkdir(exist_ok=True)
                os.replace(source, dest)
            except OSError as exc:
                if disk := disk_error(exc, dest):
                    raise disk from None
                raise StoreError(
                    f"cannot move {source} to {dest}: {exc.strerror or exc}; nothing was "
                    "rebuilt. Move it away yourself and rerun `crsbench store repair`."
                ) from None
            moved.append((source, dest))
    return moved


def _read_export(folder: Path) -> tuple[pd.DataFrame, Path] | None:
    """The first readable runs table of the export (Parquet, else CSV), or None if absent."""
    problems = []
    for name, reader in (("runs.parquet", pd.read_parquet), ("runs.csv", pd.read_csv)):
        path = folder / name
        if not path.is_file():
            continue
        try:
            frame = reader(path)
        except Exception as exc:  # any reader failure means a damaged file
            text = str(exc).strip()
            problems.append(f"{path} ({text.splitlines()[0] if text else type(exc).__name__})")
            continue
        if "config_hash" not in frame.columns:
            problems.append(f"{path} (no config_hash column: not a crsbench export)")
            continue
        return frame, path
    if problems:
        raise StoreError(
            "the export cannot be read either: " + "; ".join(problems) + ". Nothing was "
            "moved; `crsbench run` with the same config recreates the store from the cache."
        )
    return None


def _config_of(frame: pd.DataFrame, export: Path) -> tuple[str, str]:
    hashes = sorted(set(frame["config_hash"].astype(str)))
    if len(hashes) != 1:
        raise StoreError(f"{export}: runs must come from one config. Got hashes {hashes}.")
    meta_path = export.parent / "meta.json"
    config_json = "{}"
    if meta_path.is_file():
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            config_json = str(meta.get("config_json", "{}"))
        except (OSError, ValueError, AttributeError) as exc:
            raise StoreError(f"the export's {meta_path} cannot be read: {exc}") from None
    return hashes[0], config_json


def repair_store(out_dir: Path | str) -> RepairReport:
    """Move a damaged ``results.duckdb`` to ``damaged/`` and rebuild it from ``export/``.

    A readable store is left untouched, and so is a store another process holds (its lock
    names the process) and any folder crsbench did not write. The export is read before
    anything moves (``runs.parquet``, else ``runs.csv``). The rebuilt store holds the
    exported run records (validated like any append), its ``metrics`` and ``reliability``
    tables recomputed.

    Raises
    ------
    StoreError
        The folder is missing or not crsbench's, the store is in use, or the export is
        damaged too.
    """
    folder = store_folder(out_dir, "crsbench store repair")
    store = folder / STORE_FILE
    report = RepairReport(store=store)
    lock = maintenance_lock(folder, "crsbench store repair")
    try:
        if _healthy(store):
            report.healthy = True
            return report
        found = _read_export(folder / "export")
        if found is not None:
            config = _config_of(*found)
            validate_frame(found[0], config[0])
        report.moved = _move_damaged(store)
        if found is not None:
            report.source = found[1]
            _rebuild(report, found[0], config, lock)
    finally:
        lock.release()
    return report


def _rebuild(report: RepairReport, frame: pd.DataFrame, config: tuple[str, str],
             lock: StoreLock) -> None:  # fmt: skip
    assert report.source is not None
    with ResultsStore(report.store.parent, config[0], config_json=config[1], lock=lock) as new:
        report.n_runs = new.append_frame(frame)
        with Transaction(new.con, new.path):
            report.n_predictions = restore_predictions(new.con, report.source.parent)
        new.aggregate()
        rebuild_reliability_table(new.con)
