"""Which labels a shift compares, and the source reference its drop is measured from.

The one home of this rule (``docs/protocol.md``, section 11). A shift evaluation uses only the
labels both sides provide (a target harmonised to CheXpert's 14 labels may leave some out, as
all-NaN columns). Its drop compares like with like:

    drop = AUROC_source_clean|compared − AUROC_target

where ``AUROC_source_clean|compared`` is the same probe's clean macro-AUROC on the source's
test split restricted to the compared labels. When every label of the source is compared (the
paper's CheXpert → MIMIC-CXR), that is the source's clean AUROC itself and the shift record
carries nothing more. Otherwise the shift record's ``details["shift_labels"]`` holds
``compared`` (label names), ``not_compared`` and ``source_clean_auroc`` (``None`` with
``undefined`` when no compared label has both classes on the source's test split).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from crsbench.core.errors import DataError

#: Key of a shift record's ``details`` holding the compared labels and the source reference.
SHIFT_LABELS = "shift_labels"


def compared_label_mask(
    source: str,
    source_labels: Sequence[str],
    source_provided: Sequence[str],
    target: str,
    target_labels: Sequence[str],
    target_provided: Sequence[str],
) -> np.ndarray:
    """Boolean mask over the label columns both sides provide.

    Raises
    ------
    DataError
        The two datasets do not have the same label columns in the same order (a probe's
        outputs could not be read as the target's labels), or they share no provided label.
    """
    if tuple(source_labels) != tuple(target_labels):
        raise DataError(
            f"shift {source} → {target}: the target's label columns must be the source's, in "
            f"the same order. Got {list(target_labels)} for {target!r} and "
            f"{list(source_labels)} for {source!r}."
        )
    src, tgt = set(source_provided), set(target_provided)
    mask = np.array([name in src and name in tgt for name in source_labels], dtype=bool)
    if not mask.any():
        raise DataError(
            f"shift {source} → {target}: the two datasets share no provided label "
            f"({sorted(src)} vs {sorted(tgt)}), so nothing can be compared."
        )
    return mask


def restricts_source(
    mask: np.ndarray, source_labels: Sequence[str], source_provided: Sequence[str]
) -> bool:
    """Whether the compared labels leave out a label the source provides (then the shift
    record needs its own source reference, see :func:`shift_label_details`)."""
    kept = {name for name, m in zip(source_labels, mask, strict=True) if m}
    return any(name not in kept for name in source_provided)


NO_BOTH_CLASSES = "no compared label has both classes on the source's test split"


def shift_label_details(
    label_names: Sequence[str],
    mask: np.ndarray,
    source_clean_auroc: float,
    why_undefined: str = NO_BOTH_CLASSES,
    source_clean_ece: float = float("nan"),
) -> dict[str, Any]:
    """``details["shift_labels"]`` of a shift record whose comparison is restricted
    (``why_undefined`` is recorded when the reference is NaN); ``source_clean_ece`` is the
    source's clean ECE on the compared labels (the reference of an ECE change under shift)."""
    names = list(label_names)
    out: dict[str, Any] = {
        "compared": [n for n, m in zip(names, mask, strict=True) if m],
        "not_compared": [n for n, m in zip(names, mask, strict=True) if not m],
        "source_clean_auroc": float(source_clean_auroc)
        if np.isfinite(source_clean_auroc)
        else None,
        "source_clean_ece": float(source_clean_ece) if np.isfinite(source_clean_ece) else None,
    }
    if out["source_clean_auroc"] is None:
        out["undefined"] = why_undefined
    return out


def _entry(details: object) -> dict | None:
    """``details["shift_labels"]`` of a record (JSON text or mapping), or None."""
    if isinstance(details, str):
        try:
            details = json.loads(details)
        except ValueError:
            return None
    entry = details.get(SHIFT_LABELS) if isinstance(details, dict) else None
    return entry if isinstance(entry, dict) else None


def source_reference(details: object) -> float | None:
    """The source's clean AUROC a shift row's drop is measured from, read from its details.

    Returns ``None`` when the row records no restriction (every label compared: the
    reference is the source's clean AUROC), NaN when it records one whose reference is
    undefined, else the recorded value. ``details`` is the store's JSON text or a mapping.
    """
    entry = _entry(details)
    if entry is None:
        return None
    value = entry.get("source_clean_auroc")
    return float("nan") if value is None else float(value)


def source_reference_ece(details: object) -> float | None:
    """The source's clean ECE on the compared labels of a restricted shift row (the reference
    of its ECE change), read from its details: ``None`` when the row records no restriction
    (or was written before the value was recorded), NaN when it is undefined."""
    entry = _entry(details)
    if entry is None or "source_clean_ece" not in entry:
        return None
    value = entry["source_clean_ece"]
    return float("nan") if value is None else float(value)


def compared_labels(details: object) -> str:
    """``all``, or the names of the labels a restricted shift record compares, ``; ``-joined."""
    entry = _entry(details)
    if entry is None:
        return "all"
    return "; ".join(str(n) for n in entry.get("compared", []))
