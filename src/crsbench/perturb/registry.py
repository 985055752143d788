"""Registry of perturbations and the metadata each one carries."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

import numpy as np

from crsbench.core.errors import ConfigError
from crsbench.core.registry import Registry
from crsbench.protocol import PAPER_PERTURBATIONS, SEVERITIES

MODALITIES: tuple[str, ...] = ("dermoscopy", "fundus", "chest_xray", "other")

OpFn = Callable[[np.ndarray, Any, np.random.Generator], np.ndarray]
ParseFn = Callable[[Any], Any]


@dataclass(frozen=True)
class PerturbationSpec:
    """One registered perturbation.

    Attributes
    ----------
    name : str
        Registry name (also the name hashed into the random stream).
    fn : callable
        ``fn(image_uint8, params, rng) -> image_uint8`` on one image (H×W or H×W×3).
    parse : callable
        Turns a severity-table value into ``params``; raises ``ConfigError`` when invalid.
    kind : {"paper", "extra"}
        One of the paper's five, or a modality-appropriate extra.
    modalities : tuple of str
        Modalities it applies to (see :data:`MODALITIES`).
    stochastic : bool
        Whether it draws from the per-(image, perturbation, severity) random stream.
    description : str
        One line for docs and reports.
    severities : Mapping[int, Any] or None
        Severity → raw value, for a perturbation defined outside crsbench (the packaged
        severity table does not name it); ``None`` for the table's own perturbations.
    """

    name: str
    fn: OpFn
    parse: ParseFn
    kind: Literal["paper", "extra"]
    modalities: tuple[str, ...]
    stochastic: bool
    description: str = ""
    severities: Mapping[int, Any] | None = None


PERTURBATIONS: Registry[PerturbationSpec] = Registry("perturbation")


def register_perturbation(
    name: str,
    *,
    parse: ParseFn,
    kind: Literal["paper", "extra"],
    modalities: tuple[str, ...] = MODALITIES,
    stochastic: bool,
    description: str = "",
    severities: Mapping[int, Any] | None = None,
) -> Callable[[OpFn], OpFn]:
    """Decorator: register ``fn`` as perturbation ``name`` with its metadata.

    ``kind`` must agree with :data:`crsbench.protocol.PAPER_PERTURBATIONS` (the one
    home of which perturbations are the paper's): ``"paper"`` exactly for those five.
    ``severities`` gives a perturbation defined outside crsbench its value at each of the
    protocol's severities (1, 2, 3), each checked with ``parse`` now; the packaged severity
    table (``resources/perturb/severities_v1.yaml``) holds those of crsbench's own.
    """
    levels = _check_severities(name, parse, severities)
    expected = "paper" if name in PAPER_PERTURBATIONS else "extra"
    if kind != expected:
        raise ConfigError(
            f"perturbation {name!r} must be registered with kind={expected!r} "
            f"(the paper's perturbations are {PAPER_PERTURBATIONS}). Got kind={kind!r} instead."
        )

    def decorator(fn: OpFn) -> OpFn:
        PERTURBATIONS.add(
            name,
            PerturbationSpec(
                name=name,
                fn=fn,
                parse=parse,
                kind=kind,
                modalities=tuple(modalities),
                stochastic=stochastic,
                description=description,
                severities=levels,
            ),
        )
        return fn

    return decorator


def _check_severities(
    name: str, parse: ParseFn, severities: Mapping[int, Any] | None
) -> Mapping[int, Any] | None:
    """``severities`` frozen, once its keys are the protocol's and each value parses."""
    if severities is None:
        return None
    keys = sorted(severities, key=str) if isinstance(severities, Mapping) else None
    if keys != sorted(SEVERITIES, key=str) or any(isinstance(k, bool) for k in keys):
        raise ConfigError(
            f"perturbation {name!r}: severities must map each of {list(SEVERITIES)} to a "
            f"value. Got {severities!r} instead."
        )
    for level, value in severities.items():
        try:
            parse(value)
        except ConfigError as exc:
            raise ConfigError(f"perturbation {name!r}: severities[{level}]: {exc}") from None
    return MappingProxyType({int(k): severities[k] for k in sorted(severities)})
