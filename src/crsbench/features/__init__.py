"""Feature extraction engine and content-addressed feature cache.

``extract`` decodes every image once, applies every requested condition in the same pass,
encodes in batches and commits per-shard entries to a :class:`FeatureCache`. See
``docs/features.md``.
"""

from __future__ import annotations

from crsbench.features.cache import FEATURE_FORMAT_VERSION, CacheRead, FeatureCache, make_key
from crsbench.features.decode import DECODE_POLICY, ImageDecodeError, decode_image
from crsbench.features.engine import extract
from crsbench.features.results import ExtractionResult, FeatureArray
from crsbench.features.settings import ExtractSettings

__all__ = [
    "DECODE_POLICY",
    "FEATURE_FORMAT_VERSION",
    "CacheRead",
    "ExtractSettings",
    "ExtractionResult",
    "FeatureArray",
    "FeatureCache",
    "ImageDecodeError",
    "decode_image",
    "extract",
    "make_key",
]
