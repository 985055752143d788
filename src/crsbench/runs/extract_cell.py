"""Features one cell needs, through the content-addressed cache (the pixel side of a cell)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from crsbench.config import BenchmarkConfig
from crsbench.datasets.bounds import ImageBounds
from crsbench.protocol import CLEAN
from crsbench.runs.plan import CellPlan

if TYPE_CHECKING:  # encoders and features import torch: loaded when a cell is extracted
    from crsbench.datasets.base import Dataset
    from crsbench.encoders.base import Encoder
    from crsbench.evaluation.precision_check import ProbeBatch
    from crsbench.features import ExtractionResult, ExtractSettings, FeatureArray, FeatureCache
    from crsbench.features.precision import PrecisionDecision
    from crsbench.runs.extraction import RunExtraction
    from crsbench.runs.prepare import PreparedDataset

_ENCODERS: dict[tuple[str, str, int | None, str, str | None], Encoder] = {}


def resolve_device(device: str) -> str:
    """``auto`` → ``cuda`` when a GPU is visible, else ``cpu``."""
    if device != "auto":
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def get_encoder(ext: RunExtraction, name: str) -> Encoder:
    """Build (once per process) the run's encoder ``name`` with its per-encoder overrides."""
    from crsbench.encoders import build

    spec = ext.encoder(name)
    device = resolve_device(ext.device)
    key = (name, device, spec.input_size, spec.weights, spec.recipe)
    if key not in _ENCODERS:
        enc = build(
            name,
            pretrained=spec.weights == "pretrained",
            device=device,
            weights_path=spec.weights_path,
            allow_remote_code=spec.allow_remote_code,
            recipe=spec.recipe,
        )
        _ENCODERS[key] = enc.set_input_size(spec.input_size)
    return _ENCODERS[key]


def run_working_size(cfg: BenchmarkConfig) -> int:
    """The run's working resolution W (``perturbations.working_size``, else the largest input
    size of the config's encoders, at least 224): every image is perturbed at W once, for every
    encoder, and each encoder's preprocessing resizes from W."""
    from crsbench.encoders import get_card
    from crsbench.features.resolution import working_size

    sizes = [e.input_size or get_card(e.name).input_size for e in cfg.encoders]
    return working_size(sizes, cfg.perturbations.working_size, key="perturbations.working_size")


def encoder_revision(
    encoder: Encoder, precision: str | None = None, *, random: bool = False
) -> str:
    """Provenance string of an encoder: source revision, weights hash and, for extracted
    features, the resolved precision (``fp32``/``bf16``) they were computed in. ``random``
    (an entry with ``weights: random``) puts :data:`~crsbench.core.random_weights.RANDOM_WEIGHTS_TAG`
    first, which marks the records as a dry run's."""
    from crsbench.core.random_weights import RANDOM_WEIGHTS_TAG

    rev = getattr(encoder.card, "revision", None) or "unpinned"
    rev = f"{RANDOM_WEIGHTS_TAG}|{rev}" if random else rev
    out = f"{rev}|weights-sha256:{encoder.weights_hash}"
    return out if precision is None else f"{out}|precision:{precision}"


def probe_batch(
    plan: CellPlan,
    prep: PreparedDataset,
    n_images: int,
    working_size: int | None = None,
    image_bounds: ImageBounds | None = None,
) -> ProbeBatch:
    """The bf16 check's labelled batch: the first ``n_images`` rows of the training split
    followed by the validation split, under the cell's conditions at the run's working size
    and image bounds (None without labels)."""
    from crsbench.evaluation.precision_check import ProbeBatch

    ds, sp = prep.dataset, prep.splits
    if sp is None:
        return None
    rows = np.concatenate([np.asarray(sp.train), np.asarray(sp.val)])[:n_images]
    labels = np.asarray(ds.labels)[rows]
    if ds.task == "multiclass":  # one-hot rows -> the class vector the check's probe takes
        labels = labels.argmax(axis=1)
    return ProbeBatch(
        image_ids=[str(i) for i in ds.image_ids[rows]],
        paths=[str(p) for p in ds.paths[rows]],
        labels=labels,
        task=ds.task,
        n_outputs=len(ds.label_names),
        dataset_revision=ds.revision,
        conditions=((CLEAN, 0), *plan.conditions),
        working_size=working_size,
        image_bounds=image_bounds or ImageBounds(),
    )


