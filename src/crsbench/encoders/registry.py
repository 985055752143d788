"""The encoder registry and the public entry points ``get_card``, ``build``, ``weights_available``."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from crsbench.core.errors import EncoderError
from crsbench.core.registry import Registry
from crsbench.encoders.base import Backbone, BuildContext, Encoder
from crsbench.encoders.card import EncoderCard, EncoderSpec


class EncoderRegistry(Registry[EncoderSpec]):
    """The encoder registry: crsbench's cards, then those of installed packages.

    Every lookup first loads the ``crsbench.encoders`` entry points not loaded yet
    (:mod:`crsbench.encoders.plugins`), so an encoder of another package is known to
    ``encoders list``, ``doctor``, ``run`` and Ray workers alike.
    """

    def _with_plugins(self) -> None:
        from crsbench.encoders.plugins import load_entry_point_encoders

        load_entry_point_encoders()

    def get(self, name: str) -> EncoderSpec:
        """Look ``name`` up (entry points loaded first)."""
        if name not in self._items:
            self._with_plugins()
        return super().get(name)

    def names(self) -> list[str]:
        """Registered names, sorted (entry points loaded first)."""
        self._with_plugins()
        return super().names()

    def __contains__(self, name: object) -> bool:
        if name not in self._items:
            self._with_plugins()
        return super().__contains__(name)

    def __len__(self) -> int:
        self._with_plugins()
        return super().__len__()


ENCODERS: EncoderRegistry = EncoderRegistry("encoder")


def lazy(module: str, func: str) -> Callable[[BuildContext], Backbone]:
    """A builder that imports ``module`` (and so its backend library) only when called."""

    def call(ctx: BuildContext) -> Backbone:
        return getattr(importlib.import_module(module), func)(ctx)

    call.__name__ = func
    call.__qualname__ = f"{module}.{func}"
    return call


def register(
    card: EncoderCard,
    build_fn: Callable[[BuildContext], Backbone],
    available_fn: Callable[[], bool],
) -> EncoderSpec:
    """Add one encoder to :data:`ENCODERS` (a duplicate name raises)."""
    spec = EncoderSpec(card=card, build_fn=build_fn, available_fn=available_fn)
    ENCODERS.add(card.name, spec)
    return spec


def get_card(name: str) -> EncoderCard:
    """The card of encoder ``name`` (unknown names raise with suggestions)."""
    return ENCODERS.get(name).card


def weights_available(name: str) -> bool:
    """Are the real weights of ``name`` on this machine (no download is attempted)?"""
    try:
        return bool(ENCODERS.get(name).available_fn())
    except Exception:  # a broken cache must not break `encoders list`
        return False


def weights_unavailable_reason(name: str) -> str | None:
    """Why the real weights of ``name`` are not on this machine, or None when they are.

    Sources that can say more than "missing" (LLaVA-Med's projector shard) say it.
    """
    fn = ENCODERS.get(name).available_fn
    why = getattr(fn, "reason", None)
    try:
        if callable(why):
            return why()
        return None if fn() else "weight file(s) not found locally"
    except Exception as exc:  # a broken cache is a reason too
        return f"{type(exc).__name__}: {exc}"


def build(
    name: str,
    *,
    pretrained: bool = True,
    device: str = "cpu",
    weights_path: str | Path | None = None,
    allow_remote_code: bool = False,
    tiny: bool = False,
    recipe: str | None = None,
) -> Encoder:
    """Build a frozen :class:`Encoder`.

    Parameters
    ----------
    name : str
        A registered encoder (see ``crsbench encoders list``).
    pretrained : bool
        Load the real weights (full-size builds). ``False`` gives random weights.
    device : str
        Torch device for the module.
    weights_path : str or Path, optional
        A weight file or folder to use instead of the HF cache / ``$CRSBENCH_WEIGHTS_DIR``.
        With ``tiny=True`` this loads a checkpoint written in the family's native layout into
        the tiny architecture (used to test key mapping).
    allow_remote_code : bool
        Pass ``trust_remote_code=True`` to transformers for this encoder only.
    tiny : bool
        Same classes and loading code, small random configuration, no download.
    recipe : str, optional
        One of the card's preprocessing recipes (``card.recipe`` and ``card.recipes``);
        None keeps the card's default.

    Raises
    ------
    EncoderError
        Weights missing (the message says where to put them), unsafe, corrupt or mismatched.
    """
    spec = ENCODERS.get(name)
    spec.card.with_recipe(recipe)  # an unknown recipe fails before any weights are read
    ctx = BuildContext(
        card=spec.card,
        pretrained=pretrained,
        tiny=tiny,
        weights_path=weights_path,
        allow_remote_code=allow_remote_code,
    )
    try:
        backbone = spec.build_fn(ctx)
    except EncoderError:
        raise
    except ImportError as exc:
        raise EncoderError(
            f"encoder {name!r} needs the {spec.card.backend} backend: {exc}. "
            "Install crsbench[clip] (open_clip) or crsbench[hf] (transformers)."
        ) from exc
    return Encoder(spec.card, backbone, device=device).use_recipe(recipe)


def describe(name: str) -> dict[str, Any]:
    """Card as a dict plus ``weights_available``, for the CLI and run records."""
    return {**get_card(name).as_dict(), "weights_available": weights_available(name)}
