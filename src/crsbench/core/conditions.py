"""Evaluation conditions: which are the protocol's robustness conditions, which are extras.

The one home of this concept. The robustness axis R holds exactly the protocol's 15 paper
conditions (:data:`PAPER_CONDITIONS`: five perturbations × severities 1, 2, 3) plus the shift
drops of :data:`PAPER_SHIFTS` (CheXpert → MIMIC-CXR) where evaluated. Every other perturbed condition (the modality
noises of :data:`EXTRA_PERTURBATIONS`, a custom perturbation, a severity outside
:data:`SEVERITIES`, a shift target other than the paper's) is an *extra*: reported beside R, never inside it (see ``docs/scoring.md``).
The perturbation registry checks that each registered perturbation's ``kind`` agrees.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

#: The paper's five acquisition perturbations, in the protocol's order.
PAPER_PERTURBATIONS: tuple[str, ...] = ("gaussian_blur", "jpeg", "contrast", "rician", "fov_crop")
#: The shipped modality-appropriate extra noises (reported beside R).
EXTRA_PERTURBATIONS: tuple[str, ...] = ("poisson_gaussian", "sensor_noise")
#: The protocol's severities.
SEVERITIES: tuple[int, ...] = (1, 2, 3)
#: The protocol's 15 robustness conditions (perturbation, severity), fixed order.
PAPER_CONDITIONS: tuple[tuple[str, int], ...] = tuple(
    (name, s) for name in PAPER_PERTURBATIONS for s in SEVERITIES
)
#: The shipped extras at every severity.
EXTRA_CONDITIONS: tuple[tuple[str, int], ...] = tuple(
    (name, s) for name in EXTRA_PERTURBATIONS for s in SEVERITIES
)
#: The protocol's shift drops inside R: (source dataset, shift target). Any other shift target
#: evaluated is an extra, reported beside R.
PAPER_SHIFTS: tuple[tuple[str, str], ...] = (("chexpert", "mimic_cxr"),)
#: Which shift targets R counts: ``paper`` (the default: only :data:`PAPER_SHIFTS`) or
#: ``all_shifts`` (every shift target evaluated for the dataset; the column
#: ``robustness_drop_all_shifts`` of the axes table, see ``docs/scoring.md``).
ROBUSTNESS_VARIANTS: tuple[str, ...] = ("paper", "all_shifts")
CLEAN = "clean"
SHIFT = "shift"
#: Conditions evaluated on unperturbed images; they carry severity 0.
UNPERTURBED_CONDITIONS: tuple[str, ...] = (CLEAN, SHIFT)

ConditionRole = Literal["clean", "shift", "paper", "extra"]


def condition_label(name: str, severity: int) -> str:
    """``"jpeg/3"``: how notes and tables name a perturbed condition."""
    return f"{name}/{int(severity)}"


def condition_role(name: str, severity: int) -> ConditionRole:
    """``"clean"``, ``"shift"``, ``"paper"`` (one of the 15) or ``"extra"`` (anything else)."""
    if name in UNPERTURBED_CONDITIONS:
        return CLEAN if name == CLEAN else SHIFT
    return "paper" if (str(name), int(severity)) in PAPER_CONDITIONS else "extra"


def condition_roles(names: object, severities: object) -> np.ndarray:
    """Vectorised :func:`condition_role` over two equal-length columns (object array)."""
    names_a = np.asarray(names, dtype=object)
    sev_a = np.asarray(severities)
    return np.array(
        [condition_role(str(n), int(s)) for n, s in zip(names_a, sev_a, strict=True)], dtype=object
    )


def shift_in_r(source: str, target: str, variant: str = "paper") -> bool:
    """Whether the shift ``source`` → ``target`` counts in R under ``variant``
    (:data:`ROBUSTNESS_VARIANTS`); one that does not is an extra, reported beside R."""
    if variant not in ROBUSTNESS_VARIANTS:
        raise ValueError(
            f"robustness variant must be one of {list(ROBUSTNESS_VARIANTS)}. Got {variant!r}"
        )
    return variant == "all_shifts" or (source, target) in PAPER_SHIFTS
