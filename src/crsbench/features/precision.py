"""Which arithmetic the extraction uses: bf16 autocast only where a check shows it moves nothing.

``precision: auto`` resolves to bf16 only when bf16 is fast on the device (CUDA) and a check
on the encoder passes: the features of a labelled probe batch, extracted by the engine in
fp32 and in bf16, keep a row cosine of at least :data:`MIN_ROW_COSINE` under every condition,
and a logistic probe fitted on each feature set gives macro AUROCs within
:data:`MAX_AUROC_DELTA` of each other (:mod:`crsbench.evaluation.precision_check`). Otherwise
fp32. The check's figures are cached per (encoder weights, device, torch version, probe batch)
next to the feature cache, so it runs once. See ``docs/features.md`` (Precision).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from crsbench.core.diskio import write_text_atomic
from crsbench.core.errors import ConfigError

PRECISIONS = ("auto", "fp32", "bf16")
#: Version of the check (what it measures and how); enters the key of its cached figures.
PRECISION_CHECK_VERSION = 2  # 2: no AUROC on the probe batch means fp32 (both criteria required)
#: Protocol constants of the check (a config's ``precision_check`` may override them).
MIN_ROW_COSINE = 0.999
MAX_AUROC_DELTA = 0.002
PROBE_IMAGES = 64


@dataclass(frozen=True)
class PrecisionCheck:
    """Thresholds of the check and the size of its probe batch."""

    min_cosine: float = MIN_ROW_COSINE
    max_auroc_delta: float = MAX_AUROC_DELTA
    n_images: int = PROBE_IMAGES

    @classmethod
    def from_overrides(cls, overrides: Mapping[str, Any] | None) -> PrecisionCheck:
        """The protocol's constants with the non-``None`` values of ``overrides`` in place."""
        given = {k: v for k, v in dict(overrides or {}).items() if v is not None}
        return cls(**given)


@dataclass(frozen=True)
class PrecisionDecision:
    """The precision a cell's features are extracted in, and why (goes into provenance).

    ``checked`` is False when no check ran (fp32 asked for, or bf16 not a candidate on this
    device); ``criteria`` is ``"cosine+auroc"``, ``"cosine"`` (the probe batch cannot give
    an AUROC; ``reason`` says why) or ``"none"``.
    """

    requested: str
    precision: str
    checked: bool
    passed: bool | None
    criteria: str
    reason: str
    min_cosine: float | None = None
    auroc_delta: float | None = None
    auroc_fp32: float | None = None
    auroc_bf16: float | None = None
    n_images: int = 0
    thresholds: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready record (floats rounded to 6 significant digits)."""
        out = asdict(self)
        for k in ("min_cosine", "auroc_delta", "auroc_fp32", "auroc_bf16"):
            if out[k] is not None:
                out[k] = float(f"{out[k]:.6g}")
        return out


def cpu_has_native_bf16() -> bool:
    """Whether this CPU executes bf16 arithmetic natively (AVX512-BF16 or AMX-BF16 on x86,
    read from ``/proc/cpuinfo``); without it bf16 is emulated and slower than fp32."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            flags = set(f.read().split())
    except OSError:
        return False
    return bool(flags & {"avx512_bf16", "amx_bf16"})


def check_requested(precision: str) -> str:
    """``precision`` itself when it is one of :data:`PRECISIONS`; else :class:`ConfigError`."""
    if precision not in PRECISIONS:
        raise ConfigError(f"precision must be one of {PRECISIONS}. Got {precision!r} instead.")
    return precision


def resolve_precision(precision: str, on_cuda: bool) -> str:
    """The engine's arithmetic, ``"fp32"`` or ``"bf16"``, for a requested precision.

    ``auto`` reaching the engine unresolved (no check ran: :func:`decide_precision` is how a
    run resolves it) is fp32, on every device. ``bf16`` is taken as asked; on a CPU without
    native bf16 (:func:`cpu_has_native_bf16`) it is emulated and slower, and a warning says so.
    """
    check_requested(precision)
    if precision == "auto":
        return "fp32"
    if precision == "bf16" and not on_cuda and not cpu_has_native_bf16():
        warnings.warn(
            "precision='bf16' on a CPU without native bf16 (AVX512-BF16/AMX): emulated, "
            "expect it to be slower than fp32",
            RuntimeWarning,
            stacklevel=3,
        )
    return precision


