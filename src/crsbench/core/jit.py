"""Functions compiled by numba on their first call in a process (the replicate and probe kernels).

numba is imported, and a function compiled, only when a kernel first runs, so no command pays
for it before it computes (about 0.5 s to import, about 1 s to compile each function for each
argument type met). Nothing is cached on disk: a read-only or full disk cannot fail a kernel.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np


def float_from_bits(bits: int) -> float:
    """The float64 whose IEEE 754 bit pattern is the int64 ``bits``.

    In a kernel compiled by :class:`LazyKernel` this is one bit cast (no call, so loops around
    it can be vectorised); called from Python it reads the bits through numpy.
    """
    return float(np.array(bits, dtype=np.int64).view(np.float64))


class LazyKernel:
    """``fn`` compiled with ``numba.njit`` on the first call (nopython, bounds unchecked).

    ``helpers`` names plain functions of ``fn``'s module that ``fn`` calls: they are compiled
    first and their compiled versions take their names in the module (still callable from
    Python), since compiled code can only call compiled code. :func:`float_from_bits` compiles
    to a bit cast wherever a kernel calls it.
    """

    def __init__(self, fn: Callable[..., Any], helpers: Sequence[str] = ()) -> None:
        self.fn = fn
        self.helpers = tuple(helpers)
        self._compiled: Callable[..., Any] | None = None

    def __call__(self, *args: Any) -> Any:
        if self._compiled is None:
            with _COMPILING:  # threads meeting a kernel first together build one dispatcher
                if self._compiled is None:
                    self._compiled = self._compile()
        return self._compiled(*args)

    def _compile(self) -> Callable[..., Any]:
        import numba

        _register_bit_cast()
        module = self.fn.__globals__
        for name in self.helpers:
            if not isinstance(module[name], numba.core.dispatcher.Dispatcher):
                module[name] = numba.njit(nogil=True, inline="always")(module[name])
        compiled: Callable[..., Any] = numba.njit(nogil=True, boundscheck=False)(self.fn)
        return compiled


_COMPILING = threading.RLock()
_bit_cast_registered = False


def _register_bit_cast() -> None:
    """Teach numba to compile :func:`float_from_bits` as one bit cast (once per process)."""
    global _bit_cast_registered
    if _bit_cast_registered:
        return
    from numba.core import types
    from numba.extending import intrinsic, overload

    @intrinsic
    def bit_cast(typingctx: Any, bits: Any) -> Any:
        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            return builder.bitcast(args[0], context.get_value_type(types.float64))

        return types.float64(types.int64), codegen

    @overload(float_from_bits)
    def _float_from_bits(bits):  # type: ignore[no-untyped-def]  # numba reads the signature
        return lambda bits: bit_cast(bits)

    _bit_cast_registered = True
