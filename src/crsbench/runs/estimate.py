"""How long will a grid take? Extraction, probe and LoRA hours per cell and in total.

``crsbench estimate CONFIG`` multiplies the images each cell encodes
(:mod:`crsbench.runs.estimate_counts`) by each encoder's forward speed, and each cell's probe
work (:mod:`crsbench.runs.estimate_probe`) by a per-unit probe cost. The speeds come from the
user (``--throughput ENCODER=IMG_PER_S``), from a short measurement on this machine (the dry
run's :func:`~crsbench.runs.dryrun.encoder_throughput`: real architecture, random weights) or
from the documented H200 figures (:mod:`crsbench.runs.estimate_data`). The paper grid is also
projected on one 8-GPU node from the documented figures.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from crsbench.config import BenchmarkConfig
from crsbench.runs.estimate_counts import (
    CellImages,
    DatasetRows,
    LoraImages,
    all_dataset_rows,
    cell_images,
    lora_images,
)
from crsbench.runs.estimate_data import ProbeRates, documented_img_per_s, load_throughput_table
from crsbench.runs.estimate_probe import cell_probe_units
from crsbench.runs.plan import CellPlan, plan_cells

#: What every projection assumes (printed with it).
ASSUMPTIONS = (
    "extraction: one forward pass per image yields every layer depth; images are decoded and "
    "perturbed on the host while the device encodes (decoding never bounds)",
    "hours = images / (img/s) / 3600 per cell; the whole grid, cells already done included",
    "LoRA: every epoch runs (early stopping only shortens it); a training image costs "
    "{ratio:g} forward passes",
    "probes: one worker's time (one BLAS thread); logistic cost linear in rows x features x "
    "classes x C values per joint solve; MLP every epoch; kNN one similarity GEMM; "
    "recalibrators and scoring left out (seconds per cell)",
)


@dataclass(frozen=True)
class EncoderSpeed:
    """Forward img/s of one encoder at its input size and where the figure comes from
    (``given``, ``measured`` or ``documented``)."""

    encoder: str
    input_size: int
    img_per_s: float
    source: str


@dataclass(frozen=True)
class CellEstimate:
    """Projected hours of one cell."""

    encoder: str
    dataset: str
    images: CellImages
    lora: LoraImages | None
    img_per_s: float
    extract_h: float
    probe_h: float
    lora_h: float

    @property
    def total_h(self) -> float:
        """Extraction + probes + LoRA."""
        return self.extract_h + self.probe_h + self.lora_h

    def row(self) -> dict[str, object]:
        """The cell as a table row (``--json`` prints every key)."""
        return {"encoder": self.encoder, "dataset": self.dataset,
                "images": self.images.total, "clean": self.images.clean,
                "perturbed": self.images.perturbed, "shift": self.images.shift,
                "lora_train_images": self.lora.train if self.lora else 0,
                "img_per_s": round(self.img_per_s, 2), "extract_h": self.extract_h,
                "probe_h": self.probe_h, "lora_h": self.lora_h, "total_h": self.total_h}  # fmt: skip


@dataclass(frozen=True)
class Projection:
    """One grid on one device: its cells, the speeds and probe costs used, the totals."""

    cells: tuple[CellEstimate, ...]
    speeds: tuple[EncoderSpeed, ...]
    probe_rates: ProbeRates
    datasets: tuple[DatasetRows, ...]

    def total(self, field: str) -> float:
        """Sum of ``field`` (``extract_h``, ``probe_h``, ``lora_h``, ``total_h``) over cells."""
        return sum(getattr(c, field) for c in self.cells)


@dataclass(frozen=True)
class NodeProjection:
    """A grid on one node of ``gpus`` GPUs: device hours spread over the GPUs (cells never
    split), probe hours over the host's workers."""

    device: str
    gpus: int
    probe_workers: int
    gpu_hours: float
    probe_hours: float
    figures: str

    @property
    def wall_h(self) -> float:
        """Wall-clock hours: the GPU share, then the probe share (no overlap assumed)."""
        return self.gpu_hours / self.gpus + self.probe_hours / self.probe_workers


def _hours(images: float, img_per_s: float) -> float:
    return images / img_per_s / 3600.0


def _modalities(cfg: BenchmarkConfig) -> dict[str, str]:
    from crsbench.datasets import DATASETS

    return {n: DATASETS.get(n).card.modality for n in cfg.datasets}


def _n_outputs(dataset: str) -> int:
    from crsbench.datasets import DATASETS

    return len(DATASETS.get(dataset).card.label_names)


