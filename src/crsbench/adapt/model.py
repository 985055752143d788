"""The adapted classifier: LoRA-wrapped encoder + a linear head on the depth-1.0 embedding."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

import numpy as np
import torch
from torch import nn

from crsbench.core.errors import DataError
from crsbench.core.types import check_task
from crsbench.features.forward_threads import ForwardThreads, forward_threads, in_order


class LoraClassifier(nn.Module):
    """``head(backbone(preprocess(images)))``: logits of a fine-tuned encoder.

    Parameters
    ----------
    encoder : Encoder
        Whose ``module`` was wrapped by :func:`crsbench.adapt.lora.wrap_with_lora`.
    n_outputs : int
        Classes (multi-class) or labels (multi-label).
    task : {"multiclass", "multilabel"}

    Notes
    -----
    Only the LoRA parameters and the head train. :meth:`train_mode` keeps the backbone in eval
    mode (frozen normalisation statistics, no stochastic depth) and turns on the LoRA dropout
    only, so the base weights and buffers stay bit-identical.
    """

    def __init__(self, encoder: Any, n_outputs: int, task: str) -> None:
        super().__init__()
        self.task = check_task(task)
        if n_outputs < 2 and self.task == "multiclass":
            raise DataError(f"a multi-class head must have >= 2 outputs. Got {n_outputs} instead.")
        self.backbone = encoder.module
        self._preprocess = encoder.preprocess
        #: whether forward passes may run in two threads at once (the encoder's flag)
        self.concurrent_forwards = bool(getattr(encoder, "concurrent_forwards", False))
        self.head = nn.Linear(int(encoder.embed_dim), int(n_outputs)).to(encoder.device)
        self.to(encoder.device)
        # as the frozen extraction: channels-last for convolutional encoders (and on CUDA);
        # a fine-tune of EfficientNet-Lite0 at 128 px on 2 CPU cores: 28 -> 35 img/s
        from crsbench.features.engine import use_channels_last

        self.channels_last = use_channels_last(encoder, self.device.type == "cuda")
        if self.channels_last:
            self.backbone.to(memory_format=torch.channels_last)

    @property
    def device(self) -> Any:
        """Device of the head (and of the backbone)."""
        return self.head.weight.device

    def forward(self, x: Any) -> Any:
        """Preprocessed ``N×3×S×S`` float batch → logits ``N×K``."""
        z = self.backbone(x)
        z = z if not isinstance(z, (tuple, list)) else z[0]
        return self.head(z.float())

    def logits_from_images(self, images: Any) -> Any:
        """uint8 ``N×C×H×W`` images (any device) → logits, through the encoder's preprocessing."""
        x = self._preprocess(images.to(self.device))
        if self.channels_last:
            x = x.contiguous(memory_format=torch.channels_last)
        return self(x)

    def train_mode(self) -> LoraClassifier:
        """Eval mode everywhere except the LoRA dropout layers (see the class notes)."""
        self.eval()
        for name, m in self.named_modules():
            if "lora_dropout" in name:
                m.train()
        return self

    def trainable_state(self) -> dict[str, Any]:
        """Copies of the LoRA and head tensors (what a checkpoint or an adapter file holds)."""
        return {
            n: p.detach().clone().cpu()
            for n, p in self.named_parameters()
            if p.requires_grad or n.startswith("head.")
        }

    def load_trainable_state(self, state: dict[str, Any]) -> None:
        """Load tensors saved by :meth:`trainable_state`; every key must match."""
        import torch

        own = dict(self.named_parameters())
        wanted = set(self.trainable_state())
        if set(state) != wanted:
            missing, extra = sorted(wanted - set(state)), sorted(set(state) - wanted)
            raise DataError(
                f"adapter state must hold exactly the LoRA and head tensors. Got missing "
                f"{missing[:4]} and unexpected {extra[:4]} instead."
            )
        with torch.no_grad():
            for n, t in state.items():
                own[n].copy_(t.to(own[n].device))

    def reset(self, seed: int) -> None:
        """Fresh adapters and head from ``seed`` (the start of every fine-tune)."""
        from crsbench.adapt.lora import reset_lora
        from crsbench.encoders.backends.common import seeded

        reset_lora(self.backbone, seed)
        with seeded(seed + 1):
            self.head.reset_parameters()

    def loss(self, logits: Any, y: Any) -> Any:
        """Cross-entropy (multi-class, class indices) or masked BCE (multi-label, NaN = masked)."""
        import torch
        from torch.nn import functional as F

        logits = logits.float()
        if self.task == "multiclass":
            return F.cross_entropy(logits, y.long())
        mask = ~torch.isnan(y)
        if not bool(mask.any()):
            return logits.sum() * 0.0
        return F.binary_cross_entropy_with_logits(logits[mask], y[mask].float())

    def probabilities(self, logits: Any) -> Any:
        """Softmax (multi-class) or per-label sigmoid (multi-label)."""
        import torch

        if self.task == "multiclass":
            return torch.softmax(logits.float(), dim=1)
        return torch.sigmoid(logits.float())


