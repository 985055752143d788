"""Several shift targets per cell, each compared on the labels both sides provide.

The cell evaluator (the real :func:`evaluate_cell`) writes one shift row per target for the
logistic probe, each recalibrator and each control probe; a target that provides fewer labels
records the source's clean AUROC on the compared labels, computed from the same model.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from crsbench.core.errors import DataError
from crsbench.core.shift_labels import (
    compared_label_mask,
    restricts_source,
    shift_label_details,
    source_reference,
)
from crsbench.evaluation.cell import CellData, CellSettings, ShiftData, evaluate_cell
from crsbench.store.details import ShiftDetails
from crsbench.store.run_result import RunResult

LABELS = ("a", "b", "c", "d")


def _cell(shifts: tuple[ShiftData, ...]) -> CellData:
    """4 multilabel outputs on 8-D features; 300 train / 60 val / 120 calib / 200 test."""
    rng = np.random.default_rng(3)
    n = 680
    X = rng.normal(size=(n, 8))
    logits = X[:, :4] * np.array([1.5, 0.3, 1.5, 1.5]) + rng.normal(size=(n, 4))  # b: weak
    y = (logits > 0).astype(float)
    idx = rng.permutation(n)
    return CellData(
        encoder="enc",
        dataset="src",
        task="multilabel",
        n_outputs=4,
        labels=y,
        train=idx[:300],
        val=idx[300:360],
        calib=idx[360:480],
        test=idx[480:],
        features={1.0: X},
        perturbed={},
        subsets={(1.0, 0): np.arange(300)},
        shifts=shifts,
    )


def _settings() -> CellSettings:
    return CellSettings(
        seeds=[0], fractions=[1.0], Cs=[1.0], recalibrators=["temperature"], knn={"k": 5}
    )


def _same_images_target(cell: CellData, name: str, provided: tuple[str, ...]) -> ShiftData:
    """A 'target' made of the source's own test images and labels, restricted to ``provided``."""
    mask = compared_label_mask("src", LABELS, LABELS, name, LABELS, provided)
    y = cell.labels[cell.test].copy()
    y[:, ~mask] = np.nan
    compared = mask if restricts_source(mask, LABELS, LABELS) else None
    return ShiftData(name, cell.features[1.0][cell.test], y, ShiftDetails(shift_rows={"rows": "x"}),
                     compared=compared, label_names=LABELS)  # fmt: skip


def _find(rows: list[RunResult], probe: str, rec: str, condition: str) -> RunResult:
    """The one result of (probe, recalibrator, condition)."""
    (found,) = [r for r in rows
                if (r.identity.probe, r.identity.recalibrator, r.identity.condition)
                == (probe, rec, condition)]  # fmt: skip
    return found


def test_each_target_gets_a_row_per_probe_and_recalibrator() -> None:
    base = _cell(())
    shifts = (_same_images_target(base, "full", LABELS),
              _same_images_target(base, "part", ("a", "c", "d")))  # fmt: skip
    rows = evaluate_cell(_cell(shifts), _settings())
    shift = [r.identity for r in rows if r.identity.condition == "shift"]
    got = sorted((r.probe, r.recalibrator, r.eval_dataset) for r in shift)
    assert got == sorted(
        (p, rec, t)
        for t in ("full", "part")
        for p, rec in (("logistic", "none"), ("logistic", "temperature"), ("knn", "none"))
    )
    for r in rows:
        if r.identity.condition == "shift":
            assert r.details.as_json()["shift_rows"] == {"rows": "x"}
        else:
            assert r.details.shift is None


def test_same_images_on_a_label_subset_drop_exactly_zero() -> None:
    """The target *is* the source's test set, restricted to 3 of 4 labels: the like-with-like
    reference equals the target AUROC exactly, while the all-label clean AUROC differs."""
    base = _cell(())
    cell = _cell((_same_images_target(base, "part", ("a", "c", "d")),))
    rows = evaluate_cell(cell, _settings())
    for probe, rec in (("logistic", "none"), ("logistic", "temperature"), ("knn", "none")):
        clean = _find(rows, probe, rec, "clean")
        shift = _find(rows, probe, rec, "shift")
        entry = shift.details.shift.shift_labels
        assert entry["compared"] == ["a", "c", "d"] and entry["not_compared"] == ["b"]
        assert entry["source_clean_auroc"] == pytest.approx(shift.metrics["auroc"], abs=1e-12)
        # the old rule would see a "drop" < 0
        assert clean.metrics["auroc"] < shift.metrics["auroc"] - 0.03


def test_reference_is_sklearn_macro_auroc_on_the_compared_labels() -> None:
    from crsbench.probes import fit_probe_grid

    base = _cell(())
    cell = _cell((_same_images_target(base, "part", ("b", "d")),))
    rows = evaluate_cell(cell, _settings())
    shift = _find(rows, "logistic", "none", "shift")
    X, y = cell.features[1.0], cell.labels
    fit = fit_probe_grid(X[cell.train], y[cell.train], X[cell.val], y[cell.val], "multilabel",
                         Cs=np.array([1.0]), subsets={0: np.arange(300)}, n_outputs=4,
                         max_iter=1000, tol=1e-6)[0]  # fmt: skip
    p = fit.predict_proba(X[cell.test])
    want = np.mean([roc_auc_score(y[cell.test][:, j], p[:, j]) for j in (1, 3)])
    assert shift.details.shift.shift_labels["source_clean_auroc"] == pytest.approx(want, abs=1e-9)


def test_a_target_providing_every_label_records_nothing_more() -> None:
    base = _cell(())
    rows = evaluate_cell(_cell((_same_images_target(base, "full", LABELS),)), _settings())
    for r in rows:
        assert "shift_labels" not in r.details.as_json()


def test_label_rule_errors_and_parsing() -> None:
    with pytest.raises(DataError, match="same order"):
        compared_label_mask("s", ("a", "b"), ("a", "b"), "t", ("b", "a"), ("a",))
    with pytest.raises(DataError, match="share no provided label"):
        compared_label_mask("s", ("a", "b"), ("a",), "t", ("a", "b"), ("b",))
    mask = compared_label_mask("s", LABELS, LABELS, "t", LABELS, ("a", "b"))
    assert mask.tolist() == [True, True, False, False]
    assert restricts_source(mask, LABELS, LABELS)
    # a source providing only what the target provides is not restricted
    assert not restricts_source(mask, LABELS, ("a", "b"))
    details = {"shift_labels": shift_label_details(LABELS, mask, 0.75)}
    assert source_reference(details) == 0.75
    assert source_reference('{"shift_labels": {"source_clean_auroc": null}}') != 0.75
    assert np.isnan(source_reference('{"shift_labels": {"source_clean_auroc": null}}'))
    assert source_reference('{"C": 1.0}') is None and source_reference("not json") is None
    undefined = shift_label_details(LABELS, mask, float("nan"))
    assert undefined["source_clean_auroc"] is None and "both classes" in undefined["undefined"]
