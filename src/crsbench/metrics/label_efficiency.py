"""Label-efficiency axis L: retention and AULC (docs/protocol.md section 7).

* ``retention`` = mean over f ∈ {1, 5, 10, 25 %} of AUROC_f / AUROC_100.
* ``aulc`` = area under AUROC against log10(fraction) by the trapezoid rule over the fractions
  present (including 1.0), divided by the log10 span (log10 f_max − log10 f_min). The result is
  the log-fraction-weighted mean AUROC, hence in [0, 1] whenever the AUROCs are.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import numpy as np

from crsbench.core.errors import DataError
from crsbench.protocol import RETENTION_FRACTIONS


def _clean(auroc_by_fraction: Mapping[float, float]) -> dict[float, float]:
    out: dict[float, float] = {}
    for f, a in auroc_by_fraction.items():
        f = float(f)
        if not 0.0 < f <= 1.0:
            raise DataError(f"label fraction must be in (0, 1]. Got {f!r} instead.")
        out[f] = float(a)
    return out


def _lookup(curve: dict[float, float], f: float) -> float:
    for key, value in curve.items():
        if math.isclose(key, f, rel_tol=1e-9, abs_tol=1e-12):
            return value
    known = ", ".join(f"{k:g}" for k in sorted(curve))
    raise DataError(f"AUROC at fraction {f:g} must be given. Got fractions {known} instead.")


def retention(
    auroc_by_fraction: Mapping[float, float], fractions: Iterable[float] = RETENTION_FRACTIONS
) -> float:
    """Mean of AUROC_f / AUROC_1.0 over ``fractions`` (higher is better).

    Parameters
    ----------
    auroc_by_fraction : Mapping[float, float]
        Label fraction (in (0, 1]) → macro-AUROC; must contain 1.0 and every ``fractions`` entry.
    fractions : iterable of float, default :data:`crsbench.protocol.RETENTION_FRACTIONS`
        The protocol's 1, 5, 10 and 25 %.

    Returns
    -------
    float
        NaN if any needed AUROC is NaN.
    """
    curve = _clean(auroc_by_fraction)
    full = _lookup(curve, 1.0)
    ratios = [_lookup(curve, float(f)) / full for f in fractions]
    if not ratios:
        raise DataError("fractions must name at least one label fraction. Got none instead.")
    return float(np.mean(ratios))


def aulc(auroc_by_fraction: Mapping[float, float]) -> float:
    """Normalised area under the AUROC vs log10(fraction) curve (higher is better).

    Parameters
    ----------
    auroc_by_fraction : Mapping[float, float]
        At least two distinct fractions in (0, 1].

    Returns
    -------
    float
        ``trapezoid(AUROC, log10 f) / (log10 f_max − log10 f_min)``, in [0, 1].
    """
    curve = _clean(auroc_by_fraction)
    if len(curve) < 2:
        raise DataError(
            f"aulc needs AUROC at >= 2 label fractions. Got {len(curve)} fraction(s) instead."
        )
    fr = np.array(sorted(curve))
    x = np.log10(fr)
    y = np.array([curve[f] for f in fr])
    area = float(np.sum(np.diff(x) * (y[1:] + y[:-1]) / 2.0))
    return area / float(x[-1] - x[0])
