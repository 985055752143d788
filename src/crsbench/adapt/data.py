"""Images for fine-tuning and evaluation, decoded exactly as the frozen protocol decodes them.

:class:`ImageRows` wraps the feature engine's :class:`crsbench.features.loader.DecodeSet`: each
image is decoded and resized once to the working size, and every condition (clean or a
perturbation at a severity, seeded per image) is applied to that array, so the adapted model
sees the same degraded pixels as the frozen encoders. Small sets are decoded once and kept in
memory; larger ones are decoded per request.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from crsbench.core.errors import DataError
from crsbench.core.types import Condition
from crsbench.datasets.bounds import ImageBounds
from crsbench.protocol import CLEAN

#: Decoded uint8 pixels kept in memory per :class:`ImageRows` before falling back to decoding
#: on every request.
CACHE_BYTES = 1 << 30


class ImageRows:
    """``rows[int array]`` → uint8 tensor ``B×3×S×S`` (or ``B×n_cond×3×S×S`` for many conditions).

    Parameters
    ----------
    paths, image_ids : sequence of str
        All rows of a dataset (ids seed the perturbation streams).
    size : int
        Working resolution W of the run (as in the frozen extraction: the run's, not the
        encoder's input size; the model's preprocessing resizes from W).
    conditions : sequence of (name, severity)
        ``(("clean", 0),)`` for training; clean + perturbations for robustness evaluation.
    cache_bytes : int
        Keep decoded rows in memory while the whole set fits in this budget.
    bounds : ImageBounds, optional
        The image geometry accepted (the run's ``image_bounds``; default: the built-in ones).

    Attributes
    ----------
    failed : dict
        Row → decode failure of every row that could not be decoded so far.
    """

    def __init__(
        self,
        paths: Sequence[str],
        image_ids: Sequence[str],
        size: int,
        conditions: Sequence[tuple[str, int]] = ((CLEAN, 0),),
        *,
        cache_bytes: int = CACHE_BYTES,
        bounds: ImageBounds | None = None,
    ) -> None:
        from crsbench.features.loader import DecodeSet, resolve_perturb

        conds = [Condition(str(n), int(s)) for n, s in conditions]
        perturb = resolve_perturb(None)[0] if any(c.name != CLEAN for c in conds) else None
        self._set = DecodeSet([str(p) for p in paths], [str(i) for i in image_ids], size,
                              conds, perturb, bounds=bounds)  # fmt: skip
        self.size = int(size)
        self.n_conditions = len(conds)
        per_row = self.n_conditions * 3 * self.size * self.size
        self._cache: dict[int, np.ndarray] | None = (
            {} if per_row * len(self._set) <= cache_bytes else None
        )
        self.failed: dict[int, dict[str, Any]] = {}

    def __len__(self) -> int:
        return len(self._set)

    def _get(self, row: int) -> np.ndarray | None:
        if self._cache is not None and row in self._cache:
            return self._cache[row]
        if row in self.failed:
            return None
        _, stack, fail = self._set[row]
        if stack is None:
            self.failed[row] = fail or {}
            return None
        if self._cache is not None:
            self._cache[row] = stack
        return stack

    def ok(self, rows: np.ndarray) -> np.ndarray:
        """Boolean mask of the ``rows`` that decode (decoding them now if needed)."""
        return np.array([self._get(int(r)) is not None for r in rows], dtype=bool)

    def __getitem__(self, rows: Any) -> Any:
        import torch

        rows = np.atleast_1d(np.asarray(rows, dtype=np.int64))
        stacks = [self._get(int(r)) for r in rows]
        bad = [int(r) for r, s in zip(rows, stacks, strict=True) if s is None]
        if bad:
            raise DataError(
                f"rows {bad[:5]} could not be decoded ({self.failed[bad[0]]}); filter them "
                "with ImageRows.ok() first."
            )
        arr = np.stack([s for s in stacks if s is not None])  # none is None: refused above
        return torch.from_numpy(arr[:, 0] if self.n_conditions == 1 else arr)
