"""Kill -9 the runner at several points; the resumed store equals an uninterrupted run's."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pandas as pd

from crsbench.config import parse_config
from crsbench.runs.pipeline import RunOptions, run_benchmark
from crsbench.store.columns import IDENTITY_COLUMNS, METRIC_COLUMNS

from .runner_fixtures import tiny_config_dict, write_tiny_data

SCRIPT = """
import json, sys
from crsbench.config import parse_config
from crsbench.runs.pipeline import RunOptions, run_benchmark
cfg = parse_config(json.loads(sys.argv[1]), base_dir=sys.argv[2])
def on_event(event, info):
    print(event.upper(), flush=True)
run_benchmark(cfg, RunOptions(progress=False, on_event=on_event))
print("FINISHED", flush=True)
"""


def _config(data: Path, out: Path) -> dict:
    d = tiny_config_dict(data, out)
    d["datasets"] = {
        "isic2019": d["datasets"]["isic2019"],
        "aptos2019": {"root": str(data / "aptos2019")},
    }
    d["shifts"] = []
    d["probes"]["mlp"] = None
    return d


def _table(out: Path) -> pd.DataFrame:
    cols = list(IDENTITY_COLUMNS + METRIC_COLUMNS) + ["details"]
    with duckdb.connect(str(out / "results.duckdb"), read_only=True) as con:
        df = con.execute(f"SELECT {', '.join(cols)} FROM runs").df()
    return df.sort_values(list(IDENTITY_COLUMNS)).reset_index(drop=True)


def _run_and_kill(cfg: dict, base: Path, kill_after: str | float) -> bool:
    """Start the runner; SIGKILL it after the first line ``kill_after`` or after N seconds."""
    proc = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, json.dumps(cfg), str(base)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    if isinstance(kill_after, float):
        time.sleep(kill_after)
    else:
        for line in proc.stdout:
            if line.strip() == kill_after:
                break
    finished = proc.poll() is not None
    if not finished:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    return finished


def test_sigkill_then_resume_equals_uninterrupted(tmp_path):
    data = write_tiny_data(tmp_path / "data")
    ref_cfg = parse_config(_config(data, tmp_path / "ref"), base_dir=tmp_path)
    run_benchmark(ref_cfg, RunOptions(progress=False))
    reference = _table(tmp_path / "ref")

    cfg = _config(data, tmp_path / "killed")
    _run_and_kill(cfg, tmp_path, 2.0)  # during dataset loading / extraction
    _run_and_kill(cfg, tmp_path, "CELL")  # right after the first cell's commit
    _run_and_kill(cfg, tmp_path, 1.5)  # early in the resumed run
    summary = run_benchmark(parse_config(cfg, base_dir=tmp_path), RunOptions(progress=False))
    resumed = _table(tmp_path / "killed")

    assert summary.n_cells_done_before >= 1
    assert len(resumed) == len(reference)
    assert not resumed.duplicated(list(IDENTITY_COLUMNS)).any()
    pd.testing.assert_frame_equal(resumed, reference)
    # every committed cell has its per-sample predictions (same transaction as its records)
    pd.testing.assert_frame_equal(_predictions(tmp_path / "killed"), _predictions(tmp_path / "ref"))


def _predictions(out: Path) -> pd.DataFrame:
    """Each run's stored predictions by identity (run keys differ between configs)."""
    ident = ", ".join(f"r.{c}" for c in IDENTITY_COLUMNS)
    q = (
        f"SELECT {ident}, p.split, s.image_ids, b.prob FROM predictions p JOIN runs r USING "
        "(run_key) JOIN eval_splits s USING (split_key) JOIN prediction_blobs b USING (prob_key)"
    )
    with duckdb.connect(str(out / "results.duckdb"), read_only=True) as con:
        df = con.execute(q).df()
    df["image_ids"] = df["image_ids"].map(tuple)
    df["prob"] = df["prob"].map(bytes)
    return df.sort_values([*IDENTITY_COLUMNS, "split"]).reset_index(drop=True)


def test_sigterm_exits_nonzero_keeps_committed_cells_and_resumes(tmp_path):
    import yaml

    data = write_tiny_data(tmp_path / "data")
    cfg = _config(data, tmp_path / "out")
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump(cfg))
    proc = subprocess.Popen(
        [sys.executable, "-m", "crsbench.cli", "run", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("cell done"):
            break
    proc.send_signal(signal.SIGTERM)
    rest = proc.stdout.read()
    assert proc.wait(timeout=60) == 130, rest
    assert "interrupted" in rest
    partial = _table(tmp_path / "out")
    assert 0 < len(partial)
    summary = run_benchmark(parse_config(cfg, base_dir=tmp_path), RunOptions(progress=False))
    assert summary.n_cells_done_before >= 1
    assert not _table(tmp_path / "out").duplicated(list(IDENTITY_COLUMNS)).any()
