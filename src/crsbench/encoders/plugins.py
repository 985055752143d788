"""Encoders defined outside crsbench: an entry-point group and module paths in a config.

A package adds encoders with no change to crsbench by declaring, in its own
``pyproject.toml``::

    [project.entry-points."crsbench.encoders"]
    my_encoders = "my_package.crsbench_encoders"

The named module (or ``module:function``, a function called with no arguments) calls
:func:`crsbench.encoders.registry.register` for each card. A user's module that is not
installed as a package is named in the benchmark config instead (``encoder_modules:
[my_encoders]``, importable from the working directory or ``PYTHONPATH``). Entry points are
loaded the first time the registry is looked up in a process (``encoders list``, ``doctor``,
``run``, Ray workers); config modules when the config is loaded, and again in every worker
process that builds an encoder.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterable
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path

from crsbench.core.errors import EncoderError

#: The entry-point group third-party packages register encoders under.
ENTRY_POINT_GROUP = "crsbench.encoders"

_scanned = False  # the installed distributions are scanned once per process (~6 ms a scan)
_loaded_modules: set[str] = set()


def _load_entry_point(ep: EntryPoint) -> None:
    """Import (and call, for ``module:function``) one entry point, naming it on failure."""
    try:
        target = ep.load()
        if callable(target):
            target()
    except EncoderError:
        raise
    except Exception as exc:
        dist = getattr(ep.dist, "name", None) or "an installed package"
        raise EncoderError(
            f"the encoder entry point {ep.name!r} = {ep.value!r} of {dist} (group "
            f"{ENTRY_POINT_GROUP!r}) failed to load: {type(exc).__name__}: {exc}. Fix or "
            "uninstall that package."
        ) from exc


def load_entry_point_encoders() -> tuple[str, ...]:
    """Load every ``crsbench.encoders`` entry point, on the first call in this process.

    Returns
    -------
    tuple of str
        The entry points loaded by this call (``name = value``; empty after the first call).
    """
    global _scanned
    if _scanned:
        return ()
    _scanned = True  # first: a module that looks names up while it loads does not recurse
    loaded = []
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        _load_entry_point(ep)
        loaded.append(f"{ep.name} = {ep.value}")
    return tuple(loaded)


def load_encoder_modules(
    modules: Iterable[str], *, search_dir: Path | None = None, key: str = "encoder_modules"
) -> None:
    """Import each module path (once per process); each registers what it defines on import
    (encoders, and perturbations too: whatever a module registers counts).

    Parameters
    ----------
    modules
        Dotted module paths, e.g. from the config's ``encoder_modules``.
    search_dir
        A folder searched after ``sys.path`` (the config's folder), so a module beside the
        config is found by ``crsbench run`` wherever it is started.
    key
        Where they were named, for the message.

    Raises
    ------
    EncoderError
        A module cannot be imported or fails while registering (named with ``key``).
    """
    if search_dir is not None and str(search_dir) not in sys.path:
        sys.path.append(str(search_dir))
    for name in modules:
        if name in _loaded_modules:
            continue
        try:
            importlib.import_module(name)
        except EncoderError:
            raise
        except Exception as exc:
            where = "PYTHONPATH" + (f" or {search_dir}" if search_dir is not None else "")
            raise EncoderError(
                f"{key}: module {name!r} could not be imported ({type(exc).__name__}: {exc}); "
                f"it must be importable from {where}."
            ) from exc
        _loaded_modules.add(name)


def loaded_encoder_modules() -> tuple[str, ...]:
    """The config modules imported in this process (for worker processes to import too)."""
    return tuple(sorted(_loaded_modules))
