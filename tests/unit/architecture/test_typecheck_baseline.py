"""The mypy baseline's comparison (ci/typecheck.py; `make test` runs it on crsbench) on planted
error lists: mypy itself is not run here."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]

MYPY_OUTPUT = """\
src/pkg/a.py:3: error: Need type annotation for "x"  [var-annotated]
src/pkg/a.py:9: note: See https://mypy.rtfd.io
src/pkg/a.py:12: error: "None" not callable  [misc]
src/pkg/b.py:1: error: Value of type "float" is not indexable  [index]
Found 3 errors in 2 files (checked 4 source files)
"""


@pytest.fixture(scope="module")
def typecheck():
    spec = importlib.util.spec_from_file_location("ci_typecheck", REPO / "ci" / "typecheck.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _errors(**counts: int) -> dict[str, list[str]]:
    return {f"src/{name}.py": [f"src/{name}.py:{i}: error: e  [misc]" for i in range(n)]
            for name, n in counts.items()}  # fmt: skip


def test_parse_keeps_error_lines_only(typecheck):
    errors = typecheck.parse_errors(MYPY_OUTPUT)
    assert {f: len(e) for f, e in errors.items()} == {"src/pkg/a.py": 2, "src/pkg/b.py": 1}


def test_a_file_over_its_baseline_fails_naming_it(typecheck, tmp_path, capsys):
    base = tmp_path / "baseline.json"
    base.write_text(json.dumps({"src/a.py": 1, "src/b.py": 2}))
    rc = typecheck.main([], run_mypy=lambda: _errors(a=2, b=2), baseline_path=base)
    out = capsys.readouterr().out
    assert rc == 1
    assert "more than the baseline (1): src/a.py" in out
    assert "src/a.py:1: error" in out  # the new errors are listed
    assert "src/b.py" not in out  # at its baseline: not mentioned


def test_a_new_file_with_errors_fails(typecheck):
    result = typecheck.compare({"src/a.py": 1}, _errors(a=1, c=1))
    assert list(result.worse) == ["src/c.py"] and result.better == {}


def test_a_file_under_its_baseline_is_reported_and_passes(typecheck, tmp_path, capsys):
    base = tmp_path / "baseline.json"
    base.write_text(json.dumps({"src/a.py": 3, "src/b.py": 2}))
    rc = typecheck.main([], run_mypy=lambda: _errors(a=1), baseline_path=base)
    out = capsys.readouterr().out
    assert rc == 0
    assert "fewer than the baseline: src/a.py 1 < 3" in out
    assert "fewer than the baseline: src/b.py 0 < 2" in out
    assert json.loads(base.read_text()) == {"src/a.py": 3, "src/b.py": 2}  # untouched


def test_update_lowers_and_never_raises(typecheck, tmp_path, capsys):
    base = tmp_path / "baseline.json"
    base.write_text(json.dumps({"src/a.py": 3, "src/b.py": 2, "src/d.py": 1}))
    # a: lower (1 < 3); b: higher (4 > 2); d: fixed (0); c: new file with errors
    rc = typecheck.main(["--update"], run_mypy=lambda: _errors(a=1, b=4, c=2),
                        baseline_path=base)  # fmt: skip
    assert json.loads(base.read_text()) == {"src/a.py": 1, "src/b.py": 2}
    assert rc == 1  # --update does not hide the files over their baseline
    assert "more than the baseline (2): src/b.py" in capsys.readouterr().out


def test_update_on_an_empty_baseline_admits_nothing(typecheck):
    assert typecheck.lowered({}, _errors(a=2)) == {}
    assert typecheck.lowered(None, _errors(a=2, b=0)) == {"src/a.py": 2}
