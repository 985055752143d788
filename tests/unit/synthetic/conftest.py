"""A tiny synthetic output shared by the tests of this folder (generated once per session)."""

from __future__ import annotations

import pytest

from crsbench.datasets.synthetic import write_all

TINY = {
    "side": 48,
    "isic2019": 40,
    "aptos2019": 30,
    "chexpert_train": 48,
    "chexpert_valid": 12,
    "mimic_cxr": 30,
    "nih_cxr14": 16,
    "padchest": 16,
    "vindr_cxr": 12,
    # the real class shares and chest findings (the demo's mix is checked by
    # test_synth_demo_content.py)
    "class_floor": 0,
    "common_findings": False,
}


@pytest.fixture(scope="session")
def tiny_out(tmp_path_factory):
    out = tmp_path_factory.mktemp("synth")
    write_all(out, size=TINY, seed=0)
    return out
