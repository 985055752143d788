"""A small decorator registry in the style of timm's ``@register_model``.

A duplicate name raises; an unknown name raises with close-match suggestions.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from crsbench.core.errors import RegistryError

T = TypeVar("T")


class Registry(Generic[T]):
    """Name → object mapping filled by a decorator.

    Parameters
    ----------
    kind : str
        What the registry holds ("encoder", "dataset", ...); used in error messages.

    Examples
    --------
    >>> reg = Registry("thing")
    >>> @reg.register("a")
    ... def make_a():
    ...     return 1
    >>> reg.get("a")()
    1
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}

    def register(self, name: str | None = None) -> Callable[[T], T]:
        """Return a decorator that registers its target under ``name`` (default: ``__name__``)."""

        def decorator(obj: T) -> T:
            key = name if name is not None else getattr(obj, "__name__", None)
            if not key:
                raise RegistryError(f"cannot register a {self.kind} without a name")
            self.add(key, obj)
            return obj

        return decorator

    def add(self, name: str, obj: T) -> None:
        """Register ``obj`` under ``name``; raise :class:`RegistryError` if taken."""
        if name in self._items:
            raise RegistryError(f"{self.kind} {name!r} is already registered")
        self._items[name] = obj

    def get(self, name: str) -> T:
        """Look ``name`` up; an unknown name raises with close-match suggestions."""
        try:
            return self._items[name]
        except KeyError:
            close = difflib.get_close_matches(name, list(self._items), n=3, cutoff=0.5)
            hint = f" Did you mean: {', '.join(close)}?" if close else ""
            known = ", ".join(sorted(self._items)) or "(none)"
            raise RegistryError(
                f"unknown {self.kind} {name!r}.{hint} Known {self.kind}s: {known}"
            ) from None

    def names(self) -> list[str]:
        """Registered names, sorted."""
        return sorted(self._items)

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._items)
