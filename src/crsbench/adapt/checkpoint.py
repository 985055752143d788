"""Atomic fine-tune checkpoints: ``torch.save`` of plain containers of tensors, loaded safely."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from crsbench.core.diskio import write_atomic
from crsbench.core.errors import CacheError


def save_checkpoint(path: str | os.PathLike[str], state: dict[str, Any]) -> Path:
    """Write ``state`` to ``path`` atomically (temporary file, fsync, ``os.replace``).

    ``state`` may hold only tensors, numbers, strings, booleans, ``None`` and lists / tuples /
    dicts of those, so that :func:`load_checkpoint` can read it with ``weights_only=True``.
    """
    import torch

    def write(tmp: Path) -> None:
        with open(tmp, "wb") as fh:
            torch.save(state, fh)
            fh.flush()
            os.fsync(fh.fileno())

    return write_atomic(path, write)  # a refused write names the checkpoint, not its temp file


def load_checkpoint(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The state saved at ``path`` (``None`` when there is none), read with ``weights_only``.

    Raises
    ------
    CacheError
        The file exists but cannot be read (truncated, not a checkpoint); delete it to restart
        that fine-tune from scratch.
    """
    import torch

    path = Path(path)
    if not path.is_file():
        return None
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:
        raise CacheError(
            f"checkpoint {path} cannot be read ({type(exc).__name__}: {exc}); delete it to "
            "restart this fine-tune from scratch."
        ) from exc
    if not isinstance(state, dict):
        raise CacheError(f"checkpoint {path} must hold a dict. Got {type(state).__name__}.")
    return state
