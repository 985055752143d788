"""The synthetic output passes the real dataset adapters' checks and loads."""

from __future__ import annotations

import pytest

datasets = pytest.importorskip("crsbench.datasets")


@pytest.mark.parametrize(
    "name",
    ["isic2019", "aptos2019", "chexpert", "mimic_cxr", "nih_cxr14", "padchest", "vindr_cxr"],
)
def test_adapters_accept_synthetic_output(tiny_out, name):
    report = datasets.check(name, tiny_out / name)
    assert report.ok, report
    assert datasets.load(name, tiny_out / name) is not None
