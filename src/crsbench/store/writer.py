"""The results store: run records and seed aggregates in an embedded DuckDB file.

``out_dir/results.duckdb`` holds three tables (layout in ``docs/config_and_store.md``):
``runs`` (one row per run, primary key ``run_key``), ``metrics`` (seed aggregates rebuilt by
:meth:`ResultsStore.aggregate`) and ``meta`` (schema version and the config that owns the
store). One process writes at a time (:class:`~crsbench.store.lock.StoreLock`); every
:meth:`ResultsStore.append` batch is one transaction, so a killed writer leaves exactly the
batches it committed.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

import duckdb
import pandas as pd
import pyarrow as pa

from crsbench.core.diskio import disk_errors
from crsbench.core.errors import StoreError
from crsbench.store.cards import CardFacts, write_card_facts
from crsbench.store.columns import (
    GROUP_COLUMNS,
    METRIC_COLUMNS,
    PAYLOAD_COLUMNS,
    RUN_COLUMNS,
    SCHEMA_VERSION,
)
from crsbench.store.compact import compact_quietly
from crsbench.store.conflicts import batch_repeats_keys, conflict_message, first_row
from crsbench.store.export import export_store
from crsbench.store.files import STORE_FILE, damaged_store, locked_store, refuse_newer_schema
from crsbench.store.lock import StoreLock, check_local_filesystem
from crsbench.store.mixed import refuse_mixed_provenance
from crsbench.store.outputs import move_run_aside
from crsbench.store.predictions import PredictionBatch
from crsbench.store.records import RunRecord
from crsbench.store.revisions import changed_revision
from crsbench.store.schema import ARROW_SCHEMA, META_DDL, Transaction, metrics_ddl, runs_ddl
from crsbench.store.stored_plan import StoredPlan, write_plan
from crsbench.store.validate import validate_frame


class ResultsStore:
    """Run records of one benchmark config in ``out_dir/results.duckdb``.

    Parameters
    ----------
    out_dir : Path or str
        Store directory (created in ``"rw"`` mode).
    config_hash : str or None
        :func:`crsbench.config.config_hash` of the config writing the store. Required in
        ``"rw"`` mode; in ``"r"`` mode it is checked when given.
    mode : {"rw", "r"}
        ``"rw"`` takes the single-writer lock; ``"r"`` opens read-only without it.
    config_json : str, optional
        Resolved config text stored in ``meta`` when the store is created.
    force_new : bool
        When the store belongs to another config, move it and its derived folders
        (``export``, ``scores``, ``analysis``, ``report``, ``last_run.json``) to
        ``superseded/config-<hash12>-<utc>/`` and start a new one instead of refusing.
    allow_network_fs : bool
        Warn instead of refusing when ``out_dir`` is on NFS/SMB.
    lock : StoreLock, optional
        The store's lock, already held by the caller (``store repair``); released on close.
    dataset_revisions : mapping dataset → revision, optional
        The revisions the run uses; a store whose runs carry another revision of a dataset is
        moved aside like ``force_new`` (:mod:`crsbench.store.revisions`), with the reason in
        :attr:`moved_because`.

    Raises
    ------
    StoreError
        Store locked by another process, written by another config, of a newer schema, on a
        network filesystem, or not a crsbench store.
    """

    def __init__(
        self,
        out_dir: Path | str,
        config_hash: str | None,
        mode: Literal["rw", "r"] = "rw",
        *,
        config_json: str = "{}",
        force_new: bool = False,
        allow_network_fs: bool = False,
        lock: StoreLock | None = None,
        dataset_revisions: Mapping[str, str] | None = None,
    ) -> None:
        if mode not in ("rw", "r"):
            raise StoreError(f"mode must be 'rw' or 'r'. Got {mode!r} instead.")
        self.out_dir = Path(out_dir)
        self.path = self.out_dir / STORE_FILE
        self.mode = mode
        self.config_hash = config_hash
        self._lock: StoreLock | None = None
        #: ``(from, to)`` paths moved to ``superseded/`` by ``force_new`` (empty otherwise).
        self.moved_aside: list[tuple[Path, Path]] = []
        #: Why :attr:`moved_aside` moved: another config, or a dataset's new revision.
        self.moved_because = ""
        self._con: duckdb.DuckDBPyConnection | None = None
        if mode == "r":
            if not self.path.is_file():
                raise StoreError(f"no results store at {self.path}. Run `crsbench run` first.")
            with self._closing_on_error():
                self._con = self._connect(read_only=True)
                self._check_meta(force_new=False)
            return
        if not config_hash:
            raise StoreError("a config hash is required to open a store for writing.")
        with disk_errors(self.out_dir):
            self.out_dir.mkdir(parents=True, exist_ok=True)
        check_local_filesystem(self.out_dir, allow_network=allow_network_fs)
        self._lock = lock or StoreLock(self.out_dir)
        self._lock.acquire()
        with self._closing_on_error():
            self._con = self._connect(read_only=False)
            if not self._has_table("meta"):
                self._create(config_json)
            elif label := self._supersede_label(force_new, dataset_revisions):
                self._con.close()
                self.moved_aside = move_run_aside(self.out_dir, label)
                self._con = self._connect(read_only=False)
                self._create(config_json)

    def _supersede_label(self, force_new: bool, revisions: Mapping[str, str] | None) -> str:
        """The ``superseded/`` label when the store on disk must be moved aside, else ``""``."""
        if self._check_meta(force_new=force_new):
            self.moved_because = "another config"
            return f"config-{str(self.meta['config_hash'])[:12]}"
        changed = changed_revision(self.con, revisions)
        if changed is None:
            return ""
        self.moved_because, label = changed
        return label

    # ------------------------------------------------------------------ opening

    @contextmanager
    def _closing_on_error(self) -> Iterator[None]:
        """Close (releasing the lock) when opening fails; a DuckDB error names the damage."""
        try:
            yield
        except duckdb.Error as exc:
            self.close()
            raise damaged_store(self.path, exc, writing=self.mode == "rw") from None
        except BaseException:
            self.close()
            raise

    def _connect(self, read_only: bool) -> duckdb.DuckDBPyConnection:
        try:
            return duckdb.connect(str(self.path), read_only=read_only)
        except duckdb.Error as exc:
            if "lock" in str(exc).lower():
                raise locked_store(self.path) from None
            raise damaged_store(self.path, exc, writing=not read_only) from None

    @property
    def con(self) -> duckdb.DuckDBPyConnection:
        """The open DuckDB connection (read it; write only through this class)."""
        if self._con is None:
            raise StoreError(f"results store {self.path} is closed.")
        return self._con

    def _has_table(self, name: str) -> bool:
        q = "SELECT count(*) FROM information_schema.tables WHERE table_name = ?"
        return bool(self.con.execute(q, [name]).fetchall()[0][0])

    def _create(self, config_json: str) -> None:
        from crsbench import __version__

        with self._transaction():
            for ddl in (runs_ddl(), metrics_ddl(), META_DDL):
                self.con.execute(ddl).fetchall()
            self.con.execute(
                "INSERT INTO meta VALUES (?, ?, ?, ?, ?)",
                [SCHEMA_VERSION, self.config_hash, config_json, __version__, _now()],
            ).fetchall()

    @property
    def meta(self) -> dict[str, Any]:
        """The ``meta`` row as a dict."""
        cur = self.con.execute("SELECT * FROM meta LIMIT 1")
        names = [d[0] for d in cur.description]
        row = first_row(cur)
        if row is None:
            raise StoreError(f"results store {self.path} has an empty meta table.")
        return dict(zip(names, row, strict=True))

    def _check_meta(self, force_new: bool) -> bool:
        """Validate ``meta``; return True when the store must be moved aside (force_new)."""
        if not self._has_table("meta"):
            raise StoreError(f"{self.path} is not a crsbench results store (no meta table).")
        for table in ("runs", "metrics"):  # read every page once: a damaged file fails here
            if self._has_table(table):
                self.con.execute(f"SELECT * FROM {table}").fetchnumpy()
        meta = self.meta
        refuse_newer_schema(self.path, meta["schema_version"])
        if self.config_hash is not None and meta["config_hash"] != self.config_hash:
            if force_new:
                return True
            raise StoreError(
                f"results store {self.path} was written by config {meta['config_hash'][:12]}; "
                f"this config is {self.config_hash[:12]}. Use another --out or --force-new."
            )
        return False

    # ------------------------------------------------------------------ writing

    def _writable(self) -> None:
        if self.mode != "rw":
            raise StoreError(f"results store {self.path} was opened read-only.")

    def _transaction(self) -> Transaction:
        return Transaction(self.con, self.path)

    def record_cards(self, facts: CardFacts) -> None:
        """Record the encoders' family groups and datasets' label names (table ``cards``)."""
        self._writable()
        with self._transaction():
            write_card_facts(self.con, facts)

    def record_plan(self, plan: StoredPlan) -> None:
        """Record what each planned cell must hold (table ``plan``, :mod:`crsbench.store.stored_plan`)."""
        self._writable()
        with self._transaction():
            write_plan(self.con, plan)

    def append(
        self, records: Sequence[RunRecord], predictions: PredictionBatch | None = None
    ) -> int:
        """Add a batch of records in one transaction; return how many rows were new.

        A record whose ``run_key`` is stored with the same payload is a no-op; the same key
        with a different payload raises :class:`StoreError` showing both (nothing is written).
        Payload = every column except ``wall_time_s`` and ``created_at``. ``predictions``
        (the records' per-sample predictions) are written in the same transaction.
        """
        self._writable()
        if not records:
            return 0
        rows = []
        for rec in records:
            if not isinstance(rec, RunRecord):
                raise StoreError(f"append takes RunRecord objects. Got {type(rec).__name__}.")
            rows.append(rec.to_row())
        return self._append_arrow(pa.Table.from_pylist(rows, schema=ARROW_SCHEMA), predictions)

    def append_frame(self, frame: pd.DataFrame, predictions: PredictionBatch | None = None) -> int:
        """Bulk form of :meth:`append` for a DataFrame of :data:`RUN_COLUMNS` (``details`` as
        JSON text; ``run_key`` is recomputed and must match when present). Validated
        column-wise with the same rules as :class:`RunRecord`; ``predictions`` are written in
        the same transaction."""
        self._writable()
        frame = validate_frame(frame, self.config_hash or "")
        return self._append_arrow(
            pa.Table.from_pandas(frame, schema=ARROW_SCHEMA, preserve_index=False), predictions
        )

    def _append_arrow(self, table: pa.Table, predictions: PredictionBatch | None = None) -> int:
        bad = [h for h in set(table.column("config_hash").to_pylist()) if h != self.config_hash]
        if bad:
            raise StoreError(
                f"records carry config hash {bad[0][:12]} but the store belongs to "
                f"{str(self.config_hash)[:12]}; records of another config cannot be appended."
            )
        cols = ", ".join(RUN_COLUMNS)
        same = " AND ".join(f"i.{c} IS NOT DISTINCT FROM r.{c}" for c in PAYLOAD_COLUMNS)
        with self._transaction():
            self.con.register("_incoming", table)
            try:
                has_dups = batch_repeats_keys(self.con, table.num_rows)
                conflicts = self.con.execute(
                    f"SELECT i.run_key FROM _incoming i JOIN runs r ON i.run_key = r.run_key "
                    f"WHERE NOT ({same}) LIMIT 5"
                ).fetchall()
                if conflicts:
                    raise StoreError(conflict_message(self.con, [k for (k,) in conflicts]))
                source = (
                    "(SELECT DISTINCT ON (run_key) * FROM _incoming)" if has_dups else "_incoming"
                )
                inserted = self.con.execute(
                    f"INSERT INTO runs SELECT {cols} FROM {source} i "
                    "WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.run_key = i.run_key)"
                ).fetchall()
                if predictions is not None:
                    predictions.insert(self.con)
                return int(inserted[0][0]) if inserted else 0
            finally:
                self.con.unregister("_incoming")

    def count(self) -> int:
        """Number of rows in ``runs``."""
        return int(self.con.execute("SELECT count(*) FROM runs").fetchall()[0][0])

    def aggregate(self, *, allow_mixed: bool = False) -> int:
        """Rebuild ``metrics`` from ``runs`` (SQL GROUP BY over every identity column but seed).

        ``mean`` is the average over seeds with a value; ``std`` the sample standard deviation
        (ddof=1; NULL with one seed); ``n_seeds`` the number of runs in the group and
        ``<metric>_n_seeds`` how many had a value. Groups whose runs mix package versions or
        encoder/dataset revisions are refused unless ``allow_mixed``. Returns the row count.
        """
        self._writable()
        if not allow_mixed:
            refuse_mixed_provenance(self.con)
        aggs = ", ".join(f"avg({m}), stddev_samp({m}), count({m})" for m in METRIC_COLUMNS)
        group = ", ".join(GROUP_COLUMNS)
        with self._transaction():
            self.con.execute("DELETE FROM metrics").fetchall()
            self.con.execute(
                f"INSERT INTO metrics SELECT {group}, count(*), {aggs} FROM runs GROUP BY {group}"
            ).fetchall()
        return int(self.con.execute("SELECT count(*) FROM metrics").fetchall()[0][0])

    # ------------------------------------------------------------------ reading

    def done_keys(self) -> set[str]:
        """Every stored ``run_key``."""
        return set(self.con.execute("SELECT run_key FROM runs").fetchnumpy()["run_key"].tolist())

    def has_keys(self, keys: Iterable[str]) -> set[str]:
        """The subset of ``keys`` already stored (one indexed join, fast for many keys)."""
        probe = pa.table({"run_key": pa.array(list(keys), pa.string())})
        self.con.register("_probe", probe)
        try:
            got = self.con.execute("SELECT r.run_key FROM runs r JOIN _probe p USING (run_key)")
            return set(got.fetchnumpy()["run_key"].tolist())
        finally:
            self.con.unregister("_probe")

    def runs_frame(self) -> pd.DataFrame:
        """Table ``runs`` as a DataFrame ordered by ``run_key``."""
        return self.con.execute("SELECT * FROM runs ORDER BY run_key").df()

    def metrics_frame(self) -> pd.DataFrame:
        """Table ``metrics`` as a DataFrame ordered by the group columns."""
        return self.con.execute(f"SELECT * FROM metrics ORDER BY {', '.join(GROUP_COLUMNS)}").df()

    def audit(self) -> dict[str, int]:
        """Integrity counts: rows, duplicate keys, rows of another config, missing provenance."""
        q = (
            "SELECT count(*), count(*) - count(DISTINCT run_key), "
            "count(*) FILTER (WHERE config_hash <> ?), "
            "count(*) FILTER (WHERE package_version = '' OR encoder_revision = '' "
            "OR dataset_revision = '' OR anchors_version = '') FROM runs"
        )
        rows, dup, other, missing = self.con.execute(q, [self.meta["config_hash"]]).fetchall()[0]
        return {
            "rows": rows,
            "duplicate_keys": dup,
            "other_config": other,
            "missing_provenance": missing,
        }

    def export(
        self, fmt: Literal["parquet", "csv"] = "parquet", dest: Path | str | None = None
    ) -> dict[str, Path]:
        """Write ``runs`` and ``metrics`` to ``dest/runs.<fmt>`` and ``dest/metrics.<fmt>``, and
        the ``meta`` row to ``dest/meta.json``, atomically (temporary file + rename); ``dest``
        defaults to ``out_dir``. ``crsbench store repair`` rebuilds a store from these."""
        folder = Path(dest) if dest is not None else self.out_dir
        return export_store(self.con, self.meta, folder, fmt)

    # ------------------------------------------------------------------ lifetime

    def close(self, *, compact: bool = False) -> None:
        """Checkpoint and close the database, with ``compact`` give its free blocks back to
        the disk (:func:`crsbench.store.compact.compact_quietly`), then release the lock."""
        con, self._con = self._con, None
        try:
            if con is not None:
                if self.mode == "rw":
                    try:
                        con.execute("CHECKPOINT").fetchall()
                    except duckdb.Error:
                        compact = False
                con.close()
                if compact and self.mode == "rw":
                    compact_quietly(self.path)
        finally:
            if self._lock is not None:
                self._lock.release()
                self._lock = None

    def __enter__(self) -> ResultsStore:
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        self.close(compact=exc_type is None)

    def __del__(self) -> None:  # pragma: no cover - safety net
        if getattr(self, "_con", None) is not None or getattr(self, "_lock", None) is not None:
            self.close()


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)
