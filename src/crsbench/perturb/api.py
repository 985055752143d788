"""Public entry points: :func:`apply`, :func:`apply_batch` and the condition lists."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from crsbench.core.errors import ConfigError, DataError
from crsbench.core.seeding import perturbation_seed
from crsbench.perturb.registry import MODALITIES, PERTURBATIONS, PerturbationSpec
from crsbench.perturb.severities import SeverityTable, as_table, severity_value
from crsbench.protocol import (
    EXTRA_CONDITIONS,
    EXTRA_PERTURBATIONS,
    PAPER_CONDITIONS,
    PAPER_PERTURBATIONS,
)

TableLike = SeverityTable | Mapping[str, Any] | None


def conditions(modality: str, include_extra: bool = True) -> tuple[tuple[str, int], ...]:
    """The (perturbation, severity) conditions to evaluate for a modality.

    Parameters
    ----------
    modality : {"dermoscopy", "fundus", "chest_xray", "other"}
        Image modality (a dataset card's ``modality``).
    include_extra : bool, default True
        Append the modality-appropriate extra noise (Poisson–Gaussian for ``chest_xray``,
        sensor noise for ``dermoscopy`` and ``fundus``; none for ``other``).

    Returns
    -------
    tuple of (str, int)
        :data:`PAPER_CONDITIONS` (15, fixed order), then the applicable extras.
    """
    if modality not in MODALITIES:
        raise ConfigError(f"modality must be one of {MODALITIES}. Got {modality!r} instead.")
    if not include_extra:
        return PAPER_CONDITIONS
    extra = tuple(
        (name, s) for name, s in EXTRA_CONDITIONS if modality in PERTURBATIONS.get(name).modalities
    )
    return PAPER_CONDITIONS + extra


def named_conditions(
    names: Sequence[str], modality: str, severities: Sequence[int]
) -> tuple[tuple[str, int], ...]:
    """Conditions of the perturbations in ``names`` defined outside crsbench.

    Every name that is neither one of the paper's five nor a shipped extra, and whose
    registered ``modalities`` include ``modality``, at each of ``severities`` (in the order
    given). Each value is looked up now, so a perturbation without one stops the run before
    anything is extracted.

    Parameters
    ----------
    names : sequence of str
        A config's ``perturbations.names`` (registered names).
    modality : str
        The dataset's modality.
    severities : sequence of int
        A config's ``perturbations.severities``.

    Returns
    -------
    tuple of (str, int)
        ``(name, severity)`` in the order of ``names``, then of ``severities``.

    Raises
    ------
    ConfigError
        A named perturbation has no value at one of ``severities``.
    """
    out = []
    for name in names:
        if name in PAPER_PERTURBATIONS or name in EXTRA_PERTURBATIONS:
            continue
        if modality not in PERTURBATIONS.get(name).modalities:
            continue
        for severity in severities:
            _resolve(name, severity, None)  # ConfigError naming the missing value
            out.append((name, int(severity)))
    return tuple(out)


def _check_severity(severity: object) -> int:
    if isinstance(severity, bool) or not isinstance(severity, (int, np.integer)):
        raise ConfigError(
            f"severity must be an int (0 = identity, 1-3). Got {severity!r} "
            f"({type(severity).__name__}) instead."
        )
    return int(severity)


def _check_image_shape(shape: tuple[int, ...], dtype: np.dtype, what: str) -> bool:
    """Validate one image's shape (H×W or H×W×3) and dtype; return whether it is RGB."""
    if dtype != np.uint8:
        raise DataError(f"{what} must have dtype uint8. Got {dtype} instead.")
    rgb = len(shape) == 3
    if not (len(shape) == 2 or (rgb and shape[2] == 3)):
        raise DataError(f"{what} must have shape (H, W) or (H, W, 3). Got {shape} instead.")
    if shape[0] < 1 or shape[1] < 1:
        raise DataError(f"{what} must have H >= 1 and W >= 1. Got {shape} instead.")
    return rgb


def _check_id(image_id: object, what: str = "image_id") -> str:
    if not isinstance(image_id, (str, np.str_)) or not str(image_id):
        raise ConfigError(f"{what} must be a non-empty str. Got {image_id!r} instead.")
    return str(image_id)


def _resolve(name: str, severity: object, table: TableLike) -> tuple[PerturbationSpec, int, Any]:
    spec = PERTURBATIONS.get(name)  # RegistryError with did-you-mean
    level = _check_severity(severity)
    if level == 0:
        return spec, 0, None
    if level < 0:
        raise ConfigError(f"severity must be >= 0 (0 = identity). Got {level} instead.")
    tab = as_table(table)
    return spec, level, spec.parse(severity_value(spec, tab, level))


def _readonly_view(array: np.ndarray) -> np.ndarray:
    view = array.view()
    view.setflags(write=False)
    return view


def apply(
    image: np.ndarray,
    name: str,
    severity: int,
    image_id: str,
    *,
    table: TableLike = None,
) -> np.ndarray:
    """Apply one perturbation at one severity to one image.

    Parameters
    ----------
    image : ndarray of uint8, shape (H, W) or (H, W, 3)
        Not modified.
    name : str
        A registered perturbation (see :data:`PAPER_CONDITIONS`, :data:`EXTRA_CONDITIONS`).
    severity : int
        0 (identity: a copy) or a severity defined in the table (1-3 in v1).
    image_id : str
        Seeds the random stream with
        ``perturbation_seed(image_id, name, severity)`` (docs/protocol.md section 5).
    table : SeverityTable or mapping, optional
        Override of the packaged ``severities_v1.yaml``.

    Returns
    -------
    ndarray of uint8
        A new array of the same shape.

    Raises
    ------
    RegistryError
        Unknown name (with suggestions).
    ConfigError
        Bad severity or image id.
    DataError
        Image not uint8 H×W / H×W×3.
    """
    spec, level, params = _resolve(name, severity, table)
    if not isinstance(image, np.ndarray):
        raise DataError(f"image must be a numpy.ndarray. Got {type(image).__name__} instead.")
    _check_image_shape(image.shape, image.dtype, "image")
    image_id = _check_id(image_id)
    if level == 0:
        return image.copy()
    rng = np.random.default_rng(perturbation_seed(image_id, name, level))
    return spec.fn(_readonly_view(image), params, rng)


def apply_batch(
    images: np.ndarray,
    name: str,
    severity: int,
    image_ids: Sequence[str] | np.ndarray,
    *,
    table: TableLike = None,
) -> np.ndarray:
    """Apply one perturbation to a batch; identical to calling :func:`apply` per image.

    Parameters
    ----------
    images : ndarray of uint8, shape (N, H, W) or (N, H, W, 3)
        Not modified.
    name, severity, table
        As in :func:`apply`; validated once for the batch.
    image_ids : sequence of str, length N
        One id per image (the random stream of each image).

    Returns
    -------
    ndarray of uint8, same shape as ``images``
        Validation, registry and table look-ups happen once per batch; the images are then
        processed one by one (measured faster on CPU than one float64 pass over the batch,
        which is memory-bound), each with its own random stream.
    """
    spec, level, params = _resolve(name, severity, table)
    if not isinstance(images, np.ndarray):
        raise DataError(f"images must be a numpy.ndarray. Got {type(images).__name__} instead.")
    if images.ndim not in (3, 4):
        raise DataError(
            f"images must have shape (N, H, W) or (N, H, W, 3). Got {images.shape} instead."
        )
    _check_image_shape(images.shape[1:], images.dtype, "each image")
    ids = [_check_id(i, f"image_ids[{k}]") for k, i in enumerate(list(image_ids))]
    if len(ids) != len(images):
        raise DataError(
            f"image_ids must have one id per image ({len(images)}). Got {len(ids)} instead."
        )
    if level == 0 or len(images) == 0:
        return images.copy()
    source = _readonly_view(images)
    out = np.empty_like(images)
    for k, image_id in enumerate(ids):
        rng = np.random.default_rng(perturbation_seed(image_id, name, level))
        out[k] = spec.fn(source[k], params, rng)
    return out


def describe() -> list[dict[str, Any]]:
    """One dict per registered perturbation: name, kind, modalities, stochastic, description."""
    return [
        {
            "name": spec.name,
            "kind": spec.kind,
            "modalities": spec.modalities,
            "stochastic": spec.stochastic,
            "description": spec.description,
        }
        for spec in (PERTURBATIONS.get(n) for n in PAPER_PERTURBATIONS + EXTRA_PERTURBATIONS)
    ]
