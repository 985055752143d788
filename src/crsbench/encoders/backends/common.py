"""Helpers shared by the backends: strict key checking, pooling, deterministic init.

Strict loading has one home: :func:`refuse_bad_keys` decides which keys are wrong (missing,
unexpected, shape mismatch) against a card's allow-lists and raises one :class:`EncoderError`
naming them, grouped by module. :func:`load_checked` computes the three lists for a state dict
loaded by crsbench itself; the transformers backend feeds it the loading info of
``from_pretrained`` instead.
"""

from __future__ import annotations

import contextlib
import fnmatch
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from crsbench.core.errors import EncoderError

#: How many module groups, and keys per group, an error message lists.
SHOW_GROUPS, SHOW_KEYS = 6, 4
Shape = tuple[int, ...]
Mismatch = tuple[str, Shape, Shape]


def gap(t: Any) -> Any:
    """Global average pool of an ``N×C×H×W`` map (or mean over tokens of ``N×L×C``)."""
    return t.mean(dim=(2, 3)) if t.ndim == 4 else t.mean(dim=1)


def unwrap(sd: Mapping[str, Any], keys: Iterable[str] = ("model", "state_dict")) -> dict[str, Any]:
    """Return ``sd[key]`` for the first key that holds a dict (training checkpoints), else sd."""
    for key in keys:
        inner = sd.get(key)
        if isinstance(inner, Mapping):
            return dict(inner)
    return dict(sd)


def matches(key: str, patterns: Iterable[str]) -> bool:
    """Whether ``key`` matches any fnmatch pattern of ``patterns`` (case-sensitive)."""
    return any(fnmatch.fnmatchcase(key, p) for p in patterns)


def module_of(key: str) -> str:
    """The module a key belongs to, as a pattern: up to the first block index (``blocks.1.*``),
    else its first component (``fc_norm.*``), else the key itself (``cls_token``)."""
    parts = key.split(".")
    for i, part in enumerate(parts[:-1]):
        if part.isdigit():
            return ".".join(parts[: i + 1]) + ".*"
    return f"{parts[0]}.*" if len(parts) > 1 else key


def group_by_module(keys: Sequence[str], shown: Mapping[str, str] | None = None) -> str:
    """``module.* (n keys): key, key, … (+m)`` for each module, ``;``-separated, truncated.

    ``shown`` replaces a key by a longer description (a shape mismatch) in the listing.
    """
    groups: dict[str, list[str]] = {}
    for key in keys:
        groups.setdefault(module_of(key), []).append((shown or {}).get(key, key))
    parts = []
    for module, members in list(groups.items())[:SHOW_GROUPS]:
        more = f", … (+{len(members) - SHOW_KEYS})" if len(members) > SHOW_KEYS else ""
        noun = "key" if len(members) == 1 else "keys"
        parts.append(f"{module} ({len(members)} {noun}): {', '.join(members[:SHOW_KEYS])}{more}")
    if len(groups) > SHOW_GROUPS:
        parts.append(f"… (+{len(groups) - SHOW_GROUPS} more modules)")
    return "; ".join(parts)


def refuse_bad_keys(
    *,
    name: str,
    source: str,
    missing: Iterable[str],
    unexpected: Iterable[str],
    mismatched: Iterable[Mismatch] = (),
    allow_missing: Iterable[str] = (),
    ignore_unexpected: Iterable[str] = (),
    prefix: str = "",
) -> None:
    """Raise :class:`EncoderError` unless every key is accounted for.

    Parameters
    ----------
    name, source : str
        Encoder name and the file or folder the weights came from (both go in the message).
    missing : iterable of str
        Architecture keys the checkpoint does not provide (model naming).
    unexpected : iterable of str
        Checkpoint keys the architecture does not use (checkpoint naming), including every key
        outside a prefix filter.
    mismatched : iterable of (key, expected shape, checkpoint shape)
        Keys present on both sides with different shapes; never allowed.
    allow_missing, ignore_unexpected : iterable of str
        The card's allow-lists (fnmatch patterns): documented missing keys and ignorable extras.
    prefix : str
        The prefix filter the checkpoint was read through, if any (named in the message).
    """
    allow, ignore = tuple(allow_missing), tuple(ignore_unexpected)
    bad_missing = sorted(k for k in missing if not matches(k, allow))
    bad_unexpected = sorted(k for k in unexpected if not matches(k, ignore))
    shapes = {k: f"{k} must be {tuple(want)}, got {tuple(got)}" for k, want, got in mismatched}
    found = [
        f"{label} [{group_by_module(keys, shapes)}]"
        for label, keys in (
            ("missing keys", bad_missing),
            ("unexpected keys", bad_unexpected),
            ("shape mismatches", sorted(shapes)),
        )
        if keys
    ]
    if not found:
        return
    where = f" (read from under the prefix {prefix!r}; missing keys are named without it)"
    raise EncoderError(
        f"weights of encoder {name!r} from {source} do not fit the architecture "
        f"(crsbench loads strictly): {'; '.join(found)}"
        f"{where if prefix else ''}. A missing key would stay at random init and an unexpected "
        "one would be dropped: check that this is the right file. The card's documented "
        f"exceptions are allow_missing={list(allow)}, ignore_unexpected={list(ignore)}."
    )


def load_checked(
    module: Any,
    sd: Mapping[str, Any],
    *,
    name: str,
    source: str,
    prefix: str = "",
    allow_missing: Iterable[str] = (),
    ignore_unexpected: Iterable[str] = (),
) -> None:
    """``load_state_dict`` that fails loudly (see :func:`refuse_bad_keys`).

    Parameters
    ----------
    module : torch.nn.Module
        Receives the tensors of ``sd`` whose key is ``prefix + <module key>``.
    sd : mapping of str to tensor
        The checkpoint, in its own key names. A lazy mapping is fine: only the values of the
        keys the module uses are read.
    name, source : str
        Encoder name and file, for the message.
    prefix : str
        The part of each checkpoint key in front of the module's key (``"visual."``). Keys
        without it are unexpected, hence refused unless ``ignore_unexpected`` names them.
    allow_missing : iterable of str
        fnmatch patterns over the module's keys that may be absent (they keep their init).
    ignore_unexpected : iterable of str
        fnmatch patterns over the checkpoint's keys that may be left unused.
    """
    own = module.state_dict()
    missing = [k for k in own if prefix + k not in sd]
    unexpected = [k for k in sd if not k.startswith(prefix) or k[len(prefix) :] not in own]
    used = {k: sd[prefix + k] for k in own if prefix + k in sd}
    mismatched = [
        (k, tuple(own[k].shape), tuple(t.shape))
        for k, t in used.items()
        if tuple(own[k].shape) != tuple(t.shape)
    ]
    refuse_bad_keys(
        name=name,
        source=source,
        missing=missing,
        unexpected=unexpected,
        mismatched=mismatched,
        allow_missing=allow_missing,
        ignore_unexpected=ignore_unexpected,
        prefix=prefix,
    )
    module.load_state_dict(used, strict=False)


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
