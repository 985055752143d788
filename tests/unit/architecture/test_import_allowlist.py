"""The allow-list import contract (ci/import_contracts.py) on a small package built here
(`lint-imports`, run by `make test` before pytest, checks crsbench itself with it)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import grimp
import pytest

REPO = Path(__file__).resolve().parents[3]


def _contracts():
    spec = importlib.util.spec_from_file_location(
        "import_contracts", REPO / "ci" / "import_contracts.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _package(root: Path, files: dict[str, str]) -> grimp.ImportGraph:
    for name, text in files.items():
        path = root / "toypkg" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    sys.path.insert(0, str(root))
    try:
        return grimp.build_graph("toypkg", include_external_packages=True, cache_dir=None)
    finally:
        sys.path.remove(str(root))


TOY = {
    "__init__.py": "",
    "low/__init__.py": "import json\nimport numpy\n",
    "high/__init__.py": "from toypkg import low\n",
    "high/deep.py": "import toypkg.low\nimport pandas\n",
}


def test_a_package_importing_only_what_its_entry_names_passes(tmp_path):
    c = _contracts()
    graph = _package(tmp_path, TOY)
    rules = {r.package: r for r in map(c.parse_rule, ["low: | numpy", "high: low | pandas"])}
    assert c.violations(graph, "toypkg", rules) == []


def test_unlisted_sibling_third_party_and_missing_entry_each_fail(tmp_path):
    c = _contracts()
    graph = _package(tmp_path, {**TOY, "low/bad.py": "import toypkg.high\n", "new/__init__.py": ""})
    rules = {r.package: r for r in map(c.parse_rule, ["low: | ", "high: low | pandas"])}
    problems = c.violations(graph, "toypkg", rules)
    assert "toypkg.new has no allow-list entry" in problems
    assert any(p.startswith("toypkg.low -> numpy (l.2)") for p in problems)  # third party
    assert any(p.startswith("toypkg.low.bad -> toypkg.high (l.1)") for p in problems)  # sibling
    assert not any("json" in p for p in problems)  # the standard library is free
    assert len(problems) == 3


def test_a_malformed_entry_is_refused():
    with pytest.raises(ValueError, match="PACKAGE"):
        _contracts().parse_rule("stats core scoring")


MODULES = {
    "__init__.py": "__version__ = '1'\n",
    "store/__init__.py": "",
    "store/reader.py": "import pandas\n",
    "store/writer.py": "from toypkg.store import reader\n",
    "stats/__init__.py": "",
    "report/__init__.py": "from toypkg import __version__\nfrom toypkg.report import page\n",
    "report/page.py": "import numpy\nfrom toypkg.store.reader import pandas\n",
}


def test_a_package_importing_only_the_modules_named_passes(tmp_path):
    c = _contracts()
    graph = _package(tmp_path, MODULES)
    allowed = frozenset({"<root>", "toypkg.store.reader"})
    assert c.module_violations(graph, "toypkg.report", "toypkg", allowed) == []


def test_a_module_outside_the_list_fails_even_inside_an_allowed_package(tmp_path):
    c = _contracts()
    bad = {**MODULES, "report/bad.py": "import toypkg.store.writer\nfrom toypkg import stats\n"}
    graph = _package(tmp_path, bad)
    problems = c.module_violations(
        graph, "toypkg.report", "toypkg", frozenset({"toypkg.store.reader"})
    )
    assert any(p.startswith("toypkg.report.bad -> toypkg.store.writer (l.1)") for p in problems)
    assert any(p.startswith("toypkg.report.bad -> toypkg.stats (l.2)") for p in problems)
    assert any(p.startswith("toypkg.report -> toypkg (l.1)") for p in problems)  # <root> unlisted
    assert len(problems) == 3  # numpy, pandas and the report's own modules are not its concern
