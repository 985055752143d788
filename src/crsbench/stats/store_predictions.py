"""The test-set bootstrap's inputs, read from a store's per-sample predictions.

One :class:`~crsbench.stats.patient_bootstrap.CellPredictions` per (encoder, dataset), built
from exactly the rows the point estimate's axes use (:func:`crsbench.scoring.axes_from_runs`):
the clean full-label test set (D, C), the clean test set at each protocol label fraction (L),
the 15 paper conditions and the paper's shift targets at full labels (R). Layout of the
tables: :mod:`crsbench.store.prediction_layout`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from crsbench.protocol import CLEAN, PAPER_CONDITIONS, PAPER_SHIFTS, RETENTION_FRACTIONS, SHIFT
from crsbench.stats.cell_predictions import CellPredictions, EvalSplit
from crsbench.store.cards import CARDS_TABLE, CardFacts
from crsbench.store.prediction_layout import EVAL_SPLIT, VAL_SPLIT, decode_matrix, stored_matrix
from crsbench.store.prediction_reader import read_main_predictions


@dataclass
class StorePredictions:
    """What the store holds for the test-set bootstrap.

    ``cells`` are the complete cells; ``missing`` maps ``encoder/dataset`` to what a cell
    lacks; ``available`` is False for a store without the predictions tables.
    """

    available: bool
    cells: dict[tuple[str, str], CellPredictions] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)


def _frac(f: float) -> float:
    return float(f"{float(f):.12g}")


class _Blobs:
    """Decoded probability matrices and splits, each decoded once (``compact``: matrices in
    their stored dtype, read-only views of the bytes read, not float64 copies; a matrix per
    seed is stacked into one new array of that dtype)."""

    def __init__(
        self,
        blobs: pd.DataFrame,
        splits: pd.DataFrame,
        meta: pd.DataFrame | None = None,
        compact: bool = False,
    ) -> None:
        self._decode = stored_matrix if compact else decode_matrix
        self._blobs = {r.prob_key: r for r in blobs.itertuples(index=False)}
        self._splits = {r.split_key: r for r in splits.itertuples(index=False)}
        self._meta: dict[str, dict[str, np.ndarray]] = {}
        for r in (meta if meta is not None else pd.DataFrame()).itertuples(index=False):
            self._meta.setdefault(r.split_key, {})[r.attribute] = np.asarray(r.vals, dtype=str)
        self._probs: dict[str, np.ndarray] = {}
        self._evals: dict[str, EvalSplit] = {}

    def prob(self, key: str) -> np.ndarray:
        if key not in self._probs:
            b = self._blobs[key]
            self._probs[key] = self._decode(
                b.prob, b.n_rows, b.n_outputs, f"blob {key[:12]}", b.dtype
            )
        return self._probs[key]

    def split(self, key: str) -> tuple[EvalSplit, str]:
        s = self._splits[key]
        if key not in self._evals:
            t = decode_matrix(s.targets, s.n_rows, s.n_targets, f"split {key[:12]}")
            y = t[:, 0].astype(np.int64) if s.task == "multiclass" else t
            self._evals[key] = EvalSplit(
                s.dataset, np.asarray(s.groups, dtype=str), y,
                image_ids=np.asarray(s.image_ids, dtype=str), metadata=self._meta.get(key, {}),
            )  # fmt: skip
        return self._evals[key], s.task

    def per_seed(self, keys: list[str]) -> np.ndarray:
        """``(n, K)`` when every seed shares one matrix (evaluated once), else ``(S, n, K)``."""
        if len(set(keys)) == 1:
            return self.prob(keys[0])
        return np.stack([self.prob(k) for k in keys])


def _paper_targets(rows: pd.DataFrame, paper: bool = True) -> dict[str, tuple[str, ...]]:
    """Per dataset: the paper's shift targets the store evaluates (they enter R), or with
    ``paper=False`` the other shift targets (outside R)."""
    shift = rows[(rows["condition"] == SHIFT) & (rows["eval_dataset"] != rows["dataset"])]
    out: dict[str, set[str]] = {}
    for ds, ev in zip(shift["dataset"], shift["eval_dataset"], strict=True):
        if ((ds, ev) in PAPER_SHIFTS) == paper:
            out.setdefault(ds, set()).add(ev)
    return {ds: tuple(sorted(t)) for ds, t in out.items()}


def _index(rows: pd.DataFrame, split: str = EVAL_SPLIT) -> dict[tuple, tuple[str, str]]:
    """(encoder, dataset, eval_dataset, seed, fraction, condition, severity) → (split, prob)
    of the predictions on ``split`` (the evaluated rows, or the validation rows)."""
    out = {}
    for r in rows[rows["split"] == split].itertuples(index=False):
        key = (r.encoder, r.dataset, r.eval_dataset, int(r.seed), _frac(r.fraction),
               str(r.condition), int(r.severity))  # fmt: skip
        out[key] = (r.split_key, r.prob_key)
    return out


def _val(enc, ds, seeds, val_index, blobs) -> tuple[EvalSplit, np.ndarray] | None:
    """The full-label fit's validation rows and probabilities (None when not stored)."""
    found = [val_index.get((enc, ds, ds, s, 1.0, CLEAN, 0)) for s in seeds]
    if any(k is None for k in found) or len({k[0] for k in found}) != 1:
        return None
    return blobs.split(found[0][0])[0], blobs.per_seed([k[1] for k in found])


