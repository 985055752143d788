"""Perturbation API: conditions, registry metadata, severity table, bad inputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from crsbench.core.errors import ConfigError, DataError, RegistryError
from crsbench.perturb import (
    DEFAULT_TABLE_PATH,
    EXTRA_CONDITIONS,
    PAPER_CONDITIONS,
    PERTURBATIONS,
    apply,
    apply_batch,
    build_table,
    conditions,
    describe,
    load_severities,
)

IMAGE = np.random.default_rng(0).integers(0, 256, (32, 32, 3), dtype=np.uint8)
DOCS = Path(__file__).resolve().parents[3] / "docs" / "perturbations.md"


def test_paper_conditions_fixed_order():
    names = ["gaussian_blur", "jpeg", "contrast", "rician", "fov_crop"]
    assert PAPER_CONDITIONS == tuple((n, s) for n in names for s in (1, 2, 3))
    assert len(PAPER_CONDITIONS) == 15
    assert EXTRA_CONDITIONS == tuple(
        (n, s) for n in ("poisson_gaussian", "sensor_noise") for s in (1, 2, 3)
    )


def test_conditions_by_modality():
    assert conditions("chest_xray")[15:] == tuple(("poisson_gaussian", s) for s in (1, 2, 3))
    assert conditions("dermoscopy")[15:] == tuple(("sensor_noise", s) for s in (1, 2, 3))
    assert conditions("fundus")[:15] == PAPER_CONDITIONS
    assert conditions("other") == PAPER_CONDITIONS
    assert conditions("chest_xray", include_extra=False) == PAPER_CONDITIONS
    with pytest.raises(ConfigError, match="modality must be one of"):
        conditions("mri")


def test_registry_metadata():
    assert set(PERTURBATIONS.names()) == {n for n, _ in PAPER_CONDITIONS + EXTRA_CONDITIONS}
    kinds = {d["name"]: d["kind"] for d in describe()}
    assert [k for k, v in kinds.items() if v == "paper"] == [
        "gaussian_blur",
        "jpeg",
        "contrast",
        "rician",
        "fov_crop",
    ]
    assert PERTURBATIONS.get("poisson_gaussian").modalities == ("chest_xray",)
    assert PERTURBATIONS.get("rician").stochastic
    assert not PERTURBATIONS.get("jpeg").stochastic


def test_severity_table_v1():
    table, version = load_severities()
    assert version == "v1"
    assert set(table) == set(PERTURBATIONS.names())
    assert all(tuple(sorted(levels)) == (1, 2, 3) for levels in table.values())
    assert [table["jpeg"][s] for s in (1, 2, 3)] == [30, 15, 5]
    assert load_severities(DEFAULT_TABLE_PATH).digest == load_severities().digest
    with pytest.raises(TypeError):
        table["jpeg"][1] = 90  # frozen


def test_docs_table_lists_every_value():
    text = DOCS.read_text(encoding="utf-8")
    table, version = load_severities()
    assert f"`{version}`" in text
    for name, levels in table.items():
        line = next(ln for ln in text.splitlines() if ln.startswith(f"| `{name}`"))
        for value in levels.values():
            parts = (
                value.values() if isinstance(value, dict) or hasattr(value, "values") else [value]
            )
            for part in parts:
                assert f"{part:g}" in line, (name, part, line)


def test_table_override_changes_output(tmp_path):
    custom = tmp_path / "sev.yaml"
    custom.write_text(
        "version: test9\nperturbations:\n  jpeg:\n    severities: {1: 90, 2: 50}\n",
        encoding="utf-8",
    )
    table = load_severities(custom)
    assert table.version == "test9"
    a = apply(IMAGE, "jpeg", 1, "x", table=table)
    b = apply(IMAGE, "jpeg", 1, "x")
    assert not np.array_equal(a, b)
    with pytest.raises(ConfigError, match="severity of 'jpeg' must be 0"):
        apply(IMAGE, "jpeg", 3, "x", table=table)
    mapping = apply(IMAGE, "jpeg", 1, "x", table={"jpeg": {1: 90}})
    np.testing.assert_array_equal(mapping, a)


@pytest.mark.parametrize(
    "body, err, match",
    [
        (
            "version: v9\nperturbations:\n  jpeg:\n    severities: {1: 0}\n",
            ConfigError,
            "jpeg.quality",
        ),
        (
            "version: v9\nperturbations:\n  contrast:\n    severities: {1: 1.5}\n",
            ConfigError,
            "contrast.factor",
        ),
        (
            "version: v9\nperturbations:\n  jpeg:\n    severities: {0: 50}\n",
            ConfigError,
            "integers >= 1",
        ),
        (
            "version: v9\nperturbations:\n  rician:\n    severities: {1: {photons: 3}}\n",
            ConfigError,
            "number",
        ),
        (
            "version: v9\nperturbations:\n  poisson_gaussian:\n    severities: {1: {photons: 3}}\n",
            ConfigError,
            "read_sigma",
        ),
        (
            "version: v9\nperturbations:\n  jpg:\n    severities: {1: 50}\n",
            RegistryError,
            "Did you mean: jpeg",
        ),
        ("perturbations: {}\n", ConfigError, "'version' and 'perturbations'"),
        ("version: v9\nperturbations: [1, 2\n", ConfigError, "valid YAML"),
        ("version: v9\nperturbations:\n  jpeg: 50\n", ConfigError, "key 'severities'"),
    ],
)
def test_bad_severity_files(tmp_path, body, err, match):
    path = tmp_path / "bad.yaml"
    path.write_text(body, encoding="utf-8")
    with pytest.raises(err, match=match) as info:
        load_severities(path)
    if err is ConfigError and "valid YAML" not in match:
        assert str(path) in str(info.value)


def test_missing_file():
    with pytest.raises(ConfigError, match="cannot be read"):
        load_severities("/nonexistent/severities.yaml")
    with pytest.raises(ConfigError, match="version must be"):
        build_table({"jpeg": {1: 50}}, "")


def test_unknown_name_suggests():
    with pytest.raises(RegistryError, match="Did you mean: gaussian_blur"):
        apply(IMAGE, "gausian_blur", 1, "x")


@pytest.mark.parametrize("severity", [4, -1, 1.0, True, "2"])
def test_bad_severity(severity):
    with pytest.raises(ConfigError, match="severity"):
        apply(IMAGE, "jpeg", severity, "x")


@pytest.mark.parametrize(
    "image, match",
    [
        (IMAGE.astype(np.float32), "dtype uint8"),
        (IMAGE.astype(np.uint16), "dtype uint8"),
        (np.zeros((8, 8, 4), np.uint8), r"shape \(H, W\) or \(H, W, 3\)"),
        (np.zeros((8, 8, 1), np.uint8), r"shape \(H, W\) or \(H, W, 3\)"),
        (np.zeros(8, np.uint8), r"shape \(H, W\) or \(H, W, 3\)"),
        (np.zeros((0, 8), np.uint8), "H >= 1"),
        ([[1, 2], [3, 4]], "numpy.ndarray"),
    ],
)
def test_bad_images(image, match):
    with pytest.raises(DataError, match=match):
        apply(image, "contrast", 1, "x")


def test_bad_ids_and_batches():
    with pytest.raises(ConfigError, match="image_id must be a non-empty str"):
        apply(IMAGE, "rician", 1, "")
    with pytest.raises(ConfigError, match="image_id must be a non-empty str"):
        apply(IMAGE, "rician", 1, 17)
    batch = np.stack([IMAGE, IMAGE])
    with pytest.raises(DataError, match="one id per image"):
        apply_batch(batch, "rician", 1, ["a"])
    with pytest.raises(DataError, match=r"\(N, H, W\)"):
        apply_batch(IMAGE[0], "rician", 1, ["a"])
    with pytest.raises(ConfigError, match=r"image_ids\[1\]"):
        apply_batch(batch, "rician", 1, ["a", None])
    np.testing.assert_array_equal(apply_batch(batch, "rician", 0, ["a", "b"]), batch)
