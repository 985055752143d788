"""How large the binned ECE of a perfectly calibrated model is on a test set of a given size:
the floor below which an ECE cannot be read (``docs/scoring.md``, "ECE per subgroup and the
minimum size").

The 15-bin plug-in ECE is biased upward on a finite test set: with no miscalibration at all it
is still positive, and the fewer the test patients the larger. The table was measured on a
perfectly calibrated binary model (prevalence 0.3, 1-3 images per patient, 300 draws per
size); the subgroup analysis reads it for its minimum ECE size
(:data:`crsbench.stats.subgroups.MIN_ECE_SUBGROUP_PATIENTS`) and the cohort verdict page for
whether its test set is large enough for the ECE to be read.
"""

from __future__ import annotations

import numpy as np

#: (test patients, mean plug-in ECE, mean debiased ECE) of a perfectly calibrated model.
CALIBRATED_ECE: tuple[tuple[int, float, float], ...] = (
    (30, 0.142, 0.104),
    (50, 0.112, 0.076),
    (75, 0.092, 0.059),
    (100, 0.083, 0.054),
    (150, 0.067, 0.042),
    (200, 0.056, 0.034),
    (400, 0.042, 0.026),
    (1000, 0.026, 0.016),
)
#: An ECE is "too small a test set to read" when a perfectly calibrated model's plug-in ECE
#: at that size reaches this (a fifth of the calibration anchor's 0.25 range).
READABLE_ECE_FLOOR = 0.05


def calibrated_ece(n_patients: int, debiased: bool = False) -> float:
    """The mean ECE of a perfectly calibrated model on ``n_patients`` test patients:
    interpolated in log(n) inside the table, ∝ 1/√n beyond it (NaN for n < 1).

    Examples
    --------
    >>> round(calibrated_ece(100), 3), round(calibrated_ece(4000), 3)
    (0.083, 0.013)
    """
    if not n_patients or n_patients < 1:
        return float("nan")
    n = np.array([r[0] for r in CALIBRATED_ECE], float)
    v = np.array([r[2 if debiased else 1] for r in CALIBRATED_ECE], float)
    if n_patients < n[0]:
        return float(v[0] * np.sqrt(n[0] / n_patients))
    if n_patients > n[-1]:
        return float(v[-1] * np.sqrt(n[-1] / n_patients))
    return float(np.interp(np.log(n_patients), np.log(n), v))


def ece_readable(n_patients: int) -> bool:
    """Whether a calibrated model's ECE at ``n_patients`` stays below
    :data:`READABLE_ECE_FLOOR` (from about 270 patients)."""
    return bool(calibrated_ece(n_patients) < READABLE_ECE_FLOOR)
