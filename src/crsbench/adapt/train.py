"""Fine-tune a :class:`LoraClassifier`: AdamW, learning rate picked on validation, resumable.

Budget, the same for every encoder: each learning rate of a small fixed grid is tried for at
most ``epochs`` epochs with early stopping on validation macro-AUROC (``patience`` epochs
without improvement); the model kept is the best epoch of the best learning rate.

Resume: after every epoch the state of the running candidate (adapters + head, optimizer,
scheduler, torch RNG, epoch, best metric and best weights, history) is written atomically to
``ckpt_dir/lr<i>.pt``. A new call with the same ``ckpt_dir`` skips finished candidates and
continues the running one from its last epoch; on CPU the result is bit-identical to an
uninterrupted run with the same seed.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from crsbench.adapt.checkpoint import load_checkpoint, save_checkpoint
from crsbench.adapt.model import LoraClassifier, predict_proba
from crsbench.core.errors import ConfigError, DataError
from crsbench.core.seeding import stable_seed
from crsbench.protocol import LORA_EPOCHS, LORA_LR, LORA_LR_FACTORS

EpochHook = Callable[[int, int], None]


@dataclass(frozen=True)
class LoraTrainSettings:
    """The fine-tuning budget (identical for every encoder).

    Attributes
    ----------
    epochs : int
        Maximum epochs per learning rate.
    lrs : tuple of float
        Learning-rate grid, picked on validation macro-AUROC.
    batch_size : int
        Training batch size (a property of the protocol, not of the machine).
    weight_decay : float
        AdamW weight decay (adapters and head).
    patience : int
        Early stopping: epochs without a better validation AUROC before a candidate stops.
    max_steps_per_epoch : int or None
        Cap on optimizer steps per epoch (demo / smoke runs); ``None`` = full epochs.
    """

    epochs: int = LORA_EPOCHS
    lrs: tuple[float, ...] = tuple(LORA_LR * f for f in LORA_LR_FACTORS)
    batch_size: int = 32
    weight_decay: float = 0.01
    patience: int = 3
    max_steps_per_epoch: int | None = None

    def __post_init__(self) -> None:
        if self.epochs < 1 or self.batch_size < 1 or self.patience < 1:
            raise ConfigError(
                "epochs, batch_size and patience must be >= 1. Got "
                f"{self.epochs}, {self.batch_size}, {self.patience} instead."
            )
        if not self.lrs or any(not (lr > 0 and math.isfinite(lr)) for lr in self.lrs):
            raise ConfigError(f"lrs must be finite numbers > 0. Got {list(self.lrs)} instead.")
        if self.max_steps_per_epoch is not None and self.max_steps_per_epoch < 1:
            raise ConfigError(
                f"max_steps_per_epoch must be >= 1 or None. Got {self.max_steps_per_epoch}."
            )


@dataclass
class LoraFit:
    """What :func:`train_lora` chose and saw; the model holds the chosen weights."""

    lr: float
    best_epoch: int
    best_val_auroc: float
    n_train: int
    val_auroc_by_lr: dict[float, float]
    history: list[dict[str, Any]] = field(default_factory=list)
    train_seconds: float = 0.0

    def as_details(self) -> dict[str, Any]:
        """JSON-friendly summary for a run record's ``details``."""
        return {
            "lr": self.lr,
            "best_epoch": self.best_epoch,
            "val_auroc": self.best_val_auroc,
            "n_train": self.n_train,
            "val_auroc_by_lr": {f"{k:g}": v for k, v in self.val_auroc_by_lr.items()},
            "epochs_run": {f"{k:g}": n for k, n in self._epochs_by_lr().items()},
        }

    def _epochs_by_lr(self) -> dict[float, int]:
        out: dict[float, int] = {}
        for h in self.history:
            out[h["lr"]] = max(out.get(h["lr"], 0), h["epoch"])
        return out