def bf16_candidate(device_type: str) -> bool:
    """Whether ``auto`` considers bf16 at all: on CUDA only. On CPU bf16 is emulated or, with
    AVX512-BF16, faster but too costly to check per cell; ``auto`` stays fp32 there."""
    return device_type == "cuda"


def decide(requested: str, figures: Mapping[str, Any] | None, check: PrecisionCheck,
           why_unchecked: str = "") -> PrecisionDecision:  # fmt: skip
    """The decision for ``requested`` given the check's ``figures`` (``None``: no check ran).

    ``figures`` has ``min_cosine``, ``auroc_fp32``, ``auroc_bf16`` (``None`` when the batch
    cannot give an AUROC), ``n_images`` and, when the AUROC is impossible, ``auroc_problem``.
    """
    thresholds = {"min_cosine": check.min_cosine, "max_auroc_delta": check.max_auroc_delta}
    if figures is None:
        precision = "bf16" if requested == "bf16" else "fp32"
        return PrecisionDecision(requested, precision, False, None, "none", why_unchecked,
                                 thresholds=thresholds)  # fmt: skip
    cos = float(figures["min_cosine"])
    a32, a16 = figures.get("auroc_fp32"), figures.get("auroc_bf16")
    delta = None if a32 is None or a16 is None else abs(float(a16) - float(a32))
    cos_ok = cos >= check.min_cosine
    # both criteria are required: without an AUROC on the probe batch bf16 is not shown safe
    auc_ok = delta is not None and delta <= check.max_auroc_delta
    passed = cos_ok and auc_ok
    criteria = "cosine" if delta is None else "cosine+auroc"
    parts = [f"min row cosine {cos:.6f} {'>=' if cos_ok else '<'} {check.min_cosine}"]
    if delta is None:
        parts.append(f"AUROC criterion skipped: {figures.get('auroc_problem', 'no AUROC')}")
    else:
        parts.append(f"|dAUROC| {delta:.2e} {'<=' if auc_ok else '>'} {check.max_auroc_delta}")
        step = figures.get("auroc_step")
        if step is not None and step > check.max_auroc_delta:
            parts.append(f"one swapped pair moves this AUROC by >= {step:.2e}: the AUROC "
                         "criterion requires identical rankings at this probe batch size")  # fmt: skip
    verdict = "bf16 passes" if passed else "bf16 fails"
    if requested == "bf16":
        precision, head = "bf16", f"bf16 forced by the config ({verdict} the check)"
    else:
        precision = "bf16" if passed else "fp32"
        head = f"{verdict} the check: {precision}"
    return PrecisionDecision(
        requested, precision, True, passed, criteria, f"{head}; " + "; ".join(parts),
        min_cosine=cos, auroc_delta=delta, auroc_fp32=a32, auroc_bf16=a16,
        n_images=int(figures["n_images"]), thresholds=thresholds,
    )  # fmt: skip


def read_figures(root: Path, key: str) -> dict[str, Any] | None:
    """Cached check figures under ``root/precision/<key>.json`` (``None`` if absent/unreadable)."""
    path = Path(root) / "precision" / f"{key}.json"
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record.get("figures") if record.get("key") == key else None


def write_figures(
    root: Path, key: str, parts: Mapping[str, Any], figures: Mapping[str, Any]
) -> Path:
    """Write the check's figures atomically (:func:`~crsbench.core.diskio.write_text_atomic`:
    a refused write names the file)."""
    path = Path(root) / "precision" / f"{key}.json"
    record = {"key": key, "parts": dict(parts), "figures": dict(figures)}
    return write_text_atomic(path, json.dumps(record, indent=1, sort_keys=True, default=str))
