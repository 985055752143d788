"""The three extra synthetic hospitals (NIH, PadChest, VinDr): prevalences, looks, label names.

Each hospital reuses the chest X-ray anatomy and finding generators with its own label
prevalences, tone curve, noise, sharpness, marker and view mix, and writes its findings
under its own names (the inverse of the packaged label map, for the findings it labels).
"""

from __future__ import annotations

from crsbench.datasets.synthetic.cxr_labels import CHEXPERT_COMMON, CHEXPERT_PROFILE, LabelProfile
from crsbench.datasets.synthetic.cxr_render import Scanner


def _profile(prevalence: dict[str, float], blank_negative: float = 0.0) -> LabelProfile:
    return LabelProfile(
        prevalence={**CHEXPERT_PROFILE.prevalence, **prevalence},
        uncertain={k: 0.0 for k in CHEXPERT_PROFILE.uncertain},
        blank_negative=blank_negative,
        uncertain_negative=0.0,
    )


NIH_PROFILE = _profile({"Lung Opacity": 0.18, "Pleural Effusion": 0.13, "Atelectasis": 0.10,
                        "Cardiomegaly": 0.05, "Edema": 0.04, "Support Devices": 0.2})  # fmt: skip
#: NIH under ``SynthSize.common_findings``: the common CheXpert mix, fewer effusions and edema.
NIH_COMMON = LabelProfile(
    prevalence={**CHEXPERT_COMMON.prevalence, "Pleural Effusion": 0.3, "Edema": 0.25},
    uncertain={k: 0.0 for k in CHEXPERT_PROFILE.uncertain},
    blank_negative=0.0,
    uncertain_negative=0.0,
    healthy=0.35,
)
PADCHEST_PROFILE = _profile({"Cardiomegaly": 0.10, "Pleural Effusion": 0.06, "Edema": 0.02,
                             "Pneumonia": 0.04, "Fracture": 0.04, "Support Devices": 0.08})  # fmt: skip
VINDR_PROFILE = _profile({"Cardiomegaly": 0.15, "Pleural Effusion": 0.05, "Lung Opacity": 0.08,
                          "Edema": 0.02, "Pneumothorax": 0.03, "Support Devices": 0.02})  # fmt: skip

NIH_SCANNER = Scanner(gamma=1.25, window=(0.06, 0.94), noise=0.02, blur=0.9, marker=None)
PADCHEST_SCANNER = Scanner(gamma=0.85, window=(0.0, 1.0), noise=0.015, blur=0.5, marker="L")
VINDR_SCANNER = Scanner(gamma=1.45, window=(0.04, 0.97), noise=0.03, blur=1.1, marker=None)

#: CheXpert finding → the names each hospital writes it under (one chosen at random).
NIH_NAMES = {
    "Cardiomegaly": ("Cardiomegaly",), "Lung Opacity": ("Infiltration",),
    "Lung Lesion": ("Nodule", "Mass"), "Edema": ("Edema",), "Consolidation": ("Consolidation",),
    "Pneumonia": ("Pneumonia",), "Atelectasis": ("Atelectasis",),
    "Pneumothorax": ("Pneumothorax",), "Pleural Effusion": ("Effusion",),
    "Pleural Other": ("Pleural_Thickening",),
}  # fmt: skip
NIH_EXTRA = ("Emphysema", "Fibrosis", "Hernia")
PADCHEST_NAMES = {
    "Enlarged Cardiomediastinum": ("mediastinal enlargement",), "Cardiomegaly": ("cardiomegaly",),
    "Lung Opacity": ("infiltrates", "alveolar pattern", "interstitial pattern"),
    "Lung Lesion": ("nodule", "pulmonary mass"), "Edema": ("pulmonary edema",),
    "Consolidation": ("consolidation",), "Pneumonia": ("pneumonia",),
    "Atelectasis": ("laminar atelectasis", "atelectasis"), "Pneumothorax": ("pneumothorax",),
    "Pleural Effusion": ("pleural effusion", "costophrenic angle blunting"),
    "Pleural Other": ("pleural thickening", "apical pleural thickening"),
    "Fracture": ("callus rib fracture", "rib fracture"),
    "Support Devices": ("pacemaker", "NSG tube", "central venous catheter"),
}  # fmt: skip
PADCHEST_EXTRA = ("aortic elongation", "scoliosis", "chronic changes", "COPD signs", "kyphosis")
VINDR_NAMES = {
    "Cardiomegaly": ("Cardiomegaly",), "Lung Opacity": ("Lung Opacity", "Infiltration"),
    "Lung Lesion": ("Nodule/Mass",), "Edema": ("Edema",), "Consolidation": ("Consolidation",),
    "Pneumonia": ("Pneumonia",), "Atelectasis": ("Atelectasis",),
    "Pneumothorax": ("Pneumothorax",), "Pleural Effusion": ("Pleural effusion",),
    "Pleural Other": ("Pleural thickening",), "Fracture": ("Rib fracture",),
}  # fmt: skip
VINDR_EXTRA = ("Aortic enlargement", "Pulmonary fibrosis", "Calcification")


def finding_names(
    rng, findings: dict[str, bool], names: dict[str, tuple[str, ...]], extra: tuple[str, ...]
) -> list[str]:
    """The hospital's names for the true findings, plus an unmapped extra finding at 15 %."""
    out = [str(rng.choice(names[k])) for k in names if findings[k]]
    if rng.uniform() < 0.15:
        out.append(str(rng.choice(extra)))
    return out
