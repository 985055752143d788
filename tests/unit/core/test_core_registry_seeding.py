"""Core building blocks: registry errors and sha256-derived seeding."""

from __future__ import annotations

import hashlib
import subprocess
import sys

import numpy as np
import pytest

from crsbench.core import Registry, RegistryError, perturbation_seed, stable_rng, stable_seed
from crsbench.core.types import Condition, check_task


def test_registry_register_and_get():
    reg: Registry[object] = Registry("widget")

    @reg.register("alpha")
    def alpha():
        return 1

    assert reg.get("alpha") is alpha
    assert "alpha" in reg and len(reg) == 1 and reg.names() == ["alpha"]


def test_registry_duplicate_raises():
    reg: Registry[int] = Registry("widget")
    reg.add("a", 1)
    with pytest.raises(RegistryError, match="already registered"):
        reg.add("a", 2)


def test_registry_unknown_suggests_close_match():
    reg: Registry[int] = Registry("encoder")
    reg.add("dinov2_vitb14", 1)
    reg.add("resnet50", 2)
    with pytest.raises(RegistryError) as info:
        reg.get("dinov2_vitb41")
    assert "Did you mean: dinov2_vitb14" in str(info.value)
    assert "unknown encoder" in str(info.value)


def test_perturbation_seed_matches_protocol_formula():
    expected = int.from_bytes(hashlib.sha256(b"ISIC_0000001|jpeg|2").digest()[:8], "big")
    assert perturbation_seed("ISIC_0000001", "jpeg", 2) == expected
    assert stable_seed("a", 1) != stable_seed("a", 2)


def test_stable_rng_same_across_processes():
    here = stable_rng("chexpert", 3, "subsample").integers(0, 2**31, size=5).tolist()
    code = (
        "from crsbench.core import stable_rng;"
        "print(stable_rng('chexpert', 3, 'subsample').integers(0, 2**31, size=5).tolist())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(here)
    assert not np.array_equal(here, stable_rng("chexpert", 4, "subsample").integers(0, 2**31, 5))


def test_condition_key_and_task_check():
    assert Condition().key == "clean"
    assert Condition("gaussian_blur", 2).key == "gaussian_blur@2"
    assert check_task("multilabel") == "multilabel"
    with pytest.raises(ValueError, match="must be one of"):
        check_task("ordinal")
