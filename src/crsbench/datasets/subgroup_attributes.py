"""The per-image subgroup attributes the results store keeps beside the predictions.

From a :class:`~crsbench.datasets.base.Dataset`'s ``metadata`` the four attributes the subgroup
analysis reads (``docs/scoring.md``, "Subgroups, operating points, flips"), each as a string per row, blank where the
dataset does not record it:

- ``sex``: ``female`` / ``male`` (any case in the source);
- ``age``: age in whole years (the analysis bands it);
- ``view``: ``AP`` / ``PA`` for a chest X-ray (CheXpert's ``ap_pa``, else ``view``);
- ``site``: the anatomical site of a skin lesion (ISIC ``anatom_site_general``).

An attribute with no non-blank value in the dataset is left out.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

#: The attributes kept, in this order.
SUBGROUP_ATTRIBUTES: tuple[str, ...] = ("sex", "age", "view", "site")
_SEXES = {"female": "female", "f": "female", "male": "male", "m": "male"}
_VIEWS = ("AP", "PA")


def _blank(n: int) -> np.ndarray:
    return np.full(n, "", dtype=object)


def _sex(col: pd.Series) -> np.ndarray:
    low = col.fillna("").astype(str).str.strip().str.lower()
    return low.map(lambda v: _SEXES.get(v, "")).to_numpy(dtype=object)


def _age(col: pd.Series) -> np.ndarray:
    years = pd.to_numeric(col, errors="coerce").to_numpy(dtype=float)
    ok = np.isfinite(years) & (years >= 0)
    out = _blank(len(years))
    out[ok] = [str(int(np.floor(v))) for v in years[ok]]
    return out


def _view(col: pd.Series) -> np.ndarray:
    up = col.fillna("").astype(str).str.strip().str.upper()
    return up.where(up.isin(_VIEWS), "").to_numpy(dtype=object)


def _site(col: pd.Series) -> np.ndarray:
    return col.fillna("").astype(str).str.strip().str.lower().to_numpy(dtype=object)


def subgroup_columns(metadata: pd.DataFrame) -> dict[str, np.ndarray]:
    """The subgroup attributes of every row of ``metadata`` (see the module docstring).

    Parameters
    ----------
    metadata : pandas.DataFrame
        A dataset's per-row metadata.

    Returns
    -------
    dict of str to numpy.ndarray
        Attribute → ``(N,)`` array of str (blank = not recorded); only attributes with at
        least one recorded value.
    """
    cols: dict[str, np.ndarray] = {}
    if "sex" in metadata:
        cols["sex"] = _sex(metadata["sex"])
    if "age" in metadata:
        cols["age"] = _age(metadata["age"])
    view = "ap_pa" if "ap_pa" in metadata else "view" if "view" in metadata else None
    if view is not None:
        cols["view"] = _view(metadata[view])
    if "site" in metadata:
        cols["site"] = _site(metadata["site"])
    return {k: v.astype(str) for k, v in cols.items() if np.any(v != "")}
