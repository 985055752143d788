"""What is done and what is left of a config's grid (read-only)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from crsbench.config import BenchmarkConfig, config_hash
from crsbench.core.storefile import skipped_cells
from crsbench.runs.lora_stage import lora_plan
from crsbench.runs.plan import plan_cells
from crsbench.runs.records import make_run_key


def grid_status(cfg: BenchmarkConfig) -> tuple[str, list[dict[str, Any]]]:
    """A title and one row per regime and cell: records done / planned and the cell's state.

    ``state`` is ``done``, ``partial``, ``todo`` or ``skipped`` (left out by the last run's
    ``--skip-missing``; ``reason`` says why).
    """
    from crsbench.datasets import DATASETS
    from crsbench.runs.store import DB_NAME, ResultsStore

    h = config_hash(cfg)
    modalities = {n: DATASETS.get(n).card.modality for n in cfg.datasets}
    cells = plan_cells(cfg, modalities)
    done: set[str] = set()
    out = Path(cfg.output_dir)
    if (out / DB_NAME).exists():
        with ResultsStore(out, h, mode="r") as store:
            done = store.done_keys()
    skipped = skipped_cells(out)
    plan = [("frozen", c.encoder, c.dataset, c.identities) for c in cells]
    for (enc, ds), by_seed in lora_plan(cfg, modalities).items():
        plan.append(("lora", enc, ds, [i for ids in by_seed.values() for i in ids]))
    rows = []
    for regime, enc, ds, identities in plan:
        keys = {make_run_key(i, h) for i in identities}
        n = len(keys & done)
        state = "done" if n == len(keys) else ("partial" if n else "todo")
        reason = skipped.get((enc, ds), "") if state != "done" else ""
        rows.append({"regime": regime, "encoder": enc, "dataset": ds, "done": n,
                     "planned": len(keys), "state": "skipped" if reason else state,
                     "reason": reason})  # fmt: skip
    return f"crsbench status — {out} (config {h[:12]})", rows
