"""Public API contract: registry, cards, lazy synthetic import, immutability."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import crsbench.datasets as ds
from crsbench.core.errors import DataError, RegistryError


def test_registry_names_and_cards() -> None:
    assert ds.DATASETS.names() == [
        "aptos2019", "chexpert", "folder", "isic2019", "mimic_cxr", "nih_cxr14", "padchest",
        "vindr_cxr",
    ]  # fmt: skip
    expected = {
        "isic2019": ("multiclass", "dermoscopy", 8, False),
        "aptos2019": ("multiclass", "fundus", 5, True),
        "chexpert": ("multilabel", "chest_xray", 14, False),
        "mimic_cxr": ("multilabel", "chest_xray", 14, False),
        "nih_cxr14": ("multilabel", "chest_xray", 14, False),
        "padchest": ("multilabel", "chest_xray", 14, False),
        "vindr_cxr": ("multilabel", "chest_xray", 14, False),
    }
    for name, (task, modality, k, ordinal) in expected.items():
        card = ds.DATASETS.get(name).card
        assert isinstance(card, ds.DatasetCard) and card.name == name
        assert (card.task, card.modality, len(card.label_names), card.ordinal) == (
            task, modality, k, ordinal
        )  # fmt: skip
        assert card.citation and card.licence
        if name in ("nih_cxr14", "padchest", "vindr_cxr"):
            assert card.access and set(card.provided_labels) <= set(card.label_names)
        with pytest.raises(dataclasses.FrozenInstanceError):
            card.name = "x"  # type: ignore[misc]
    with pytest.raises(RegistryError, match="Did you mean: chexpert"):
        ds.load("chexpret", ".")


def test_synthetic_is_not_imported_eagerly() -> None:
    code = (
        "import sys, crsbench.datasets as d; d.load; "
        "print('crsbench.datasets.synthetic' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def _dataset(**overrides: object) -> ds.Dataset:
    fields: dict[str, object] = {
        "name": "t",
        "root": Path("/r"),
        "image_ids": np.array(["a", "b"]),
        "paths": np.array(["/r/a", "/r/b"]),
        "labels": np.array([[1.0, 0.0], [0.0, 1.0]]),
        "label_names": ("x", "y"),
        "groups": np.array(["a", "b"]),
        "task": "multiclass",
        "metadata": pd.DataFrame(index=range(2)),
        "options": {},
        "revision": "0" * 64,
        "card": ds.DATASETS.get("isic2019").card,
    }
    fields.update(overrides)
    return ds.Dataset(**fields)  # type: ignore[arg-type]


def test_dataset_is_read_only_and_validated() -> None:
    data = _dataset()
    np.testing.assert_array_equal(data.class_indices(), [0, 1])
    with pytest.raises(dataclasses.FrozenInstanceError):
        data.name = "other"  # type: ignore[misc]
    with pytest.raises(ValueError, match="read-only"):
        data.labels[0, 0] = 5.0
    with pytest.raises(DataError, match="unique"):
        _dataset(image_ids=np.array(["a", "a"]))
    with pytest.raises(DataError, match="shape"):
        _dataset(labels=np.ones((2, 3)))
    with pytest.raises(DataError, match="groups has 1 rows"):
        _dataset(groups=np.array(["a"]))
