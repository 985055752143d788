"""Rules the config models share: uniqueness, did-you-mean, the grid's cross-checks.

Kept apart from :mod:`crsbench.config.models` (which calls them from its validators); the
cross-checks read a :class:`~crsbench.config.models.BenchmarkConfig` by attribute.
"""

from __future__ import annotations

import difflib
from typing import Annotated, Any

from pydantic import BeforeValidator

from crsbench.datasets.bounds import ImageBounds


def unique(values: list[Any], what: str) -> list[Any]:
    """``values`` unchanged; ValueError naming the duplicates when there are any."""
    dupes = sorted({str(v) for v in values if values.count(v) > 1})
    if dupes:
        raise ValueError(f"{what} must be unique. Got duplicates {', '.join(dupes)} instead")
    return values


def did_you_mean(value: str, known: list[str]) -> str:
    """`` Did you mean 'x'?`` for the closest of ``known``, or an empty string."""
    close = difflib.get_close_matches(value, known, n=1, cutoff=0.5)
    return f" Did you mean {close[0]!r}?" if close else ""


def check_shifts(cfg: Any) -> None:
    """Each shift joins two different datasets, each pair once (a source may have any number
    of targets); a target shared by shifts has one ``rows``."""
    rows_of: dict[str, str] = {}
    for i, s in enumerate(cfg.shifts):
        for end in ("source", "target"):
            name = getattr(s, end)
            if name not in cfg.datasets:
                raise ValueError(
                    f"shifts.{i}.{end} must name a key of datasets "
                    f"({', '.join(sorted(cfg.datasets))}). Got {name!r} instead."
                    + did_you_mean(name, list(cfg.datasets))
                )
        if s.source == s.target:
            raise ValueError(f"shifts.{i}: source and target must differ. Got {s.source!r}")
        if any((p.source, p.target) == (s.source, s.target) for p in cfg.shifts[:i]):
            raise ValueError(
                f"shifts.{i}: each (source, target) pair must be listed once. Got "
                f"{s.source!r} → {s.target!r} again"
            )
        first = rows_of.setdefault(s.target, s.rows)
        if first != s.rows:
            raise ValueError(
                f"shifts.{i}.rows must match the other shifts to {s.target!r} ({first!r}): a "
                f"target has one set of evaluation rows. Got {s.rows!r} instead"
            )


def image_bounds_value(value: Any) -> Any:
    """The ``image_bounds`` key as :class:`~crsbench.datasets.bounds.ImageBounds`, checked
    there (one home for its keys and ranges)."""
    if isinstance(value, ImageBounds):
        return value
    return ImageBounds.from_mapping(value, "image_bounds")


#: The type of the config's ``image_bounds`` key: a mapping checked by :func:`image_bounds_value`.
ImageBoundsKey = Annotated[ImageBounds, BeforeValidator(image_bounds_value)]


def check_excluded_cells(cfg: Any) -> None:
    """``exclude_cells`` names the config's own encoders and probe datasets, each cell once,
    and leaves every encoder and every probe dataset at least one cell."""
    encoders = [e.name for e in cfg.encoders]
    datasets = cfg.probe_datasets
    for i, cell in enumerate(cfg.exclude_cells):
        for key, value, known, what in (
            ("encoder", cell.encoder, encoders, "an entry of encoders"),
            ("dataset", cell.dataset, datasets, "a probe dataset (a key of datasets that is "
             "not only a shift target)"),
        ):  # fmt: skip
            if value not in known:
                raise ValueError(
                    f"exclude_cells.{i}.{key} must name {what}: {', '.join(known)}. "
                    f"Got {value!r} instead." + did_you_mean(value, known)
                )
    unique([f"{c.encoder}×{c.dataset}" for c in cfg.exclude_cells], "exclude_cells entries")
    left = set(cfg.frozen_cells)
    for axis, names in ((0, encoders), (1, datasets)):
        emptied = [n for n in names if not any(c[axis] == n for c in left)]
        if emptied:
            what = "encoder" if axis == 0 else "dataset"
            raise ValueError(
                f"exclude_cells leaves {what} {emptied[0]!r} with no cell; remove it from "
                f"{what}s instead"
            )
