"""Inference-time folding of batch norm into the convolution that feeds it.

In eval mode a ``BatchNorm2d`` that directly follows a ``Conv2d`` is a per-channel affine map
``y = (x - mean) / sqrt(var + eps) * gamma + beta``; it can be folded into the convolution's
weights and bias, which removes a full pass over the activations (about a quarter of
EfficientNet-Lite0's CPU forward time). The fold is **temporary** and **checked**:

* :func:`batchnorm_folded` folds, compares the encoder's features at every depth on a fixed
  probe input with the unfolded ones, keeps the fold only when they agree to
  :data:`FOLD_RTOL`, and restores the original modules and parameters on exit, so the
  encoder's weights (and ``weights_hash``) and anything trained on it later (LoRA) never see
  folded weights.
* A pair is folded only when the convolution and the batch norm are adjacent children of the
  same parent (in registration order), shapes agree, running statistics exist and the batch
  norm is not itself a layer tap; the probe check catches a registration order that is not
  the data flow.

Supported norms: ``torch.nn.BatchNorm2d`` (replaced by ``Identity``) and timm's
``BatchNormAct2d`` (replaced by its dropout and activation). Versioned by
:data:`FOLD_POLICY`, which enters the feature-cache key.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

FOLD_POLICY = "bnfold-v1:conv2d+batchnorm2d,eval-stats,checked"

#: Largest relative difference (to the largest |feature|) accepted between folded and
#: unfolded features at any depth on the probe input; float32 rounding gives ~1e-6.
FOLD_RTOL = 1e-4


@dataclass
class _Fold:
    parent: Any
    bn_name: str
    bn: Any
    conv: Any
    weight: Any
    bias: Any


def _norm_replacement(bn: Any) -> Any | None:
    """What takes a folded norm's place, or None when this norm type is not supported."""
    import torch

    if type(bn) is torch.nn.BatchNorm2d:
        return torch.nn.Identity()
    try:
        from timm.layers import BatchNormAct2d
    except ImportError:  # pragma: no cover - timm is a dependency
        return None
    if type(bn) is BatchNormAct2d:
        return torch.nn.Sequential(bn.drop, bn.act)
    return None


def foldable_pairs(module: Any, exclude: tuple[Any, ...] = ()) -> list[tuple[Any, str, Any, Any]]:
    """``(parent, bn_name, conv, bn)`` for every conv → batch-norm pair that can be folded.

    Parameters
    ----------
    module : torch.nn.Module
    exclude : tuple of modules
        Norm modules never to replace (e.g. layer taps that carry forward hooks).
    """
    import torch

    pairs = []
    for parent in module.modules():
        kids = list(parent.named_children())
        for (_, conv), (bn_name, bn) in zip(kids, kids[1:], strict=False):
            if not isinstance(conv, torch.nn.Conv2d) or not isinstance(bn, torch.nn.BatchNorm2d):
                continue
            if any(bn is e for e in exclude) or _norm_replacement(bn) is None:
                continue
            if bn.running_mean is None or bn.running_var is None:
                continue
            if bn.num_features != conv.out_channels or conv.weight.dtype != bn.running_var.dtype:
                continue
            pairs.append((parent, bn_name, conv, bn))
    return pairs


def fold_pairs(pairs: list[tuple[Any, str, Any, Any]]) -> list[_Fold]:
    """Fold each pair in place; returns what :func:`unfold` needs to undo it."""
    import torch

    done = []
    with torch.no_grad():
        for parent, bn_name, conv, bn in pairs:
            scale = torch.rsqrt(bn.running_var.double() + bn.eps)
            if bn.weight is not None:
                scale = scale * bn.weight.double()
            shift = -bn.running_mean.double() * scale
            if bn.bias is not None:
                shift = shift + bn.bias.double()
            w0, b0 = conv.weight, conv.bias
            w = w0.double() * scale.view(-1, *([1] * (w0.ndim - 1)))
            b = shift if b0 is None else b0.double() * scale + shift
            done.append(_Fold(parent, bn_name, bn, conv, w0, b0))
            conv.weight = torch.nn.Parameter(w.to(w0.dtype), requires_grad=False)
            conv.bias = torch.nn.Parameter(b.to(w0.dtype), requires_grad=False)
            setattr(parent, bn_name, _norm_replacement(bn))
    return done


def unfold(done: list[_Fold]) -> None:
    """Put back the original convolution parameters and norm modules (reverse order)."""
    for f in reversed(done):
        f.conv.weight = f.weight
        f.conv.bias = f.bias
        setattr(f.parent, f.bn_name, f.bn)


def _max_rel_diff(a: dict[float, Any], b: dict[float, Any]) -> float:
    worst = 0.0
    for d, x in a.items():
        y = b[d]
        scale = float(x.abs().max()) or 1.0
        worst = max(worst, float((x - y).abs().max()) / scale)
    return worst


def encoder_pairs(encoder: Any) -> list[tuple[Any, str, Any, Any]]:
    """The pairs :func:`batchnorm_folded` would fold in ``encoder``: none when it has no module
    or the module is training; layer taps (``encoder._blocks``) are never replaced."""
    module = getattr(encoder, "module", None)
    if module is None or module.training:
        return []
    return foldable_pairs(module, tuple(getattr(encoder, "_blocks", ())))


def _checked_fold(encoder: Any, pairs: list[tuple[Any, str, Any, Any]], size: int) -> list[_Fold]:
    """Fold ``pairs`` and keep the fold only if the features at every depth of a fixed probe
    input agree with the unfolded ones to :data:`FOLD_RTOL` (else undo it, return [])."""
    import torch

    from crsbench.protocol import LAYER_DEPTHS

    device = getattr(encoder, "device", torch.device("cpu"))
    gen = torch.Generator().manual_seed(0)
    probe = torch.randn(2, 3, size, size, generator=gen).to(device)
    try:
        ref = encoder.forward_features(probe, LAYER_DEPTHS)
    except Exception:  # no reference to check against: run unfolded
        return []
    done = fold_pairs(pairs)
    try:
        ok = _max_rel_diff(ref, encoder.forward_features(probe, LAYER_DEPTHS)) <= FOLD_RTOL
    except Exception:  # a fold that breaks the forward is not kept
        ok = False
    if not ok:
        unfold(done)
        return []
    return done


@contextmanager
def batchnorm_folded(encoder: Any, check_size: int | None = None) -> Iterator[int]:
    """Fold the encoder's conv → batch-norm pairs for the duration of the block.

    Parameters
    ----------
    encoder : crsbench.encoders.Encoder
        Its module must be in eval mode (as :class:`~crsbench.encoders.Encoder` keeps it).
    check_size : int, optional
        Side of the probe images (default: the encoder's input size).

    Yields
    ------
    int
        Number of folded pairs: 0 when there is nothing to fold, the module is training, or
        the folded features differ from the unfolded ones by more than :data:`FOLD_RTOL`
        (then the module is left as it was).
    """
    pairs = encoder_pairs(encoder)
    done = _checked_fold(encoder, pairs, int(check_size or encoder.input_size)) if pairs else []
    try:
        yield len(done)
    finally:
        unfold(done)
