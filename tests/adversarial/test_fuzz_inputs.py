"""Fuzz test (#25 point 7): generated label CSVs, cohort YAMLs and small images go through
``crsbench datasets check`` (the ``folder`` dataset and the APTOS layout) and ``profile``'s
checks; any outcome but success or a named :class:`CrsbenchError` fails.

The default budget is fixed and derandomized (the same examples on every run, well under a
minute). A longer, randomized run: ``pytest tests/adversarial/test_fuzz_inputs.py
--hypothesis-profile=crsbench-fuzz`` (the profile is registered in tests/conftest.py;
``CRSBENCH_FUZZ_EXAMPLES`` sets its example count).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image
from rich.console import Console
from typer.testing import CliRunner

from crsbench.cli import app
from crsbench.core.errors import CrsbenchError
from crsbench.datasets.check import check
from crsbench.testing.fuzz import (
    ODD_YAML,
    ImageSpec,
    Table,
    cells,
    image_bytes,
    image_specs,
    table_rows,
    tables,
    write_case,
    yaml_values,
)

FUZZ_PROFILE = "crsbench-fuzz"
LONG = settings.default is settings.get_profile(FUZZ_PROFILE)


def budget(examples: int) -> settings:
    """``examples`` fixed, derandomized examples; the fuzz profile's own when it is loaded."""
    if LONG:
        return settings(settings.default, suppress_health_check=list(HealthCheck))
    return settings(max_examples=examples, deadline=None, derandomize=True,
                    suppress_health_check=list(HealthCheck))  # fmt: skip


def _png(seed: int) -> bytes:
    return image_bytes(ImageSpec(kind="png", mode="L", width=8, height=8, fill=seed))


def _images(root: Path, names: list[str], specs: list[ImageSpec]) -> dict[str, bytes]:
    """A valid PNG per name; the first ``len(specs)`` names get the fuzzed files."""
    files = {name: _png(i) for i, name in enumerate(names)}
    for name, spec in zip(names, specs, strict=False):
        files[name] = image_bytes(spec)
    return files


def named_outcome(call: Callable[[], Any]) -> Any:
    """Run ``call``: success, or a crsbench error with a message; anything else propagates."""
    try:
        return call()
    except CrsbenchError as exc:
        assert str(exc).strip(), f"{type(exc).__name__} without a message"
        return exc


def run_cli(args: list[str]) -> str:
    """``crsbench ARGS``: exit 0, 1 (check failed) or 2 (named error), never a traceback."""
    result = CliRunner().invoke(app, args)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    assert result.exit_code in (0, 1, 2), (result.exit_code, result.output)
    if result.exit_code == 2:
        assert result.output.strip(), "exit 2 without a message"
    return result.output


def _render(report: Any) -> None:
    report.to_text()
    Console(file=open("/dev/null", "w"), width=80).print(report.to_rich())


FOLDER_COLUMNS = ("path", "label", "patient")
OPTION_KEYS = ("label_columns", "group_column", "id_column", "missing", "classes",
               "image_dir", "allow_outside_root", "path_column", "csv", "modality")  # fmt: skip
option_values = st.one_of(st.sampled_from([*FOLDER_COLUMNS, "label,patient", "a,b", "mask"]),
                          cells())  # fmt: skip


def _folder_row(i: int) -> list[str]:
    return [f"images/img{i}.png", "ab"[i % 2], f"P{i // 2}"]


@given(table=tables(FOLDER_COLUMNS), specs=st.lists(image_specs(), max_size=3),
       options=st.dictionaries(st.sampled_from(OPTION_KEYS), option_values, max_size=3),
       decode=st.booleans())  # fmt: skip
@budget(90)
def test_datasets_check_folder(table: Table, specs: list[ImageSpec], options: dict,
                               decode: bool) -> None:  # fmt: skip
    """``crsbench datasets check folder``: the CLI answers, and so does ``check`` itself."""
    rows = table_rows(table, _folder_row)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        names = [f"images/img{i}.png" for i in range(table.n_rows)]
        write_case(root, _images(root, names, specs))
        from crsbench.testing.fuzz import csv_bytes

        (root / "labels.csv").write_bytes(csv_bytes(rows, table.style))
        flags = [f"-o{k}={v}" for k, v in options.items() if "\n" not in v and "\x00" not in v]
        args = ["datasets", "check", "folder", "--root", str(root), "--workers", "2", *flags]
        run_cli(args + (["--decode"] if decode else []))
        report = named_outcome(lambda: check("folder", root, decode=decode, workers=2))
        if not isinstance(report, CrsbenchError):
            _render(report)


def _aptos_row(i: int) -> list[str]:
    return [f"id{i}", str(i % 5)]


@given(table=tables(("id_code", "diagnosis")), specs=st.lists(image_specs(), max_size=3),
       decode=st.booleans())  # fmt: skip
