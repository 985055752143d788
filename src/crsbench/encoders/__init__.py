"""Encoder registry: the 15 CRS-Bench families plus offline baselines.

>>> from crsbench.encoders import ENCODERS, get_card, build
>>> get_card("vit_b16").embed_dim
768

Importing this package is cheap: torch, timm, open_clip and transformers are imported only when
an encoder is built.
"""

from __future__ import annotations

from crsbench.encoders import baselines, families_general, families_medical  # noqa: F401
from crsbench.encoders.base import Backbone, BuildContext, Encoder
from crsbench.encoders.card import EncoderCard, EncoderSpec, tap_index
from crsbench.encoders.preprocess import Preprocessing, preprocess
from crsbench.encoders.registry import (
    ENCODERS,
    build,
    describe,
    get_card,
    weights_available,
    weights_unavailable_reason,
)
from crsbench.encoders.weights import WEIGHTS_ENV, load_state_dict
from crsbench.protocol import PAPER_ENCODERS

#: The paper's 15 families (registry names); other packages' encoders are never among them.
PAPER_FAMILIES: tuple[str, ...] = PAPER_ENCODERS

__all__ = [
    "ENCODERS",
    "PAPER_FAMILIES",
    "WEIGHTS_ENV",
    "Backbone",
    "BuildContext",
    "Encoder",
    "EncoderCard",
    "EncoderSpec",
    "Preprocessing",
    "build",
    "describe",
    "get_card",
    "load_state_dict",
    "preprocess",
    "tap_index",
    "weights_available",
    "weights_unavailable_reason",
]
