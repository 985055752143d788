"""The image geometry crsbench accepts, checked from a file's header before any decoding.

Used by the decoder of a run (:mod:`crsbench.features.decode`) and by the probe of
``crsbench datasets check`` and ``profile`` (:mod:`crsbench.datasets.files`), so both refuse the
same files.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from crsbench.core.errors import ConfigError


@dataclass(frozen=True)
class ImageBounds:
    """The image geometry a run accepts (checked from the header, before a pixel is decoded).

    Defaults are wide enough for every paper dataset; set ``CRSBENCH_IMAGE_MIN_SIDE``,
    ``CRSBENCH_IMAGE_MAX_SIDE`` or ``CRSBENCH_IMAGE_MAX_ASPECT`` to change them. An image
    outside them is quarantined with ``error_class`` ``bad_geometry`` (the file is named):
    resizing a 1 x 100,000 strip so its short side is W would allocate gigabytes.
    """

    min_side: int = 1  # a 1 x 1 image is upscaled (a valid, if useless, image)
    max_side: int = 65_536
    max_aspect: float = 20.0

    @classmethod
    def from_env(cls) -> ImageBounds:
        """The bounds, with any of the three environment variables applied."""
        env = {
            f: os.environ.get(f"CRSBENCH_IMAGE_{f.upper()}")
            for f in ("min_side", "max_side", "max_aspect")
        }
        kinds = {"min_side": int, "max_side": int, "max_aspect": float}
        values = {}
        for key, text in env.items():
            if not text:
                continue
            try:
                values[key] = kinds[key](text)
            except ValueError:
                raise ConfigError(
                    f"CRSBENCH_IMAGE_{key.upper()} must be a number. Got {text!r} instead."
                ) from None
        return cls(**values)

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