def _extra_shifts(enc, ds, seeds, index, blobs, targets) -> tuple:
    """Shift targets outside R with predictions at every seed (a target lacking one is left
    out: nothing outside R makes a cell incomplete)."""
    out = []
    for target in targets.get(ds, ()):
        found = [index.get((enc, ds, target, s, 1.0, SHIFT, 0)) for s in seeds]
        if all(k is not None for k in found):
            out.append((blobs.split(found[0][0])[0], blobs.per_seed([k[1] for k in found])))
    return tuple(out)


def _cell(enc, ds, seeds, index, blobs, targets, val_index=None) -> CellPredictions | str:
    """The cell's predictions, or a sentence saying what it lacks."""

    def keys(ev: str, f: float, cond: str, sev: int, what: str) -> list[tuple[str, str]] | str:
        found = [index.get((enc, ds, ev, s, _frac(f), cond, sev)) for s in seeds]
        absent = [s for s, k in zip(seeds, found, strict=True) if k is None]
        return f"no predictions for {what} (seed {absent[0]})" if absent else found

    clean = keys(ds, 1.0, CLEAN, 0, "the clean full-label test set")
    if isinstance(clean, str):
        return clean
    if len({k[0] for k in clean}) != 1:
        return "the clean test rows differ between seeds"
    test, task = blobs.split(clean[0][0])
    parts: dict[str, dict] = {"fractions": {}, "conditions": {}}
    wanted = [("fractions", f, (ds, f, CLEAN, 0), f"fraction {f}") for f in RETENTION_FRACTIONS]
    wanted += [("conditions", c, (ds, 1.0, *c), f"condition {c[0]}/{c[1]}")
               for c in PAPER_CONDITIONS]  # fmt: skip
    for part, name, (ev, f, cond, sev), what in wanted:
        found = keys(ev, f, cond, sev, what)
        if isinstance(found, str):
            return found
        parts[part][name] = blobs.per_seed([k[1] for k in found])
    shifts = []
    for target in targets.get(ds, ()):
        found = keys(target, 1.0, SHIFT, 0, f"the shift to {target}")
        if isinstance(found, str):
            return found
        split, _ = blobs.split(found[0][0])
        shifts.append((split, blobs.per_seed([k[1] for k in found])))
    return CellPredictions(
        enc, ds, task, test, tuple(seeds), blobs.per_seed([k[1] for k in clean]),
        fractions=parts["fractions"], conditions=parts["conditions"],
        shift=shifts[0] if shifts else None, more_shifts=tuple(shifts[1:]),
        val=_val(enc, ds, seeds, val_index or {}, blobs),
    )  # fmt: skip


def load_store_predictions(
    store_dir: str | Path,
    cells: Iterable[tuple[str, str]],
    seeds: Iterable[int],
    *,
    compact: bool = False,
) -> StorePredictions:
    """The bootstrap inputs of ``cells`` (``(encoder, dataset)``) over ``seeds`` from a store.

    With ``compact``, probabilities are held in the dtype they are stored in (float32 unless
    float32 would change a metric), half the memory of float64 for a whole panel; the
    analyses widen one cell at a time (:meth:`CellPredictions.widened`), so every number is
    the same.

    Raises
    ------
    StoreError
        The store is missing, locked or damaged.
    """
    cell_list = tuple(cells)
    seed_list = tuple(sorted(int(s) for s in seeds))
    return _read(store_dir, cell_list, seed_list, compact)


def _read(
    store_dir: str | Path,
    cells: Sequence[tuple[str, str]],
    seed_list: Sequence[int],
    compact: bool,
) -> StorePredictions:
    """:func:`load_store_predictions` itself."""
    found = read_main_predictions(store_dir)
    if "rows" not in found:
        return StorePredictions(available=False)
    rows = found["rows"]
    blobs = _Blobs(found["blobs"], found["splits"], found.get("meta"), compact)
    index, val_index = _index(rows), _index(rows, VAL_SPLIT)
    targets, extra = _paper_targets(rows), _paper_targets(rows, paper=False)
    labels = CardFacts.from_table(found[CARDS_TABLE]).label_names if CARDS_TABLE in found else {}
    out = StorePredictions(available=True)
    for enc, ds in cells:
        got = _cell(enc, ds, seed_list, index, blobs, targets, val_index)
        if isinstance(got, str):
            out.missing[f"{enc}/{ds}"] = got
        else:
            more = _extra_shifts(enc, ds, seed_list, index, blobs, extra)
            out.cells[(enc, ds)] = dataclasses.replace(
                got, extra_shifts=more, label_names=tuple(labels.get(ds, ()))
            )
    return out
