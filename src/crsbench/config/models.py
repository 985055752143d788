"""The config models: pydantic v2, unknown keys forbidden, frozen."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from crsbench import protocol
from crsbench.config.rules import ImageBounds, ImageBoundsKey, check_excluded_cells, check_shifts
from crsbench.config.rules import unique as _unique
from crsbench.store.columns import INTEGER_MAX

CONFIG_SCHEMA_VERSION = 1
#: Execution settings: they change where and how fast, never what is computed, so they are
#: left out of :func:`config_hash`.
EXECUTION_FIELDS: frozenset[str] = frozenset(
    {"output_dir", "cache_dir", "num_workers", "device", "batch_size", "encoder_modules"}
)
_MODULE_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
OUTPUT_DIR_VAR = "${output_dir}"
_INT64 = (-(2**63), 2**63 - 1)
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        """Refuse ``true``/``false`` where a number is expected (pydantic would read 1 / 0)."""
        field = cls.model_fields.get(info.field_name or "")
        values = value if isinstance(value, list) else [value]
        if field is not None and _wants_number(field.annotation):
            if any(isinstance(v, bool) for v in values):
                raise ValueError(f"a boolean is not a number. Got {value!r} instead")
            if any(isinstance(v, int) and not _INT64[0] <= v <= _INT64[1] for v in values):
                raise ValueError(
                    f"must fit a 64-bit integer (what crsbench stores). Got {value!r} instead"
                )
        return value


def _wants_number(annotation: Any) -> bool:
    """Whether a field's type holds int or float values (``int``, ``list[float]``, ``int | None``)."""
    args = get_args(annotation)
    if not args:
        return annotation in (int, float)
    if get_origin(annotation) is dict:
        return False
    return any(_wants_number(a) for a in args if a is not bool)


def _seed_list(values: list[int], what: str) -> list[int]:
    if any(s < 0 for s in values):
        raise ValueError(f"each seed must be an integer >= 0. Got {values} instead")
    if any(s > INTEGER_MAX for s in values):
        raise ValueError(f"each seed must be at most {INTEGER_MAX} (the store's 32-bit seed "
                         f"column). Got {values} instead")  # fmt: skip
    return _unique(values, what)


class EncoderConfig(_Strict):
    """One encoder of the panel: a registry name plus optional local overrides."""

    name: str = Field(min_length=1)
    weights_path: Path | None = None
    input_size: int | None = Field(default=None, ge=16, le=4096)
    allow_remote_code: bool = False
    #: One of the card's preprocessing recipes (MedSigLIP: ``model_card`` or ``serving``).
    recipe: str | None = None
    #: ``pretrained``: the real weights (located, hashed, key-checked). ``random``: the real
    #: architecture at its real size with seeded random weights, for a dry run
    #: (docs/runner.md, dry run); its records are marked and score/report refuse them by default.
    weights: Literal["pretrained", "random"] = "pretrained"


class DatasetConfig(_Strict):
    """A dataset root on disk, adapter options (e.g. ``uncertainty``) and an optional cap."""

    root: Path
    options: dict[str, str | int | float | bool | None] = Field(default_factory=dict)
    max_images: int | None = Field(default=None, gt=0)


class ShiftConfig(_Strict):
    """Probes trained on ``source`` applied to ``target``'s evaluation ``rows``, no retraining."""

    source: str
    target: str
    rows: protocol.ShiftRows = "official_test"


class ExcludedCellConfig(_Strict):
    """One (encoder, dataset) cell of the grid, named by the config's own names."""

    encoder: str = Field(min_length=1)
    dataset: str = Field(min_length=1)


class PerturbationConfig(_Strict):
    """Perturbation names × severities (test images only), plus the modality-noise extra."""

    names: list[str] = Field(default_factory=lambda: list(protocol.PAPER_PERTURBATIONS))
    severities: list[int] = Field(default_factory=lambda: list(protocol.SEVERITIES))
    include_extra: bool = True
    #: Working resolution W at which every image is perturbed, once for all encoders (then
    #: each encoder's own preprocessing resizes from W). None: the largest encoder input of
    #: the run, at least 224 (crsbench.features.resolution). Pin it to keep perturbed
    #: features independent of which encoders are in the run.
    working_size: int | None = Field(default=None, ge=16, le=4096)

    @field_validator("names")
    @classmethod
    def _names(cls, v: list[str]) -> list[str]:
        return _unique(v, "perturbation names")

    @field_validator("severities")
    @classmethod
    def _severities(cls, v: list[int]) -> list[int]:
        bad = [s for s in v if s not in protocol.SEVERITIES]
        if bad:
            raise ValueError(
                f"each severity must be one of {list(protocol.SEVERITIES)}. Got {bad} instead"
            )
        return _unique(v, "severities")


