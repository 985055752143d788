"""End to end on the synthetic datasets: real adapters -> splits -> subsamples -> perturb."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from crsbench.perturb import apply, conditions
from crsbench.splits import check_nested, label_subsamples, make_splits


@pytest.mark.slow
def test_synthetic_datasets_split_subsample_and_perturb(tmp_path):
    synthetic = pytest.importorskip("crsbench.datasets.synthetic")
    datasets = pytest.importorskip("crsbench.datasets")
    synthetic.write_all(tmp_path, size="small")
    for name in ("isic2019", "aptos2019", "chexpert", "mimic_cxr"):
        ds = datasets.load(name, tmp_path / name)
        sp = make_splits(ds, seed=0)
        assert sum(sp.sizes().values()) == len(ds.image_ids)
        if name == "chexpert":
            valid = ds.metadata["official_split"].to_numpy() == "valid"
            assert (sp.assignment[valid] == "test").all()
        y = ds.labels[sp.train]
        subs = label_subsamples(y, ds.task, key=f"{name}:{sp.digest}")
        check_nested(subs, y, ds.task)
        image = np.asarray(Image.open(ds.paths[0]))
        for condition in conditions(ds.card.modality):
            out = apply(image, *condition, image_id=str(ds.image_ids[0]))
            assert out.shape == image.shape
