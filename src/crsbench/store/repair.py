"""``crsbench store repair``: move a damaged store aside and rebuild it from the last export."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from crsbench.core.errors import StoreError
from crsbench.store.files import STORE_FILE
from crsbench.store.predictions import restore_predictions
from crsbench.store.reader import read_tables
from crsbench.store.reliability import rebuild_reliability_table
from crsbench.store.schema import Transaction
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


def _readable(path: Path) -> bool:
    try:
        read_tables(path, ("meta", "runs"))
    except StoreError:
        return False
    return True


def _move_damaged(store: Path) -> list[tuple[Path, Path]]:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
    target = store.parent / "damaged"
    target.mkdir(exist_ok=True)
    moved = []
    for name in (store.name, store.name + ".wal"):
        source = store.parent / name
        if source.exists():
            dest = target / f"{stamp}.{name}"
            os.replace(source, dest)
            moved.append((source, dest))
    return moved


def _read_export(folder: Path) -> tuple[pd.DataFrame, Path] | None:
    for name, reader in (("runs.parquet", pd.read_parquet), ("runs.csv", pd.read_csv)):
        path = folder / name
        if path.is_file():
            try:
                return reader(path), path
            except (OSError, ValueError) as exc:
                raise StoreError(f"the export {path} cannot be read either: {exc}") from None
    return None


def _config_of(frame: pd.DataFrame, export: Path) -> tuple[str, str]:
    hashes = sorted(set(frame["config_hash"].astype(str)))
    if len(hashes) != 1:
        raise StoreError(f"{export}: runs must come from one config. Got hashes {hashes}.")
    meta_path = export.parent / "meta.json"
    config_json = "{}"
    if meta_path.is_file():
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        config_json = str(meta.get("config_json", "{}"))
    return hashes[0], config_json


def repair_store(out_dir: Path | str) -> RepairReport:
    """Move a damaged ``results.duckdb`` to ``damaged/`` and rebuild it from ``export/``.

    A readable store is left untouched. The rebuilt store holds the exported run records
    (validated like any append), its ``metrics`` and ``reliability`` tables recomputed.
    """
    store = Path(out_dir) / STORE_FILE
    report = RepairReport(store=store)
    if store.is_file() and _readable(store):
        report.healthy = True
        return report
    report.moved = _move_damaged(store)
    found = _read_export(Path(out_dir) / "export")
    if found is None:
        return report
    frame, report.source = found
    config_hash, config_json = _config_of(frame, report.source)
    with ResultsStore(out_dir, config_hash, config_json=config_json) as rebuilt:
        report.n_runs = rebuilt.append_frame(frame)
        with Transaction(rebuilt.con, rebuilt.path):
            report.n_predictions = restore_predictions(rebuilt.con, report.source.parent)
        rebuilt.aggregate()
        rebuild_reliability_table(rebuilt.con)
    return report
