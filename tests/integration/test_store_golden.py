"""Golden check: the real pipeline on a pinned config writes the same ``runs`` rows as before.

The config pins every key (no default can move it); the rows' identity columns must match the
committed golden CSV exactly and their metrics to a relative tolerance (NaN equal to NaN). The
metrics depend on the CPU's numeric kernels (OpenBLAS's kernel and numpy's SIMD target: see
``golden/kernels.py``), so there is one golden per kernel fingerprint, written on one machine by
``benchmarks/golden_kernels.py --write`` (which selects each kernel in turn), and this host is
compared with the golden of its own kernels to ``SAME_KERNEL_RTOL`` (1e-6). A host whose kernels
have no golden is compared with the reference golden to ``CROSS_KERNEL_RTOL`` (the measured
spread between kernels, three times over) and warned. A refactor that changes a number fails
here. Regenerate the goldens only for a change that is meant to move numbers, and say so in its
commit::

    python benchmarks/golden_kernels.py --write
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from crsbench.config import parse_config
from crsbench.runs.pipeline import RunOptions, run_benchmark

from .golden.kernels import (
    CROSS_KERNEL_RTOL,
    SAME_KERNEL_RTOL,
    golden_for,
    kernel_fingerprint,
)
from .golden.pinned_config import pinned_config
from .runner_fixtures import write_tiny_data

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).parent / "golden" / "runs_pinned.csv"


def _compare_module() -> Any:
    spec = importlib.util.spec_from_file_location(
        "compare_stores", ROOT / "benchmarks" / "compare_stores.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def pinned_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("golden")
    data = write_tiny_data(root / "data")
    cfg = parse_config(pinned_config(data, root / "out"), base_dir=root)
    run_benchmark(cfg, RunOptions(progress=False))
    return root / "out"


def _golden_and_tolerance() -> tuple[Path, float]:
    fingerprint = kernel_fingerprint()
    own = golden_for(fingerprint)
    if own is not None:
        return own, SAME_KERNEL_RTOL
    warnings.warn(
        f"no golden for this host's kernels ({fingerprint}): compared with the reference golden "
        f"to {CROSS_KERNEL_RTOL:g} only; add one with benchmarks/golden_kernels.py --write",
        stacklevel=2,
    )
    return GOLDEN, CROSS_KERNEL_RTOL


def test_runs_rows_match_the_golden(pinned_store: Path) -> None:
    compare = _compare_module()
    golden, rtol = _golden_and_tolerance()
    got, want = compare.load_runs(pinned_store), compare.load_runs(golden)
    assert len(want) == 262  # the pinned grid (worked out in test_runner_end_to_end)
    lines = compare.differences(want, got, rtol=rtol)
    assert not lines, "\n".join(lines[:20])


def test_every_golden_has_the_same_rows() -> None:
    """The goldens differ in their metrics only, by no more than the kernels' spread."""
    compare = _compare_module()
    reference = compare.load_runs(GOLDEN)
    index = json.loads((GOLDEN.parent / "kernels.json").read_text())
    assert "runs_pinned.csv" in index.values() and len(index) >= 2
    for name in index.values():
        other = compare.load_runs(GOLDEN.parent / name)
        assert compare.differences(reference, other, rtol=CROSS_KERNEL_RTOL) == [], name


def test_comparison_catches_a_moved_metric_and_a_missing_row(pinned_store: Path) -> None:
    compare = _compare_module()
    want = compare.load_runs(GOLDEN)
    moved = want.copy()
    moved.loc[3, "auroc"] = moved.loc[3, "auroc"] * (1 + 1e-9)
    assert len(compare.differences(want, moved)) == 1  # same machine: 1e-12
    assert compare.differences(want, moved, rtol=SAME_KERNEL_RTOL) == []  # other host, same kernels
    moved.loc[4, "ece"] = moved.loc[4, "ece"] * (1 + 1e-5)  # a real change, across hosts too
    assert len(compare.differences(want, moved, rtol=SAME_KERNEL_RTOL)) == 1
    moved.loc[6, "seed"] = 7  # identity columns stay exact
    assert len(compare.differences(want, moved, rtol=CROSS_KERNEL_RTOL)) == 2
    assert len(compare.differences(want, want.drop(index=5))) == 1
    assert compare.differences(want, want.copy()) == []


def test_stored_analyses_equal_the_recomputed_ones(pinned_store: Path, tmp_path: Path) -> None:
    """``crsbench analyze`` computes, stores and reads: the tables read back from the store
    write the same CSVs and summary as the analyses computed afresh (``run_analyses``)."""
    from crsbench.stats.analyze import run_analyses, write_analyses
    from crsbench.stats.compute import stored_analyses
    from crsbench.stats.report_tables import REPORT_KEY
    from crsbench.store import load_runs

    runs = load_runs(pinned_store)
    first, computed = stored_analyses(pinned_store, runs, 50)
    again, computed_again = stored_analyses(pinned_store, runs, 50)
    assert computed and not computed_again
    write_analyses(again, tmp_path / "stored")
    summary = run_analyses(runs, tmp_path / "fresh", n_replicates=50, store=pinned_store)
    assert {k: v for k, v in again.summary.items() if k != REPORT_KEY} == summary  # analyses'
    fresh = sorted(p.name for p in (tmp_path / "fresh").iterdir())
    assert {"bootstrap.csv", "at_a_glance.csv", "subgroup_cells.csv"} <= set(fresh)
    assert fresh == sorted(p.name for p in (tmp_path / "stored").iterdir())
    for name in fresh:
        stored = (tmp_path / "stored" / name).read_bytes()
        assert stored == (tmp_path / "fresh" / name).read_bytes(), name


def test_every_stored_details_object_is_typed(pinned_store: Path) -> None:
    """Each ``details`` the run wrote reads back as typed sections (no key outside them) and
    writes the same text again."""
    from crsbench.store import RunDetails, load_runs
    from crsbench.store.records import details_json

    seen: set[str] = set()
    for text in load_runs(pinned_store)["details"].unique():
        typed = RunDetails.from_json(json.loads(text))
        assert details_json(typed.as_json()) == text
        seen |= {f.name for f in dataclasses.fields(typed) if getattr(typed, f.name)}
        seen |= {type(typed.fit).__name__} if typed.fit is not None else set()
    # every section of a frozen run (the LoRA sections: tests/integration/test_lora_stage.py)
    assert seen == {"score", "fit", "shift", "recal", "reliability", "undefined",
                    "n_quarantined", "precision", "LogisticFit", "LayerFit", "ControlFit"}  # fmt: skip
