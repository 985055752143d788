"""Wrap an encoder's frozen module with LoRA adapters (through ``peft``).

Target modules come from the encoder card (``card.lora_targets``, fnmatch patterns over
``module.named_modules()`` names). When the card lists none, or its patterns match no module
of this build (e.g. a backend renamed its layers), the architecture defaults of
:data:`ARCHITECTURE_TARGETS` are tried in order and the first family that matches is used.

Two details make the adapters actually train:

- a linear layer *inside* ``torch.nn.MultiheadAttention`` (open_clip's ``attn.out_proj``) is
  read as a raw weight by the attention kernel, so an adapter on it would never run; such a
  target is moved up to the attention module itself, which peft adapts as a whole;
- after injection, one forward/backward pass on a blank image checks that every adapter
  receives a gradient; an adapter that does not is an :class:`EncoderError`, never a silent
  no-op.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from crsbench.core.errors import EncoderError
from crsbench.protocol import LORA_ALPHA, LORA_DROPOUT, LORA_RANK

if TYPE_CHECKING:
    import torch

#: Adapter name used inside peft.
ADAPTER = "default"
#: Architecture families tried (in order) when the card's patterns match nothing.
ARCHITECTURE_TARGETS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("timm ViT/BEiT attention (qkv, proj)", ("*blocks.*.attn.qkv", "*blocks.*.attn.proj")),
    (
        "transformers ViT attention (q/k/v/o_proj)",
        ("*.attention.q_proj", "*.attention.k_proj", "*.attention.v_proj", "*.attention.o_proj"),
    ),
    (
        "transformers self_attn (q/k/v/out_proj)",
        ("*.self_attn.q_proj", "*.self_attn.k_proj", "*.self_attn.v_proj", "*.self_attn.out_proj"),
    ),
    (
        "transformers ViT attention (query, value)",
        ("*.attention.attention.query", "*.attention.attention.value"),
    ),
    ("open_clip attention", ("*resblocks.*.attn",)),
    ("ResNet 3x3 convolutions", ("*layer*.*.conv2",)),
    ("ResNet stem and shortcut convolutions", ("conv1", "*layer*.0.downsample.0")),
    ("EfficientNet pointwise convolutions", ("*blocks.*.*.conv_pw", "*blocks.*.*.conv_pwl")),
)


def _supported_types() -> tuple[type, ...]:
    from torch import nn

    return (nn.Linear, nn.Conv2d, nn.Conv1d, nn.MultiheadAttention)


def match_modules(module: Any, patterns: Sequence[str]) -> list[str]:
    """Names of the submodules of ``module`` matched by any fnmatch pattern, in module order.

    A ``Linear`` whose parent is a ``MultiheadAttention`` is replaced by that parent (see the
    module docstring).
    """
    from torch import nn

    mods = dict(module.named_modules())
    out: list[str] = []
    for name in mods:
        if not name or not any(fnmatch.fnmatchcase(name, p) for p in patterns):
            continue
        parent = name.rpartition(".")[0]
        if parent in mods and isinstance(mods[parent], nn.MultiheadAttention):
            name = parent
        if name not in out:
            out.append(name)
    return out


def live_modules(module: Any, names: Sequence[str], input_size: int) -> list[str]:
    """The subset of ``names`` whose output reaches the embedding with a non-zero gradient.

    A module that is never called as a module (its weight is read directly, e.g. timm BEiT's
    ``qkv``), whose output is unused (a layer after the tapped one) or whose gradient is zero
    (a residual branch behind a zero-initialised norm) would give an adapter that never
    learns.
    """
    import torch

    mods = dict(module.named_modules())
    grads: dict[str, float] = {}
    handles = []

    def hook(name: str) -> Any:
        def fn(_m: Any, _inp: Any, out: Any) -> None:
            t = out if isinstance(out, torch.Tensor) else out[0]
            if t.requires_grad:
                t.register_hook(
                    lambda g: grads.__setitem__(name, grads.get(name, 0.0) + float(g.abs().sum()))
                )

        return fn

    for n in names:
        handles.append(mods[n].register_forward_hook(hook(n)))
    device = next(module.parameters()).device
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0)
            x = torch.randn(2, 3, input_size, input_size, device=device)
        x.requires_grad_(True)
        with torch.enable_grad():
            out = module(x)
            out = out if isinstance(out, torch.Tensor) else out[0]
            out.float().pow(2).sum().backward()
    finally:
        for h in handles:
            h.remove()
    return [n for n in names if grads.get(n, 0.0) > 0.0]


def lora_targets(encoder: Any) -> tuple[list[str], str]:
    """Module names to adapt for ``encoder`` and where the choice came from.

    The card's patterns are tried first, then each family of :data:`ARCHITECTURE_TARGETS`;
    matched modules that would never learn (:func:`live_modules`) are dropped, and the first
    source with a live module wins.

    Returns
    -------
    (names, source)
        ``source`` is ``"card"`` or ``"architecture default: <family>"``, plus the dropped
        modules when there are any.

    Raises
    ------
    EncoderError
        The encoder has no weights, or neither the card nor any architecture family matches.
    """
    name = encoder.card.name
    if not any(True for _ in encoder.module.parameters()):
        raise EncoderError(
            f"encoder {name!r} has no weights: LoRA is not available for it "
            "(it is skipped in the lora regime)."
        )
    card_patterns = tuple(encoder.card.lora_targets)
    sources = [("card", card_patterns)] if card_patterns else []
    sources += [(f"architecture default: {f}", p) for f, p in ARCHITECTURE_TARGETS]
    tried = []
    for source, patterns in sources:
        names = match_modules(encoder.module, patterns)
        if not names:
            continue
        live = live_modules(encoder.module, names, encoder.input_size)
        tried.append(f"{source} ({len(names)} matched, {len(live)} live)")
        if live:
            dead = [n for n in names if n not in live]
            note = f"; dropped (never learn): {', '.join(dead)}" if dead else ""
            return live, source + note
    raise EncoderError(
        f"encoder {name!r}: LoRA is not available for it: the card's lora_targets "
        f"{list(card_patterns)} and the architecture defaults give no module an adapter could "
        f"train in {type(encoder.module).__name__} (tried: {'; '.join(tried) or 'no match'}). "
        "Add working lora_targets to its card."
    )


def lora_parameter_names(module: Any) -> list[str]:
    """Names of the LoRA parameters of a wrapped module."""
    return [n for n, _ in module.named_parameters() if "lora_" in n]


def is_wrapped(module: Any) -> bool:
    """Whether ``module`` already holds LoRA layers."""
    from peft.tuners.lora import LoraLayer

    return any(isinstance(m, LoraLayer) for m in module.modules())


def wrap_with_lora(
    encoder: Any,
    rank: int = LORA_RANK,
    alpha: float = LORA_ALPHA,
    dropout: float = LORA_DROPOUT,
    target_modules: Sequence[str] | None = None,
    *,
    check: bool = True,
) -> torch.nn.Module:
    """Inject LoRA adapters into ``encoder.module`` (in place) and return that module.

    Parameters
    ----------
    encoder : Encoder
        From :func:`crsbench.encoders.build`; its base weights stay frozen.
    rank, alpha, dropout : int, float, float
        LoRA rank ``r``, scaling ``alpha`` (the update is scaled by ``alpha / r``) and the
        dropout applied to the adapter input.
    target_modules : sequence of str, optional
        fnmatch patterns over module names; default: the card's, else the architecture
        defaults (:func:`lora_targets`).
    check : bool
        Verify with one forward/backward pass that every adapter receives a gradient.

    Returns
    -------
    torch.nn.Module
        ``encoder.module`` with adapters; only LoRA parameters have ``requires_grad``. The
        chosen names are in its attribute ``crsbench_lora_targets``.

    Raises
    ------
    EncoderError
        No weights, no matching module, an unsupported layer type, already wrapped, or an
        adapter that never runs.
    """
    from peft import LoraConfig, inject_adapter_in_model

    name = encoder.card.name
    if rank < 1 or not alpha > 0 or not 0.0 <= dropout < 1.0:
        raise EncoderError(
            f"LoRA settings must be rank >= 1, alpha > 0, 0 <= dropout < 1. "
            f"Got rank={rank}, alpha={alpha}, dropout={dropout} instead."
        )
    module = encoder.module
    if is_wrapped(module):
        raise EncoderError(f"encoder {name!r} already carries LoRA adapters; build a fresh one.")
    if target_modules is None:
        names, source = lora_targets(encoder)
    else:
        names, source = match_modules(module, tuple(target_modules)), "explicit"
        if not names:
            raise EncoderError(
                f"encoder {name!r}: target_modules {list(target_modules)} must match a module. "
                "Got no match instead."
            )
    mods = dict(module.named_modules())
    bad = [
        f"{n} ({type(mods[n]).__name__})"
        for n in names
        if not isinstance(mods[n], _supported_types())
    ]
    if bad:
        raise EncoderError(
            f"encoder {name!r}: LoRA is not available for layers {bad[:5]}: peft adapts "
            "Linear, Conv1d, Conv2d and MultiheadAttention only."
        )
    # A regex (peft full-matches it) so that a name like "conv1" is not also a suffix match.
    exact = "|".join(re.escape(n) for n in names)
    config = LoraConfig(
        r=int(rank),
        lora_alpha=float(alpha),  # type: ignore[arg-type]  # peft annotates int; scales by alpha / r
        lora_dropout=float(dropout),
        target_modules=exact,
    )
    from crsbench.core.seeding import stable_seed
    from crsbench.encoders.backends.common import seeded

    with seeded(stable_seed("lora-init", name)):
        inject_adapter_in_model(config, module, adapter_name=ADAPTER)
    for pname, p in module.named_parameters():
        p.requires_grad_("lora_" in pname)
    module.eval()
    module.crsbench_lora_targets = list(names)
    module.crsbench_lora_source = source
    if check:
        check_adapters_run(module, encoder.input_size, name)
    return module


def check_adapters_run(module: Any, input_size: int, name: str = "encoder") -> None:
    """Raise :class:`EncoderError` unless every ``lora_B`` gets a non-zero gradient.

    ``lora_B`` starts at zero, so its gradient is the adapter input times the upstream
    gradient: zero or missing only when the adapter is bypassed.
    """
    import torch

    params = [(n, p) for n, p in module.named_parameters() if "lora_B" in n]
    device = next(module.parameters()).device
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        x = torch.randn(2, 3, input_size, input_size, device=device)
    with torch.enable_grad():
        out = module(x)
        out = out if isinstance(out, torch.Tensor) else out[0]
        out.float().pow(2).sum().backward()
    dead = [n for n, p in params if p.grad is None or not bool(p.grad.abs().sum() > 0)]
    for p in module.parameters():
        p.grad = None
    if dead:
        raise EncoderError(
            f"encoder {name!r}: LoRA adapters {dead[:4]} receive no gradient (the layer is "
            "bypassed by its parent's forward); target another module."
        )


def reset_lora(module: Any, seed: int) -> None:
    """Re-initialise every adapter (A random from ``seed``, B zero): a fresh fine-tune."""
    from peft.tuners.lora import LoraLayer

    from crsbench.encoders.backends.common import seeded

    with seeded(seed):
        for m in module.modules():
            if isinstance(m, LoraLayer):
                m.reset_lora_parameters(ADAPTER, True)
