"""Perturbations defined outside crsbench: their own severities, their conditions, their
cache-key version (docs/add_perturbation.md; the page's own example runs in tests/docs)."""

from __future__ import annotations

import numpy as np
import pytest

from crsbench.core.errors import ConfigError
from crsbench.features.loader import perturbation_version, resolve_perturb
from crsbench.perturb import PERTURBATIONS, PerturbationSpec, apply, named_conditions
from crsbench.perturb.registry import register_perturbation


def _invert(image, value, rng):
    return (255 - image).astype(np.uint8) if value else image.copy()


def _spec(severities, modalities=("fundus",)) -> PerturbationSpec:
    return PerturbationSpec(name="invert_test", fn=_invert, parse=bool, kind="extra",
                            modalities=modalities, stochastic=False,
                            severities=severities)  # fmt: skip


@pytest.fixture
def registered(monkeypatch):
    """Put a spec in the registry for one test only (the registry's names stay as shipped)."""

    def put(spec: PerturbationSpec) -> None:
        monkeypatch.setitem(PERTURBATIONS._items, spec.name, spec)

    return put


def test_registered_severities_are_applied_and_listed_for_its_modalities(registered):
    registered(_spec({1: False, 2: True, 3: True}))
    image = np.array([[0, 10, 255]], dtype=np.uint8)
    assert apply(image, "invert_test", 1, "a").tolist() == [[0, 10, 255]]
    assert apply(image, "invert_test", 2, "a").tolist() == [[255, 245, 0]]
    assert named_conditions(["jpeg", "invert_test"], "fundus", [3, 1]) == (
        ("invert_test", 3), ("invert_test", 1))  # fmt: skip
    assert named_conditions(["invert_test"], "chest_xray", [1, 2, 3]) == ()


def test_a_perturbation_without_severities_is_refused_before_the_run(registered):
    registered(_spec(None))
    with pytest.raises(ConfigError, match="must define perturbation 'invert_test'"):
        named_conditions(["invert_test"], "fundus", [1])


@pytest.mark.parametrize("bad", [{1: 1, 2: 1}, {1: 1, 2: 1, 3: 1, 4: 1}, [1, 2, 3]])
def test_severities_must_cover_the_protocol_levels(bad):
    with pytest.raises(
        ConfigError, match=r"'never_added': severities must map each of \[1, 2, 3\]"
    ):
        register_perturbation("never_added", parse=float, kind="extra", stochastic=False,
                              severities=bad)  # fmt: skip
    assert "never_added" not in PERTURBATIONS


def test_only_perturbations_from_outside_crsbench_get_a_source_hash(registered):
    version = resolve_perturb(None)[1]
    assert perturbation_version(version, "jpeg") == version
    registered(_spec({1: False, 2: True, 3: True}))  # _invert lives in this test module
    mine = perturbation_version(version, "invert_test")
    assert mine.startswith(f"{version}:{__name__}:")
    registered(_spec({1: False, 2: False, 3: True}))  # another severity value: another key
    assert perturbation_version(version, "invert_test") != mine
    assert perturbation_version("custom:fn:abc", "invert_test") == "custom:fn:abc"
