"""SIGKILL mid-extraction: the rerun resumes at shard granularity and equals a clean run
(a kill at any moment, two processes on one key)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from crsbench.features import FeatureCache

SCRIPT = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("doubles", {doubles!r})
d = importlib.util.module_from_spec(spec); sys.modules["doubles"] = d; spec.loader.exec_module(d)
from crsbench.features import ExtractSettings, FeatureCache, extract
ids, paths = d.list_images(__import__("pathlib").Path({imgs!r}), 16)
settings = ExtractSettings(conditions=[("clean", 0), ("noise", 2)], batch_size=4, shard_size=4,
                           num_workers=0, progress=False, perturb_fn=d.toy_perturb,
                           precision="fp32", working_size=32)
extract(d.TinyEncoder(delay=0.4), ids, paths, cache=FeatureCache({cache!r}),
        dataset_revision="rev1", settings=settings)
"""


def _committed(root: Path) -> int:
    return len(list((root / "objects").rglob("*.json")))


def test_sigkill_then_rerun_equals_uninterrupted(tmp_path, doubles, doubles_path):
    imgs, cache_dir = tmp_path / "imgs", tmp_path / "killed"
    doubles.write_images(imgs, 16)
    script = tmp_path / "run.py"
    script.write_text(
        SCRIPT.format(doubles=str(doubles_path), imgs=str(imgs), cache=str(cache_dir))
    )
    proc = subprocess.Popen([sys.executable, str(script)], stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while _committed(cache_dir) < 2 if cache_dir.exists() else True:  # 2 entries = 1 shard
        assert proc.poll() is None, proc.stderr.read().decode()
        assert time.monotonic() < deadline, "no shard committed within 60 s"
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    done = _committed(cache_dir)
    assert 2 <= done < 8, "killed run must have stopped part-way"

    ids, paths = doubles.list_images(imgs, 16)
    conditions = [("clean", 0), ("noise", 2)]
    resumed = doubles.run_extract(ids, paths, cache_dir, conditions=conditions)
    assert resumed.n_decoded == 16 - 4 * (done // 2)  # committed shards were not redone
    clean = doubles.run_extract(ids, paths, tmp_path / "c2", conditions=conditions)
    assert clean.n_decoded == 16
    for k in clean:
        a, b = np.asarray(resumed[k].features), np.asarray(clean[k].features)
        assert a.tobytes() == b.tobytes() and list(resumed[k].ids) == ids
    FeatureCache(cache_dir).gc()
    assert not list((cache_dir / "objects").rglob("*.tmp"))


@pytest.mark.slow
def test_two_processes_extracting_the_same_key(tmp_path, doubles, doubles_path):
    imgs, cache_dir = tmp_path / "imgs", tmp_path / "shared"
    doubles.write_images(imgs, 16)
    script = tmp_path / "run.py"
    body = SCRIPT.replace("delay=0.4", "delay=0.05")
    script.write_text(body.format(doubles=str(doubles_path), imgs=str(imgs), cache=str(cache_dir)))
    procs = [
        subprocess.Popen([sys.executable, str(script)], stderr=subprocess.PIPE) for _ in range(2)
    ]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()
    ids, paths = doubles.list_images(imgs, 16)
    conditions = [("clean", 0), ("noise", 2)]
    shared = doubles.run_extract(ids, paths, cache_dir, conditions=conditions)
    assert shared.n_decoded == 0 and not shared.cache_events
    alone = doubles.run_extract(ids, paths, tmp_path / "a", conditions=conditions)
    for k in alone:
        assert np.asarray(shared[k].features).tobytes() == np.asarray(alone[k].features).tobytes()
    assert _committed(cache_dir) == 4 * 2 + 2  # 4 shards x 2 conditions + 2 final entries
    assert not list((cache_dir / "objects").rglob("*.tmp"))
