"""Latent findings and reported label values for the synthetic chest X-ray datasets.

A study's true findings are drawn with clinically plausible dependencies (cardiomegaly raises
edema and effusion, any parenchymal finding implies Lung Opacity, No Finding means none of the
pathologies). The reported cell is ``1.0`` / ``-1.0`` (uncertain) for a true finding and blank /
``0.0`` / rarely ``-1.0`` for an absent one, as in the real label files.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from crsbench.datasets.chexpert import CHEXPERT_LABELS

MIMIC_LABELS = tuple(sorted(CHEXPERT_LABELS))
_PATHOLOGIES = tuple(k for k in CHEXPERT_LABELS if k not in ("No Finding", "Support Devices"))
_PARENCHYMAL = ("Lung Lesion", "Edema", "Consolidation", "Pneumonia", "Atelectasis")


@dataclass(frozen=True)
class LabelProfile:
    """Prevalences and reporting habits of one hospital (``healthy``: share of studies drawn
    with no pathology at all, before the prevalences apply to the others)."""

    prevalence: dict[str, float]
    uncertain: dict[str, float]
    blank_negative: float
    uncertain_negative: float
    healthy: float = 0.0


CHEXPERT_PROFILE = LabelProfile(
    prevalence={
        "Enlarged Cardiomediastinum": 0.07,
        "Cardiomegaly": 0.16,
        "Lung Opacity": 0.15,
        "Lung Lesion": 0.07,
        "Edema": 0.22,
        "Consolidation": 0.12,
        "Pneumonia": 0.07,
        "Atelectasis": 0.22,
        "Pneumothorax": 0.10,
        "Pleural Effusion": 0.35,
        "Pleural Other": 0.06,
        "Fracture": 0.07,
        "Support Devices": 0.50,
    },
    uncertain={
        "Enlarged Cardiomediastinum": 0.45,
        "Cardiomegaly": 0.25,
        "Lung Opacity": 0.05,
        "Lung Lesion": 0.12,
        "Edema": 0.2,
        "Consolidation": 0.5,
        "Pneumonia": 0.6,
        "Atelectasis": 0.45,
        "Pneumothorax": 0.12,
        "Pleural Effusion": 0.1,
        "Pleural Other": 0.15,
        "Fracture": 0.1,
        "Support Devices": 0.02,
    },
    blank_negative=0.75,
    uncertain_negative=0.02,
)
MIMIC_PROFILE = LabelProfile(
    prevalence={
        "Enlarged Cardiomediastinum": 0.05,
        "Cardiomegaly": 0.22,
        "Lung Opacity": 0.10,
        "Lung Lesion": 0.05,
        "Edema": 0.13,
        "Consolidation": 0.06,
        "Pneumonia": 0.09,
        "Atelectasis": 0.21,
        "Pneumothorax": 0.06,
        "Pleural Effusion": 0.24,
        "Pleural Other": 0.04,
        "Fracture": 0.05,
        "Support Devices": 0.30,
    },
    uncertain={k: v * 0.7 for k, v in CHEXPERT_PROFILE.uncertain.items()},
    blank_negative=0.85,
    uncertain_negative=0.01,
)

_COMMON = dict.fromkeys(_PATHOLOGIES, 0.40)
#: ``SynthSize.common_findings``: CheXpert with a third of the studies healthy and every
#: pathology at about 40 % of the others, uncertain mentions at 40 % of the real rates.
CHEXPERT_COMMON = LabelProfile(
    prevalence={**_COMMON, "Lung Opacity": 0.30, "Support Devices": 0.65},
    uncertain={k: 0.4 * v for k, v in CHEXPERT_PROFILE.uncertain.items()},
    blank_negative=0.75,
    uncertain_negative=0.02,
    healthy=0.3,
)
#: MIMIC-CXR under ``common_findings``: the CheXpert mix shifted (fewer effusions and
#: devices, more cardiomegaly), the real MIMIC reporting habits.
MIMIC_COMMON = LabelProfile(
    prevalence={
        **CHEXPERT_COMMON.prevalence,
        "Cardiomegaly": 0.5,
        "Pleural Effusion": 0.3,
        "Support Devices": 0.55,
    },  # fmt: skip
    uncertain={k: 0.7 * v for k, v in CHEXPERT_COMMON.uncertain.items()},
    blank_negative=0.85,
    uncertain_negative=0.01,
    healthy=0.25,
)


def _logit(p: float) -> float:
    return float(np.log(p / (1 - p)))


def draw_findings(
    rng: np.random.Generator, profile: LabelProfile, frailty: float, ap: bool
) -> dict[str, bool]:
    """True findings of one study.

    Parameters
    ----------
    rng : numpy.random.Generator
        Stream of the study.
    profile : LabelProfile
        Hospital prevalences.
    frailty : float
        Patient-level standard-normal effect shared by the patient's studies.
    ap : bool
        Antero-posterior (portable, sicker patients: more devices and effusions).
    """
    prev = profile.prevalence
    sick = not (profile.healthy > 0 and rng.uniform() < profile.healthy)

    def bern(name: str, extra: float = 0.0) -> bool:
        z = _logit(prev[name]) + 0.7 * frailty + extra
        drawn = bool(rng.uniform() < 1.0 / (1.0 + np.exp(-z)))
        return drawn and (sick or name not in _PATHOLOGIES)

    f: dict[str, bool] = {}
    f["Cardiomegaly"] = bern("Cardiomegaly")
    f["Enlarged Cardiomediastinum"] = bern("Enlarged Cardiomediastinum", 1.2 * f["Cardiomegaly"])
    f["Edema"] = bern("Edema", 0.8 * f["Cardiomegaly"])
    f["Pleural Effusion"] = bern("Pleural Effusion", 0.6 * (f["Cardiomegaly"] or f["Edema"]))
    f["Consolidation"] = bern("Consolidation")
    f["Pneumonia"] = bern("Pneumonia", 1.2 * f["Consolidation"])
    f["Atelectasis"] = bern("Atelectasis", 0.5 * f["Pleural Effusion"])
    for name in ("Lung Lesion", "Pneumothorax", "Pleural Other", "Fracture"):
        f[name] = bern(name)
    f["Support Devices"] = bern("Support Devices", 0.8 if ap else -0.6)
    f["Lung Opacity"] = any(f[k] for k in _PARENCHYMAL) or bern("Lung Opacity")
    f["No Finding"] = not any(f[k] for k in _PATHOLOGIES)
    return f


def report(
    rng: np.random.Generator, findings: dict[str, bool], profile: LabelProfile, exact: bool
) -> dict[str, str]:
    """Label cells as written in the CSV (``"1.0"``, ``"0.0"``, ``"-1.0"`` or ``""``).

    ``exact`` writes only ``1.0`` / ``0.0`` (the expert-labelled CheXpert validation set).
    """
    cells: dict[str, str] = {}
    for name in CHEXPERT_LABELS:
        present = findings[name]
        if exact:
            cells[name] = "1.0" if present else "0.0"
        elif name == "No Finding":
            cells[name] = "1.0" if present else ""
        elif present:
            cells[name] = "-1.0" if rng.uniform() < profile.uncertain[name] else "1.0"
        else:
            u = rng.uniform()
            if u < profile.uncertain_negative * (profile.uncertain[name] > 0.3):
                cells[name] = "-1.0"
            elif u < profile.blank_negative:
                cells[name] = ""
            else:
                cells[name] = "0.0"
    return cells