def _val_auroc(model: LoraClassifier, images: Any, rows: np.ndarray, y: np.ndarray) -> float:
    from crsbench.metrics import macro_auroc

    prob = predict_proba(model, images, rows)
    value = float(macro_auroc(y, prob, model.task))
    return value if math.isfinite(value) else -math.inf


def _rng_state(device: Any) -> dict[str, Any]:
    import torch

    state = {"cpu": torch.get_rng_state()}
    if device.type == "cuda":
        state["cuda"] = torch.cuda.get_rng_state(device)
    return state


def _set_rng_state(state: dict[str, Any], device: Any) -> None:
    import torch

    torch.set_rng_state(state["cpu"])
    if device.type == "cuda" and "cuda" in state:
        torch.cuda.set_rng_state(state["cuda"], device)


def _epoch_order(n: int, seed: int, epoch: int) -> np.ndarray:
    import torch

    g = torch.Generator().manual_seed(stable_seed("lora-order", seed, epoch))
    return torch.randperm(n, generator=g).numpy()


def _run_candidate(
    model: LoraClassifier,
    i: int,
    lr: float,
    data: tuple[Any, np.ndarray, np.ndarray, Any, np.ndarray, np.ndarray],
    s: LoraTrainSettings,
    seed: int,
    ckpt: Path | None,
    progress: bool,
    on_epoch_end: EpochHook | None,
) -> dict[str, Any]:
    """Train one learning rate to its end (or resume it); return its final checkpoint state."""
    import torch
    from tqdm.auto import tqdm

    images, rows, y, val_images, val_rows, y_val = data
    state = load_checkpoint(ckpt) if ckpt is not None else None
    if state is not None and state.get("done"):
        return state
    device = model.device
    model.reset(stable_seed("lora-model", seed))
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=s.weight_decay)
    n_batches = max(1, math.ceil(len(rows) / s.batch_size))
    steps = min(n_batches, s.max_steps_per_epoch or n_batches)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps * s.epochs)
    if state is None:
        torch.manual_seed(stable_seed("lora-dropout", seed, i))
        state = {"lr": lr, "epoch": 0, "best_auroc": -math.inf, "best_epoch": 0,
                 "best_state": model.trainable_state(), "bad_epochs": 0, "history": [],
                 "done": False}  # fmt: skip
    else:
        model.load_trainable_state(state["trainable"])
        opt.load_state_dict(state["optimizer"])
        sched.load_state_dict(state["scheduler"])
        _set_rng_state(state["rng"], device)
    cuda = device.type == "cuda"
    y_t = torch.as_tensor(y)
    while state["epoch"] < s.epochs and state["bad_epochs"] < s.patience:
        epoch = state["epoch"] + 1
        perm = _epoch_order(len(rows), seed, epoch)
        model.train_mode()
        losses = []
        # disable=None: no bar unless stderr is a terminal (a log gets no redraw fragments)
        bar = tqdm(range(steps), desc=f"LoRA lr={lr:g} epoch {epoch}/{s.epochs}",
                   disable=None if progress else True, leave=False)  # fmt: skip
        for b in bar:
            pos = perm[b * s.batch_size : (b + 1) * s.batch_size]
            batch = images[rows[pos]]
            target = y_t[torch.as_tensor(pos)]
            with torch.autocast("cuda", torch.bfloat16, enabled=cuda):
                logits = model.logits_from_images(batch)
            loss = model.loss(logits, target.to(device))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            losses.append(float(loss.detach()))
            bar.set_postfix(loss=f"{losses[-1]:.4f}")
        bar.close()
        auc = _val_auroc(model, val_images, val_rows, y_val)
        state["history"].append(
            {"lr": lr, "epoch": epoch, "train_loss": float(np.mean(losses)), "val_auroc": auc}
        )
        if auc > state["best_auroc"]:
            state.update(best_auroc=auc, best_epoch=epoch, best_state=model.trainable_state(),
                         bad_epochs=0)  # fmt: skip
        else:
            state["bad_epochs"] += 1
        state["epoch"] = epoch
        state["done"] = state["epoch"] >= s.epochs or state["bad_epochs"] >= s.patience
        state.update(trainable=model.trainable_state(), optimizer=opt.state_dict(),
                     scheduler=sched.state_dict(), rng=_rng_state(device))  # fmt: skip
        if ckpt is not None:
            save_checkpoint(ckpt, state)
        if on_epoch_end is not None:
            on_epoch_end(i, epoch)
    state["done"] = True
    return state


