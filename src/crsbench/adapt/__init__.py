"""The adaptation regime: LoRA fine-tuning of an encoder with a linear classification head.

>>> from crsbench.adapt import wrap_with_lora, LoraClassifier, train_lora  # doctest: +SKIP

See ``docs/adaptation.md``. Importing this package imports torch.
"""

from __future__ import annotations

from crsbench.adapt.checkpoint import load_checkpoint, save_checkpoint
from crsbench.adapt.data import ImageRows
from crsbench.adapt.lora import (
    ARCHITECTURE_TARGETS,
    lora_parameter_names,
    lora_targets,
    reset_lora,
    wrap_with_lora,
)
from crsbench.adapt.model import (
    LoraClassifier,
    merged_copy,
    predict_proba,
    predict_proba_conditions,
)
from crsbench.adapt.train import LoraFit, LoraTrainSettings, lr_grid, train_lora

__all__ = [
    "ARCHITECTURE_TARGETS",
    "ImageRows",
    "LoraClassifier",
    "LoraFit",
    "LoraTrainSettings",
    "load_checkpoint",
    "lora_parameter_names",
    "lora_targets",
    "lr_grid",
    "merged_copy",
    "predict_proba",
    "predict_proba_conditions",
    "reset_lora",
    "save_checkpoint",
    "train_lora",
    "wrap_with_lora",
]
