"""Image bounds are configuration (``image_bounds`` in the config and the cohort YAML).

A bad value is refused up front, naming the key, before any folder exists (never an image
quarantined because of a bad setting); the bounds travel with the extraction (an image outside
them is quarantined by the run's decoder and named), enter the feature cache key only when
they are not the default (old cache keys and config hashes kept), and are recorded in the
store's config and the cohort's ``cohort.json``.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from crsbench.cli import app
from crsbench.config import config_hash, config_json, parse_config
from crsbench.core.errors import ConfigError
from crsbench.datasets.bounds import ImageBounds


def _flat(text: str) -> str:
    return " ".join(str(text).split())


def _config(tmp_path: Path, bounds: str) -> Path:
    data = tmp_path / "datasets" / "isic"
    data.mkdir(parents=True)
    path = tmp_path / "config.yaml"
    path.write_text(
        f"encoders: [pixel]\ncache_dir: {tmp_path / 'cache'}\n"
        f"output_dir: {tmp_path / 'results'}\ndatasets:\n  isic2019: {{root: {data}}}\n"
        f"image_bounds: {bounds}\n"
    )
    return path


@pytest.mark.parametrize(("bounds", "expected"), [
    ("{max_aspect: wide}", "image_bounds.max_aspect must be a number (unquoted). Got 'wide'"),
    ("{max_aspect: '3'}", "image_bounds.max_aspect must be a number (unquoted). Got '3'"),
    ("{max_aspect: 0.5}", "image_bounds.max_aspect must be in [1, 1e+06]. Got 0.5 instead."),
    ("{max_aspect: .nan}", "image_bounds.max_aspect must be a number (unquoted). Got nan"),
    ("{min_side: 0}", "image_bounds.min_side must be in [1, 65536]. Got 0 instead."),
    ("{min_side: 1.5}", "image_bounds.min_side must be a whole number (unquoted). Got 1.5"),
    ("{max_side: true}", "image_bounds.max_side must be a whole number (unquoted). Got True"),
    ("{min_side: 512, max_side: 256}", "image_bounds.min_side must be at most "
                                       "image_bounds.max_side (256). Got 512 instead."),
    ("{max_ratio: 3}", "image_bounds: unknown key(s) ['max_ratio']"),
])  # fmt: skip
def test_a_bad_bound_in_the_config_is_refused_before_any_folder(
    tmp_path: Path, bounds: str, expected: str
) -> None:
    config = _config(tmp_path, bounds)
    for command in (["run", str(config), "--no-progress"], ["doctor", str(config)]):
        result = CliRunner().invoke(app, command)
        assert result.exit_code == 2, result.output
        assert expected in _flat(result.output) and "Traceback" not in result.output
    assert not (tmp_path / "results").exists() and not (tmp_path / "cache").exists()


def test_default_bounds_keep_the_config_hash_and_others_change_it(tmp_path: Path) -> None:
    raw = {"encoders": ["pixel"], "datasets": {"isic2019": {"root": str(tmp_path)}}}
    plain = parse_config(raw, base_dir=tmp_path)
    spelled = parse_config({**raw, "image_bounds": {"min_side": 1, "max_side": 65536,
                                                    "max_aspect": 20}}, base_dir=tmp_path)  # fmt: skip
    narrow = parse_config({**raw, "image_bounds": {"max_aspect": 4}}, base_dir=tmp_path)
    assert plain.image_bounds == spelled.image_bounds == ImageBounds()
    assert config_hash(plain) == config_hash(spelled) != config_hash(narrow)
    assert "image_bounds" not in config_json(plain)  # a store's recorded config, as before
    assert '"image_bounds": {"max_aspect": 4.0, "max_side": 65536, "min_side": 1}' in (
        config_json(narrow)
    )


def _cohort_yaml(tmp_path: Path, bounds: str) -> Path:
    (tmp_path / "images").mkdir(exist_ok=True)
    (tmp_path / "cohort.csv").write_text("path,label\na.png,0\nb.png,1\n")
    path = tmp_path / "cohort.yaml"
    path.write_text(f"data: cohort.csv\nimages: images\nlabel_columns: label\n"
                    f"out: {tmp_path / 'profile'}\nimage_bounds: {bounds}\n")  # fmt: skip
    return path


def test_a_bad_bound_in_the_cohort_yaml_is_refused_naming_file_and_key(tmp_path: Path) -> None:
    from crsbench.cohort.spec import read_spec

    path = _cohort_yaml(tmp_path, "{max_aspect: -2}")
    expected = f"{path}: image_bounds.max_aspect must be in [1, 1e+06]. Got -2 instead."
    with pytest.raises(ConfigError) as err:
        read_spec(path)
    assert str(err.value) == expected
    result = CliRunner().invoke(app, ["profile", "--config", str(path)])
    assert result.exit_code == 2 and expected in _flat(result.output), result.output
    assert not (tmp_path / "profile").exists()


def test_the_cohort_yaml_bounds_reach_the_image_check_and_the_run_config(tmp_path: Path) -> None:
    from crsbench.cohort.profile_config import cohort_config
    from crsbench.cohort.spec import read_spec
    from crsbench.datasets.files import probe_images

    spec = read_spec(_cohort_yaml(tmp_path, "{max_aspect: 2.5}"))
    assert spec.image_bounds == ImageBounds(max_aspect=2.5)
    assert cohort_config(spec, 100)[0].image_bounds == ImageBounds(max_aspect=2.5)
    wide = tmp_path / "images" / "a.png"
    Image.new("L", (300, 100)).save(wide)
    (problem,) = probe_images(np.asarray([str(wide)]), bounds=spec.image_bounds)
    assert problem.error_class == "bad_geometry" and "aspect ratio 3.0:1" in problem.message
    assert probe_images(np.asarray([str(wide)])) == []  # the default bounds accept it


def _doubles():
    name = "crsbench_feature_test_doubles"
    if name not in sys.modules:
        path = Path(__file__).parents[1] / "unit" / "features" / "feature_doubles.py"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        sys.modules[name] = module
        spec.loader.exec_module(module)  # type: ignore[union-attr]
    return sys.modules[name]


def test_the_run_decoder_applies_the_configured_bounds_and_keys_them(tmp_path: Path) -> None:
    doubles = _doubles()
    rng = np.random.default_rng(0)
    paths = []
    for i, shape in enumerate([(40, 40), (40, 40), (40, 40), (40, 120)]):  # the last is 3:1
        paths.append(str(tmp_path / f"img{i}.png"))
        Image.fromarray(rng.integers(0, 256, (*shape, 3), np.uint8)).save(paths[-1])
    ids = [f"i{i}" for i in range(4)]
    cache = tmp_path / "cache"
    wide = doubles.run_extract(ids, paths, cache, max_bad_fraction=0.5)
    assert list(wide[(("clean", 0), 1.0)].ids) == ids and wide.quarantined == []
    narrow = doubles.run_extract(ids, paths, cache, max_bad_fraction=0.5,
                                 image_bounds=ImageBounds(max_aspect=2.5))  # fmt: skip
    assert narrow.n_decoded > 0  # another cache key: not the default run's entry
    assert list(narrow[(("clean", 0), 1.0)].ids) == ids[:3]
    ((row, error_class, message),) = [
        (q["row"], q["error_class"], q["message"]) for q in narrow.quarantined
    ]
    assert (row, error_class) == (4, "bad_geometry")  # rows count from 1
    assert f"{paths[3]} is 120 x 40 px: its aspect ratio 3.0:1 is above the maximum 2.5:1" in (
        message
    )
    again = doubles.run_extract(ids, paths, cache, max_bad_fraction=0.5)
    assert again.n_decoded == 0 and list(again[(("clean", 0), 1.0)].ids) == ids  # kept
