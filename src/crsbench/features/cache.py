"""A content-addressed, checksummed, crash-safe store of feature arrays.

Layout under ``root``::

    objects/ab/<key>.json            manifest = the commit marker (written last, atomically)
    objects/ab/<key>.<sha16>.npy     the array; its name carries the first 16 hex of its sha256
    corrupt/                         entries that failed verification, moved aside, never read
    locks/<name>.lock                flock files (released by the kernel when a process dies)
    quarantine.jsonl                 ledger of images that could not be decoded

An entry exists only once its manifest is in place. Both files are written to a temporary
name in the same directory, fsynced, then ``os.replace``-d, and the directory is fsynced.
Because the array file name includes its checksum, two processes racing on one key never mix
bytes: each manifest names a complete file, and the loser's array becomes an orphan that
:meth:`FeatureCache.gc` removes. Every read re-hashes the array file and checks size, shape,
dtype and the id list against the manifest; a mismatch is logged, the entry moved to
``corrupt/`` and reported as ``"corrupt"`` so the caller recomputes it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from crsbench.core.diskio import disk_errors, make_folder, reserve_space
from crsbench.core.errors import CacheError

log = logging.getLogger(__name__)

FEATURE_FORMAT_VERSION = 1
#: What a cache holds directly under its root (``precision/``: the precision check's figures).
CACHE_LAYOUT: tuple[str, ...] = ("objects", "corrupt", "locks", "quarantine.jsonl", "precision")
_CHUNK = 1 << 22


def sha256_text(items: Sequence[str]) -> str:
    """sha256 of the newline-joined strings (the hash of an id list)."""
    h = hashlib.sha256()
    for i, s in enumerate(items):
        if i:
            h.update(b"\n")
        h.update(str(s).encode("utf-8"))
    return h.hexdigest()


def make_key(parts: Mapping[str, Any]) -> str:
    """Cache key: sha256 of the canonical JSON of ``parts`` (sorted keys, no spaces)."""
    blob = json.dumps(dict(parts), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass
class CacheRead:
    """Outcome of :meth:`FeatureCache.get`.

    Attributes
    ----------
    status : str
        ``"hit"`` (verified), ``"miss"`` (no committed entry) or ``"corrupt"`` (an entry
        failed verification and was moved to ``corrupt/``).
    array : numpy.ndarray or None
        Read-only memory map of the verified array on a hit.
    ids : numpy.ndarray or None
        The row ids stored with the array on a hit.
    manifest : dict or None
        The manifest on a hit.
    problem : str or None
        What failed, for ``"corrupt"``.
    """

    status: str
    array: np.ndarray | None = None
    ids: np.ndarray | None = None
    manifest: dict[str, Any] | None = None
    problem: str | None = None


class FeatureCache:
    """Content-addressed feature store rooted at ``root`` (created if absent).

    Parameters
    ----------
    root : str or path-like
        Cache directory. Do not share it with users you do not trust.
    events : list of dict
        Every corrupt entry detected is appended here (and logged as a warning).
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.events: list[dict[str, str]] = []
        for sub in ("objects", "corrupt", "locks"):
            with disk_errors(self.root / sub):
                (self.root / sub).mkdir(parents=True, exist_ok=True)

    # -- paths -----------------------------------------------------------------------------
    def _dir(self, key: str) -> Path:
        return self.root / "objects" / key[:2]

    def manifest_path(self, key: str) -> Path:
        """Path of the manifest (commit marker) of ``key``."""
        return self._dir(key) / f"{key}.json"

    def array_path(self, key: str) -> Path | None:
        """Path of the committed array file of ``key``, or None if not committed."""
        try:
            name = json.loads(self.manifest_path(key).read_text())["file"]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return self._dir(key) / str(name)

    def _tmp(self, directory: Path, key: str, suffix: str) -> Path:
        return directory / f".{key}.{os.getpid()}.{uuid.uuid4().hex[:8]}{suffix}.tmp"

    # -- read ------------------------------------------------------------------------------
    def get(self, key: str) -> CacheRead:
        """Read and verify the entry ``key``; see :class:`CacheRead` for the outcomes."""
        mpath = self.manifest_path(key)
        if not mpath.exists():
            return CacheRead("miss")
        try:
            man = json.loads(mpath.read_text())
            if man.get("format") != FEATURE_FORMAT_VERSION or man.get("key") != key:
                raise ValueError(
                    f"manifest format/key must be {FEATURE_FORMAT_VERSION}/{key}. Got "
                    f"{man.get('format')}/{man.get('key')} instead"
                )
            apath = self._dir(key) / str(man["file"])
            if not apath.is_file():
                raise ValueError(f"array file {apath} is missing")
            size = apath.stat().st_size
            if size != int(man["bytes"]):
                raise ValueError(f"{apath} must have {man['bytes']} bytes. Got {size} instead")
            digest = _sha256_file(apath)
            if digest != man["sha256"]:
                raise ValueError(f"sha256 of {apath} must be {man['sha256']}. Got {digest}")
            arr = np.load(apath, mmap_mode="r", allow_pickle=False)
            if list(arr.shape) != list(man["shape"]) or str(arr.dtype) != man["dtype"]:
                raise ValueError(
                    f"{apath} must hold {man['dtype']}{man['shape']}. "
                    f"Got {arr.dtype}{list(arr.shape)} instead"
                )
            ids = np.asarray(man["ids"], dtype=str)
            if len(ids) != arr.shape[0] or sha256_text(ids.tolist()) != man["ids_sha256"]:
                raise ValueError(f"id list of {mpath} does not match its hash or row count")
        except (OSError, ValueError, KeyError, TypeError) as exc:
            return self._quarantine_entry(key, f"{type(exc).__name__}: {exc}")
        return CacheRead("hit", array=arr, ids=ids, manifest=man)

    def _quarantine_entry(self, key: str, problem: str) -> CacheRead:
        mpath = self.manifest_path(key)
        apath = self.array_path(key)
        stamp = time.strftime("%Y%m%dT%H%M%S")
        dest = self.root / "corrupt" / f"{stamp}-{key[:16]}-{uuid.uuid4().hex[:6]}"
        make_folder(dest)
        for p in (apath, mpath):
            if p is not None and p.exists():
                with contextlib.suppress(OSError):
                    os.replace(p, dest / p.name)
        msg = f"feature cache entry {mpath} is corrupt ({problem}); moved to {dest}, recomputing"
        log.warning(msg)
        self.events.append(
            {"key": key, "event": "corrupt", "problem": problem, "moved_to": str(dest)}
        )
        return CacheRead("corrupt", problem=problem)

    # -- write -----------------------------------------------------------------------------
    def put(
        self,
        key: str,
        array: np.ndarray,
        ids: Sequence[str],
        parts: Mapping[str, Any],
        extra: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Commit ``array`` (rows aligned with ``ids``) under ``key``; return its manifest.

        Raises
        ------
        CacheError
            If rows contain NaN/Inf (with the count and the first offending ids), or if the
            row count and id count differ.
        """
        arr = np.ascontiguousarray(array)
        self._check_rows(arr, ids)
        return self.put_streaming(
            key, arr.shape, arr.dtype, ids, parts, lambda out: _copy(out, arr), extra
        )

    def put_streaming(
        self,
        key: str,
        shape: tuple[int, ...],
        dtype: np.dtype | str,
        ids: Sequence[str],
        parts: Mapping[str, Any],
        fill: Callable[[np.ndarray], None],
        extra: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Commit an array written in place by ``fill(memmap)`` (bounded memory)."""
        ids = [str(i) for i in ids]
        if len(ids) != shape[0]:
            raise CacheError(f"entry {key} must have one id per row ({shape[0]}). Got {len(ids)}")
        d = self._dir(key)
        with disk_errors(d):
            d.mkdir(parents=True, exist_ok=True)
        tmp = self._tmp(d, key, ".npy")
        mtmp = self._tmp(d, key, ".json")
        try:
            _write_array(tmp, shape, np.dtype(dtype), fill)
            digest = _sha256_file(tmp)
            final = d / f"{key}.{digest[:16]}.npy"
            os.replace(tmp, final)
            manifest = {
                "format": FEATURE_FORMAT_VERSION,
                "key": key,
                "file": final.name,
                "bytes": final.stat().st_size,
                "sha256": digest,
                "shape": list(shape),
                "dtype": str(np.dtype(dtype)),
                "ids": ids,
                "ids_sha256": sha256_text(ids),
                "parts": dict(parts),
                "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                **dict(extra or {}),
            }
            with disk_errors(self.manifest_path(key), exact=True), open(mtmp, "w") as f:
                json.dump(manifest, f, default=str)
                f.flush()
                os.fsync(f.fileno())
            os.replace(mtmp, self.manifest_path(key))
            _fsync_dir(d)
        finally:
            for p in (tmp, mtmp):
                with contextlib.suppress(OSError):
                    p.unlink()
        return manifest

    @staticmethod
    def _check_rows(arr: np.ndarray, ids: Sequence[str]) -> None:
        if arr.ndim < 1 or arr.shape[0] != len(ids):
            raise CacheError(f"array must have one row per id ({len(ids)}). Got shape {arr.shape}")
        if arr.dtype.kind == "f" and arr.size:
            bad = ~np.isfinite(arr.reshape(arr.shape[0], -1)).all(axis=1)
            if bad.any():
                first = [str(ids[i]) for i in np.flatnonzero(bad)[:10]]
                raise CacheError(
                    f"features must be finite. Got NaN/Inf in {int(bad.sum())} of "
                    f"{arr.shape[0]} rows; first ids: {first}"
                )

    # -- locks, ledger, housekeeping ---------------------------------------------------------
    @contextlib.contextmanager
    def lock(self, name: str, timeout_s: float = 3600.0) -> Iterator[None]:
        """Exclusive inter-process lock ``name`` (flock; freed by the kernel if we die)."""
        import fcntl

        path = self.root / "locks" / f"{name}.lock"
        with disk_errors(path):  # only the open: the locked block's own errors stay theirs
            handle = open(path, "a+")
        with handle as f:
            deadline = time.monotonic() + timeout_s
            while True:
                try:
                    fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError as exc:
                    if time.monotonic() > deadline:
                        raise CacheError(f"lock {path} held by another process") from exc
                    time.sleep(0.05)
            try:
                f.seek(0)
                f.truncate()
                f.write(str(os.getpid()))
                f.flush()
                yield
            finally:
                fcntl.flock(f.fileno(), fcntl.LOCK_UN)

    @property
    def ledger_path(self) -> Path:
        """Path of the quarantine ledger (JSON lines)."""
        return self.root / "quarantine.jsonl"

    def append_quarantine(self, records: Sequence[Mapping[str, Any]]) -> None:
        """Append records to the quarantine ledger (fsynced)."""
        if not records:
            return
        with disk_errors(self.ledger_path), open(self.ledger_path, "a") as f:
            for r in records:
                f.write(json.dumps(dict(r), sort_keys=True) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def read_quarantine(self) -> list[dict[str, Any]]:
        """Ledger records, deduplicated on (path, error_class, dataset_revision); a torn
        final line (a crash mid-append) is skipped with a warning."""
        if not self.ledger_path.exists():
            return []
        seen: dict[tuple[str, str, str], dict[str, Any]] = {}
        for n, line in enumerate(self.ledger_path.read_text().splitlines(), start=1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except ValueError:
                log.warning("quarantine ledger %s line %d is torn; skipped", self.ledger_path, n)
                continue
            k = (
                str(rec.get("path")),
                str(rec.get("error_class")),
                str(rec.get("dataset_revision")),
            )
            seen.setdefault(k, rec)
        return list(seen.values())

    def gc(self) -> list[Path]:
        """Remove orphan array files (named by no manifest) and temp files of dead processes."""
        removed: list[Path] = []
        for d in (self.root / "objects").glob("??"):
            referenced = set()
            for m in d.glob("*.json"):
                with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
                    referenced.add(json.loads(m.read_text())["file"])
            for p in d.iterdir():
                orphan = p.suffix == ".npy" and p.name not in referenced
                stale_tmp = p.name.endswith(".tmp") and not _tmp_owner_alive(p.name)
                if orphan or stale_tmp:
                    with contextlib.suppress(OSError):
                        p.unlink()
                        removed.append(p)
        return removed


def _tmp_owner_alive(name: str) -> bool:
    try:
        return _pid_alive(int(name.split(".")[2]))
    except (IndexError, ValueError):
        return False


def _write_array(
    tmp: Path, shape: tuple[int, ...], dtype: np.dtype, fill: Callable[[np.ndarray], None]
) -> None:
    """Write the ``.npy`` file ``tmp`` through a map filled by ``fill``; its bytes are
    reserved first, so a full disk is a DiskError naming the file, never a SIGBUS."""
    with disk_errors(tmp, int(np.prod(shape)) * dtype.itemsize):
        out = np.lib.format.open_memmap(tmp, mode="w+", dtype=dtype, shape=tuple(shape))
        try:
            reserve_space(tmp, tmp.stat().st_size)
            fill(out)
            out.flush()
        finally:
            del out
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())


def _copy(out: np.ndarray, arr: np.ndarray) -> None:
    out[...] = arr
