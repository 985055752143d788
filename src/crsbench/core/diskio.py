"""One home for a disk that refuses a write: full, read-only, or no permission.

Every write site turns an :class:`OSError` of these kinds into a :class:`DiskError` that names
the path (and, for a full disk, the space needed and free) with :func:`disk_error` or
:func:`disk_errors`; the command line turns one that slipped through into the same message
(``crsbench.cli.app``). A memory-mapped write reserves its bytes first
(:func:`reserve_space`): writing into a hole of a sparse file on a full disk is a SIGBUS,
which no ``try`` can catch.
"""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from crsbench.core.errors import DiskError

#: errno → kind of refusal (the kinds :class:`DiskError` reports).
DISK_ERRNOS: dict[int, str] = {
    errno.ENOSPC: "full",
    errno.EDQUOT: "full",
    errno.EROFS: "read-only",
    errno.EACCES: "permission",
    errno.EPERM: "permission",
}
_MIB = 1 << 20


def _mib(n: int) -> str:
    return f"{n / _MIB:,.1f} MiB"


def free_bytes(path: str | os.PathLike[str]) -> int | None:
    """Bytes free on the file system of ``path`` (its nearest existing folder); None if unknown."""
    here = Path(path)
    while not here.exists() and here != here.parent:
        here = here.parent
    try:
        return shutil.disk_usage(here).free
    except OSError:
        return None


def _full_message(path: str, needed: int | None) -> str:
    free = free_bytes(path)
    have = f"{_mib(free)} free" if free is not None else "free space unknown"
    need = f"needs {_mib(needed)}, " if needed else ""
    return (
        f"disk full: cannot write {path} ({need}{have} on that file system). Free some space "
        "or choose a folder on another disk, then run the same command again; nothing "
        "half-written was kept."
    )


def disk_message(kind: str, path: str, needed: int | None = None) -> str:
    """The message of a :class:`DiskError` of ``kind`` at ``path`` (``read-permission``: a
    file or folder that may not be read, which is no write at all)."""
    if kind == "full":
        return _full_message(path, needed)
    if kind == "read-permission":
        return (
            f"cannot read {path}: permission denied. Change its permissions (or run as a user "
            "who may read it); nothing was written."
        )
    if kind == "read-only":
        return (
            f"cannot write {path}: the file system is read-only. Choose a writable folder "
            "(--out, output_dir or cache_dir); nothing was written there."
        )
    return (
        f"cannot write {path}: permission denied. Choose a folder you may write to (--out, "
        "output_dir or cache_dir), or change its permissions; nothing was written there."
    )


def disk_error(
    exc: BaseException,
    path: str | os.PathLike[str] | None = None,
    needed: int | None = None,
    *,
    exact: bool = False,
) -> DiskError | None:
    """``exc`` as a :class:`DiskError` naming a path, or None when it is another error.

    Parameters
    ----------
    exc : BaseException
        Usually an :class:`OSError`; a :class:`DiskError` is returned as it is.
    path : path-like, optional
        What was being written, named when ``exc`` names no file (a ``write`` that failed).
    needed : int, optional
        Bytes the write needed (shown for a full disk).
    exact : bool
        Name ``path`` even when ``exc`` names a file (the hidden temporary file of an
        atomic write, which the user never sees).
    """
    if isinstance(exc, DiskError):
        return exc
    kind = DISK_ERRNOS.get(getattr(exc, "errno", None) or -1) if isinstance(exc, OSError) else None
    if kind is None:
        return None
    named = None if exact else getattr(exc, "filename", None)
    where = str(named or path or "a file")
    return DiskError(disk_message(kind, where, needed), path=where, kind=kind)


def uncaught_os_error(exc: BaseException) -> DiskError | None:
    """An :class:`OSError` that reached the command line uncaught, as a :class:`DiskError`.

    Every write goes through this module and is named there, so what arrives here was not
    caught by a writer: a full or read-only disk is still a refused write, but a permission
    error on a file or folder that exists came from reading it (opening, listing), so it
    says ``cannot read``; one on a path that does not exist came from creating it.
    """
    err = disk_error(exc)
    if err is None or err.kind != "permission":
        return err
    named = getattr(exc, "filename", None)
    if named is None or not os.path.lexists(named):
        return err
    where = os.fsdecode(named)
    return DiskError(disk_message("read-permission", where), path=where, kind="permission")


