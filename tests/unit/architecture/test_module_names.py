"""One name, one meaning: a module name used in two packages is a role every package may have
(``base``, ``registry``, ...) or a dataset's name, never a concept such as "verdict" or "plan"
that would then mean two things."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import crsbench

#: Names a package may each have for its own: its base classes, its registry, its settings,
#: file and check helpers, its export, its data and rules, planted test data, and the
#: per-dataset modules (an adapter in datasets/, its renderer in datasets/synthetic/).
ROLE_NAMES = {
    "__init__", "base", "registry", "settings", "files", "checks", "export", "data", "rules",
    "planted", "aptos2019", "chexpert", "isic2019", "mimic_cxr", "nih_cxr14", "padchest",
    "vindr_cxr",
}  # fmt: skip


def test_no_concept_name_is_used_by_two_modules() -> None:
    root = Path(crsbench.__file__).parent
    where: dict[str, list[str]] = defaultdict(list)
    for path in root.rglob("*.py"):
        where[path.stem].append(str(path.relative_to(root)))
    shared = {n: sorted(p) for n, p in where.items() if len(p) > 1 and n not in ROLE_NAMES}
    assert shared == {}
