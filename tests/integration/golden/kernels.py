"""Which numeric kernels this process runs: the key of the golden file it is compared with.

The golden run's metrics depend on two kernel choices made per CPU (measured by
``benchmarks/golden_kernels.py``): the OpenBLAS kernel (its float32 GEMM feeds the probes'
L-BFGS, whose stopping point moves with the last bits) and numpy's highest SIMD target. The
torch vector width and the thread count moved nothing. Hosts with the same two choices agree to
:data:`SAME_KERNEL_RTOL`; hosts with other choices differ by up to a few per cent (an L-BFGS
stopped at ``tol=1e-4`` one iteration apart flips near-tied scores).
"""

from __future__ import annotations

import json
from pathlib import Path

GOLDEN_DIR = Path(__file__).resolve().parent
INDEX = GOLDEN_DIR / "kernels.json"

#: Same kernels, other host: cache sizes change OpenBLAS's blocking and so the order of a few
#: sums (another host of this kind measured 5e-9 relative on ECE, Brier and NLL).
SAME_KERNEL_RTOL = 1e-6
#: Other kernels: the spread measured by ``benchmarks/golden_kernels.py`` was 0.064 relative at
#: most (sensitivity at 95 % specificity: one positive of a small test set); three times that.
#: Only a host without a golden of its own is compared this loosely, and it is told so.
CROSS_KERNEL_RTOL = 0.2


def kernel_fingerprint() -> str:
    """``openblas=<kernel>,numpy=<SIMD target>`` for this process (after numpy is loaded)."""
    import numpy as np
    from numpy._core import _multiarray_umath as umath
    from threadpoolctl import threadpool_info

    np.ones(2) @ np.ones(2)  # make sure the BLAS library is loaded
    blas = [i for i in threadpool_info() if i.get("user_api") == "blas"]
    arch = blas[0].get("architecture", "unknown") if blas else "none"
    targets = [t for t in umath.__cpu_dispatch__ if umath.__cpu_features__.get(t)]
    return f"openblas={arch},numpy={targets[-1] if targets else 'baseline'}"


def golden_for(fingerprint: str) -> Path | None:
    """The golden CSV written under ``fingerprint``'s kernels, or None when there is none."""
    index = json.loads(INDEX.read_text())
    name = index.get(fingerprint)
    return GOLDEN_DIR / name if name else None
