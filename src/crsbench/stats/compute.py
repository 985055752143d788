"""Evaluate once, store, then read: the analyses of a store kept in ``STORE/computed/``.

:func:`stored_analyses` returns the tables of :func:`crsbench.stats.analyze.compute_analyses`
for a store and parameters: read from ``STORE/computed/<key>.zip``
(:mod:`crsbench.store.computed`) when a file with the key of these inputs is there, else
computed, written there, and read back, so that a command that computed them and one that read
them see the same tables. The key (:func:`analysis_inputs`) hashes every input the tables
depend on: the store's rows (runs, plan, cards, predictions, subgroup metadata, reliability,
meta), the anchors (version, bounds, weights, reference panels), the replicate count, the
seed, the interval, the encoder groups, the crsbench version and :data:`ANALYSIS_METHODS`
(so files computed by an earlier method are not read back). The worker count is not
part of it: results do not depend on it. Beside the analyses, the tables hold what the HTML
report shows (:mod:`crsbench.stats.report_tables`), so the report only reads.

The same way, :func:`stored_leaderboard` keeps a leaderboard under another rule than the
fixed one (``score --rule cohort``: its own bootstrap, the rule in the key) and
:func:`stored_verdict` a cohort profile's verdict (:mod:`crsbench.stats.cohort_verdict`;
keyed by :func:`verdict_inputs`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from crsbench.core.errors import DiskError
from crsbench.protocol import BOOTSTRAP_REPLICATES
from crsbench.scoring.anchors import anchors_for_runs
from crsbench.stats.analysis_registry import jsonable
from crsbench.stats.input_keys import anchors_key
from crsbench.store.computed import (
    ComputedTables,
    computed_path,
    input_key,
    read_computed,
    store_digest,
    write_computed,
)

#: The methods' revision, in every key: changed whenever an analysis or interval method
#: changes its numbers within one crsbench version (2026-12-02: the multi-label ECE
#: interval's reach, :data:`crsbench.stats.intervals.MULTILABEL_ECE_REACH`; 2026-12-02b: R's
#: percentile interval only where R holds a shift drop; c: that reach 0.8; d: one ECE's
#: interval reaches up towards its percentile top, :data:`crsbench.stats.intervals.SINGLE_ECE_TOP_REACH`;
#: e: a CRS difference's interval reaches half way to the percentile one,
#: :data:`crsbench.stats.intervals.DIFFERENCE_REACH`).
ANALYSIS_METHODS = "2026-12-02e"


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
        "methods": ANALYSIS_METHODS,
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
    computed = ComputedTables(fresh.tables, fresh.summary, inputs, key)
    if not _store(store, computed, "the analyses", say):
        return computed, True
    stored = read_computed(store, key)
    assert stored is not None  # just written
    return stored, True


def _store(
    store: str | Path,
    computed: ComputedTables,
    what: str,
    say: Callable[[str], None] | None,
    them: str = "them",
) -> bool:
    """Write ``computed`` into the store (and remove the older files crsbench wrote there
    beyond the few it keeps); say so. ``False``: the store folder refused the write
    (read-only, full) and nothing was kept."""
    try:
        path = write_computed(store, computed)
    except DiskError as exc:  # a read-only or full store folder: used, not kept
        if say is not None:
            say(f"computed {what}; {'it' if them == 'it' else 'they'} could not be stored ({exc})")
        return False
    if say is not None:
        say(f"computed {what} (none stored for these inputs) and stored {them} in {path}")
    return True


def stored_leaderboard(
    store: str | Path,
    runs: pd.DataFrame,
    anchors: Any = None,
    *,
    rule: str = "fixed",
    n_replicates: int = BOOTSTRAP_REPLICATES,
    seed: int = 0,
    interval: str = "test-patients",
    n_jobs: int | None = None,
    say: Callable[[str], None] | None = None,
) -> pd.DataFrame:
    """The leaderboard of ``store`` under ``rule``
    (:func:`crsbench.stats.leaderboard.build_leaderboard`), its bootstrap computed once.

    The fixed rule reads the intervals of the stored analyses (:func:`stored_analyses`);
    another rule (``cohort``) bootstraps its own scores, so its board is stored as its own
    computed file, keyed by the analyses' inputs and the rule, and read back the next time.
    ``n_replicates=0`` computes the board without intervals and stores nothing.
    """
    from crsbench.stats.leaderboard import build_leaderboard

    def build(stored: ComputedTables | None = None) -> pd.DataFrame:
        return build_leaderboard(runs, anchors, rule=rule, n_replicates=n_replicates, seed=seed,
                                 store=store, interval=interval, n_jobs=n_jobs,
                                 stored=stored)  # fmt: skip

    if n_replicates <= 0:
        return build()
    if rule == "fixed":
        stored, _ = stored_analyses(store, runs, n_replicates, seed, anchors, interval=interval,
                                    n_jobs=n_jobs, say=say)  # fmt: skip
        return build(stored)
    inputs = {**analysis_inputs(store, runs, n_replicates, seed, anchors, interval),
              "kind": "leaderboard", "rule": rule}  # fmt: skip
    key = input_key(inputs)
    found = read_computed(store, key)
    if found is not None:
        if say is not None:
            say(f"read the stored {rule}-rule leaderboard ({computed_path(store, key)})")
        board = found.tables["leaderboard"]
        board.attrs.update(found.summary["attrs"])
        return board
    board = build()
    fresh = ComputedTables({"leaderboard": board}, {"attrs": jsonable(board.attrs)}, inputs, key)
    _store(store, fresh, f"the {rule}-rule leaderboard", say, them="it")
    return board


def verdict_inputs(store: str | Path, compare: str | Path | None, interval: str) -> dict[str, Any]:
    """What a cohort profile's stored verdict depends on (JSON-able; its hash is the key):
    the profile's store rows and ``cohort.json``, the benchmark store compared with (its
    rows), the interval, the replicate count and the crsbench version."""
    import hashlib

    from crsbench import __version__
    from crsbench.stats.cohort_verdict import N_REPLICATES

    cohort = Path(store) / "cohort.json"
    return {
        "kind": "cohort_verdict",
        "store": store_digest(store),
        "cohort": hashlib.sha256(cohort.read_bytes()).hexdigest() if cohort.is_file() else None,
        "compare": None if compare is None else store_digest(compare),
        "interval": str(interval),
        "n_replicates": N_REPLICATES,
        "crsbench": __version__,
        "methods": ANALYSIS_METHODS,
    }


def stored_verdict(
    store: str | Path,
    compare: str | Path | None = None,
    interval: str = "test-patients",
    *,
    say: Callable[[str], None] | None = None,
) -> ComputedTables:
    """The verdict of the cohort profile in ``store``
    (:func:`crsbench.stats.cohort_verdict.compute_verdict`): read from
    ``STORE/computed/<key>.zip`` when stored for these inputs (:func:`verdict_inputs`), else
    computed, stored and read back; ``say`` is told which.

    Raises
    ------
    StoreError
        The store (or the compared one) is missing, locked or damaged.
    """
    from crsbench.stats.cohort_verdict import compute_verdict

    inputs = verdict_inputs(store, compare, interval)
    key = input_key(inputs)
    found = read_computed(store, key)
    if found is not None:
        if say is not None:
            say(f"read the stored verdict ({computed_path(store, key)})")
        return found
    fresh = compute_verdict(Path(store), None if compare is None else Path(compare), interval)
    computed = ComputedTables(fresh.tables, fresh.summary, inputs, key)
    if not _store(store, computed, "the verdict", say, them="it"):
        return computed
    stored = read_computed(store, key)
    assert stored is not None  # just written
    return stored
