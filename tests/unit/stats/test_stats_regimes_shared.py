"""The frozen-vs-LoRA CRS comparison uses only the datasets both regimes ran on."""

from __future__ import annotations

import pandas as pd

from crsbench.stats import regime_comparison
from crsbench.testing import simulate_runs


def test_crs_row_compares_the_lora_datasets_only():
    runs = simulate_runs(seeds=2, regimes=("frozen", "lora"), rng_seed=3)
    # the LoRA regime of a `regimes.lora.datasets: [aptos2019]` run
    lora_on_aptos = runs[(runs["regime"] == "frozen") | (runs["dataset"] == "aptos2019")]
    got = regime_comparison(lora_on_aptos)
    assert set(got["scope"]) == {"aptos2019", "all"}
    both_on_aptos = regime_comparison(runs[runs["dataset"] == "aptos2019"])
    cols = ["n", "kendall_tau", "mean_abs_displacement", "leader_frozen", "leader_lora"]
    pd.testing.assert_frame_equal(
        got[got["scope"] == "all"][cols].reset_index(drop=True),
        both_on_aptos[both_on_aptos["scope"] == "all"][cols].reset_index(drop=True),
    )