@budget(60)
def test_datasets_check_aptos(table: Table, specs: list[ImageSpec], decode: bool) -> None:
    """A paper dataset's layout (APTOS 2019: train.csv + train_images/ID.png)."""
    from crsbench.testing.fuzz import csv_bytes

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        names = [f"train_images/id{i}.png" for i in range(table.n_rows)]
        write_case(root, _images(root, names, specs))
        (root / "train.csv").write_bytes(csv_bytes(table_rows(table, _aptos_row), table.style))
        args = ["datasets", "check", "aptos2019", "--root", str(root), "--workers", "2"]
        run_cli(args + (["--decode"] if decode else []))


COHORT_COLUMNS = ("path", "patient", "diagnosis", "effusion")
N_COHORT = 24


def _cohort_row(i: int) -> list[str]:
    return [f"img{i}.png", f"P{i // 2}", "ab"[(i // 2) % 2], str((i // 4) % 2)]


def _write_cohort(root: Path, table: Table, specs: list[ImageSpec]) -> Path:
    from crsbench.testing.fuzz import csv_bytes

    names = [f"images/img{i}.png" for i in range(table.n_rows)]
    write_case(root, _images(root, names, specs))
    csv = root / "cohort.csv"
    csv.write_bytes(csv_bytes(table_rows(table, _cohort_row), table.style))
    return csv


def _profile_checks(spec: Any) -> Any:
    """Every check ``crsbench profile`` runs before extraction, and its config."""
    from crsbench.cohort.profile import check_cohort
    from crsbench.cohort.profile_config import cohort_config

    _, summary = check_cohort(spec)
    summary.as_dict()
    return cohort_config(spec, summary.n_images)


spec_choices = {
    "label_columns": st.sampled_from([("diagnosis",), ("diagnosis",), ("effusion", "diagnosis"),
                                      ("effusion", "path"), ("nope",)]),
    "group_column": st.sampled_from([None, "patient", "patient", "path", "diagnosis", "nope"]),
    "missing": st.sampled_from(["error", "mask"]),
    "labels_per_image": st.booleans(),
    "classes": st.sampled_from([None, None, ("a", "b"), ("a",), ("b", "a", "c")]),
    "max_images": st.sampled_from([None, 1, 8, 23, 10**6]),
}  # fmt: skip


@given(table=tables(COHORT_COLUMNS, N_COHORT).filter(lambda t: t.n_rows >= 8),
       specs=st.lists(image_specs(), max_size=2), choices=st.fixed_dictionaries(spec_choices))  # fmt: skip
@budget(90)
def test_profile_checks_on_fuzzed_cohorts(table: Table, specs: list[ImageSpec],
                                          choices: dict) -> None:  # fmt: skip
    """``check_cohort`` and the profile's config on a fuzzed cohort CSV and images."""
    from crsbench.cohort.spec import CohortSpec

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        csv = _write_cohort(root, table, specs)
        spec = CohortSpec(data=csv, images=root / "images", out=root / "out", encoders=("pixel",),
                          **choices)  # fmt: skip
        named_outcome(lambda: _profile_checks(spec))
        assert not (root / "out").exists(), "a check wrote the output folder"


SPEC_KEYS = ("data", "images", "label_columns", "group_column", "path_column", "id_column",
             "classes", "labels_per_image", "missing", "encoders", "out", "seeds",
             "max_images", "device", "batch_size", "num_workers", "nonsense")  # fmt: skip


def _yaml_text(overrides: dict, raw: str | None) -> str:
    base = {"data": "cohort.csv", "images": "images", "label_columns": "diagnosis",
            "group_column": "patient", "encoders": ["pixel"], "out": "out"}  # fmt: skip
    text = yaml.safe_dump({**base, **overrides}, allow_unicode=True)
    return text if raw is None else (text + raw if raw.endswith("\n") else raw)


@given(overrides=st.dictionaries(st.sampled_from(SPEC_KEYS), yaml_values(), max_size=2),
       raw=st.none() | st.sampled_from(ODD_YAML))  # fmt: skip
@budget(90)
def test_profile_checks_on_fuzzed_cohort_yaml(overrides: dict, raw: str | None) -> None:
    """A cohort YAML with random keys, types and nesting: read, checked, configured."""
    from crsbench.cohort.spec import read_spec

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _write_cohort(root, Table(columns=COHORT_COLUMNS, n_rows=N_COHORT), [])
        path = root / "cohort.yaml"
        path.write_text(_yaml_text(overrides, raw), encoding="utf-8")
        spec = named_outcome(lambda: read_spec(path))
        if not isinstance(spec, CrsbenchError):
            named_outcome(lambda: _profile_checks(spec))


def test_the_fuzz_cases_include_valid_data(tmp_path: Path) -> None:
    """The base case of each generator passes, so the fuzzer explores past the first check."""
    from crsbench.cohort.spec import CohortSpec

    csv = _write_cohort(tmp_path, Table(columns=COHORT_COLUMNS, n_rows=N_COHORT), [])
    spec = CohortSpec(data=csv, images=tmp_path / "images", label_columns=("diagnosis",),
                      group_column="patient", encoders=("pixel",), out=tmp_path / "out")  # fmt: skip
    cfg, _ = _profile_checks(spec)
    assert cfg.encoders[0].name == "pixel"
    with Image.open(tmp_path / "images" / "img0.png") as image:
        assert image.size == (8, 8)