class LogisticConfig(_Strict):
    """Main probe: L2 logistic regression, C picked on validation macro-AUROC."""

    c_grid: list[float] = Field(default_factory=lambda: list(protocol.C_GRID), min_length=1)
    max_iter: int = Field(default=protocol.LOGISTIC_MAX_ITER, gt=0)
    stop: protocol.StopRule = protocol.LOGISTIC_STOP
    tol: float = Field(default=protocol.LOGISTIC_TOL, gt=0)

    @field_validator("c_grid")
    @classmethod
    def _grid(cls, v: list[float]) -> list[float]:
        bad = [c for c in v if not c > 0 or c == float("inf")]
        if bad:
            raise ValueError(f"each C must be a finite number > 0. Got {bad} instead")
        return _unique(v, "C values")


class MLPConfig(_Strict):
    """Control probe: a two-layer MLP."""

    hidden_size: int = Field(default=protocol.MLP_HIDDEN_SIZE, gt=0)
    epochs: int = Field(default=protocol.MLP_EPOCHS, gt=0)
    lr: float = Field(default=protocol.MLP_LR, gt=0)
    weight_decay: float = Field(default=protocol.MLP_WEIGHT_DECAY, ge=0)


class KNNConfig(_Strict):
    """Control probe: k nearest neighbours."""

    k: int = Field(default=protocol.KNN_K, gt=0)
    metric: Literal["cosine", "euclidean"] = protocol.KNN_METRIC


class ProbesConfig(_Strict):
    """Probe settings; set ``mlp`` or ``knn`` to ``null`` to skip a control probe."""

    logistic: LogisticConfig = Field(default_factory=LogisticConfig)
    mlp: MLPConfig | None = Field(default_factory=MLPConfig)
    knn: KNNConfig | None = Field(default_factory=KNNConfig)

    @property
    def names(self) -> list[str]:
        """Enabled probe names, main probe first."""
        return [n for n in ("logistic", "mlp", "knn") if getattr(self, n) is not None]


class LoraConfig(_Strict):
    """Adaptation regime (a later issue): LoRA hyperparameters."""

    enabled: bool = False
    rank: int = Field(default=protocol.LORA_RANK, gt=0)
    alpha: float = Field(default=protocol.LORA_ALPHA, gt=0)
    dropout: float = Field(default=protocol.LORA_DROPOUT, ge=0, lt=1)
    epochs: int = Field(default=protocol.LORA_EPOCHS, gt=0)
    lr: float = Field(default=protocol.LORA_LR, gt=0)
    #: The learning-rate grid is ``lr × lr_factors``; the rate is chosen on validation AUROC.
    lr_factors: list[float] = Field(
        default_factory=lambda: list(protocol.LORA_LR_FACTORS), min_length=1
    )
    seeds: list[int] = Field(default_factory=lambda: list(protocol.LORA_SEEDS), min_length=1)
    #: Label fractions fine-tuned (a subset of the config's ``fractions`` holding 1.0);
    #: ``None`` = all of them. Fewer fractions make a cheap run (the demo); the label-efficiency
    #: axis of the ``lora`` regime is then computed over the fractions present.
    fractions: list[float] | None = None
    #: Encoders adapted (names from ``encoders``); ``None`` = every encoder.
    encoders: list[str] | None = None
    #: Probe datasets adapted on (names from ``datasets``, not a shift target); ``None`` = all.
    datasets: list[str] | None = None

    @field_validator("seeds")
    @classmethod
    def _seeds(cls, v: list[int]) -> list[int]:
        return _seed_list(v, "regimes.lora.seeds")

    @field_validator("lr_factors")
    @classmethod
    def _lr_factors(cls, v: list[float]) -> list[float]:
        if any(not f > 0 for f in v):
            raise ValueError(f"each learning-rate factor must be > 0. Got {v} instead")
        return _unique(v, "regimes.lora.lr_factors")

    @field_validator("fractions")
    @classmethod
    def _fractions(cls, v: list[float] | None) -> list[float] | None:
        if v is not None and 1.0 not in v:
            raise ValueError(f"must include 1.0 (the full-label fine-tune). Got {v} instead")
        return None if v is None else _unique(v, "regimes.lora.fractions")


