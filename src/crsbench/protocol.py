"""The protocol's constants, each defined once (``docs/protocol.md``).

Config defaults (:mod:`crsbench.config`) and every module read these values from here; a
config may override most of them, and every run record carries the values that produced it.
The module also holds the one rule built on them: which evaluation condition counts in the
robustness axis R (the protocol's 15 paper conditions plus the paper's shift drops) and which
is an *extra*, reported beside R, never inside it (``docs/scoring.md``). The perturbation
registry checks that each registered perturbation's ``kind`` agrees.

Only :mod:`crsbench.core` sits below this module; it imports nothing else of the package.
"""

from __future__ import annotations

from typing import Final, Literal, get_args

import numpy as np

# ----------------------------------------------------------------------------- seeds

#: The five shared seeds (label subsamples, probe initialisation, MLP / kNN randomness).
SEEDS: tuple[int, ...] = (0, 1, 2, 3, 4)
#: Seed of the patient-level split (shared by every encoder).
SPLIT_SEED = 0

# ----------------------------------------------------------------------------- label fractions

#: The label fractions of the training split probes are fitted on (1.0: the full-label fit).
LABEL_FRACTIONS: tuple[float, ...] = (0.01, 0.05, 0.10, 0.25, 1.0)
#: The fraction every other one is compared with (retention's denominator).
FULL_FRACTION = 1.0
#: The fractions label-efficiency retention averages AUROC_f / AUROC_1.0 over.
RETENTION_FRACTIONS: tuple[float, ...] = tuple(f for f in LABEL_FRACTIONS if f != FULL_FRACTION)

# ----------------------------------------------------------------------------- probes

#: The main probe's inverse-regularisation grid: 13 values, 10^-4 … 10^2 in half decades,
#: written to 12 significant digits (the values a config stores and hashes).
C_GRID: tuple[float, ...] = tuple(float(f"{10.0 ** (-4 + 0.5 * i):.12g}") for i in range(13))
#: Equal-width confidence bins of the ECE (every stored ``ece``, the bootstrap's, the
#: reliability diagrams').
ECE_BINS = 15
#: The main probe's iteration cap, stopping rule and its tolerance, the same for every
#: encoder: a fit stops when the quasi-Newton step predicts no fitted row's probability to
#: move by more than ``LOGISTIC_TOL`` ("probabilities"); "gradient" is scikit-learn's test
#: (gradient max-norm at most ``LOGISTIC_TOL``), which does not bound the probabilities.
#: The step underestimates the way left by up to about 10x on weakly penalised fits: 5e-7
#: (1e-6 before 2026-12-03) keeps every fit of the benchmark's grid within 1e-5 of the optimum.
LOGISTIC_MAX_ITER = 1000
StopRule = Literal["probabilities", "gradient"]
STOP_RULES: tuple[StopRule, ...] = get_args(StopRule)
LOGISTIC_STOP: Final[StopRule] = "probabilities"
LOGISTIC_TOL = 5e-7
#: Control probe MLP: hidden width, maximum epochs (early stopping), Adam rate, L2 penalty.
MLP_HIDDEN_SIZE = 256
MLP_EPOCHS = 100
MLP_LR = 1e-3
MLP_WEIGHT_DECAY = 1e-4
#: BLAS threads of the probe stage (fits, predictions, metrics, recalibrators of a cell). One
#: thread makes every probe number independent of the machine's core count (a threaded GEMM
#: sums in another order: 1e-7 relative differences, L-BFGS taking other steps), and on a busy
#: or small CPU it is also faster (OpenBLAS threads spin while waiting for a core: a demo cell
#: took 12 s on 1 thread vs 118 s on 2 on a loaded 2-core machine; docs/quickstart.md).
PROBE_BLAS_THREADS = 1
#: Control probe kNN: neighbours and distance.
KNN_K = 5
KNN_METRIC: Final = "cosine"

# ----------------------------------------------------------------------------- layers

#: Relative depths of the blocks features are taken from (1.0: the default embedding).
LAYER_DEPTHS: tuple[float, ...] = (0.25, 0.5, 0.75, 1.0)

# ----------------------------------------------------------------------------- recalibration

#: The post-hoc recalibrators, fitted on the calibration split (the type a config key takes).
Recalibrator = Literal["temperature", "vector", "isotonic", "dirichlet"]
RECALIBRATORS: tuple[Recalibrator, ...] = get_args(Recalibrator)
#: Version of the packaged recalibration protocol file (``resources/calibration/recal_v1.yaml``).
RECAL_VERSION = "v1"

# ----------------------------------------------------------------------------- encoders

#: The encoder cards' family groups.
FAMILY_GROUPS: tuple[str, ...] = ("general", "medical", "specialist", "baseline")
#: Family group → the group the medical-vs-general comparisons put it in. Baselines (pixels,
#: random weights, a small ImageNet net) are neither: they stay ``baseline`` and are left out
#: of both groups of the Welch tests.
COMPARISON_GROUP: dict[str, str] = {
    "general": "general",
    "baseline": "baseline",
    "medical": "medical",
    "specialist": "medical",
}

#: Version of the packaged pretraining catalogue (``resources/pretraining/v1.yaml``).
PRETRAINING_VERSION = "v1"

# ----------------------------------------------------------------------------- scoring

#: The anchors version a config and the scoring use when none is named.
ANCHORS_VERSION = "v2"
#: The protocol's bootstrap replicates (the paper's count): the default of analyze and report.
BOOTSTRAP_REPLICATES = 10_000

# ----------------------------------------------------------------------------- adaptation regime

