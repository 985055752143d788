"""Dataset adapters: the real on-disk layouts of ISIC 2019, APTOS 2019, CheXpert,
MIMIC-CXR-JPG, the shift targets NIH ChestX-ray14, PadChest and VinDr-CXR, and a
bring-your-own CSV ``folder``.

>>> from crsbench.datasets import load, check
>>> data = load("chexpert", "/data", uncertainty="zeros")  # doctest: +SKIP
>>> report = check("isic2019", "/data/isic")               # doctest: +SKIP

The ``synthetic`` subpackage (fake data in these layouts) is imported only on demand.
"""

from __future__ import annotations

from . import (  # noqa: F401  (registration)
    aptos2019,
    chexpert,
    folder,
    isic2019,
    mimic_cxr,
    nih_cxr14,
    padchest,
    vindr_cxr,
)
from .base import DATASETS, Dataset, DatasetAdapter, DatasetCard, load
from .check import CheckReport, check

__all__ = [
    "DATASETS",
    "CheckReport",
    "Dataset",
    "DatasetAdapter",
    "DatasetCard",
    "check",
    "load",
]
