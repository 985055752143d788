"""Registry of perturbations and the metadata each one carries."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from crsbench.core.errors import ConfigError
from crsbench.core.registry import Registry
from crsbench.protocol import PAPER_PERTURBATIONS

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
    """

    name: str
    fn: OpFn
    parse: ParseFn
    kind: Literal["paper", "extra"]
    modalities: tuple[str, ...]
    stochastic: bool
    description: str = ""


PERTURBATIONS: Registry[PerturbationSpec] = Registry("perturbation")


def register_perturbation(
    name: str,
    *,
    parse: ParseFn,
    kind: Literal["paper", "extra"],
    modalities: tuple[str, ...] = MODALITIES,
    stochastic: bool,
    description: str = "",
) -> Callable[[OpFn], OpFn]:
    """Decorator: register ``fn`` as perturbation ``name`` with its metadata.

    ``kind`` must agree with :data:`crsbench.protocol.PAPER_PERTURBATIONS` (the one
    home of which perturbations are the paper's): ``"paper"`` exactly for those five.
    """
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
            ),
        )
        return fn

    return decorator
