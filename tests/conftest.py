"""Shared pytest configuration: deterministic, offline, single-threaded where it matters."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("MPLBACKEND", "Agg")

from hypothesis import settings

# The longer fuzz run (tests/adversarial/test_fuzz_inputs.py):
# pytest tests/adversarial/test_fuzz_inputs.py --hypothesis-profile=crsbench-fuzz
settings.register_profile(
    "crsbench-fuzz",
    max_examples=int(os.environ.get("CRSBENCH_FUZZ_EXAMPLES", "1000")),
    deadline=None,
    derandomize=False,
)
