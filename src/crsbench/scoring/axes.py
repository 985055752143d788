"""From run records to the four axes: per (encoder, dataset, seed), then seed means.

The *main protocol* rows (docs/protocol.md section 7) are ``probe='logistic'``, ``layer=1.0``,
``recalibrator='none'`` in one regime (``'frozen'`` by default). From those:

- D (``auroc``) and C (``ece``): ``fraction=1.0``, ``condition='clean'``, ``eval_dataset=dataset``;
- L (``retention``, and ``aulc``): clean rows over the label fractions;
- R (``robustness_drop``): ``fraction=1.0`` rows of exactly the 15 paper conditions
  (:data:`crsbench.protocol.PAPER_CONDITIONS`), plus the paper's shift rows
  (``condition='shift'``, CheXpert → MIMIC-CXR: ``PAPER_SHIFTS``) as one more condition.
  Extra conditions (the modality noises) and any other shift target are reported beside R:
  ``robustness_drop_extra`` (R's formula over the extras alone),
  ``robustness_drop_with_extra`` (over R's conditions and the extras) and
  ``robustness_drop_all_shifts`` (the named variant: the 15 paper conditions and every shift
  target). ``robustness="all_shifts"`` makes that variant R itself.

A value whose inputs are missing is NaN and the ``missing`` column says why; nothing is
averaged over whatever happens to be present (see :mod:`crsbench.scoring.seed_axes`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from crsbench.core.errors import DataError
from crsbench.core.shift_labels import source_reference
from crsbench.protocol import CLEAN, FROZEN, RETENTION_FRACTIONS, SHIFT, UNPERTURBED_CONDITIONS
from crsbench.scoring import notes as nt
from crsbench.scoring.anchors import AXES
from crsbench.scoring.expected import cell_expectations
from crsbench.scoring.seed_axes import NO_CLEAN, NO_ROWS, NOT_RUN, SeedRows, seed_axes
from crsbench.store.reader import select_runs
from crsbench.store.stored_plan import StoredPlan

AXIS_TABLE_COLUMNS: tuple[str, ...] = (
    "auroc",
    "ece",
    "retention",
    "aulc",
    "robustness_drop",
    "shift_auroc_mean_targets",
    "robustness_drop_extra",
    "robustness_drop_with_extra",
    "robustness_drop_all_shifts",
)
COUNT_COLUMNS: tuple[str, ...] = ("n_conditions", "n_extra_conditions")


def _frac(f: float) -> float:
    """Normalise a label fraction so that 0.1 and 0.1000000000000001 key alike."""
    return float(f"{float(f):.12g}")


def _check_unique(m: pd.DataFrame) -> None:
    ident = ["encoder", "dataset", "eval_dataset", "seed", "fraction", "condition", "severity"]
    dup = m.duplicated(ident, keep=False)
    if dup.any():
        first = m.loc[dup, ident].iloc[0].to_dict()
        raise DataError(
            f"runs must hold one main-protocol row per identity. Got {int(dup.sum())} rows "
            f"sharing identities, e.g. {first}."
        )


def _seed_rows(m: pd.DataFrame) -> dict[tuple, SeedRows]:
    """One :class:`SeedRows` per (encoder, dataset, seed) that has any main-protocol row."""
    clean: dict[tuple, dict] = {}
    pert: dict[tuple, dict] = {}
    shift: dict[tuple, dict] = {}
    refs: dict[tuple, dict] = {}
    cols = ["encoder", "dataset", "eval_dataset", "seed", "fraction", "condition", "severity",
            "auroc", "ece"]  # fmt: skip
    details = m["details"] if "details" in m.columns else pd.Series(None, index=m.index)
    for (enc, ds, ev, seed, f, cond, sev, auc, ece), det in zip(
        m[cols].itertuples(index=False), details, strict=True
    ):
        key = (enc, ds, seed)
        if cond == CLEAN and ev == ds:
            clean.setdefault(key, {})[_frac(f)] = (float(auc), float(ece))
        elif not np.isclose(float(f), 1.0):
            continue
        elif cond == SHIFT and ev != ds:
            shift.setdefault(key, {})[ev] = float(auc)
            ref = source_reference(det)
            if ref is not None:
                refs.setdefault(key, {})[ev] = ref
        elif cond not in UNPERTURBED_CONDITIONS and ev == ds:
            pert.setdefault(key, {})[(str(cond), int(sev))] = float(auc)
    keys = set(clean) | set(pert) | set(shift)
    return {
        k: SeedRows(clean.get(k, {}), pert.get(k, {}), shift.get(k, {}), refs.get(k, {}))
        for k in keys
    }


def axes_from_runs(
    runs: pd.DataFrame,
    regime: str = FROZEN,
    include_shift: bool | Sequence[str] = True,
    probe: str = "logistic",
    layer: float = 1.0,
    fractions: tuple[float, ...] = RETENTION_FRACTIONS,
    robustness: str = "paper",
    plan: StoredPlan | None = None,
) -> pd.DataFrame:
    """The four axes per (encoder, dataset, seed) from run records, with what is missing.

    Parameters
    ----------
    runs : pandas.DataFrame
        The store's ``runs`` table (see :data:`crsbench.store.reader.REQUIRED_COLUMNS`).
    regime, probe, layer : str, str, float
        Which rows are the protocol's main rows.
    include_shift : bool or sequence of str
        Which shift targets are read at all: ``True`` every one, ``False`` none (the "CRS
        without the shift target" of the external-validity analysis), or the names kept
        (leave-one-target-out).
    fractions : tuple of float
        The retention fractions (the protocol's 1, 5, 10, 25 %).
    robustness : {"paper", "all_shifts"}
        Which shift targets R counts (:data:`crsbench.protocol.ROBUSTNESS_VARIANTS`):
        the paper's (default) or every one read; the others are extras.
    plan : StoredPlan, optional
        What each cell must hold (:func:`crsbench.store.read_plan`, for the frozen regime):
        every planned cell and seed is a row, and a planned seed, condition or shift target
        the store lacks is missing, even when no cell holds it. ``None`` (a bare runs table,
        or a store written before the plan was recorded): what the store holds
        (:mod:`crsbench.scoring.expected`).

    Returns
    -------
    pandas.DataFrame
        One row per cell and seed (the planned seeds, else every seed any cell has, so an
        absent seed is a row of NaN; a planned cell absent from the store is a row of NaN per
        seed noted :data:`~crsbench.scoring.seed_axes.NOT_RUN`): ``encoder, dataset, seed``,
        the columns of
        :data:`AXIS_TABLE_COLUMNS`, ``n_conditions``, ``n_extra_conditions`` and ``missing``
        (why a value is NaN; ``""`` when nothing is). R holds exactly the 15 paper conditions
        plus the shift targets; the extras are in ``robustness_drop_extra`` and
        ``robustness_drop_with_extra`` only.

    Raises
    ------
    DataError
        Two main-protocol rows share an identity.
    """
    m = select_runs(runs, regime=regime, probe=probe, layer=layer, fraction=None,
                    condition=None, own_eval=None)  # fmt: skip
    columns = ["encoder", "dataset", "seed", *AXIS_TABLE_COLUMNS, *COUNT_COLUMNS, "missing"]
    if m.empty and (plan is None or not plan.cells):
        return pd.DataFrame(columns=columns)
    _check_unique(m)
    fracs = tuple(_frac(f) for f in fractions)
    by_seed = _seed_rows(m)
    held = {(e, d) for e, d, _s in by_seed}
    rows = []
    for cell in cell_expectations(m, plan, include_shift, fracs, robustness):
        key = (cell.encoder, cell.dataset)
        for seed in cell.seeds:
            values, note = seed_axes(by_seed.get((*key, seed), _EMPTY), cell.expected)
            note = NOT_RUN if key not in held else note
            rows.append({"encoder": key[0], "dataset": key[1], "seed": seed, **values,
                         "missing": note})  # fmt: skip
    return pd.DataFrame(rows, columns=columns)


_EMPTY = SeedRows({}, {}, {})


def has_clean_row(per_seed: pd.DataFrame) -> pd.Series:
    """Whether each row of :func:`axes_from_runs` stands on a clean full-label row (``False``
    for a seed the grid expects but the store does not hold)."""
    notes = per_seed["missing"].fillna("").astype(str).map(nt.split)
    lacking = (NO_ROWS, NO_CLEAN, NOT_RUN)
    return ~notes.map(lambda parts: any(n in parts for n in lacking)).astype(bool)


def seed_means(axes: pd.DataFrame) -> pd.DataFrame:
    """Mean of each axis over the seeds of each (encoder, dataset), with ``n_seeds``.

    The seeds expected of every cell are all the seeds of ``axes``. An axis is NaN when any
    expected seed is NaN or absent (never a mean of the seeds that happen to be there);
    ``n_seeds`` counts the seeds whose four axes are finite; ``missing`` names every gap
    with its seeds.
    """
    cols = [c for c in (*AXIS_TABLE_COLUMNS, *COUNT_COLUMNS) if c in axes.columns]
    seeds = sorted(axes["seed"].unique())
    rows = []
    for (enc, ds), grp in axes.groupby(["encoder", "dataset"], sort=True):
        present = set(grp["seed"])
        values = grp[cols].astype(float).mean(skipna=False)
        every_seed = present == set(seeds) and len(grp) == len(seeds)
        row = {"encoder": enc, "dataset": ds}
        row |= {c: float(values[c]) if every_seed else np.nan for c in cols}
        complete = grp[list(AXES)].notna().all(axis=1)
        row["n_seeds"] = int(grp.loc[complete, "seed"].nunique())
        pairs = [(s, _seed_note(r)) for s, r in zip(grp["seed"], grp.itertuples(), strict=True)]
        pairs += [(s, "no row") for s in seeds if s not in present]
        row["missing"] = nt.by_seed(pairs)
        rows.append(row)
    return pd.DataFrame(rows, columns=["encoder", "dataset", *cols, "n_seeds", "missing"])


def _seed_note(row: object) -> str:
    """A per-seed row's note; a NaN axis without one is named generically."""
    note = getattr(row, "missing", "")
    if isinstance(note, str) and note:
        return note
    return nt.join(f"{a} NaN" for a in AXES if not np.isfinite(float(getattr(row, a))))