def merged_copy(model: LoraClassifier) -> LoraClassifier:
    """A copy of ``model`` for evaluation, with every LoRA update merged into its base layer.

    A merged layer runs as the plain layer (no adapter branch), so evaluating the adapted
    model costs what the frozen encoder costs (EfficientNet-Lite0 at 128 px on 2 CPU cores:
    130 vs 85 img/s unmerged). ``model`` itself is untouched: its base
    weights stay bit-identical and it can keep training. Outputs agree with the unmerged
    model to float rounding.
    """
    import copy

    from peft.tuners.lora import LoraLayer

    twin = copy.deepcopy(model)
    for m in twin.modules():
        if isinstance(m, LoraLayer) and not m.merged:
            m.merge()
    return twin.eval()


def predict_proba(
    model: LoraClassifier, images: Any, rows: np.ndarray, batch_size: int = 64
) -> np.ndarray:
    """Probabilities of ``images[rows]`` (uint8 ``N×3×S×S`` source), float64 ``len(rows)×K``.

    Inference mode, bf16 autocast on CUDA; the model is left in eval mode. On CPU the batches'
    forward passes run side by side (:mod:`crsbench.features.forward_threads`).
    """
    model.eval()
    batches = (
        (images[np.asarray(rows[i : i + batch_size])],) for i in range(0, len(rows), batch_size)
    )
    with _inference(model) as forwards:
        out = list(in_order(forwards, partial(_probabilities, model), batches))
    k = model.head.out_features
    return np.concatenate(out).astype(np.float64) if out else np.zeros((0, k))


def predict_proba_conditions(
    model: LoraClassifier, images: Any, rows: np.ndarray, batch_size: int = 64
) -> list[np.ndarray]:
    """Like :func:`predict_proba` for a multi-condition source (``B×n_cond×3×S×S`` batches).

    Each batch is decoded once and every condition is scored from it; returns one float64
    ``len(rows)×K`` array per condition, in the source's condition order.
    """
    model.eval()
    n_cond = int(images.n_conditions)
    out: list[list[np.ndarray]] = [[] for _ in range(n_cond)]

    def per_condition() -> Iterator[tuple[Any]]:
        for i in range(0, len(rows), batch_size):
            batch = images[np.asarray(rows[i : i + batch_size])]
            if n_cond == 1:
                batch = batch[:, None]
            for k in range(n_cond):
                yield (batch[:, k],)

    with _inference(model) as forwards:
        for j, probs in enumerate(
            in_order(forwards, partial(_probabilities, model), per_condition())
        ):
            out[j % n_cond].append(probs)
    k_out = model.head.out_features
    return [np.concatenate(o).astype(np.float64) if o else np.zeros((0, k_out)) for o in out]


def _probabilities(model: LoraClassifier, batch: Any) -> np.ndarray:
    return model.probabilities(model.logits_from_images(batch)).float().cpu().numpy()


@contextmanager
def _inference(model: LoraClassifier) -> Iterator[ForwardThreads]:
    """Inference mode, bf16 autocast on CUDA, and the forward threads for ``model``."""
    cuda = model.device.type == "cuda"
    n = forward_threads(torch.get_num_threads(), cuda, model.concurrent_forwards)
    with (
        torch.inference_mode(),
        torch.autocast("cuda", torch.bfloat16, enabled=cuda),
        ForwardThreads(torch, n) as forwards,
    ):
        yield forwards