def resolve_cell_precision(
    ext: RunExtraction, plan: CellPlan, prep: PreparedDataset, enc: Encoder, cache: FeatureCache
) -> PrecisionDecision:
    """The :class:`~crsbench.features.precision.PrecisionDecision` of this cell's encoder."""
    from crsbench.evaluation.precision_check import decide_precision
    from crsbench.features.precision import PrecisionCheck

    check = PrecisionCheck.from_overrides(ext.precision_check.model_dump())
    batch = (
        None
        if ext.precision == "fp32"
        else probe_batch(plan, prep, check.n_images, ext.working_size, ext.image_bounds)
    )
    return decide_precision(ext.precision, enc, batch, cache, check)


def _in_dataset_order(parts: list[FeatureArray], image_ids: np.ndarray) -> FeatureArray:
    """One FeatureArray of the rows of ``parts`` (disjoint row sets), in dataset row order.

    Its key is the parts' keys joined by ``+`` (the Ray executor reads such an array back part
    by part, in the order of its ``ids``)."""
    from crsbench.features import FeatureArray

    if len(parts) == 1:
        return parts[0]
    pos = {i: k for k, i in enumerate(np.asarray(image_ids).tolist())}
    ids = np.concatenate([np.asarray(p.ids) for p in parts])
    order = np.argsort([pos[i] for i in ids.tolist()], kind="stable")
    feats = np.concatenate([np.asarray(p.features) for p in parts])[order]
    first = parts[0]
    status = "hit" if all(p.status == "hit" for p in parts) else "computed"
    key = "+".join(p.key for p in parts)
    return FeatureArray(feats, ids[order], first.condition, first.depth, key, status)


def _bad_share(n_dataset: int, n_rows: int) -> float:
    """``max_bad_fraction`` of one extraction over ``n_rows`` of a dataset of ``n_dataset``
    images: it refuses as soon as these rows alone hold more bad images than the whole
    dataset may (:mod:`crsbench.datasets.bad_images`); the dataset-wide count is checked
    when the cell's rows are assembled."""
    from crsbench.datasets.bad_images import MAX_BAD_FRACTION

    return MAX_BAD_FRACTION * n_dataset / max(1, n_rows)


def _quarantined(results: list[ExtractionResult]) -> list[dict[str, str]]:
    """Every image the extractions could not decode (once per image id): id, path, reason."""
    seen: dict[str, dict[str, str]] = {}
    for res in results:
        for q in res.quarantined:
            seen.setdefault(
                str(q["image_id"]),
                {
                    "image_id": str(q["image_id"]),
                    "path": str(q["path"]),
                    "error_class": str(q["error_class"]),
                    "message": str(q.get("message", "")),
                },
            )
    return list(seen.values())


@dataclass(frozen=True)
class _Extraction:
    """The encoder, cache and settings every extraction pass of one cell shares."""

    encoder: Encoder
    cache: FeatureCache
    settings: ExtractSettings

    def run(self, ds: Dataset, rows: np.ndarray, **changes: Any) -> ExtractionResult:
        """Extract ``rows`` of dataset ``ds`` with the shared settings, ``changes`` applied."""
        from crsbench.features import extract

        bad = _bad_share(len(ds.image_ids), len(rows))
        settings = replace(self.settings, max_bad_fraction=bad, **changes)
        return extract(self.encoder, ds.image_ids[rows], ds.paths[rows], cache=self.cache,
                       dataset_revision=ds.revision, settings=settings)  # fmt: skip