def train_lora(
    model: LoraClassifier,
    images: Any,
    rows: np.ndarray,
    y: np.ndarray,
    val_images: Any,
    val_rows: np.ndarray,
    y_val: np.ndarray,
    *,
    settings: LoraTrainSettings | None = None,
    seed: int = 0,
    ckpt_dir: str | Path | None = None,
    progress: bool = True,
    on_epoch_end: EpochHook | None = None,
) -> LoraFit:
    """Fine-tune ``model`` on ``images[rows]`` and keep the best validation state.

    Parameters
    ----------
    model : LoraClassifier
        Its adapters and head are re-initialised from ``seed`` for every learning rate.
    images, val_images : indexable
        ``images[int64 array]`` → uint8 ``B×3×S×S`` tensor (a tensor, or
        :class:`crsbench.adapt.data.ImageRows`).
    rows, val_rows : ndarray of int
        Training and validation rows of those sources.
    y, y_val : ndarray
        Targets aligned with ``rows`` / ``val_rows``: class indices (multi-class) or 0/1/NaN
        (multi-label), as :func:`crsbench.evaluation.cell.targets` gives them.
    settings : LoraTrainSettings
    seed : int
        Fixes adapter and head initialisation, batch order and dropout.
    ckpt_dir : path, optional
        Per-epoch checkpoints (resumed when present).
    progress : bool
        One tqdm bar per epoch, drawn only when stderr is a terminal.
    on_epoch_end : callable, optional
        ``on_epoch_end(lr_index, epoch)`` after each epoch's checkpoint is written.

    Returns
    -------
    LoraFit
    """
    import torch

    s = settings or LoraTrainSettings()
    rows, val_rows = np.asarray(rows, dtype=np.int64), np.asarray(val_rows, dtype=np.int64)
    if len(rows) != len(y) or len(val_rows) != len(y_val):
        raise DataError(
            f"targets must align with rows. Got {len(rows)} rows / {len(y)} targets and "
            f"{len(val_rows)} validation rows / {len(y_val)} targets instead."
        )
    if len(rows) == 0 or len(val_rows) == 0:
        raise DataError("fine-tuning needs at least one training and one validation row.")
    order = np.argsort(rows, kind="stable")
    rows, y = rows[order], np.asarray(y)[order]
    t0 = time.perf_counter()
    data = (images, rows, y, val_images, val_rows, np.asarray(y_val))
    ckpt = Path(ckpt_dir) if ckpt_dir is not None else None
    devices = [model.device] if model.device.type == "cuda" else []
    results = []
    with torch.random.fork_rng(devices=devices):
        for i, lr in enumerate(s.lrs):
            path = ckpt / f"lr{i}.pt" if ckpt is not None else None
            st = _run_candidate(model, i, lr, data, s, seed, path, progress, on_epoch_end)
            results.append((st["best_auroc"], i, st))
    best_auc, _, best = max(results, key=lambda r: (r[0], -r[1]))
    model.load_trainable_state(best["best_state"])
    model.eval()
    return LoraFit(
        lr=float(best["lr"]),
        best_epoch=int(best["best_epoch"]),
        best_val_auroc=float(best_auc),
        n_train=int(len(rows)),
        val_auroc_by_lr={float(st["lr"]): float(a) for a, _, st in results},
        history=[h for _, _, st in results for h in st["history"]],
        train_seconds=time.perf_counter() - t0,
    )


def lr_grid(base_lr: float, factors: Sequence[float] = LORA_LR_FACTORS) -> tuple[float, ...]:
    """``base_lr × factors`` rounded to 12 significant digits."""
    return tuple(float(f"{base_lr * f:.12g}") for f in factors)