@contextmanager
def disk_errors(
    path: str | os.PathLike[str], needed: int | None = None, *, exact: bool = False
) -> Iterator[None]:
    """Raise a :class:`DiskError` for a refused write inside the block, naming the file the
    OS names, else ``path`` (always ``path`` with ``exact``; see :func:`disk_error`)."""
    try:
        yield
    except OSError as exc:
        err = disk_error(exc, path, needed, exact=exact)
        if err is None:
            raise
        raise err from exc


def reserve_space(path: str | os.PathLike[str], size: int) -> None:
    """Allocate the first ``size`` bytes of the existing file ``path`` on disk, before mapping it.

    After this, writing through a memory map of the file cannot run out of space (a SIGBUS);
    a file system that cannot allocate ahead is checked for ``size`` free bytes instead.

    Raises
    ------
    DiskError
        The disk has less than ``size`` bytes free (or refuses the file).
    """
    with disk_errors(path, size):
        fd = os.open(path, os.O_RDWR)
        try:
            os.posix_fallocate(fd, 0, size)
        except OSError as exc:
            if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
                raise
            _check_free(path, size)
        finally:
            os.close(fd)


def _check_free(path: str | os.PathLike[str], size: int) -> None:
    on_disk = os.stat(path).st_blocks * 512
    free = free_bytes(path)
    if free is not None and size - on_disk > free:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))


#: What a library that reports errors as text (DuckDB, Arrow) says for each kind.
_DISK_PHRASES: dict[str, str] = {
    "no space left on device": "full",
    "disk quota exceeded": "full",
    "read-only file system": "read-only",
    "permission denied": "permission",
}


def disk_error_in_text(
    exc: BaseException, path: str | os.PathLike[str], needed: int | None = None
) -> DiskError | None:
    """A :class:`DiskError` at ``path`` when the text of ``exc`` (a DuckDB or Arrow error,
    which carry no errno) says the disk refused a write; else None."""
    text = str(exc).lower()
    kind = next((k for phrase, k in _DISK_PHRASES.items() if phrase in text), None)
    if kind is None:
        return disk_error(exc, path, needed)
    return DiskError(disk_message(kind, str(path), needed), path=str(path), kind=kind)


def write_atomic(
    path: str | os.PathLike[str], write: Callable[[Path], object], needed: int | None = None
) -> Path:
    """Write ``path`` whole or not at all: ``write(tmp)`` fills a hidden sibling, which is
    then renamed into place. A full disk leaves the old file (or none), never a truncated one
    that looks complete; the folder is created first.

    Parameters
    ----------
    path : path-like
        The file to write.
    write : callable
        Writes the whole content to the path it is given (a library writer such as
        ``frame.to_csv``, ``fig.savefig`` with an explicit format, ``torch.save``).
    needed : int, optional
        Bytes the content takes, named in the message of a full disk.

    Raises
    ------
    DiskError
        The disk refused the write (``path`` is named, never the temporary file).
    """
    target = Path(path)
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    try:
        with disk_errors(target, needed, exact=True):
            target.parent.mkdir(parents=True, exist_ok=True)
            write(tmp)
            os.replace(tmp, target)
    finally:
        remove_quietly(tmp)
    return target


def write_text_atomic(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` with :func:`write_atomic`, synced to disk."""

    def write(tmp: Path) -> None:
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())

    return write_atomic(path, write, len(text.encode("utf-8")))


def write_csv_atomic(frame: Any, path: str | os.PathLike[str], **options: Any) -> Path:
    """``frame.to_csv(path, **options)`` (a pandas DataFrame) with :func:`write_atomic`."""
    return write_atomic(path, lambda tmp: frame.to_csv(tmp, **options))


def make_folder(path: str | os.PathLike[str]) -> Path:
    """Create the folder ``path`` (and its parents); a refused mkdir names it.

    Raises
    ------
    DiskError
        The disk refused to create it.
    """
    folder = Path(path)
    with disk_errors(folder):
        folder.mkdir(parents=True, exist_ok=True)
    return folder


def remove_quietly(path: str | os.PathLike[str]) -> None:
    """Remove the file ``path`` if it is there; never raise (a read-only file system refuses
    even to remove a file that does not exist, and cleaning up must not hide the real error)."""
    with suppress(OSError):
        Path(path).unlink(missing_ok=True)
