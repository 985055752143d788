"""Robustness axis R (docs/protocol.md section 7).

drop_c = AUROC_clean − AUROC_c for each of the 15 paper conditions c (and, for CheXpert, the
institutional-shift drop AUROC_CheXpert − AUROC_MIMIC as one more condition; a shift target
providing fewer labels is compared with the source's clean AUROC on those labels);
R_drop = 0.5 · mean(drop) + 0.5 · max(drop). Lower is better. Drops may be negative (a
perturbation that helps) and are kept signed. Which conditions enter is decided by the
caller (:mod:`crsbench.scoring.seed_axes`, from :mod:`crsbench.protocol`); the extras
are scored with the same formula beside R, never inside it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from crsbench.core.errors import DataError


def drops(
    clean_auroc: float,
    perturbed_aurocs: Sequence[float] | Mapping[str, float],
    shift_auroc: float | None = None,
) -> dict[str, float]:
    """Per-condition AUROC drops.

    Parameters
    ----------
    clean_auroc : float
        AUROC on the clean test set.
    perturbed_aurocs : sequence of float or mapping name → float
        AUROC per perturbation condition; a sequence is keyed ``"0"``, ``"1"``, ...
    shift_auroc : float, optional
        AUROC on the shifted target (e.g. MIMIC-CXR); adds the condition ``"shift"``.

    Returns
    -------
    dict[str, float]
        Condition key → ``clean_auroc − auroc``.
    """
    if isinstance(perturbed_aurocs, Mapping):
        items = [(str(k), float(v)) for k, v in perturbed_aurocs.items()]
    else:
        items = [(str(i), float(v)) for i, v in enumerate(perturbed_aurocs)]
    if shift_auroc is not None:
        if any(k == "shift" for k, _ in items):
            raise DataError(
                "perturbed_aurocs must not contain a 'shift' key when shift_auroc is given."
            )
        items.append(("shift", float(shift_auroc)))
    if not items:
        raise DataError("robustness needs >= 1 perturbed or shift AUROC. Got none instead.")
    return {k: float(clean_auroc) - v for k, v in items}


def robustness_drop(
    clean_auroc: float,
    perturbed_aurocs: Sequence[float] | Mapping[str, float],
    shift_auroc: float | None = None,
) -> float:
    """R_drop = 0.5 · mean(drop) + 0.5 · max(drop) over the conditions of :func:`drops`.

    Returns NaN if any AUROC is NaN (an undefined condition is never silently dropped).
    """
    return robustness_from_drops(drops(clean_auroc, perturbed_aurocs, shift_auroc))


def robustness_from_drops(drop_values: Sequence[float] | Mapping[str, float]) -> float:
    """0.5 · mean + 0.5 · max of per-condition drops, each already computed against its own
    reference (a shift drop compares the source on the labels the target provides, see
    :mod:`crsbench.core.shift_labels`). NaN if any drop is NaN.

    Raises
    ------
    DataError
        No drop at all.
    """
    values = drop_values.values() if isinstance(drop_values, Mapping) else drop_values
    d = np.array([float(v) for v in values], dtype=np.float64)
    if d.size == 0:
        raise DataError("robustness needs >= 1 drop. Got none instead.")
    if np.isnan(d).any():
        return float("nan")
    return float(0.5 * d.mean() + 0.5 * d.max())
