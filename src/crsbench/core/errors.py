"""Exception types. Every user-facing failure raises a subclass of :class:`CrsbenchError`.

Messages name the file, row (1-based, as a spreadsheet shows it), column or key at fault,
and say what was expected ("must be X. Got Y instead.").
"""

from __future__ import annotations


class CrsbenchError(Exception):
    """Base class of every error crsbench raises on purpose."""


class RegistryError(CrsbenchError, KeyError):
    """Unknown or duplicate name in a registry."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class ConfigError(CrsbenchError, ValueError):
    """Invalid configuration: unknown key, wrong type, value out of range."""


class DataError(CrsbenchError, ValueError):
    """A dataset on disk is missing, malformed or inconsistent."""


class EncoderError(CrsbenchError, RuntimeError):
    """An encoder cannot be built or its weights cannot be found or verified."""


class CacheError(CrsbenchError, RuntimeError):
    """A feature-cache entry is corrupt, stale or cannot be written."""


class StoreError(CrsbenchError, RuntimeError):
    """The results store is locked, corrupt or written by another configuration."""


class NotFittedError(CrsbenchError, AttributeError):
    """An estimator was used before ``fit``."""


class DiskError(CrsbenchError, RuntimeError):
    """The disk refused a write: full (ENOSPC, EDQUOT), read-only (EROFS) or no permission
    (EACCES, EPERM). The message names the path and, for a full disk, the space needed and
    free; see :func:`crsbench.core.diskio.disk_error`.

    Attributes
    ----------
    path : str
        The file or folder that could not be written.
    kind : str
        ``"full"``, ``"read-only"`` or ``"permission"``.
    """

    def __init__(self, message: str, path: str = "", kind: str = "") -> None:
        super().__init__(message)
        self.path = path
        self.kind = kind
