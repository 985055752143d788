"""Named sizes of the synthetic datasets and their validation."""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from crsbench.core.errors import ConfigError


@dataclass(frozen=True)
class SynthSize:
    """How many items each synthetic dataset gets, and the image side in pixels.

    Attributes
    ----------
    side : int
        Short image side in pixels (ISIC and APTOS images are 4:3 landscape, X-rays square).
    isic2019 : int
        ISIC 2019 training images.
    aptos2019 : int
        APTOS 2019 training images.
    chexpert_train : int
        Rows of CheXpert ``train.csv`` (frontal and lateral views together).
    chexpert_valid : int
        Rows of CheXpert ``valid.csv``.
    mimic_cxr : int
        MIMIC-CXR-JPG images (rows of the metadata and split files).
    nih_cxr14 : int
        NIH ChestX-ray14 images (rows of ``Data_Entry_2017_v2020.csv``).
    padchest : int
        PadChest images (rows of the PadChest label CSV, lateral views included).
    vindr_cxr : int
        VinDr-CXR images (train + test DICOM files).
    class_floor : int
        Fewest ISIC 2019 and APTOS 2019 images of each class (at most an even share of the
        dataset); the rest follow the real class shares. 165 puts at least 15 images of every
        class (the recalibration protocol's ``min_per_class``) in the 10 % calibration split.
        0: the real shares with a 2 % floor (DF, VASC: a handful of calibration images).
    common_findings : bool
        Chest X-rays with every finding common enough for the demo's analyses (CheXpert,
        MIMIC-CXR, NIH): a share of healthy studies, the other studies with each pathology at
        about 40 % and fewer uncertain mentions, mostly one study per CheXpert patient and
        more PA views. Every CheXpert label then has 15 positives and 15 negatives in the
        calibration split, and the test patients fill subgroups of 30. False: the real
        prevalences and reporting habits (rare findings, several studies per patient).
    """

    side: int = 64
    isic2019: int = 1400
    aptos2019: int = 850
    chexpert_train: int = 1000
    chexpert_valid: int = 60
    mimic_cxr: int = 500
    nih_cxr14: int = 400
    padchest: int = 150
    vindr_cxr: int = 120
    class_floor: int = 165
    common_findings: bool = True


MINIMUMS = {
    "side": 32,
    "isic2019": 16,
    "aptos2019": 10,
    "chexpert_train": 6,
    "chexpert_valid": 2,
    "mimic_cxr": 5,
    "nih_cxr14": 8,
    "padchest": 8,
    "vindr_cxr": 8,
    "class_floor": 0,
}
#: Fields that are switches (a bool), not counts.
SWITCHES = ("common_findings",)

SIZES: dict[str, SynthSize] = {
    "small": SynthSize(),
    "medium": SynthSize(
        side=224,
        isic2019=2400,
        aptos2019=1600,
        chexpert_train=3000,
        chexpert_valid=300,
        mimic_cxr=2000,
        nih_cxr14=600,
        padchest=600,
        vindr_cxr=500,
    ),
}


def resolve_size(size: str | Mapping[str, int] | SynthSize) -> SynthSize:
    """Turn a size name, an override mapping or a :class:`SynthSize` into a :class:`SynthSize`.

    Parameters
    ----------
    size : str or Mapping[str, int] or SynthSize
        ``"small"`` or ``"medium"``; or a mapping whose keys override fields of ``small``
        (an optional ``"base"`` key names the size to start from), e.g.
        ``{"isic2019": 40, "side": 64}``.

    Returns
    -------
    SynthSize
        The validated size.

    Raises
    ------
    ConfigError
        Unknown size name or key, non-integer value, or a value below its minimum.
    """
    if isinstance(size, SynthSize):
        resolved = size
    elif isinstance(size, str):
        if size not in SIZES:
            hint = difflib.get_close_matches(size, list(SIZES), n=1)
            extra = f" Did you mean {hint[0]!r}?" if hint else ""
            raise ConfigError(f"size must be one of {sorted(SIZES)}. Got {size!r} instead.{extra}")
        resolved = SIZES[size]
    elif isinstance(size, Mapping):
        overrides: dict[str, Any] = dict(size)  # each value checked against its key below
        base = overrides.pop("base", "small")
        start = resolve_size(base) if isinstance(base, str) else None
        if start is None:
            raise ConfigError(f"size key 'base' must be a size name. Got {base!r} instead.")
        fields = {f.name for f in dataclasses.fields(SynthSize)}
        for key, value in overrides.items():
            if key not in fields:
                hint = difflib.get_close_matches(str(key), sorted(fields), n=1)
                extra = f" Did you mean {hint[0]!r}?" if hint else ""
                raise ConfigError(
                    f"size key must be one of {sorted(fields)}. Got {key!r} instead.{extra}"
                )
            if key in SWITCHES:
                if not isinstance(value, bool):
                    raise ConfigError(f"size key {key!r} must be true or false. Got {value!r}.")
            elif isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(f"size key {key!r} must be an integer. Got {value!r} instead.")
        resolved = dataclasses.replace(start, **overrides)
    else:
        raise ConfigError(
            f"size must be a size name, a mapping or a SynthSize. Got {type(size).__name__} instead."
        )
    for key, minimum in MINIMUMS.items():
        value = getattr(resolved, key)
        if value < minimum:
            raise ConfigError(f"size key {key!r} must be at least {minimum}. Got {value} instead.")
    return resolved
