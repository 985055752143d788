"""Optional parts of crsbench and the packages each needs.

``pip install crsbench`` reads results stores, scores, analyses and writes reports with numpy,
scipy, pandas, DuckDB and pyarrow alone. Commands that look at images through an encoder
(``run``, ``demo``, ``profile``, ``predict``, ``estimate`` without ``--throughput``) need the
``encoders`` extra (torch, torchvision, timm). :func:`require_extra` names the extra to install
before any work is done or any folder created.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

from crsbench.core.errors import CrsbenchError


class MissingExtraError(CrsbenchError, ImportError):
    """A command needs an optional part of crsbench that is not installed."""


@dataclass(frozen=True)
class Extra:
    """An optional part of crsbench: its pip extra name and the modules it brings."""

    name: str
    modules: tuple[str, ...]
    purpose: str

    @property
    def install_hint(self) -> str:
        """The pip command that installs this extra."""
        return f"pip install 'crsbench[{self.name}]'"


#: The extras a command may need, by name (pyproject.toml's optional dependencies).
EXTRAS: dict[str, Extra] = {
    "encoders": Extra(
        "encoders", ("torch", "torchvision", "timm"), "extracts image features with torch"
    ),
    "lora": Extra("lora", ("peft",), "adapts encoders with LoRA (peft)"),
}


def _findable(module: str) -> bool:
    """True when ``module`` can be found by the import system (a broken finder counts as no)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def missing_modules(extra: str) -> tuple[str, ...]:
    """The modules of ``extra`` that cannot be imported here (empty when it is installed)."""
    return tuple(m for m in EXTRAS[extra].modules if not _findable(m))


def extra_installed(extra: str) -> bool:
    """True when every module of ``extra`` can be imported."""
    return not missing_modules(extra)


def require_extra(extra: str, command: str) -> None:
    """Refuse ``command`` when ``extra`` is not installed, naming what to install.

    Parameters
    ----------
    extra
        A key of :data:`EXTRAS`.
    command
        What the user ran, for the message (e.g. ``"crsbench run"``).

    Raises
    ------
    MissingExtraError
        Some module of the extra cannot be imported.
    """
    missing = missing_modules(extra)
    if missing:
        spec = EXTRAS[extra]
        raise MissingExtraError(
            f"`{command}` {spec.purpose}, and {', '.join(missing)} "
            f"{'is' if len(missing) == 1 else 'are'} not installed. Install the '{spec.name}' "
            f"extra: {spec.install_hint}"
        )
