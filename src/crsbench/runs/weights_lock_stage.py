"""The run's weights lock: every family with real weights is checked against ``weights.lock``.

See :mod:`crsbench.encoders.weights_lock`. Called by the pipeline after the output folder is
claimed and before any cell: each encoder of the config that loads real weights is built (the
extraction reuses that build) and its files are hashed; a difference from the lock refuses the
run unless ``update`` is set. The entries go into the store's card facts (provenance).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crsbench.encoders.weights_lock import LOCK_FILE, check_and_write, encoder_lock_entry

if TYPE_CHECKING:
    from crsbench.encoders.base import Encoder
    from crsbench.runs.extraction import RunExtraction


def lock_encoders(
    encoders: Mapping[str, Encoder], out: Path, update: bool = False
) -> dict[str, Any]:
    """Check and record the lock entries of ``encoders`` in ``out / weights.lock``.

    Parameters
    ----------
    encoders : mapping
        Name → built encoder; builds without weight files (random, tiny) are left out.
    out : Path
        The run's output folder.
    update : bool
        Replace differing entries instead of refusing.

    Returns
    -------
    dict
        This run's entries (name → entry), for the store's provenance.
    """
    entries = {}
    for name, enc in encoders.items():
        entry = encoder_lock_entry(enc)
        if entry is not None:
            entries[name] = entry
    if entries:
        check_and_write(out / LOCK_FILE, entries, update=update)
    return entries


def lock_run_weights(
    extraction: RunExtraction,
    out: Path,
    update: bool,
    get: Callable[[Any, str], Encoder] | None = None,
) -> dict[str, Any]:
    """:func:`lock_encoders` for the run's encoders that load real weights."""
    if get is None:
        from crsbench.runs.extract_cell import get_encoder as get
    real = [e.name for e in extraction.encoders if e.weights == "pretrained"]
    return lock_encoders({name: get(extraction, name) for name in real}, out, update)
