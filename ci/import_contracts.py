"""An import-linter contract type: every package of a container imports only what it is
allowed to (an allow-list), and every package of the container has an entry.

import-linter's own contract types are deny-lists (``forbidden``) or orderings (``layers``): a
new package, or a new third-party import inside an old one, passes them unnoticed. This
contract names, for each direct sub-package of the container, the sibling packages and the
third-party top-level packages its modules may import directly; the standard library is
always allowed. It is registered in ``pyproject.toml`` (``contract_types``) and checked by
``lint-imports`` (``make lint``, ``make test``), which puts the working directory on
``sys.path``.

Each entry of ``allowed`` reads ``"PACKAGE: SIBLING SIBLING | THIRD_PARTY THIRD_PARTY"``;
``<root>`` stands for the container's own ``__init__`` module.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import grimp
from importlinter import Contract, ContractCheck, fields, output

ROOT = "<root>"


@dataclass(frozen=True)
class Rule:
    """What one package may import: sibling packages and third-party top-level packages."""

    package: str
    siblings: frozenset[str]
    third_party: frozenset[str]


def parse_rule(text: str) -> Rule:
    """``"stats: core scoring | numpy pandas"`` as a :class:`Rule` (ValueError when malformed)."""
    head, sep, rest = text.partition(":")
    if not sep or not head.strip():
        raise ValueError(f"an allow-list entry must read 'PACKAGE: ... | ...'. Got {text!r}.")
    inner, _, outer = rest.partition("|")
    return Rule(head.strip(), frozenset(inner.split()), frozenset(outer.split()))


def _top(name: str, container: str) -> tuple[str, bool]:
    """(the sibling package or third-party top-level name, whether it is inside ``container``)."""
    parts = name.split(".")
    if parts[0] != container:
        return parts[0], False
    return (parts[1] if len(parts) > 1 else ROOT), True


def violations(graph: grimp.ImportGraph, container: str, rules: dict[str, Rule]) -> list[str]:
    """Every direct import that an allow-list does not name, and every package without one."""
    problems = []
    packages = {_top(m, container)[0] for m in graph.find_children(container)}
    for missing in sorted(packages - set(rules)):
        problems.append(f"{container}.{missing} has no allow-list entry")
    for module in sorted(graph.find_descendants(container)):
        package, _ = _top(module, container)
        rule = rules.get(package)
        if rule is None:
            continue
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            problems.extend(_check_import(graph, module, imported, rule, container))
    return problems


def _check_import(graph, module: str, imported: str, rule: Rule, container: str) -> list[str]:
    top, inside = _top(imported, container)
    if inside:
        if top == rule.package or top in rule.siblings:
            return []
    elif top in sys.stdlib_module_names or top in rule.third_party:
        return []
    lines = sorted(
        {d["line_number"] for d in graph.get_import_details(importer=module, imported=imported)}
    )
    where = ", ".join(f"l.{n}" for n in lines)
    return [f"{module} -> {imported} ({where}): not in the allow-list of {rule.package}"]


class AllowListContract(Contract):
    """Each package of ``container`` imports only the siblings and third-party packages its
    entry in ``allowed`` names; every package has an entry."""

    type_name = "allowlist"
    container = fields.StringField()
    allowed = fields.ListField(subfield=fields.StringField())

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        rules = [parse_rule(text) for text in self.allowed]  # type: ignore[attr-defined]
        by_package = {r.package: r for r in rules}
        problems = violations(graph, str(self.container), by_package)
        return ContractCheck(kept=not problems, metadata={"problems": problems})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for line in check.metadata["problems"]:
            output.print_error(f"- {line}", bold=False)
        output.new_line()


def _covered(module: str, names: frozenset[str], container: str) -> bool:
    """Whether ``module`` is one of ``names`` or inside one (``<root>``: the container's own
    ``__init__`` only)."""
    if module == container:
        return ROOT in names
    return any(module == n or module.startswith(n + ".") for n in names)


def module_violations(
    graph: grimp.ImportGraph, source: str, container: str, allowed: frozenset[str]
) -> list[str]:
    """Every direct import by a module of ``source`` of a module of ``container`` that is
    neither inside ``source`` nor covered by ``allowed``."""
    problems = []
    for module in sorted({source, *graph.find_descendants(source)}):
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            inside = imported == container or imported.startswith(container + ".")
            if not inside or _covered(imported, frozenset({source}), container):
                continue
            if not _covered(imported, allowed, container):
                lines = sorted({d["line_number"] for d in
                                graph.get_import_details(importer=module, imported=imported)})  # fmt: skip
                where = ", ".join(f"l.{n}" for n in lines)
                problems.append(f"{module} -> {imported} ({where}): not in the allow-list")
    return problems


class ModuleAllowListContract(Contract):
    """The modules of ``source`` import, inside ``container``, only the modules ``allowed``
    names (a module covers its sub-modules; ``<root>`` is the container's ``__init__``).
    Finer than :class:`AllowListContract`: it names modules of a package (the store's reader
    side), not whole packages; third-party imports stay with the package allow-list."""

    type_name = "moduleallowlist"
    source = fields.StringField()
    container = fields.StringField()
    allowed = fields.ListField(subfield=fields.StringField())

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        allowed = frozenset(str(a) for a in self.allowed)  # type: ignore[attr-defined]
        problems = module_violations(graph, str(self.source), str(self.container), allowed)
        return ContractCheck(kept=not problems, metadata={"problems": problems})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for line in check.metadata["problems"]:
            output.print_error(f"- {line}", bold=False)
        output.new_line()