class RegimesConfig(_Strict):
    """Which regimes run: ``frozen`` (this release) and ``lora`` (later)."""

    frozen: bool = True
    lora: LoraConfig = Field(default_factory=LoraConfig)


class PrecisionCheckConfig(_Strict):
    """Overrides of the bf16 check's protocol constants (``null``: the constant, see
    ``crsbench.features.precision``); a change re-runs the check and enters the hash."""

    min_cosine: float | None = Field(default=None, gt=0.0, le=1.0)
    max_auroc_delta: float | None = Field(default=None, ge=0.0, le=1.0)
    n_images: int | None = Field(default=None, ge=8)


class BenchmarkConfig(_Strict):
    """A whole benchmark grid. See ``docs/config_and_store.md`` for every key."""

    version: int = CONFIG_SCHEMA_VERSION
    #: Modules that register encoders (or perturbations) defined outside crsbench, imported
    #: before the names are checked; searched on PYTHONPATH and in the config's folder.
    encoder_modules: list[str] = Field(default_factory=list)
    encoders: list[EncoderConfig] = Field(min_length=1)
    datasets: dict[str, DatasetConfig] = Field(min_length=1)
    shifts: list[ShiftConfig] = Field(default_factory=list)
    #: Cells (encoder × probe dataset) the grid leaves out: never run, never imputed.
    exclude_cells: list[ExcludedCellConfig] = Field(default_factory=list)
    seeds: list[int] = Field(default_factory=lambda: list(protocol.SEEDS), min_length=1)
    fractions: list[float] = Field(
        default_factory=lambda: list(protocol.LABEL_FRACTIONS), min_length=1
    )
    perturbations: PerturbationConfig = Field(default_factory=PerturbationConfig)
    probes: ProbesConfig = Field(default_factory=ProbesConfig)
    recalibrators: list[protocol.Recalibrator] = Field(
        default_factory=lambda: list(protocol.RECALIBRATORS)
    )
    layers: list[float] = Field(default_factory=lambda: list(protocol.LAYER_DEPTHS), min_length=1)
    anchors: str = Field(default=protocol.ANCHORS_VERSION, min_length=1)
    regimes: RegimesConfig = Field(default_factory=RegimesConfig)
    output_dir: Path = Path("results")
    cache_dir: Path | None = None
    split_seed: int = Field(default=protocol.SPLIT_SEED, ge=0)
    batch_size: int = Field(default=64, gt=0)
    num_workers: int = Field(default=0, ge=0)
    device: Literal["auto", "cpu", "cuda"] = "auto"
    #: Forward-pass arithmetic of the feature extraction: ``auto`` = bf16 autocast on CUDA
    #: where the encoder passes the bf16 check (crsbench.evaluation.precision_check), else
    #: fp32; ``fp32``; ``bf16`` forced (checked and recorded all the same). The resolved
    #: precision enters every feature cache key and every run's provenance.
    precision: Literal["auto", "fp32", "bf16"] = "auto"
    precision_check: PrecisionCheckConfig = Field(default_factory=PrecisionCheckConfig)
    #: Image geometry a run accepts (min_side, max_side, max_aspect; crsbench.datasets.bounds).
    image_bounds: ImageBoundsKey = ImageBounds()

    @field_validator("encoders", mode="before")
    @classmethod
    def _encoder_strings(cls, v: Any) -> Any:
        if isinstance(v, list):
            return [{"name": e} if isinstance(e, str) else e for e in v]
        return v

    @field_validator("encoder_modules")
    @classmethod
    def _module_paths(cls, v: list[str]) -> list[str]:
        bad = [m for m in v if not _MODULE_PATH.fullmatch(m)]
        if bad:
            raise ValueError(f"must be dotted module paths (my_package.encoders). Got {bad}")
        return v

    @field_validator("version")
    @classmethod
    def _version(cls, v: int) -> int:
        if v != CONFIG_SCHEMA_VERSION:
            raise ValueError(
                f"must be {CONFIG_SCHEMA_VERSION} (the config schema this crsbench reads). "
                f"Got {v} instead"
            )
        return v

    @field_validator("seeds")
    @classmethod
    def _seeds(cls, v: list[int]) -> list[int]:
        return _seed_list(v, "seeds")

    @field_validator("fractions")
    @classmethod
    def _fractions(cls, v: list[float]) -> list[float]:
        bad = [f for f in v if not 0.0 < f <= 1.0]
        if bad:
            raise ValueError(f"each fraction must be in (0, 1]. Got {bad} instead")
        if 1.0 not in v:
            raise ValueError(f"fractions must include 1.0 (the full-label fit). Got {v} instead")
        return _unique(v, "fractions")

    @field_validator("layers")
    @classmethod
    def _layers(cls, v: list[float]) -> list[float]:
        bad = [x for x in v if x not in protocol.LAYER_DEPTHS]
        if bad:
            raise ValueError(
                f"each layer depth must be one of {list(protocol.LAYER_DEPTHS)}. Got {bad}"
            )
        if 1.0 not in v:
            raise ValueError(f"layers must include 1.0 (the default embedding). Got {v} instead")
        return _unique(v, "layers")

    @field_validator("recalibrators")
    @classmethod
    def _recal(cls, v: list[str]) -> list[str]:
        return _unique(v, "recalibrators")

    @model_validator(mode="after")
    def _cross_checks(self) -> BenchmarkConfig:
        _unique([e.name for e in self.encoders], "encoder names")
        check_shifts(self)
        check_excluded_cells(self)
        lora = self.regimes.lora
        extra = sorted(set(lora.fractions or ()) - set(self.fractions))
        if extra:
            raise ValueError(
                f"regimes.lora.fractions must be a subset of fractions {sorted(self.fractions)}. "
                f"Got {extra} outside it"
            )
        names = [e.name for e in self.encoders]
        unknown = [n for n in lora.encoders or () if n not in names]
        if unknown:
            raise ValueError(
                f"regimes.lora.encoders must name entries of encoders ({', '.join(names)}). "
                f"Got {unknown} instead"
            )
        probe = self.probe_datasets
        unknown = [n for n in lora.datasets or () if n not in probe]
        if unknown:
            raise ValueError(
                f"regimes.lora.datasets must name probe datasets ({', '.join(probe)}). "
                f"Got {unknown} instead"
            )
        return self

    def includes_cell(self, encoder: str, dataset: str) -> bool:
        """False for a cell listed in ``exclude_cells`` (it is never run)."""
        return ExcludedCellConfig(encoder=encoder, dataset=dataset) not in self.exclude_cells

    @property
    def frozen_cells(self) -> list[tuple[str, str]]:
        """(encoder, probe dataset) cells of the grid, config order, ``exclude_cells`` left out."""
        return [
            (e.name, d)
            for e in self.encoders
            for d in self.probe_datasets
            if self.includes_cell(e.name, d)
        ]

    @property
    def lora_fractions(self) -> list[float]:
        """Label fractions the LoRA regime fine-tunes, in config order."""
        chosen = self.regimes.lora.fractions
        return [f for f in self.fractions if chosen is None or f in chosen]

    @property
    def lora_encoders(self) -> list[EncoderConfig]:
        """Encoder entries the LoRA regime adapts, in config order."""
        chosen = self.regimes.lora.encoders
        return [e for e in self.encoders if chosen is None or e.name in chosen]

    @property
    def lora_datasets(self) -> list[str]:
        """Probe datasets the LoRA regime adapts on, in config order."""
        chosen = self.regimes.lora.datasets
        return [d for d in self.probe_datasets if chosen is None or d in chosen]

    @property
    def shift_targets(self) -> list[str]:
        """Datasets used only as shift targets (probes are never trained on them)."""
        sources = {s.source for s in self.shifts}
        return sorted({s.target for s in self.shifts} - sources)

    @property
    def probe_datasets(self) -> list[str]:
        """Datasets on which probes are trained, in config order."""
        targets = set(self.shift_targets)
        return [d for d in self.datasets if d not in targets]

    @property
    def resolved_cache_dir(self) -> Path:
        """``cache_dir``, or ``output_dir / "cache"`` when unset."""
        return self.cache_dir if self.cache_dir is not None else self.output_dir / "cache"