#: The regimes: frozen encoders with linear probes (the protocol's main regime) and LoRA
#: adaptation (the second regime); the ``regime`` column of every run record.
FROZEN = "frozen"
LORA = "lora"
REGIMES: tuple[str, ...] = (FROZEN, LORA)

#: LoRA: rank, scaling alpha, adapter dropout, maximum epochs, base learning rate, the
#: learning-rate grid ``lr × LORA_LR_FACTORS`` (picked on validation AUROC) and its seeds.
LORA_RANK = 8
LORA_ALPHA = 16
LORA_DROPOUT = 0.1
LORA_EPOCHS = 8
LORA_LR = 1e-4
LORA_LR_FACTORS: tuple[float, ...] = (1.0, 3.0, 10.0)
LORA_SEEDS: tuple[int, ...] = (0, 1, 2)

# ----------------------------------------------------------------------------- encoders

#: The paper's panel: the 15 encoder families CRS-Bench compares (registry names). Encoders
#: added by other packages or by a config's ``encoder_modules`` are never part of it.
PAPER_ENCODERS: tuple[str, ...] = (
    "biomedclip", "biovil", "chexzero", "clip", "dinov2", "llava_med", "mae", "medgemma",
    "medsiglip", "panderm", "rad_dino", "resnet50", "retfound", "siglip", "vit_b16",
)  # fmt: skip

# ----------------------------------------------------------------------------- conditions

#: The paper's five acquisition perturbations, in the protocol's order.
PAPER_PERTURBATIONS: tuple[str, ...] = ("gaussian_blur", "jpeg", "contrast", "rician", "fov_crop")
#: The JPEG perturbation (the verdict asks which encoder is most robust to it).
JPEG = "jpeg"
#: The shipped modality-appropriate extra noises (reported beside R).
EXTRA_PERTURBATIONS: tuple[str, ...] = ("poisson_gaussian", "sensor_noise")
#: The protocol's severities.
SEVERITIES: tuple[int, ...] = (1, 2, 3)
#: Version of the packaged severity table (``resources/perturb/severities_v1.yaml``).
SEVERITIES_VERSION = "v1"
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
CLEAN: Final = "clean"
SHIFT: Final = "shift"
#: Conditions evaluated on unperturbed images; they carry severity 0.
UNPERTURBED_CONDITIONS: tuple[str, ...] = (CLEAN, SHIFT)

ConditionRole = Literal["clean", "shift", "paper", "extra"]
#: Which rows of a shift target are evaluated: its official test split (frontal views), or
#: every frontal image whatever its official split (see ``docs/config_and_store.md``).
ShiftRows = Literal["official_test", "all_frontal"]
SHIFT_ROWS: tuple[str, ...] = get_args(ShiftRows)


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


# ----------------------------------------------------------------------------- scores

#: The four axes of the CRS, in the order of every utility vector.
AXES: tuple[str, ...] = ("auroc", "ece", "retention", "robustness_drop")
#: Utility column names, same order as :data:`AXES`.
UTILITY_COLUMNS: tuple[str, ...] = ("u_auroc", "u_ece", "u_retention", "u_robustness")

# ----------------------------------------------------------------------------- intervals

#: How the pages name the two bootstraps of the CRS intervals.
TEST_PATIENTS_X_SEEDS = "test patients × seeds"
SEED_ONLY = "seed-only"
#: What a printed interval is, named beside it (docs/scoring.md, "Every printed interval"):
#: a basic (bias-corrected) interval shown to cover on planted truth ...
CI95 = "95% CI"
#: ... the 2.5–97.5 % spread of bootstrap replicates, not shown to cover (not a 95 % CI) ...
BOOTSTRAP_RANGE = "bootstrap range"
#: ... and the seed-only bootstrap's interval, which ignores that the test set is a sample
#: (it covered the population CRS in 7 % of planted worlds).
SEED_ONLY_RANGE = "seed-only range"


def interval_label(method: str) -> str:
    """What the CRS and axis intervals of a bootstrap ``method`` are called where printed:
    :data:`CI95` for the test-patient × seed bootstrap, :data:`SEED_ONLY_RANGE` for the
    seed-only one, ``"interval"`` for anything else."""
    return {TEST_PATIENTS_X_SEEDS: CI95, SEED_ONLY: SEED_ONLY_RANGE}.get(method, "interval")


def outside_phrase(point: float, low: float, high: float, corrected: float) -> str:
    """One short phrase for a plug-in ``point`` outside its basic interval ``[low, high]``:
    the bias-corrected estimate (left out when ``corrected`` is NaN) and why; ``""`` when it
    is inside or the plug-in or an end is missing."""
    if not all(np.isfinite(v) for v in (point, low, high)) or low <= point <= high:
        return ""
    head = f"bias-corrected {corrected:.3f}; " if np.isfinite(corrected) else ""
    return (
        f"{head}the plug-in {point:.3f} is outside its interval because the bootstrap finds "
        "it biased"
    )


# ----------------------------------------------------------------------------- subgroups

#: Fewest distinct patients a subgroup needs to be reported as a number.
MIN_SUBGROUP_PATIENTS = 30
#: Fewest distinct patients a subgroup needs for an ECE: below it the debiased ECE of a
#: perfectly calibrated model is still above 0.05 (0.104 at 30 patients, 0.054 at 100, 0.034
#: at 200: :data:`crsbench.stats.ece_bias.CALIBRATED_ECE`), so a small subgroup would look
#: worst for its size alone.
MIN_ECE_SUBGROUP_PATIENTS = 100
#: A subgroup difference is called real when its permutation p-value is below this.
SUBGROUP_ALPHA = 0.05
