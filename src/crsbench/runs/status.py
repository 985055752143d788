"""What is done and what is left of a config's grid (read-only)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from crsbench.config import BenchmarkConfig, config_hash
from crsbench.protocol import FROZEN, LORA
from crsbench.runs.lora_stage import lora_plan
from crsbench.runs.plan import plan_cells
from crsbench.store.reader import skipped_cells


def grid_summary(cfg: BenchmarkConfig) -> str:
    """One line: the number of frozen cells and the cells ``exclude_cells`` leaves out.

    E.g. ``43 frozen cells (2 excluded by config: biovil×aptos2019, chexzero×aptos2019)``.
    """
    n = len(cfg.frozen_cells)
    line = f"{n} frozen cell{'s' if n != 1 else ''}"
    if cfg.exclude_cells:
        names = ", ".join(f"{c.encoder}×{c.dataset}" for c in cfg.exclude_cells)
        line += f" ({len(cfg.exclude_cells)} excluded by config: {names})"
    return line


def grid_status(cfg: BenchmarkConfig) -> tuple[str, list[dict[str, Any]]]:
    """A title and one row per regime and cell: records done / planned and the cell's state.

    ``state`` is ``done``, ``partial``, ``todo``, ``skipped`` (left out by the last run's
    ``--skip-missing``; ``reason`` says why) or ``stale``: a dataset's label file or image
    list changed since the store's runs (the same comparison ``crsbench run`` makes before it
    moves the store to ``superseded/`` and runs every cell anew), so nothing counts as done
    and ``reason`` names the dataset and both revisions.
    """
    from crsbench.datasets import DATASETS
    from crsbench.store import STORE_FILE, ResultsStore

    h = config_hash(cfg)
    modalities = {n: DATASETS.get(n).card.modality for n in cfg.datasets}
    cells = plan_cells(cfg, modalities)
    done: set[str] = set()
    stale = ""
    out = Path(cfg.output_dir)
    if (out / STORE_FILE).exists():
        with ResultsStore(out, h, mode="r") as store:
            done = store.done_keys()
            stale = _stale_reason(cfg, store.con) if done else ""
    skipped = skipped_cells(out)
    plan = [(FROZEN, c.encoder, c.dataset, c.identities) for c in cells]
    for (enc, ds), by_seed in lora_plan(cfg, modalities).items():
        plan.append((LORA, enc, ds, [i for ids in by_seed.values() for i in ids]))
    rows = []
    for regime, enc, ds, identities in plan:
        keys = {i.key(h) for i in identities}
        n = len(keys & done)
        state = "done" if n == len(keys) else ("partial" if n else "todo")
        reason = skipped.get((enc, ds), "") if state != "done" else ""
        state = "skipped" if reason else state
        if stale and n:
            n, state, reason = 0, "stale", stale
        rows.append({"regime": regime, "encoder": enc, "dataset": ds, "done": n,
                     "planned": len(keys), "state": state, "reason": reason})  # fmt: skip
    return f"crsbench status — {out} (config {h[:12]})", rows


def _stale_reason(cfg: BenchmarkConfig, con: Any) -> str:
    """Why the store's runs no longer count as done (a dataset changed), or ``""``."""
    from crsbench.runs.prepare import current_revisions
    from crsbench.store.revisions import changed_revision

    revisions, _ = current_revisions(cfg)  # a dataset that does not load is not compared
    changed = changed_revision(con, revisions)
    if changed is None:
        return ""
    return f"{changed[0]}; the next run moves this store to superseded/ and runs it anew"


#: Quarantined files listed per dataset by ``crsbench status`` (the rest are counted).
SHOWN_PER_DATASET = 20


def quarantine_status(cfg: BenchmarkConfig) -> list[str]:
    """Lines naming the images the store's runs left out (empty when there are none).

    Per dataset: a count per split, then each file with its split and reason (the first
    :data:`SHOWN_PER_DATASET`; the store's ``quarantine`` table holds them all). Plain text,
    to be printed without markup and unwrapped so that paths stay whole.
    """
    from crsbench.store import STORE_FILE, ResultsStore
    from crsbench.store.quarantine import quarantine_frame

    out = Path(cfg.output_dir)
    if not (out / STORE_FILE).exists():
        return []
    with ResultsStore(out, config_hash(cfg), mode="r") as store:
        frame = quarantine_frame(store.con)
    lines = []
    for dataset, rows in frame.groupby("dataset", sort=True):
        counts = rows["split"].value_counts().sort_index()
        summary = ", ".join(f"{split} {n}" for split, n in counts.items())
        lines.append(f"{dataset}: {len(rows)} image(s) quarantined ({summary})")
        for r in rows.head(SHOWN_PER_DATASET).itertuples():
            reason = r.error_class + (f": {r.message[:160]}" if r.message else "")
            lines.append(f"  {r.split} {r.image_id}: {r.path} ({reason})")
        if len(rows) > SHOWN_PER_DATASET:
            lines.append(f"  ... and {len(rows) - SHOWN_PER_DATASET} more")
    return lines
