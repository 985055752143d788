"""Functions compiled by numba on their first call in a process (the replicate and probe kernels).

numba is imported, and a function compiled, only when a kernel first runs, so no command pays
for it before it computes (about 0.5 s to import, about 1 s to compile each function for each
argument type met). Nothing is cached on disk: a read-only or full disk cannot fail a kernel.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


class LazyKernel:
    """``fn`` compiled with ``numba.njit`` on the first call (nopython, bounds unchecked).

    ``helpers`` names plain functions of ``fn``'s module that ``fn`` calls: they are compiled
    first and their compiled versions take their names in the module (still callable from
    Python), since compiled code can only call compiled code.
    """

    def __init__(self, fn: Callable[..., Any], helpers: Sequence[str] = ()) -> None:
        self.fn = fn
        self.helpers = tuple(helpers)
        self._compiled: Callable[..., Any] | None = None

    def __call__(self, *args: Any) -> Any:
        if self._compiled is None:
            import numba

            module = self.fn.__globals__
            for name in self.helpers:
                if not isinstance(module[name], numba.core.dispatcher.Dispatcher):
                    module[name] = numba.njit(nogil=True, inline="always")(module[name])
            self._compiled = numba.njit(nogil=True, boundscheck=False)(self.fn)
        return self._compiled(*args)
