"""What the executors need of a run's config to extract its cells, and nothing else.

The local and the Ray executors, their tasks and the cell extraction receive a
:class:`RunExtraction`, built once from the run's :class:`~crsbench.config.BenchmarkConfig`
(:meth:`RunExtraction.from_config`): the encoder entries, the device and precision rules, the
image bounds, the layer depths, the loader settings, the feature cache and the working size.
What the probes need travels separately (:class:`crsbench.evaluation.cell_data.CellSettings`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from crsbench.config import BenchmarkConfig, EncoderConfig
from crsbench.config.models import PrecisionCheckConfig
from crsbench.core.errors import ConfigError
from crsbench.datasets.bounds import ImageBounds


@dataclass(frozen=True)
class RunExtraction:
    """The extraction settings of one run (picklable: Ray tasks receive it).

    Attributes
    ----------
    encoders : tuple of EncoderConfig
        The config's encoder entries (name, weights, input size, recipe, ...).
    device : {"auto", "cpu", "cuda"}
    precision : {"auto", "fp32", "bf16"}
    precision_check : PrecisionCheckConfig
        Overrides of the bf16 check's thresholds.
    image_bounds : ImageBounds
    layers : tuple of float
        Layer depths extracted for every row.
    batch_size, num_workers : int
        The image loader's settings.
    cache_dir : Path
        The content-addressed feature cache.
    working_size : int
        W: every image is decoded and perturbed at this size once, for every encoder.
    encoder_modules : tuple of str
        Modules that define encoders outside crsbench (imported again in every worker).
    """

    encoders: tuple[EncoderConfig, ...]
    device: str
    precision: str
    precision_check: PrecisionCheckConfig
    image_bounds: ImageBounds
    layers: tuple[float, ...]
    batch_size: int
    num_workers: int
    cache_dir: Path
    working_size: int
    encoder_modules: tuple[str, ...] = ()

    @classmethod
    def from_config(cls, cfg: BenchmarkConfig) -> RunExtraction:
        """The extraction settings of ``cfg`` (its working size resolved once here)."""
        from crsbench.runs.extract_cell import run_working_size

        return cls(
            encoders=tuple(cfg.encoders),
            device=cfg.device,
            precision=cfg.precision,
            precision_check=cfg.precision_check,
            image_bounds=cfg.image_bounds,
            layers=tuple(cfg.layers),
            batch_size=cfg.batch_size,
            num_workers=cfg.num_workers,
            cache_dir=Path(cfg.resolved_cache_dir),
            working_size=run_working_size(cfg),
            encoder_modules=tuple(cfg.encoder_modules),
        )

    def encoder(self, name: str) -> EncoderConfig:
        """The entry of encoder ``name`` (ConfigError when the run has none)."""
        for entry in self.encoders:
            if entry.name == name:
                return entry
        known = ", ".join(e.name for e in self.encoders)
        raise ConfigError(f"encoder {name!r} is not one of this run's encoders ({known}).")
