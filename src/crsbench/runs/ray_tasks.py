"""The bodies of the two Ray tasks of a cell, and what passes between them.

The extraction task (:func:`extract_task`) fills the shared feature cache and returns an
:class:`ExtractedCell` holding only cache keys (:func:`strip_features`); the probe task
(:func:`probe_task`) reads the verified entries back (:func:`load_features`) and evaluates the
cell. Both run on Ray workers and never touch the results store
(:class:`crsbench.runs.ray_executor.RayExecutor` submits them and commits their outcomes).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from crsbench.core.errors import CacheError
from crsbench.evaluation.cell import CellData, CellSettings, evaluate_cell
from crsbench.runs.extraction import RunExtraction
from crsbench.runs.plan import CellOutcome, CellPlan
from crsbench.runs.prepare import PreparedDataset, shift_targets_for
from crsbench.store.run_result import RunResult

#: ``extract_fn(ext, plan, prep, target, progress=...) -> (features, encoder_revision)``
ExtractFn = Callable[..., tuple[dict[str, Any], str]]
#: ``evaluate_fn(cell_data, settings) -> run results``
EvaluateFn = Callable[[CellData, CellSettings], Sequence[RunResult]]


@dataclass(frozen=True)
class ExtractedCell:
    """What an extraction task sends back: cache keys only, plus provenance and timing.

    Attributes
    ----------
    features : dict
        The structure returned by :func:`~crsbench.runs.extract_cell.extract_cell_features`
        with every :class:`~crsbench.features.results.FeatureArray` emptied (its ``key`` is
        kept; the rows are read back from the cache by the probe task).
    encoder_revision : str
        Provenance string of the encoder.
    seconds : float
        Wall time of the extraction in the worker.
    """

    features: dict[str, Any]
    encoder_revision: str
    seconds: float


def _map_arrays(tree: Any, fn: Callable[[Any], Any]) -> Any:
    """Apply ``fn`` to every FeatureArray of a nested dict (the cell's feature structure)."""
    from crsbench.features.results import FeatureArray

    if isinstance(tree, FeatureArray):
        return fn(tree)
    if isinstance(tree, dict):
        return {k: _map_arrays(v, fn) for k, v in tree.items()}
    return tree


def strip_features(features: dict[str, Any]) -> dict[str, Any]:
    """The feature structure with every array and id list replaced by an empty one."""
    import numpy as np

    def strip(fa: Any) -> Any:
        merged = "+" in fa.key  # rows of several entries: their order is kept in ``ids``
        ids = fa.ids if merged else np.empty(0, dtype=str)
        return dataclasses.replace(fa, features=np.empty((0, 0), dtype=np.float32), ids=ids)

    return _map_arrays(features, strip)


def load_features(features: dict[str, Any], cache_dir: Any) -> dict[str, Any]:
    """Read every (stripped) FeatureArray of ``features`` back from the cache, verified.

    A merged array (key ``k1+k2``: rows of several entries, see
    :func:`crsbench.runs.extract_cell.extract_cell_features`) is read part by part and put
    back in the row order its kept ``ids`` record.

    Raises
    ------
    CacheError
        If an entry is missing or corrupt here: ``cache_dir`` is not shared by the node
        that extracted it, or it was removed in between.
    """
    import numpy as np

    from crsbench.features import FeatureCache

    cache = FeatureCache(cache_dir)

    def read(fa: Any, key: str) -> Any:
        r = cache.get(key)
        if r.status != "hit":
            raise CacheError(
                f"feature cache entry {key} ({fa.condition.name}@{fa.condition.severity}, "
                f"depth {fa.depth}) must be readable by the probe task in {cache.root}. Got "
                f"{r.status!r} instead ({r.problem or 'no committed entry'}): cache_dir must "
                "be on a filesystem shared by the driver and every Ray node."
            )
        return r

    def load(fa: Any) -> Any:
        reads = [read(fa, k) for k in fa.key.split("+")]
        if len(reads) == 1:
            return dataclasses.replace(fa, features=reads[0].array, ids=reads[0].ids, status="hit")
        ids = np.concatenate([np.asarray(r.ids) for r in reads])
        pos = {i: k for k, i in enumerate(ids.tolist())}
        order = np.array([pos[i] for i in np.asarray(fa.ids).tolist()], dtype=np.int64)
        feats = np.concatenate([np.asarray(r.array) for r in reads])[order]
        return dataclasses.replace(fa, features=feats, ids=ids[order], status="hit")

    return _map_arrays(features, load)


def extract_task(
    ext: RunExtraction,
    plan: CellPlan,
    prepared: dict[str, PreparedDataset],
    extract_fn: ExtractFn | None = None,
) -> ExtractedCell:
    """Body of an extraction task: fill the shared cache with the cell's features."""
    from crsbench.encoders.plugins import load_encoder_modules
    from crsbench.runs.extract_cell import extract_cell_features

    load_encoder_modules(ext.encoder_modules)  # a worker process: the config's encoders too
    fn = extract_fn or extract_cell_features
    t0 = time.perf_counter()
    prep = prepared[plan.dataset]
    targets = shift_targets_for(plan, prepared)
    feats, enc_rev = fn(ext, plan, prep, targets, progress=False)
    return ExtractedCell(strip_features(feats), enc_rev, time.perf_counter() - t0)


def probe_task(
    ext: RunExtraction,
    plan: CellPlan,
    prepared: dict[str, PreparedDataset],
    settings: CellSettings,
    extracted: ExtractedCell,
    evaluate_fn: EvaluateFn | None = None,
) -> CellOutcome:
    """Body of a probe task: read the cell's features from the cache and evaluate it."""
    from crsbench.encoders.plugins import load_encoder_modules
    from crsbench.runs.cell_inputs import cell_data

    load_encoder_modules(ext.encoder_modules)
    t0 = time.perf_counter()
    feats = load_features(extracted.features, ext.cache_dir)
    prep = prepared[plan.dataset]
    targets = shift_targets_for(plan, prepared)
    data = cell_data(plan, prep, feats, targets)
    t1 = time.perf_counter()
    results = tuple((evaluate_fn or evaluate_cell)(data, settings))
    t_read, t_eval = t1 - t0, time.perf_counter() - t1
    precision = extracted.features.get("precision", {})
    return CellOutcome(plan, results, extracted.encoder_revision, extracted.seconds + t_read, t_eval,
                       precision, data.quarantined)  # fmt: skip
