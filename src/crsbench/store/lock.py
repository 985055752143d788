"""Single-writer lock of a results store, and the network-filesystem guard.

The lock is ``out_dir/.lock``: a file holding the holder's pid, hostname and start time,
locked with :func:`fcntl.flock` for as long as the holder lives. The kernel drops the flock
when the holder dies (``kill -9`` included), so a lock file whose flock can be taken is stale:
it is taken over with a :class:`StoreLockWarning` naming the previous holder. A lock file
written by another host is never taken over automatically (its holder cannot be checked).
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import sys
import warnings
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from crsbench.core.diskio import make_folder
from crsbench.core.errors import StoreError
from crsbench.store.files import LOCK_FILE

#: Filesystem types on which SQLite/DuckDB file locking is not reliable.
NETWORK_FS_TYPES: frozenset[str] = frozenset(
    {"nfs", "nfs4", "cifs", "smb", "smb2", "smb3", "smbfs", "fuse.sshfs", "afs", "9p", "ncpfs"}
)


#: File descriptors of the locks this process holds. A forked child (a worker of a process
#: pool, a data-loader worker) closes its copies at once: a flock belongs to the open file, so
#: a child outliving a killed holder would otherwise keep the store locked.
_HELD_FDS: set[int] = set()


def _drop_inherited_locks() -> None:
    """In a forked child: close the copies of the parent's lock descriptors (closing a copy
    leaves the parent's flock in place)."""
    for fd in list(_HELD_FDS):
        try:
            os.close(fd)
        except OSError:
            pass
    _HELD_FDS.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_drop_inherited_locks)


class StoreLockWarning(UserWarning):
    """A stale lock was taken over, or a store sits on a network filesystem by request."""


def _proc_start(pid: int) -> str | None:
    """Start time of ``pid`` in clock ticks since boot (Linux), to tell reused pids apart."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def pid_alive(pid: int, proc_start: str | None = None) -> bool:
    """Whether process ``pid`` exists on this host (and, if given, started at ``proc_start``)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    if proc_start is not None:
        now = _proc_start(pid)
        return now is None or now == proc_start
    return True


def describe_holder(info: dict[str, Any]) -> str:
    """Human form of a lock file's content."""
    return (
        f"pid {info.get('pid')} on host {info.get('hostname')!r}, "
        f"started {info.get('started_at')} ({info.get('command', '?')})"
    )


class StoreLock:
    """Exclusive, process-lifetime lock on a store directory.

    Parameters
    ----------
    out_dir : Path
        The store directory; the lock file is ``out_dir/.lock``.

    Raises
    ------
    StoreError
        From :meth:`acquire` when another live process holds the lock; the message names it.
    """

    def __init__(self, out_dir: Path | str) -> None:
        self.path = Path(out_dir) / LOCK_FILE
        self._fd: int | None = None
        self._owner = os.getpid()  # the process that took the lock (a forked child does not)

    @property
    def held(self) -> bool:
        """Whether this object holds the lock."""
        return self._fd is not None

    def _read(self, fd: int) -> dict[str, Any]:
        raw = os.pread(fd, 65536, 0)
        if not raw.strip():
            return {}
        try:
            info = json.loads(raw.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            return {"unreadable": raw[:80].decode("utf-8", "replace")}
        return info if isinstance(info, dict) else {"unreadable": str(info)[:80]}

    def acquire(self) -> None:
        """Take the lock or raise :class:`StoreError` naming the holder."""
        if self._fd is not None:
            return
        make_folder(self.path.parent)
        for _ in range(50):
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = self._read(fd)
                os.close(fd)
                raise StoreError(
                    f"results store {self.path.parent} is in use by another process: "
                    f"{describe_holder(holder)}. Only one writer may use a store; wait for it "
                    f"to finish or use another --out."
                ) from None
            try:
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if not same:  # the previous holder removed the file between open and flock
                os.close(fd)
                continue
            try:
                self._take_over(fd)
            except BaseException:
                os.close(fd)
                raise
            self._fd, self._owner = fd, os.getpid()
            _HELD_FDS.add(fd)
            return
        raise StoreError(f"could not acquire {self.path}: it kept changing under us.")

    def _take_over(self, fd: int) -> None:
        previous = self._read(fd)
        host = socket.gethostname()
        if previous:
            if previous.get("hostname") not in (None, host):
                raise StoreError(
                    f"results store {self.path.parent} has a lock written on another host: "
                    f"{describe_holder(previous)}. crsbench cannot check that process; if it "
                    f"has finished, delete {self.path} and retry."
                )
            pid = previous.get("pid")
            alive = isinstance(pid, int) and pid_alive(pid, previous.get("proc_start"))
            state = "is alive but no longer holds it" if alive else "is gone (killed or crashed)"
            warnings.warn(
                f"taking over the stale lock {self.path} of {describe_holder(previous)}: "
                f"that process {state}.",
                StoreLockWarning,
                stacklevel=4,
            )
        info = {
            "pid": os.getpid(),
            "hostname": host,
            "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "proc_start": _proc_start(os.getpid()),
            "command": " ".join(os.path.basename(a) for a in sys.argv[:3]) or "python",
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(info).encode("utf-8"), 0)
        os.fsync(fd)

    def release(self) -> None:
        """Remove the lock file and drop the flock (no-op when not held)."""
        fd, self._fd = self._fd, None
        if fd is None or os.getpid() != self._owner:  # a forked child: its copy is closed
            return
        _HELD_FDS.discard(fd)
        try:
            if os.fstat(fd).st_ino == os.stat(self.path).st_ino:
                os.unlink(self.path)
        except FileNotFoundError:
            pass
        finally:
            os.close(fd)

    def __enter__(self) -> StoreLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _unescape_mount(field: str) -> str:
    return (
        field.replace("\\040", " ")
        .replace("\\011", "\t")
        .replace("\\012", "\n")
        .replace("\\134", "\\")
    )


def filesystem_type(path: Path | str, mounts: Path | str = "/proc/mounts") -> str | None:
    """Type of the filesystem holding ``path`` (longest mount-point prefix), or None if unknown."""
    try:
        lines = Path(mounts).read_text().splitlines()
    except OSError:
        return None
    target = os.path.realpath(path)
    best, fstype = "", None
    for line in lines:
        parts = line.split()
        if len(parts) < 3:
            continue
        mnt = _unescape_mount(parts[1])
        inside = target == mnt or target.startswith(mnt.rstrip("/") + "/")
        if inside and len(mnt) >= len(best):
            best, fstype = mnt, parts[2]
    return fstype


def check_local_filesystem(
    path: Path | str, *, allow_network: bool = False, mounts: Path | str = "/proc/mounts"
) -> None:
    """Refuse (or, with ``allow_network``, warn about) a store on a network filesystem.

    DuckDB and SQLite rely on POSIX locks that NFS/SMB do not honour reliably, so a store
    there can be corrupted by two writers.
    """
    fstype = filesystem_type(path, mounts)
    if fstype is None or fstype.lower() not in NETWORK_FS_TYPES:
        return
    message = (
        f"results store {path} is on a network filesystem ({fstype}); file locks are not "
        "reliable there and the DuckDB store could be corrupted"
    )
    if not allow_network:
        raise StoreError(message + ". Use a local disk for --out (copy results afterwards).")
    warnings.warn(message + " (allowed by request).", StoreLockWarning, stacklevel=2)
