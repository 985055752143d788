"""The image geometry crsbench accepts, checked from a file's header before any decoding.

The bounds are configuration: the benchmark config's and the cohort YAML's ``image_bounds``
key (``min_side``, ``max_side``, ``max_aspect``), ``datasets check``'s ``--min-side``,
``--max-side`` and ``--max-aspect``. They are validated once, when the settings are read
(:meth:`ImageBounds.from_mapping`, and the config loader with the same ranges), and then
travel with the work: the decoder of a run (:mod:`crsbench.features.decode`, through
:class:`~crsbench.features.settings.ExtractSettings`) and the probe of ``datasets check`` and
``profile`` (:mod:`crsbench.datasets.files`) receive them, so both refuse the same files and a
bad setting never reaches a decoder.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from crsbench.core.errors import ConfigError

#: Inclusive range of each key (the largest side Pillow's decompression-bomb guard lets through
#: is far below the upper side bound; an aspect bound below 1 would refuse every image).
RANGES: dict[str, tuple[float, float]] = {
    "min_side": (1, 65_536),
    "max_side": (1, 1_048_576),
    "max_aspect": (1.0, 1_000_000.0),
}
#: The environment variables of crsbench 0.x, no longer read: set one and crsbench refuses to
#: start, naming the key that replaces it (so an old setting is never silently ignored).
RETIRED_ENV = {f"CRSBENCH_IMAGE_{key.upper()}": key for key in RANGES}


@dataclass(frozen=True)
class ImageBounds:
    """The image geometry a run accepts (checked from the header, before a pixel is decoded).

    Defaults are wide enough for every paper dataset. An image outside them is quarantined
    with ``error_class`` ``bad_geometry`` (the file is named): resizing a 1 x 100,000 strip
    so its short side is W would allocate gigabytes.

    Attributes
    ----------
    min_side : int
        Shortest accepted side in pixels (a 1 x 1 image is upscaled: valid, if useless).
    max_side : int
        Longest accepted side in pixels.
    max_aspect : float
        Largest accepted ratio of the longer to the shorter side.
    """

    min_side: int = 1
    max_side: int = 65_536
    max_aspect: float = 20.0

    @classmethod
    def from_mapping(cls, data: Any, source: str, *, as_options: bool = False) -> ImageBounds:
        """Bounds from a parsed ``image_bounds`` mapping (missing keys: the defaults).

        ``as_options`` names a key as its command-line option (``--max-aspect``) instead of
        ``source.key``.

        Raises
        ------
        ConfigError
            Not a mapping, an unknown key, a value that is not a number of the key's kind or
            outside :data:`RANGES`, or ``min_side`` above ``max_side``; ``source`` and the key
            are named.
        """
        if data is None:
            return cls()
        if not isinstance(data, Mapping):
            raise ConfigError(f"{source} must be a mapping of {', '.join(RANGES)}. Got {data!r}.")
        unknown = sorted(str(k) for k in set(data) - set(RANGES))
        if unknown:
            raise ConfigError(f"{source}: unknown key(s) {unknown}. Known: {', '.join(RANGES)}.")
        name = (lambda k: "--" + k.replace("_", "-")) if as_options else (lambda k: f"{source}.{k}")
        # whole numbers for the sides, a float for the aspect: _checked gives each its kind
        values: dict[str, Any] = {
            key: _checked(name(key), key, value) for key, value in data.items()
        }
        bounds = cls(**values)
        if bounds.min_side > bounds.max_side:
            raise ConfigError(
                f"{name('min_side')} must be at most {name('max_side')} ({bounds.max_side}). "
                f"Got {bounds.min_side} instead."
            )
        return bounds

    def as_dict(self) -> dict[str, float]:
        """The three values by key (for provenance and cache keys)."""
        return asdict(self)

    @property
    def is_default(self) -> bool:
        """True for the built-in bounds (left out of config hashes and cache keys)."""
        return self == ImageBounds()

    def problem(self, width: int, height: int) -> str | None:
        """Why a ``width`` x ``height`` image is refused, or None."""
        short, long = sorted((int(width), int(height)))
        if short < max(self.min_side, 1):  # 0 px never decodes, whatever the setting
            return f"its shorter side is {short} px, below the minimum {self.min_side} px"
        if long > self.max_side:
            return f"its longer side is {long} px, above the maximum {self.max_side} px"
        if long / short > self.max_aspect:
            return (f"its aspect ratio {long / short:.1f}:1 is above the maximum "
                    f"{self.max_aspect:g}:1 (resized, it would be {long / short:.0f} times as "
                    "long as wide)")  # fmt: skip
        return None


def _checked(name: str, key: str, value: Any) -> int | float:
    """``value`` of ``key`` as its kind, within :data:`RANGES` (``name`` in the message)."""
    integer = key != "max_aspect"
    kind = "a whole number" if integer else "a number"
    ok_type = isinstance(value, int) if integer else isinstance(value, int | float)
    if isinstance(value, bool) or not ok_type or not math.isfinite(value):
        raise ConfigError(f"{name} must be {kind} (unquoted). Got {value!r} instead.")
    lo, hi = RANGES[key]
    if not lo <= value <= hi:
        raise ConfigError(f"{name} must be in [{lo:g}, {hi:g}]. Got {value!r} instead.")
    return int(value) if integer else float(value)


def refuse_retired_env() -> None:
    """Refuse a set ``CRSBENCH_IMAGE_*`` variable, naming the key that replaced it.

    Raises
    ------
    ConfigError
        One of :data:`RETIRED_ENV` is set in the environment.
    """
    for var, key in RETIRED_ENV.items():
        if var in os.environ:
            raise ConfigError(
                f"{var} is no longer read: image bounds are configuration. Set "
                f"image_bounds.{key} in the config or cohort YAML (--{key.replace('_', '-')} "
                f"for `crsbench datasets check`) and unset {var}. Got {os.environ[var]!r}."
            )


#: The field names, for modules that list the keys (docs, the config model).
KEYS: tuple[str, ...] = tuple(f.name for f in fields(ImageBounds))