def _dataset_passes(
    job: _Extraction, plan: CellPlan, ds: Dataset, test: np.ndarray
) -> list[ExtractionResult]:
    """The test rows with every condition (perturbed features at the last layer only), then
    the other rows clean; one clean pass over every row when the cell has no condition."""
    rest = np.setdiff1d(np.arange(len(ds.image_ids)), test)  # sorted; test keeps split order
    clean_only = ((CLEAN, 0),)
    if plan.conditions:
        groups = [(test, (*clean_only, *plan.conditions)), (rest, clean_only)]
    else:
        groups = [(np.arange(len(ds.image_ids)), clean_only)]
    return [job.run(ds, rows, conditions=conds, perturbed_depths=(1.0,))
            for rows, conds in groups if len(rows)]  # fmt: skip


def _shift_pass(job: _Extraction, target: PreparedDataset) -> ExtractionResult:
    """Clean last-layer features of a shift target's evaluation rows."""
    return job.run(target.dataset, target.eval_rows, conditions=((CLEAN, 0),), depths=(1.0,))


def extract_cell_features(
    ext: RunExtraction,
    plan: CellPlan,
    prep: PreparedDataset,
    targets: Mapping[str, PreparedDataset] | None,
    *,
    progress: bool = True,
) -> tuple[dict[str, Any], str]:
    """Clean features of every row at every layer, perturbed test features, shift features.

    Every image is decoded once, at the run's working size (:func:`run_working_size`), the
    same for every encoder, so each encoder's preprocessing receives the same (degraded)
    image: the test rows in one pass that yields their clean features
    at every layer and their perturbed features (last layer) under every condition; the other
    rows in a clean pass. The clean features are then put back in dataset row order.

    Returns
    -------
    (features, encoder_revision)
        ``features`` has keys ``clean`` (depth → FeatureArray over every row that decoded, in
        dataset order), ``perturbed`` ((name, severity) → FeatureArray over the test rows),
        ``quarantined`` (one dict per image that could not be decoded: ``image_id``,
        ``path``, ``error_class``, ``message``) and, for a shift source (``targets``: its
        prepared shift targets by name), ``shift`` (target → FeatureArray of its evaluation
        rows) and ``shift_quarantined`` (target → list); ``precision`` is the precision decision's record
        (:class:`~crsbench.features.precision.PrecisionDecision`), for the runs' details.
    """
    from crsbench.features import ExtractSettings, FeatureCache

    enc = get_encoder(ext, plan.encoder)
    cache = FeatureCache(ext.cache_dir)
    decision = resolve_cell_precision(ext, plan, prep, enc, cache)
    common = ExtractSettings(
        batch_size=ext.batch_size,
        num_workers=ext.num_workers,
        progress=progress,
        depths=ext.layers,
        precision=decision.precision,
        working_size=ext.working_size,
        image_bounds=ext.image_bounds,
    )
    job = _Extraction(enc, cache, common)
    results = _dataset_passes(job, plan, prep.dataset, np.asarray(prep.splits.test))
    ds = prep.dataset
    clean = {
        d: _in_dataset_order([r[("clean", d)] for r in results], ds.image_ids) for d in ext.layers
    }
    feats: dict[str, Any] = {
        "clean": clean,
        "perturbed": {},
        "precision": decision.as_dict(),
        "quarantined": _quarantined(results),
    }
    if plan.conditions:
        feats["perturbed"] = {c: results[0][(c, 1.0)] for c in plan.conditions}
    if targets:
        feats["shift"], feats["shift_quarantined"] = {}, {}
        for name, target in targets.items():
            res_s = _shift_pass(job, target)
            feats["shift"][name] = res_s[(CLEAN, 1.0)]
            feats["shift_quarantined"][name] = _quarantined([res_s])
    random = ext.encoder(plan.encoder).weights == "random"
    return feats, encoder_revision(enc, decision.precision, random=random)