def input_sizes(cfg: BenchmarkConfig) -> dict[str, int]:
    """Each encoder's input size in ``cfg`` (its override, else its card's)."""
    from crsbench.encoders import get_card

    return {e.name: int(e.input_size or get_card(e.name).input_size) for e in cfg.encoders}


def documented_speeds(cfg: BenchmarkConfig, names: list[str] | None = None) -> list[EncoderSpeed]:
    """The documented img/s of every encoder of ``cfg`` (or of ``names``) at its input size."""
    table, sizes = load_throughput_table(), input_sizes(cfg)
    chosen = list(sizes) if names is None else names
    return [EncoderSpeed(n, sizes[n], documented_img_per_s(table, n, sizes[n]), "documented")
            for n in chosen]  # fmt: skip


def measured_speeds(
    cfg: BenchmarkConfig,
    names: list[str],
    n_images: int,
    on_encoder: Callable[[str], None] | None = None,
) -> list[EncoderSpeed]:
    """Forward img/s of ``names`` on this machine: the dry run's timing (true size, random
    weights, the run's forward-pass size), ``n_images`` images each after a warm-up batch;
    ``on_encoder`` is told each name before it is built and timed."""
    from crsbench.runs.dryrun import dry_run_config, dry_run_throughputs

    dry = dry_run_config(cfg)
    out = []
    for name in names:
        if on_encoder is not None:
            on_encoder(name)
        for t in dry_run_throughputs(dry, n_images, names=[name]):
            out.append(EncoderSpeed(t.encoder, t.input_size, t.img_per_s, "measured"))
    return out


def _cell(cfg: BenchmarkConfig, plan: CellPlan, rows: Mapping[str, DatasetRows],
          speed: EncoderSpeed, rates: ProbeRates, lora: bool) -> CellEstimate:  # fmt: skip
    """Hours of one cell."""
    from crsbench.encoders import get_card

    rows = dict(rows)
    images = cell_images(plan, rows)
    d, k = get_card(plan.encoder).embed_dim, _n_outputs(plan.dataset)
    probe_s = cell_probe_units(cfg, plan, rows, d, k).seconds(rates)
    li = lora_images(cfg, plan, rows) if lora else None
    ratio = load_throughput_table().training_cost_ratio
    lora_h = _hours(li.train * ratio + li.forward, speed.img_per_s) if li else 0.0
    return CellEstimate(plan.encoder, plan.dataset, images, li, speed.img_per_s,
                        _hours(images.total, speed.img_per_s), probe_s / 3600.0, lora_h)  # fmt: skip


def project(
    cfg: BenchmarkConfig,
    speeds: list[EncoderSpeed],
    rates: ProbeRates,
    rows: Mapping[str, DatasetRows] | None = None,
) -> Projection:
    """Every cell of ``cfg`` at ``speeds`` (one per encoder) and probe ``rates``.

    Parameters
    ----------
    cfg : BenchmarkConfig
    speeds : list of EncoderSpeed
        One per encoder of ``cfg``.
    rates : ProbeRates
    rows : mapping dataset → DatasetRows, optional
        The datasets' rows (default :func:`~crsbench.runs.estimate_counts.all_dataset_rows`).
    """
    from crsbench.runs.lora_stage import lora_plan

    rows = dict(rows) if rows is not None else all_dataset_rows(cfg)
    by_name = {s.encoder: s for s in speeds}
    mods = _modalities(cfg)
    lora_cells = set(lora_plan(cfg, mods))
    cells = tuple(
        _cell(cfg, p, rows, by_name[p.encoder], rates, (p.encoder, p.dataset) in lora_cells)
        for p in plan_cells(cfg, mods)
    )
    return Projection(cells, tuple(speeds), rates, tuple(rows.values()))


def node_projection(proj: Projection) -> NodeProjection:
    """``proj`` on one node of the documented size (GPUs and host cores per GPU)."""
    table = load_throughput_table()
    gpu_h = proj.total("extract_h") + proj.total("lora_h")
    return NodeProjection(table.device, table.node_gpus,
                          table.node_gpus * table.host_cores_per_gpu, gpu_h,
                          proj.total("probe_h"),
                          f"{table.label} ({table.version}, {table.date})")  # fmt: skip


def paper_node_projection() -> tuple[Projection, NodeProjection]:
    """The packaged paper grid on one 8-GPU node, from the documented figures only."""
    from crsbench.config import load_packaged_config

    cfg = load_packaged_config("paper")
    proj = project(cfg, documented_speeds(cfg), load_throughput_table().probe_rates)
    return proj, node_projection(proj)
