"""The documented figures ``crsbench estimate`` projects with: GPU img/s and release sizes.

Two versioned data files ship with the package: ``resources/throughput/v1.yaml`` (forward
img/s of one H200-class GPU per architecture, each encoder's architecture, the 8-GPU node,
the training cost ratio and the probes' CPU cost per unit of work) and
``resources/dataset_sizes/v1.yaml`` (each dataset's release size and shift evaluation rows).
Both are read into typed records here; the estimate records which version it used.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import yaml

from crsbench.core.errors import ConfigError
from crsbench.resources import resource_file, resource_label

THROUGHPUT_FILE = ("throughput", "v1.yaml")
DATASET_SIZES_FILE = ("dataset_sizes", "v1.yaml")


@dataclass(frozen=True)
class Architecture:
    """Documented forward img/s of one architecture at ``input_size`` (ViT: ``patch``,
    ``width``; CNN: both 0)."""

    name: str
    kind: str
    img_per_s: float
    input_size: int
    patch: int
    width: int
    note: str


@dataclass(frozen=True)
class ProbeRates:
    """Seconds per unit of probe work of one probe worker (see the data file)."""

    logistic_s_per_unit: float
    mlp_s_per_unit: float
    knn_s_per_unit: float
    source: str


@dataclass(frozen=True)
class ThroughputTable:
    """The whole ``throughput`` data file."""

    label: str
    version: str
    device: str
    date: str
    source: str
    node_gpus: int
    host_cores_per_gpu: int
    training_cost_ratio: float
    architectures: dict[str, Architecture]
    encoder_arch: dict[str, tuple[str, int]]  # encoder -> (architecture, patch; 0 = its own)
    probe_rates: ProbeRates


@dataclass(frozen=True)
class ReleaseSize:
    """A dataset's documented release size and its shift evaluation rows by ``rows`` choice."""

    name: str
    n_images: int
    eval_rows: dict[str, int]
    upper_bound: bool
    source: str


def _read(folder: str, name: str) -> tuple[str, dict[str, Any]]:
    """The parsed packaged YAML file and how messages name it."""
    res = resource_file(folder, name)
    label = resource_label(folder, name)
    if not res.is_file():
        raise ConfigError(f"{label} is not shipped with this installation.")
    return label, yaml.safe_load(res.read_text(encoding="utf-8"))


def _architecture(name: str, raw: dict[str, Any]) -> Architecture:
    return Architecture(name, str(raw["kind"]), float(raw["img_per_s"]), int(raw["input_size"]),
                        int(raw.get("patch", 0)), int(raw.get("width", 0)),
                        str(raw.get("note", "")))  # fmt: skip


@lru_cache(maxsize=1)
def load_throughput_table() -> ThroughputTable:
    """The packaged throughput figures (``resources/throughput/v1.yaml``)."""
    label, raw = _read(*THROUGHPUT_FILE)
    archs = {k: _architecture(k, v) for k, v in raw["architectures"].items()}
    enc = {k: (str(v["arch"]), int(v.get("patch", 0))) for k, v in raw["encoders"].items()}
    pr = raw["probes_cpu"]
    rates = ProbeRates(float(pr["logistic_s_per_unit"]), float(pr["mlp_s_per_unit"]),
                       float(pr["knn_s_per_unit"]),
                       f"documented {int(pr['threads'])}-thread CPU figures ({label})")  # fmt: skip
    return ThroughputTable(
        label=label, version=str(raw["version"]), device=str(raw["device"]),
        date=str(raw["date"]), source=" ".join(str(raw["source"]).split()),
        node_gpus=int(raw["node"]["gpus"]),
        host_cores_per_gpu=int(raw["node"]["host_cores_per_gpu"]),
        training_cost_ratio=float(raw["training_cost_ratio"]),
        architectures=archs, encoder_arch=enc, probe_rates=rates,
    )  # fmt: skip


@lru_cache(maxsize=1)
def load_release_sizes() -> tuple[str, dict[str, ReleaseSize]]:
    """The packaged release sizes (``resources/dataset_sizes/v1.yaml``) and the file's label."""
    label, raw = _read(*DATASET_SIZES_FILE)
    out = {
        k: ReleaseSize(k, int(v["n_images"]), {str(r): int(n) for r, n in
                       (v.get("eval_rows") or {}).items()},
                       bool(v.get("upper_bound", False)), str(v["source"]))
        for k, v in raw["datasets"].items()
    }  # fmt: skip
    return label, out


def _relative_cost(arch: Architecture, patch: int, input_size: int) -> float:
    """Forward cost of an input of ``input_size`` px relative to the architecture's reference.

    ViT: tokens N = (size / patch)^2, cost per layer proportional to N (6 width + N); CNN:
    proportional to the pixel count.
    """
    if arch.kind != "vit":
        return (input_size / arch.input_size) ** 2

    def cost(size: int, p: int) -> float:
        n = (size // p) ** 2
        return n * (6 * arch.width + n)

    return cost(input_size, patch or arch.patch) / cost(arch.input_size, arch.patch)


def documented_img_per_s(table: ThroughputTable, encoder: str, input_size: int) -> float:
    """Documented forward img/s of ``encoder`` at ``input_size`` on the table's GPU.

    Raises
    ------
    ConfigError
        The encoder has no documented architecture (give ``--throughput`` for it).
    """
    if encoder not in table.encoder_arch:
        raise ConfigError(
            f"{table.label} has no figure for encoder {encoder!r}; give one with "
            f"--throughput {encoder}=IMG_PER_S."
        )
    arch_name, patch = table.encoder_arch[encoder]
    arch = table.architectures[arch_name]
    return arch.img_per_s / _relative_cost(arch, patch, input_size)
