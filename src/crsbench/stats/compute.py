"""Evaluate once, store, then read: the analyses of a store kept in ``STORE/computed/``.

:func:`stored_analyses` returns the tables of :func:`crsbench.stats.analyze.compute_analyses`
for a store and parameters: read from ``STORE/computed/<key>.zip``
(:mod:`crsbench.store.computed`) when a file with the key of these inputs is there, else
computed, written there, and read back, so that a command that computed them and one that read
them see the same tables. The key (:func:`analysis_inputs`) hashes every input the tables
depend on: the store's rows (runs, plan, cards, predictions, subgroup metadata, reliability,
meta), the anchors (version, bounds, weights, reference panels), the replicate count, the
seed, the interval, the encoder groups, and the crsbench version. The worker count is not
part of it: results do not depend on it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from crsbench.core.errors import DiskError
from crsbench.protocol import BOOTSTRAP_REPLICATES
from crsbench.scoring.anchors import anchors_for_runs
from crsbench.stats.input_keys import anchors_key
from crsbench.store.computed import (
    ComputedTables,
    input_key,
    read_computed,
    store_digest,
    write_computed,
)


def analysis_inputs(
    store: str | Path,
    runs: pd.DataFrame,
    n_replicates: int,
    seed: int,
    anchors: Any = None,
    interval: str = "test-patients",
    groups: dict[str, str] | None = None,
) -> dict[str, Any]:
    """What the stored analyses of ``store`` depend on (JSON-able; its hash is the key)."""
    from crsbench import __version__

    anc = anchors_for_runs(anchors, runs)
    return {
        "store": store_digest(store),
        "anchors": list(anchors_key(anc)),
        "n_replicates": int(n_replicates),
        "seed": int(seed),
        "interval": str(interval),
        "groups": None if groups is None else sorted(groups.items()),
        "crsbench": __version__,
    }


def stored_analyses(
    store: str | Path,
    runs: pd.DataFrame,
    n_replicates: int = BOOTSTRAP_REPLICATES,
    seed: int = 0,
    anchors: Any = None,
    *,
    interval: str = "test-patients",
    groups: dict[str, str] | None = None,
    n_jobs: int | None = None,
    say: Callable[[str], None] | None = None,
) -> tuple[ComputedTables, bool]:
    """The analyses of ``store`` (its ``runs``) for these parameters, and whether they were
    computed now (``False``: read from the store).

    Parameters are those of :func:`crsbench.stats.analyze.run_analyses`; ``say`` is given one
    plain line saying which it was (computed and stored, or read). A store folder that cannot
    be written (read-only, full) is said so, and the tables computed now are returned.

    Raises
    ------
    DataError
        The store has no run records, or no complete main-protocol cell.
    StoreError
        The store is missing, locked or damaged, or a stored file is unreadable.
    """
    from crsbench.stats.analyze import compute_analyses

    inputs = analysis_inputs(store, runs, n_replicates, seed, anchors, interval, groups)
    key = input_key(inputs)
    found = read_computed(store, key)
    if found is not None:
        if say is not None:
            say(f"read the stored analyses ({Path(store) / 'computed' / key}.zip)")
        return found, False
    fresh = compute_analyses(runs, n_replicates, seed, anchors, groups, store=store,
                             interval=interval, n_jobs=n_jobs)  # fmt: skip
    try:
        path = write_computed(store, ComputedTables(fresh.tables, fresh.summary, inputs, key))
    except DiskError as exc:  # a read-only or full store folder: used, not kept
        if say is not None:
            say(f"computed the analyses; they could not be stored ({exc})")
        return ComputedTables(fresh.tables, fresh.summary, inputs, key), True
    if say is not None:
        say(f"computed the analyses (none stored for these inputs) and stored them in {path}")
    stored = read_computed(store, key)
    assert stored is not None  # just written
    return stored, True
