"""Helpers shared by the backends: checked state-dict loading, pooling, deterministic init."""

from __future__ import annotations

import contextlib
import fnmatch
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from crsbench.core.errors import EncoderError


def gap(t: Any) -> Any:
    """Global average pool of an ``N×C×H×W`` map (or mean over tokens of ``N×L×C``)."""
    return t.mean(dim=(2, 3)) if t.ndim == 4 else t.mean(dim=1)


def strip_prefix(sd: Mapping[str, Any], prefix: str) -> dict[str, Any]:
    """Keys starting with ``prefix``, with it removed; other keys dropped."""
    return {k[len(prefix) :]: v for k, v in sd.items() if k.startswith(prefix)}


def unwrap(sd: Mapping[str, Any], keys: Iterable[str] = ("model", "state_dict")) -> dict[str, Any]:
    """Return ``sd[key]`` for the first key that holds a dict (training checkpoints), else sd."""
    for key in keys:
        inner = sd.get(key)
        if isinstance(inner, Mapping):
            return dict(inner)
    return dict(sd)


def load_checked(
    module: Any,
    sd: Mapping[str, Any],
    *,
    name: str,
    source: str,
    allow_missing: Iterable[str] = (),
    ignore_unexpected: Iterable[str] = (),
) -> None:
    """``load_state_dict`` that fails loudly.

    Every model key must be in ``sd`` unless it matches a pattern in ``allow_missing``; every
    key of ``sd`` must be used unless it matches ``ignore_unexpected`` (fnmatch patterns).
    Shapes must agree. Raises :class:`EncoderError` naming the offending keys.
    """
    own = module.state_dict()
    allow_missing, ignore_unexpected = tuple(allow_missing), tuple(ignore_unexpected)

    def matches(key: str, pats: tuple[str, ...]) -> bool:
        return any(fnmatch.fnmatchcase(key, p) for p in pats)

    missing = [k for k in own if k not in sd and not matches(k, allow_missing)]
    unexpected = [k for k in sd if k not in own and not matches(k, ignore_unexpected)]
    shape = [
        f"{k}: must be {tuple(own[k].shape)}. Got {tuple(sd[k].shape)} instead"
        for k in own
        if k in sd and tuple(own[k].shape) != tuple(sd[k].shape)
    ]
    if missing or unexpected or shape:

        def show(xs: list[str]) -> str:
            return ", ".join(xs[:8]) + (f" … (+{len(xs) - 8})" if len(xs) > 8 else "")

        raise EncoderError(
            f"weights of encoder {name!r} from {source} do not fit the architecture: "
            f"missing keys [{show(missing)}]; unexpected keys [{show(unexpected)}]; "
            f"shape mismatches [{show(shape)}]"
        )
    module.load_state_dict({k: v for k, v in sd.items() if k in own}, strict=False)


@contextlib.contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Seed torch's RNG inside a forked RNG state (the global state is restored on exit)."""
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


def tiny_seed(name: str) -> int:
    """Stable per-encoder seed for tiny/random builds (deterministic weights)."""
    from crsbench.core.seeding import stable_seed

    return int(stable_seed("encoder-init", name)) % (2**31)
