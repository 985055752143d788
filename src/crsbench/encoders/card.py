"""Encoder cards (frozen metadata per registered encoder) and registry specs."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from crsbench.protocol import FAMILY_GROUPS

if TYPE_CHECKING:
    from crsbench.encoders.base import Backbone, BuildContext
    from crsbench.pretraining import PretrainingEntry

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
CLIP_STD = (0.26862954, 0.26130258, 0.27577711)
HALF = (0.5, 0.5, 0.5)

DOMAINS = (None, "dermoscopy", "fundus", "chest_xray")
POOLINGS = ("cls", "avg", "projection", "pooled")
RESIZE_MODES = ("crop", "squash", "pad")
INTENSITIES = ("none", "minmax")
#: Where a centre crop starts when its margin ``m`` is odd: ``"half_even"`` is torchvision's
#: ``CenterCrop`` (``int(round(m / 2.0))``, Python's round half to even; timm, open_clip and the
#: authors' torchvision transforms), ``"floor"`` is transformers' ``center_crop`` (``m // 2``).
CROP_ROUNDINGS = ("half_even", "floor")
GRAYSCALE_RULE = "replicate the single channel to 3 channels"


@dataclass(frozen=True)
class Recipe:
    """One named way of bringing an image to the encoder's input (an alternative on the card).

    The fields replace the card's own preprocessing fields of the same name when the recipe
    is chosen (:meth:`EncoderCard.with_recipe`); ``source`` cites where the authors use it.
    """

    name: str
    resize_mode: str
    interpolation: str
    source: str
    antialias: bool = True
    requantise: bool = False
    crop_pct: float = 1.0
    pad_fill: tuple[float, float, float] = (0.0, 0.0, 0.0)


def tap_index(fraction: float, n_blocks: int) -> int:
    """0-based block index at ``fraction`` of the depth: ``round_half_up(f * n) - 1``.

    Examples
    --------
    >>> [tap_index(f, 12) for f in LAYER_DEPTHS]
    [2, 5, 8, 11]
    >>> [tap_index(f, 27) for f in LAYER_DEPTHS]
    [6, 13, 19, 26]
    """
    return max(1, math.floor(fraction * n_blocks + 0.5)) - 1


@dataclass(frozen=True)
class EncoderCard:
    """Everything needed to reproduce how an encoder is loaded and fed.

    ``embed_dim`` and ``input_size`` describe the real (full-size) model; a ``tiny=True`` build
    exposes its own sizes as ``Encoder.embed_dim`` and ``Encoder.input_size``.

    Weights load strictly: every architecture key must come from the checkpoint, every
    checkpoint key must be used (keys outside a prefix filter included) and shapes must agree.
    ``allow_missing`` (fnmatch patterns over the architecture's keys) and ``ignore_unexpected``
    (patterns over the checkpoint's own keys) are the documented exceptions of this card.
    """

    name: str
    family: str
    family_group: str
    domain: str | None
    backend: str
    source: str
    revision: str | None
    licence: str
    gated: bool
    access_note: str
    input_size: int
    interpolation: str
    mean: tuple[float, float, float]
    std: tuple[float, float, float]
    embed_dim: int
    pooling: str
    layer_taps: str
    resize_mode: str = "crop"
    crop_pct: float = 1.0
    #: Centre-crop offset rule of the upstream recipe (:data:`CROP_ROUNDINGS`).
    crop_rounding: str = "half_even"
    pad_fill: tuple[float, float, float] = (0.0, 0.0, 0.0)
    grayscale: str = GRAYSCALE_RULE
    #: Authors' pixel steps before scaling (:mod:`crsbench.encoders.pixel_steps`).
    intensity: str = "none"
    luma: bool = False
    antialias: bool = True
    requantise: bool = False
    #: Padding colour of grey images (one channel or three equal ones); None: ``pad_fill``.
    grey_pad_fill: tuple[float, float, float] | None = None
    #: Name of the recipe the fields above describe, and the alternatives a config may choose.
    recipe: str = "default"
    recipes: tuple[Recipe, ...] = ()
    #: MD5 the authors publish for the weight file (checked when the file is hashed).
    weights_md5: str | None = None
    weights_sha256: str | None = None
    weight_files: tuple[str, ...] = ()
    lora_targets: tuple[str, ...] = ()
    allow_missing: tuple[str, ...] = ()
    ignore_unexpected: tuple[str, ...] = ()
    notes: str = ""
    #: False for an encoder with no learnable weights (the pixel baseline): no adaptation.
    trainable: bool = True

    def __post_init__(self) -> None:
        from crsbench.core.errors import RegistryError

        checks: list[tuple[str, object, tuple[object, ...]]] = [
            ("family_group", self.family_group, FAMILY_GROUPS),
            ("domain", self.domain, DOMAINS),
            ("pooling", self.pooling, POOLINGS),
            ("resize_mode", self.resize_mode, RESIZE_MODES),
            ("interpolation", self.interpolation, ("bilinear", "bicubic", "area")),
            ("intensity", self.intensity, INTENSITIES),
            ("crop_rounding", self.crop_rounding, CROP_ROUNDINGS),
        ]
        for key, value, allowed in checks:
            if value not in allowed:
                raise RegistryError(
                    f"encoder card {self.name!r}: {key} must be one of {allowed}. "
                    f"Got {value!r} instead."
                )
        if not 0.0 < self.crop_pct <= 1.0:
            raise RegistryError(
                f"encoder card {self.name!r}: crop_pct must be in (0, 1]. Got {self.crop_pct}."
            )

    def with_recipe(self, name: str | None) -> EncoderCard:
        """This card with the preprocessing of recipe ``name`` (None or the current: itself).

        Raises
        ------
        RegistryError
            ``name`` is not one of this card's recipes.
        """
        from dataclasses import replace

        from crsbench.core.errors import RegistryError

        if name is None or name == self.recipe:
            return self
        found = [r for r in self.recipes if r.name == name]
        if not found:
            known = [self.recipe, *(r.name for r in self.recipes)]
            raise RegistryError(
                f"encoder card {self.name!r}: recipe must be one of {known}. Got {name!r} instead."
            )
        r = found[0]
        others = tuple(x for x in self.recipes if x.name != name)
        return replace(
            self,
            resize_mode=r.resize_mode,
            interpolation=r.interpolation,
            antialias=r.antialias,
            requantise=r.requantise,
            crop_pct=r.crop_pct,
            pad_fill=r.pad_fill,
            recipe=r.name,
            recipes=(*others, self._as_recipe()),
        )

    def _as_recipe(self) -> Recipe:
        return Recipe(
            name=self.recipe,
            resize_mode=self.resize_mode,
            interpolation=self.interpolation,
            source=self.notes,
            antialias=self.antialias,
            requantise=self.requantise,
            crop_pct=self.crop_pct,
            pad_fill=self.pad_fill,
        )

    @property
    def pretraining(self) -> PretrainingEntry | None:
        """What is known about this encoder's pretraining data (sources with citations, and
        the CRS-Bench datasets it may have seen), from the shipped catalogue
        (:func:`crsbench.pretraining.load_pretraining`); ``None`` if not catalogued."""
        from crsbench.pretraining import load_pretraining

        return load_pretraining().entries.get(self.name)

    def as_dict(self) -> dict[str, Any]:
        """Plain-dict view (JSON-serialisable) for run records and the CLI."""
        from dataclasses import asdict

        return asdict(self)


@dataclass(frozen=True)
class EncoderSpec:
    """A registry entry: the card, the builder, and how to tell whether weights are local.

    Parameters
    ----------
    card : EncoderCard
        Frozen metadata.
    build_fn : callable
        ``build_fn(ctx: BuildContext) -> Backbone``; imports its backend lazily.
    available_fn : callable
        ``available_fn() -> bool``: are the real weights on this machine (no download)?
    """

    card: EncoderCard
    build_fn: Callable[[BuildContext], Backbone]
    available_fn: Callable[[], bool] = field(default=lambda: False)
