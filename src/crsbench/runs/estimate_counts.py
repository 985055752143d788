"""How many images a grid encodes: per dataset (from disk or the release sizes) and per cell.

The counts follow :mod:`crsbench.runs.extract_cell`: one forward pass of an image yields its
features at every layer depth, so a cell encodes every row of its dataset once clean, its test
rows once more per perturbation condition, and each shift target's evaluation rows once. The
LoRA regime trains on the label subsamples (``training images``, each one forward + backward)
and scores its models by forward passes on validation (every epoch) and test rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from crsbench.config import BenchmarkConfig
from crsbench.core.errors import CrsbenchError
from crsbench.runs.estimate_data import load_release_sizes
from crsbench.runs.plan import CellPlan


@dataclass(frozen=True)
class DatasetRows:
    """Rows of one dataset the grid uses: its split sizes (probe datasets) or its shift
    evaluation rows (``n_eval``; for a probe dataset the test rows); ``source`` says where the
    counts come from (``disk`` or the release-sizes file)."""

    name: str
    n_images: int
    n_train: int
    n_val: int
    n_test: int
    n_eval: int
    source: str


@dataclass(frozen=True)
class CellImages:
    """Forward passes of one frozen cell: clean (every row, every layer in one pass), perturbed
    (test rows × conditions) and shift targets' evaluation rows."""

    clean: int
    perturbed: int
    shift: int

    @property
    def total(self) -> int:
        """All forward passes of the cell."""
        return self.clean + self.perturbed + self.shift


@dataclass(frozen=True)
class LoraImages:
    """Images the LoRA regime of one cell processes: ``train`` (forward + backward, upper bound
    at every epoch) and ``forward`` (validation every epoch, test and shift scoring)."""

    train: int
    forward: int


def _split_sizes(n: int) -> tuple[int, int, int]:
    """(train, val, test) of ``n`` rows at the default split fractions (rounded)."""
    from crsbench.splits.policy import SplitFractions

    f = SplitFractions()
    return round(n * f.train), round(n * f.val), round(n * f.test)


def _documented_rows(cfg: BenchmarkConfig, name: str, why: str) -> DatasetRows:
    """Rows from the release-sizes file (capped by ``max_images``)."""
    label, sizes = load_release_sizes()
    if name not in sizes:
        raise CrsbenchError(
            f"dataset {name!r}: its root is not on disk ({why}) and {label} has no release "
            "size for it; put the data in place to count its images."
        )
    size, cap = sizes[name], cfg.datasets[name].max_images
    source = f"{label}{' (upper bound)' if size.upper_bound else ''}; {why}"
    if name in cfg.shift_targets:
        rows = {s.target: s.rows for s in cfg.shifts}[name]
        n_eval = size.eval_rows.get(rows, size.n_images)
        n_eval = n_eval if cap is None else min(cap, n_eval)
        return DatasetRows(name, size.n_images, 0, 0, 0, n_eval, source)
    n = size.n_images if cap is None else min(cap, size.n_images)
    train, val, test = _split_sizes(n)
    return DatasetRows(name, n, train, val, test, test, source)


def _disk_rows(cfg: BenchmarkConfig, name: str) -> DatasetRows:
    """Rows of the dataset on disk: loaded with ``check_files=False``, capped and split as the
    run does (:mod:`crsbench.runs.prepare`)."""
    from crsbench.datasets import load
    from crsbench.runs.prepare import cap_rows, prepare_shift_target, subset_dataset
    from crsbench.splits import make_splits

    spec = cfg.datasets[name]
    ds = load(name, spec.root, **{**dict(spec.options), "check_files": False})
    if name in cfg.shift_targets:
        rows = {s.target: s.rows for s in cfg.shifts}[name]
        target = prepare_shift_target(ds, rows, spec.max_images)
        return DatasetRows(name, len(ds.image_ids), 0, 0, 0, len(target.eval_rows), "disk")
    kept = cap_rows(np.asarray(ds.image_ids), np.asarray(ds.groups), spec.max_images)
    if len(kept) < len(ds.image_ids):
        ds = subset_dataset(ds, kept, spec.max_images)
    sp = make_splits(ds, seed=cfg.split_seed)
    n_test = len(sp.test)
    return DatasetRows(name, len(ds.image_ids), len(sp.train), len(sp.val), n_test, n_test,
                       "disk")  # fmt: skip


def dataset_rows(cfg: BenchmarkConfig, name: str) -> DatasetRows:
    """The rows of dataset ``name``: from disk when its root exists and loads, else from the
    documented release sizes (the reason is recorded in ``source``)."""
    root = Path(cfg.datasets[name].root).expanduser()
    if not root.is_dir():
        return _documented_rows(cfg, name, "root not on disk")
    try:
        return _disk_rows(cfg, name)
    except CrsbenchError as exc:
        return _documented_rows(cfg, name, f"root did not load: {exc}")


def all_dataset_rows(cfg: BenchmarkConfig) -> dict[str, DatasetRows]:
    """:func:`dataset_rows` of every dataset of ``cfg`` (probe datasets and shift targets)."""
    return {name: dataset_rows(cfg, name) for name in cfg.datasets}


def cell_images(plan: CellPlan, rows: dict[str, DatasetRows]) -> CellImages:
    """Forward passes of one frozen cell (see the module docstring)."""
    ds = rows[plan.dataset]
    shift = sum(rows[t].n_eval for t in plan.shift_targets)
    return CellImages(ds.n_images, ds.n_test * len(plan.conditions), shift)


def lora_images(cfg: BenchmarkConfig, plan: CellPlan, rows: dict[str, DatasetRows]) -> LoraImages:
    """Images of one cell's LoRA regime: every (seed, fraction, learning rate) trains at most
    ``epochs`` epochs over its subsample and scores validation after each; each (seed,
    fraction) scores the test rows, and at the full fraction every condition and shift."""
    lora, ds = cfg.regimes.lora, rows[plan.dataset]
    fractions = cfg.lora_fractions
    runs = len(lora.seeds) * len(lora.lr_factors)
    train = round(lora.epochs * ds.n_train * sum(fractions)) * runs
    val = lora.epochs * ds.n_val * len(fractions) * runs
    full = ds.n_test * len(plan.conditions) + sum(rows[t].n_eval for t in plan.shift_targets)
    scored = len(lora.seeds) * (ds.n_test * len(fractions) + full)
    return LoraImages(train, val + scored)
