"""Split fractions and per-dataset policies for official splits.

A policy says what happens to rows that carry an official split (column ``official_split``
of the dataset metadata): each official value maps either to one of our four splits
(``train``, ``val``, ``calib``, ``test``) or to ``"pool"``. Pool rows are divided among the
policy's ``fill`` splits by the grouped stratified assignment, so that every split ends as
close to its requested fraction of *all* rows as the fixed rows allow.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from crsbench.core.errors import ConfigError
from crsbench.core.types import SPLIT_NAMES

POOL = "pool"


@dataclass(frozen=True)
class SplitFractions:
    """Requested share of all rows in each split; the four values sum to 1.

    Parameters
    ----------
    train, val, calib, test : float
        Non-negative shares. ``train`` and ``test`` must be positive.
    """

    train: float = 0.6
    val: float = 0.1
    calib: float = 0.1
    test: float = 0.2

    def __post_init__(self) -> None:
        for name in SPLIT_NAMES:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ConfigError(
                    f"SplitFractions.{name} must be a number in [0, 1]. Got {value!r} instead."
                )
            if not math.isfinite(value) or not 0.0 <= value <= 1.0:
                raise ConfigError(
                    f"SplitFractions.{name} must be a number in [0, 1]. Got {value!r} instead."
                )
        for name in ("train", "test"):
            if getattr(self, name) <= 0.0:
                raise ConfigError(
                    f"SplitFractions.{name} must be > 0. Got {getattr(self, name)!r} instead."
                )
        total = sum(self.as_dict().values())
        if abs(total - 1.0) > 1e-6:
            raise ConfigError(
                f"SplitFractions must sum to 1 (train + val + calib + test). Got {total!r} instead."
            )

    def as_dict(self) -> dict[str, float]:
        """``{"train": ..., "val": ..., "calib": ..., "test": ...}`` in split order."""
        return {name: float(getattr(self, name)) for name in SPLIT_NAMES}


@dataclass(frozen=True)
class SplitPolicy:
    """How a dataset's official split column is used.

    Parameters
    ----------
    name : str
        Policy name, recorded in the :class:`~crsbench.splits.Splits` artifact.
    official : Mapping[str, str]
        Official split value → one of ``train``/``val``/``calib``/``test``/``pool``. Empty:
        the official column is ignored and every row is in the pool.
    fill : tuple of str
        Splits that pool rows may go to. Splits outside ``fill`` hold only their fixed rows.
    description : str
        One line for the docs and for reports.
    """

    name: str
    official: Mapping[str, str] = field(default_factory=dict)
    fill: tuple[str, ...] = SPLIT_NAMES
    description: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "official", MappingProxyType(dict(self.official)))
        allowed = (*SPLIT_NAMES, POOL)
        for key, target in self.official.items():
            if target not in allowed:
                raise ConfigError(
                    f"SplitPolicy {self.name!r}: official[{key!r}] must be one of {allowed}. "
                    f"Got {target!r} instead."
                )
        if not self.fill:
            raise ConfigError(f"SplitPolicy {self.name!r}: fill must name at least one split.")
        for target in self.fill:
            if target not in SPLIT_NAMES:
                raise ConfigError(
                    f"SplitPolicy {self.name!r}: fill entries must be in {SPLIT_NAMES}. "
                    f"Got {target!r} instead."
                )
        if len(set(self.fill)) != len(self.fill):
            raise ConfigError(f"SplitPolicy {self.name!r}: fill has duplicates: {self.fill}.")

    @property
    def uses_official(self) -> bool:
        """Whether the ``official_split`` metadata column is read at all."""
        return bool(self.official)


GROUPED = SplitPolicy(
    name="grouped",
    description="No labelled official test split: one grouped, stratified split of all rows.",
)

CHEXPERT = SplitPolicy(
    name="chexpert",
    official={"valid": "test", "train": POOL},
    description=(
        "Official valid patients go to test, topped up with a patient-level stratified sample "
        "of official train; the rest of train is split into train / val / calib."
    ),
)

MIMIC_CXR = SplitPolicy(
    name="mimic_cxr",
    official={"test": "test", "valid": "val", "validate": "val", "train": POOL},
    fill=("train", "calib"),
    description=(
        "Official test → test, official validate → val, official train → train / calib "
        "(patient-level, stratified)."
    ),
)

DEFAULT_POLICIES: Mapping[str, SplitPolicy] = MappingProxyType(
    {
        "chexpert": CHEXPERT,
        "mimic_cxr": MIMIC_CXR,
        "isic2019": GROUPED,
        "aptos2019": GROUPED,
        "folder": GROUPED,
    }
)


def resolve_policy(dataset_name: str, policy: SplitPolicy | str | None = None) -> SplitPolicy:
    """Return the policy to use for ``dataset_name``.

    Parameters
    ----------
    dataset_name : str
        Name of the dataset; the key into :data:`DEFAULT_POLICIES` when ``policy`` is None.
    policy : SplitPolicy, str or None
        An explicit policy, the name of a default policy (``"grouped"``, ``"chexpert"``,
        ``"mimic_cxr"``), or None for the dataset's default (``grouped`` for unknown names).

    Returns
    -------
    SplitPolicy
    """
    if isinstance(policy, SplitPolicy):
        return policy
    if policy is None:
        return DEFAULT_POLICIES.get(dataset_name, GROUPED)
    if isinstance(policy, str):
        by_name = {p.name: p for p in (GROUPED, CHEXPERT, MIMIC_CXR)}
        if policy in by_name:
            return by_name[policy]
        raise ConfigError(
            f"split policy must be a SplitPolicy or one of {sorted(by_name)}. "
            f"Got {policy!r} instead."
        )
    raise ConfigError(
        f"split policy must be a SplitPolicy, a policy name or None. Got {type(policy).__name__}."
    )
