"""Computed result tables kept beside a results store, keyed by a hash of their inputs.

``crsbench analyze`` (and ``crsbench report``, which reads the same tables) evaluates scoring,
the bootstrap and every analysis once and keeps what it computed in
``STORE/computed/<key>.zip``: one Parquet file per table (typed columns, index kept) and a
``manifest.json`` with the table names in order, the summary and the inputs the key hashes.
The key (:func:`input_key`) is the sha256 of those inputs, so a rewritten store, other anchors
or weights, another replicate count, seed, interval, crsbench version or methods revision
(``crsbench.stats.compute.ANALYSIS_METHODS``) is another key: the old file is never read for it. A file is written whole or not at all
(:func:`crsbench.core.diskio.write_atomic`): a compute that fails leaves the tables computed
before it in place. Writing a file prunes the folder (:func:`prune_computed`): of the files
crsbench wrote there (named ``<key>.zip``, with a manifest naming that key), the newest
:data:`KEEP_PER_KIND` of each kind (analyses, a rule's leaderboard, a cohort verdict) are
kept and the older ones removed; any other file is left alone.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from crsbench.core.diskio import write_atomic
from crsbench.core.errors import StoreError
from crsbench.store.files import STORE_FILE
from crsbench.store.reader import read_queries

#: Folder of the computed tables inside a store directory.
COMPUTED_DIR = "computed"
#: Layout version of a computed file (a new layout is another key; 2: the report's tables).
COMPUTED_LAYOUT = 3
#: Files of one kind kept in ``STORE/computed/`` (the newest; older ones are removed).
KEEP_PER_KIND = 3
#: The name of a file crsbench writes there (the key: 24 hex digits).
_COMPUTED_NAME = re.compile(r"^[0-9a-f]{24}\.zip$")
#: The store tables whose content the key hashes (the runs and everything read beside them).
DIGESTED_TABLES: tuple[str, ...] = (
    "runs", "meta", "plan", "cards", "predictions", "split_metadata", "reliability",
)  # fmt: skip


@dataclass(frozen=True)
class ComputedTables:
    """Named result tables (in the order they were computed) and their JSON summary."""

    tables: dict[str, pd.DataFrame]
    summary: dict[str, Any]
    inputs: dict[str, Any] = field(default_factory=dict)
    key: str = ""


def store_digest(store_dir: str | Path) -> str:
    """The sha256 of every row of the store tables :data:`DIGESTED_TABLES` (absent tables
    count as empty), rows in a fixed order: a rewritten or appended store has another one.

    Raises
    ------
    StoreError
        The store file is missing, locked or damaged.
    """
    queries = {
        t: f"SELECT md5(coalesce(string_agg(CAST(x AS VARCHAR), chr(10) "
        f"ORDER BY CAST(x AS VARCHAR)), '')) AS d FROM \"{t}\" AS x"
        for t in DIGESTED_TABLES
    }
    found = read_queries(Path(store_dir) / STORE_FILE, queries, needs=None)
    digest = hashlib.sha256()
    for name in DIGESTED_TABLES:
        value = str(found[name]["d"].iloc[0]) if name in found else "absent"
        digest.update(f"{name}={value};".encode())
    return digest.hexdigest()


def input_key(inputs: dict[str, Any]) -> str:
    """The sha256 (24 hex digits) of ``inputs`` (JSON, keys sorted) and the layout version."""
    text = json.dumps({"layout": COMPUTED_LAYOUT, **inputs}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def computed_path(store_dir: str | Path, key: str) -> Path:
    """``STORE/computed/<key>.zip``."""
    return Path(store_dir) / COMPUTED_DIR / f"{key}.zip"


def _parquet(frame: pd.DataFrame, name: str) -> bytes:
    buf = io.BytesIO()
    try:
        frame.to_parquet(buf, engine="pyarrow")
    except (TypeError, ValueError, ImportError) as exc:  # a column Parquet cannot type
        raise StoreError(f"computed table {name!r} cannot be stored as Parquet: {exc}") from exc
    return buf.getvalue()


def write_computed(store_dir: str | Path, computed: ComputedTables) -> Path:
    """Write ``computed`` to ``STORE/computed/<computed.key>.zip`` atomically, then prune the
    older files crsbench wrote there (:func:`prune_computed`).

    Raises
    ------
    StoreError
        A table has a column Parquet cannot type.
    DiskError
        The disk refused the write (the previous file, if any, is kept).
    """
    blobs = {name: _parquet(frame, name) for name, frame in computed.tables.items()}
    manifest = {"layout": COMPUTED_LAYOUT, "key": computed.key, "tables": list(blobs),
                "inputs": computed.inputs, "summary": computed.summary}  # fmt: skip

    def write(tmp: Path) -> None:
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_STORED) as zf:
            for name, blob in blobs.items():
                zf.writestr(f"tables/{name}.parquet", blob)
            zf.writestr("manifest.json", json.dumps(manifest, indent=1, default=str))

    path = write_atomic(computed_path(store_dir, computed.key), write)
    prune_computed(store_dir, keep=path)
    return path


def _kind_of(path: Path) -> str | None:
    """The kind of a computed file crsbench wrote (``inputs["kind"]``, ``"analyses"`` when
    absent); ``None`` for any file it did not write (another name, not a zip, no manifest,
    or a manifest naming another key)."""
    if not _COMPUTED_NAME.match(path.name) or not path.is_file():
        return None
    try:
        with zipfile.ZipFile(path) as zf:
            manifest = json.loads(zf.read("manifest.json"))
    except (OSError, KeyError, ValueError, zipfile.BadZipFile):
        return None
    if not isinstance(manifest, dict) or manifest.get("key") != path.stem:
        return None
    inputs = manifest.get("inputs")
    kind = inputs.get("kind") if isinstance(inputs, dict) else None
    return str(kind or "analyses")


def prune_computed(store_dir: str | Path, keep: Path | None = None,
                   per_kind: int = KEEP_PER_KIND) -> list[Path]:  # fmt: skip
    """Remove the older computed files crsbench wrote in ``STORE/computed/``: per kind, the
    newest ``per_kind`` stay (``keep``, the file just written, always stays). Files crsbench
    did not write are never touched; a file that cannot be removed is left. Returns the
    removed paths."""
    folder = Path(store_dir) / COMPUTED_DIR
    if not folder.is_dir():
        return []
    kept = None if keep is None else keep.name
    by_kind: dict[str, list[tuple[bool, int, str]]] = {}
    for path in folder.iterdir():
        kind = _kind_of(path)
        try:
            order = (path.name == kept, path.stat().st_mtime_ns, path.name)
        except OSError:  # removed meanwhile
            continue
        if kind is not None:
            by_kind.setdefault(kind, []).append(order)
    removed = []
    for files in by_kind.values():
        files.sort(reverse=True)  # the file just written first, then the newest
        for _, _, name in files[max(per_kind, 1) :]:
            old = folder / name
            try:
                old.unlink()
            except OSError:  # read-only, or removed meanwhile: left as it is
                continue
            removed.append(old)
    return removed


def read_computed(store_dir: str | Path, key: str) -> ComputedTables | None:
    """The tables stored under ``key`` (``None`` when there are none).

    Raises
    ------
    StoreError
        The file is there but unreadable (delete ``STORE/computed/`` to recompute).
    """
    path = computed_path(store_dir, key)
    if not path.is_file():
        return None
    try:
        with zipfile.ZipFile(path) as zf:
            manifest = json.loads(zf.read("manifest.json"))
            tables = {name: pd.read_parquet(io.BytesIO(zf.read(f"tables/{name}.parquet")))
                      for name in manifest["tables"]}  # fmt: skip
    except (OSError, KeyError, ValueError, zipfile.BadZipFile) as exc:
        raise StoreError(
            f"computed tables {path} must be readable. They are not ({exc}): delete the "
            f"file (or the folder {path.parent}) and run the command again to recompute them."
        ) from None
    return ComputedTables(tables, manifest["summary"], manifest.get("inputs", {}), key)
