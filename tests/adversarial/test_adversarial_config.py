"""Configs a careful user might get wrong: each is refused with the key and the value named."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from crsbench.cli import app
from crsbench.config import load_config
from crsbench.core.errors import ConfigError

BASE = "encoders: [pixel]\ndatasets:\n  isic2019: {root: /tmp}\n"


def _write(tmp_path: Path, extra: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(BASE + extra, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ("seeds: [true]\n", "seeds: a boolean is not a number. Got [True] instead."),
        ("batch_size: false\n", "batch_size: a boolean is not a number. Got False instead."),
        (
            "perturbations: {severities: [1, true]}\n",
            "perturbations.severities: a boolean is not a number. Got [1, True] instead.",
        ),
        (
            "regimes: {lora: {lr_factors: [true]}}\n",
            "regimes.lora.lr_factors: a boolean is not a number. Got [True] instead.",
        ),
    ],
)
def test_a_boolean_is_not_a_number(tmp_path: Path, extra: str, expected: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(_write(tmp_path, extra))
    assert expected in str(err.value)


def test_a_boolean_stays_a_boolean_where_one_is_expected(tmp_path: Path) -> None:
    cfg = load_config(_write(tmp_path, "perturbations: {include_extra: false}\nseeds: [0, 2]\n"))
    assert cfg.perturbations.include_extra is False and cfg.seeds == [0, 2]


def test_duplicate_key_is_refused_with_both_lines(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(_write(tmp_path, "seeds: [0, 1]\nseeds: [2]\n"))
    assert "key 'seeds' at line 5 is written twice (first at line 4)" in str(err.value)


def test_duplicate_nested_key_is_refused(tmp_path: Path) -> None:
    extra = "probes:\n  knn: {k: 5}\n  knn: {k: 7}\n"
    with pytest.raises(ConfigError, match="key 'knn' at line 6 is written twice"):
        load_config(_write(tmp_path, extra))


def test_nan_fraction_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        load_config(_write(tmp_path, "fractions: [.nan, 1.0]\n"))
    assert "Got [nan] instead" in str(err.value)


def test_directory_is_named_as_a_directory(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is a directory"):
        load_config(tmp_path)


def test_non_utf8_config_names_the_byte_and_line(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_bytes(BASE.encode() + b"seeds: [0]\n# caf\xe9\n")
    with pytest.raises(ConfigError, match=r"not UTF-8 text \(byte 0xe9 at line 5\)"):
        load_config(path)


@pytest.mark.parametrize(
    ("extra", "shown"),
    [
        ("fractions: [.nan, 1.0]\n", "Got [nan] instead"),
        ("seeds: [true]\n", "Got [True] instead"),
    ],
)
def test_cli_prints_the_value_literally_without_traceback(
    tmp_path: Path, extra: str, shown: str
) -> None:
    result = CliRunner().invoke(app, ["status", str(_write(tmp_path, extra))])
    assert result.exit_code == 2
    text = " ".join(result.output.split())
    assert shown in text and "Traceback" not in result.output


def test_cli_config_directory_and_binary_file(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["status", str(tmp_path)])
    assert result.exit_code == 2 and "is a directory" in " ".join(result.output.split())
    binary = tmp_path / "config.yaml"
    binary.write_bytes(b"\xff\xfe\x00binary")
    result = CliRunner().invoke(app, ["status", str(binary)])
    assert result.exit_code == 2 and "not UTF-8 text" in " ".join(result.output.split())
    assert "Traceback" not in result.output
