"""The benchmark config: one validated, frozen description of a whole benchmark grid.

A config is YAML parsed with :func:`yaml.safe_load` and validated by pydantic v2 models that
forbid unknown keys (every model has ``extra="forbid", frozen=True``). Validation errors are
raised as :class:`~crsbench.core.errors.ConfigError` listing each problem as
``key.path: message``; an unknown key carries a did-you-mean suggestion.

Three steps, kept apart so a config can be parsed without data or torch:

1. :func:`load_config` / :func:`parse_config` / :func:`load_packaged_config`: parse, validate,
   expand ``${VAR}`` / ``${VAR:-default}`` and ``${output_dir}`` in paths, make paths absolute.
2. :func:`validate_paths`: dataset roots, weight files and anchor files exist.
3. :func:`validate_names`: encoder, dataset and perturbation names are registered.

:func:`config_hash` is the sha256 of the canonical semantic content (see ``docs/config_and_store.md``).
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
from collections.abc import Iterable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from crsbench.core.errors import ConfigError

CONFIG_SCHEMA_VERSION = 1
PAPER_PERTURBATIONS: tuple[str, ...] = ("gaussian_blur", "jpeg", "contrast", "rician", "fov_crop")
RECALIBRATORS: tuple[str, ...] = ("temperature", "vector", "isotonic", "dirichlet")
LAYER_DEPTHS: tuple[float, ...] = (0.25, 0.5, 0.75, 1.0)
DEFAULT_FRACTIONS: tuple[float, ...] = (0.01, 0.05, 0.10, 0.25, 1.0)
DEFAULT_C_GRID: tuple[float, ...] = tuple(
    float(f"{10.0 ** (-4 + 0.5 * i):.12g}") for i in range(13)
)
#: Execution settings: they change where and how fast, never what is computed, so they are
#: left out of :func:`config_hash`.
EXECUTION_FIELDS: frozenset[str] = frozenset(
    {"output_dir", "cache_dir", "num_workers", "device", "batch_size"}
)
OUTPUT_DIR_VAR = "${output_dir}"
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _unique(values: list[Any], what: str) -> list[Any]:
    dupes = sorted({str(v) for v in values if values.count(v) > 1})
    if dupes:
        raise ValueError(f"{what} must be unique. Got duplicates {', '.join(dupes)} instead")
    return values


class EncoderSpec(_Strict):
    """One encoder of the panel: a registry name plus optional local overrides."""

    name: str = Field(min_length=1)
    weights_path: Path | None = None
    input_size: int | None = Field(default=None, ge=16, le=4096)
    allow_remote_code: bool = False


class DatasetSpec(_Strict):
    """A dataset root on disk, adapter options (e.g. ``uncertainty``) and an optional cap."""

    root: Path
    options: dict[str, str | int | float | bool | None] = Field(default_factory=dict)
    max_images: int | None = Field(default=None, gt=0)


class ShiftSpec(_Strict):
    """Probes trained on ``source`` applied to ``target`` with no retraining."""

    source: str
    target: str


class PerturbationSpec(_Strict):
    """Perturbation names × severities (test images only), plus the modality-noise extra."""

    names: list[str] = Field(default_factory=lambda: list(PAPER_PERTURBATIONS))
    severities: list[int] = Field(default_factory=lambda: [1, 2, 3])
    include_extra: bool = True

    @field_validator("names")
    @classmethod
    def _names(cls, v: list[str]) -> list[str]:
        return _unique(v, "perturbation names")

    @field_validator("severities")
    @classmethod
    def _severities(cls, v: list[int]) -> list[int]:
        bad = [s for s in v if s not in (1, 2, 3)]
        if bad:
            raise ValueError(f"each severity must be 1, 2 or 3. Got {bad} instead")
        return _unique(v, "severities")


class LogisticSpec(_Strict):
    """Main probe: L2 logistic regression, C picked on validation macro-AUROC."""

    c_grid: list[float] = Field(default_factory=lambda: list(DEFAULT_C_GRID), min_length=1)
    max_iter: int = Field(default=1000, gt=0)
    tol: float = Field(default=1e-6, gt=0)

    @field_validator("c_grid")
    @classmethod
    def _grid(cls, v: list[float]) -> list[float]:
        bad = [c for c in v if not c > 0 or c == float("inf")]
        if bad:
            raise ValueError(f"each C must be a finite number > 0. Got {bad} instead")
        return _unique(v, "C values")


class MLPSpec(_Strict):
    """Control probe: a two-layer MLP."""

    hidden_size: int = Field(default=256, gt=0)
    epochs: int = Field(default=100, gt=0)
    lr: float = Field(default=1e-3, gt=0)
    weight_decay: float = Field(default=1e-4, ge=0)


class KNNSpec(_Strict):
    """Control probe: k nearest neighbours."""

    k: int = Field(default=5, gt=0)
    metric: Literal["cosine", "euclidean"] = "cosine"


class ProbesSpec(_Strict):
    """Probe settings; set ``mlp`` or ``knn`` to ``null`` to skip a control probe."""

    logistic: LogisticSpec = Field(default_factory=LogisticSpec)
    mlp: MLPSpec | None = Field(default_factory=MLPSpec)
    knn: KNNSpec | None = Field(default_factory=KNNSpec)

    @property
    def names(self) -> list[str]:
        """Enabled probe names, main probe first."""
        return [n for n in ("logistic", "mlp", "knn") if getattr(self, n) is not None]


class LoraSpec(_Strict):
    """Adaptation regime (a later issue): LoRA hyperparameters."""

    enabled: bool = False
    rank: int = Field(default=8, gt=0)
    alpha: float = Field(default=16, gt=0)
    dropout: float = Field(default=0.1, ge=0, lt=1)
    epochs: int = Field(default=8, gt=0)
    lr: float = Field(default=1e-4, gt=0)
    seeds: list[int] = Field(default_factory=lambda: [0, 1, 2], min_length=1)


class RegimesSpec(_Strict):
    """Which regimes run: ``frozen`` (this release) and ``lora`` (later)."""

    frozen: bool = True
    lora: LoraSpec = Field(default_factory=LoraSpec)


class BenchmarkConfig(_Strict):
    """A whole benchmark grid. See ``docs/config_and_store.md`` for every key."""

    version: int = CONFIG_SCHEMA_VERSION
    encoders: list[EncoderSpec] = Field(min_length=1)
    datasets: dict[str, DatasetSpec] = Field(min_length=1)
    shifts: list[ShiftSpec] = Field(default_factory=list)
    seeds: list[int] = Field(default_factory=lambda: [0, 1, 2, 3, 4], min_length=1)
    fractions: list[float] = Field(default_factory=lambda: list(DEFAULT_FRACTIONS), min_length=1)
    perturbations: PerturbationSpec = Field(default_factory=PerturbationSpec)
    probes: ProbesSpec = Field(default_factory=ProbesSpec)
    recalibrators: list[Literal["temperature", "vector", "isotonic", "dirichlet"]] = Field(
        default_factory=lambda: list(RECALIBRATORS)
    )
    layers: list[float] = Field(default_factory=lambda: list(LAYER_DEPTHS), min_length=1)
    anchors: str = Field(default="v1", min_length=1)
    regimes: RegimesSpec = Field(default_factory=RegimesSpec)
    output_dir: Path = Path("results")
    cache_dir: Path | None = None
    split_seed: int = Field(default=0, ge=0)
    batch_size: int = Field(default=64, gt=0)
    num_workers: int = Field(default=0, ge=0)
    device: Literal["auto", "cpu", "cuda"] = "auto"

    @field_validator("encoders", mode="before")
    @classmethod
    def _encoder_strings(cls, v: Any) -> Any:
        if isinstance(v, list):
            return [{"name": e} if isinstance(e, str) else e for e in v]
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
        if any(s < 0 for s in v):
            raise ValueError(f"each seed must be an integer >= 0. Got {v} instead")
        return _unique(v, "seeds")

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
        bad = [x for x in v if x not in LAYER_DEPTHS]
        if bad:
            raise ValueError(f"each layer depth must be one of {list(LAYER_DEPTHS)}. Got {bad}")
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
        for i, s in enumerate(self.shifts):
            for end in ("source", "target"):
                name = getattr(s, end)
                if name not in self.datasets:
                    raise ValueError(
                        f"shifts.{i}.{end} must name a key of datasets "
                        f"({', '.join(sorted(self.datasets))}). Got {name!r} instead"
                    )
            if s.source == s.target:
                raise ValueError(f"shifts.{i}: source and target must differ. Got {s.source!r}")
        return self

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


# ----------------------------------------------------------------------------- errors


def _model_at(loc: tuple[Any, ...]) -> type[BaseModel] | None:
    """The model class that owns the key at ``loc[-1]`` (walks field annotations)."""
    tp: Any = BenchmarkConfig
    for part in loc[:-1]:
        tp = _unwrap(tp)
        if isinstance(tp, type) and issubclass(tp, BaseModel) and isinstance(part, str):
            field = tp.model_fields.get(part)
            if field is None:
                return None
            tp = field.annotation
        elif get_origin(tp) in (list, dict):
            tp = get_args(tp)[-1]
        else:
            return None
    tp = _unwrap(tp)
    return tp if isinstance(tp, type) and issubclass(tp, BaseModel) else None


def _unwrap(tp: Any) -> Any:
    """Strip ``X | None`` down to ``X``."""
    args = [a for a in get_args(tp) if a is not type(None)]
    if get_origin(tp) not in (list, dict) and len(args) == 1:
        return args[0]
    return tp


def _describe(err: Mapping[str, Any]) -> str:
    loc = tuple(err["loc"])
    key = ".".join(str(p) for p in loc) or "(top level)"
    if err["type"] == "extra_forbidden":
        owner = _model_at(loc)
        known = sorted(owner.model_fields) if owner is not None else []
        close = difflib.get_close_matches(str(loc[-1]), known, n=1, cutoff=0.5)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        listed = f" Known keys here: {', '.join(known)}." if known else ""
        return f"{key}: unknown key.{hint}{listed}"
    msg = str(err["msg"]).removeprefix("Value error, ")
    got = err.get("input")
    if err["type"] == "missing":
        return f"{key}: required key is missing."
    if err["type"].startswith(("value_error", "assertion")) or isinstance(got, dict | list):
        return f"{key}: {msg}."
    return f"{key}: {msg}. Got {got!r} instead."


def _config_error(source: str, exc: ValidationError) -> ConfigError:
    lines = [_describe(e) for e in exc.errors()]
    return ConfigError(f"invalid config {source}:\n  " + "\n  ".join(lines))


# ----------------------------------------------------------------------------- loading


def _expand(value: str, key: str, source: str) -> str:
    """Expand ``${VAR}`` and ``${VAR:-default}`` from the environment; keep ``${output_dir}``."""

    def sub(m: re.Match[str]) -> str:
        name, default = m.group(1), m.group(2)
        if name == "output_dir":
            return m.group(0)
        if name in os.environ:
            return os.environ[name]
        if default is not None:
            return default
        raise ConfigError(
            f"invalid config {source}:\n  {key}: environment variable {name!r} is not set "
            f"(write ${{{name}:-DEFAULT}} to give a default)."
        )

    return _VAR.sub(sub, value)


def _resolve(raw: Path | str, key: str, source: str, base: Path, out: Path | None) -> Path:
    text = _expand(str(raw), key, source)
    if text.startswith(OUTPUT_DIR_VAR):
        if out is None:
            raise ConfigError(
                f"invalid config {source}:\n  {key}: {OUTPUT_DIR_VAR} not allowed here."
            )
        return Path(os.path.normpath(out / text[len(OUTPUT_DIR_VAR) :].lstrip("/\\")))
    if OUTPUT_DIR_VAR in text:
        raise ConfigError(
            f"invalid config {source}:\n  {key}: {OUTPUT_DIR_VAR} must start the path. "
            f"Got {text!r} instead."
        )
    p = Path(text).expanduser()
    return Path(os.path.normpath(p if p.is_absolute() else base / p))


def _anchors_is_path(anchors: str) -> bool:
    return "/" in anchors or "\\" in anchors or anchors.endswith((".json", ".yaml", ".yml"))


def parse_config(
    data: Mapping[str, Any],
    *,
    base_dir: Path | str,
    source: str = "<config>",
    output_dir: Path | str | None = None,
) -> BenchmarkConfig:
    """Validate a mapping and resolve its paths.

    Parameters
    ----------
    data : Mapping
        The parsed YAML document.
    base_dir : Path or str
        Folder that relative paths are resolved against (the config file's folder).
    source : str
        Name used in error messages (the config file path).
    output_dir : Path or str, optional
        Overrides the ``output_dir`` key (``--out``); relative to the current directory.

    Returns
    -------
    BenchmarkConfig
        Frozen config with every path absolute.
    """
    if not isinstance(data, Mapping):
        raise ConfigError(
            f"invalid config {source}: the top level must be a mapping of keys. "
            f"Got {type(data).__name__} instead."
        )
    try:
        cfg = BenchmarkConfig.model_validate(dict(data))
    except ValidationError as exc:
        raise _config_error(source, exc) from None
    base = Path(base_dir).resolve()
    out = (
        Path(os.path.abspath(Path(output_dir).expanduser()))
        if output_dir is not None
        else _resolve(cfg.output_dir, "output_dir", source, base, None)
    )
    rs = lambda raw, key: _resolve(raw, key, source, base, out)  # noqa: E731
    update: dict[str, Any] = {
        "output_dir": out,
        "cache_dir": rs(cfg.cache_dir, "cache_dir") if cfg.cache_dir is not None else None,
        "datasets": {
            n: d.model_copy(update={"root": rs(d.root, f"datasets.{n}.root")})
            for n, d in cfg.datasets.items()
        },
        "encoders": [
            e.model_copy(update={"weights_path": rs(e.weights_path, f"encoders.{i}.weights_path")})
            if e.weights_path is not None
            else e
            for i, e in enumerate(cfg.encoders)
        ],
    }
    if _anchors_is_path(cfg.anchors):
        update["anchors"] = str(rs(cfg.anchors, "anchors"))
    return cfg.model_copy(update=update)


def _read_yaml(text: str, source: str) -> Any:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ConfigError(f"invalid config {source}: not valid YAML{where}: {exc}") from None
    if data is None:
        raise ConfigError(f"invalid config {source}: the file is empty.")
    return data


def load_config(path: Path | str, *, output_dir: Path | str | None = None) -> BenchmarkConfig:
    """Read, validate and resolve a YAML config file (relative paths: the file's folder).

    Raises
    ------
    ConfigError
        If the file is missing, not YAML, or fails validation.
    """
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"config file {p} does not exist.")
    data = _read_yaml(p.read_text(encoding="utf-8"), str(p))
    return parse_config(data, base_dir=p.parent, source=str(p), output_dir=output_dir)


def packaged_config_path(name: str) -> Path:
    """Path of a config shipped in ``crsbench/configs`` (``"demo"`` or ``"paper"``)."""
    files = resources.files("crsbench.configs")
    known = sorted(f.name[:-5] for f in files.iterdir() if f.name.endswith(".yaml"))
    if name not in known:
        close = difflib.get_close_matches(name, known, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ConfigError(f"no shipped config {name!r}.{hint} Shipped: {', '.join(known)}.")
    return Path(str(files / f"{name}.yaml"))


def load_packaged_config(
    name: str, *, output_dir: Path | str | None = None, base_dir: Path | str | None = None
) -> BenchmarkConfig:
    """Load a shipped config; its relative paths resolve against ``base_dir`` (default: cwd)."""
    path = packaged_config_path(name)
    data = _read_yaml(path.read_text(encoding="utf-8"), f"crsbench/configs/{name}.yaml")
    base = Path.cwd() if base_dir is None else Path(base_dir)
    return parse_config(data, base_dir=base, source=str(path), output_dir=output_dir)


# ----------------------------------------------------------------------------- checks


def validate_paths(cfg: BenchmarkConfig) -> None:
    """Check that dataset roots, weight files and an anchors file exist (all problems at once)."""
    problems = [
        f"datasets.{n}.root: dataset {n!r} root {d.root} must be an existing directory."
        for n, d in cfg.datasets.items()
        if not d.root.is_dir()
    ]
    problems += [
        f"encoders.{i}.weights_path: weights file {e.weights_path} of encoder {e.name!r} "
        "does not exist."
        for i, e in enumerate(cfg.encoders)
        if e.weights_path is not None and not e.weights_path.is_file()
    ]
    if _anchors_is_path(cfg.anchors) and not Path(cfg.anchors).is_file():
        problems.append(f"anchors: anchors file {cfg.anchors} does not exist.")
    if problems:
        raise ConfigError("config paths are missing:\n  " + "\n  ".join(problems))


def _registry_names(module: str, attr: str) -> list[str] | None:
    """Names of ``module.attr``; None when that module is not installed (other errors raise)."""
    import importlib

    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name == module:
            return None
        raise
    reg = getattr(mod, attr, None)
    if reg is None:
        return None
    return list(reg.names()) if hasattr(reg, "names") else list(reg)


def _unknown(names: Iterable[tuple[str, str]], known: list[str], kind: str) -> list[str]:
    out = []
    for key, name in names:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
            hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
            out.append(f"{key}: unknown {kind} {name!r}.{hint} Known: {', '.join(sorted(known))}.")
    return out


def validate_names(
    cfg: BenchmarkConfig,
    *,
    encoders: Iterable[str] | None = None,
    datasets: Iterable[str] | None = None,
    perturbations: Iterable[str] | None = None,
) -> None:
    """Check names against the registries (imported lazily; torch may load).

    ``encoders`` defaults to :data:`crsbench.encoders.ENCODERS`; ``datasets`` and
    ``perturbations`` default to the dataset and perturbation registries when those are
    importable, and are skipped otherwise. Pass name lists to check without importing.
    """
    enc = (
        list(encoders) if encoders is not None else _registry_names("crsbench.encoders", "ENCODERS")
    )
    if enc is None:
        raise ConfigError("cannot check encoder names: crsbench.encoders.ENCODERS is unavailable.")
    ds = (
        list(datasets) if datasets is not None else _registry_names("crsbench.datasets", "DATASETS")
    )
    pt = (
        list(perturbations)
        if perturbations is not None
        else _registry_names("crsbench.perturb", "PERTURBATIONS")
    )
    problems = _unknown(
        ((f"encoders.{i}.name", e.name) for i, e in enumerate(cfg.encoders)), enc, "encoder"
    )
    if ds is not None:
        problems += _unknown(((f"datasets.{n}", n) for n in cfg.datasets), ds, "dataset")
    if pt is not None:
        items = ((f"perturbations.names.{i}", n) for i, n in enumerate(cfg.perturbations.names))
        problems += _unknown(items, pt, "perturbation")
    if problems:
        raise ConfigError("config names are unknown:\n  " + "\n  ".join(problems))


# ----------------------------------------------------------------------------- hashing


def _canon(value: Any, out: Path) -> Any:
    if isinstance(value, bool) or value is None or isinstance(value, str | int):
        return value
    if isinstance(value, float):
        return float(f"{value:.12g}")
    if isinstance(value, Path):
        p = os.path.normpath(value)
        if p == os.path.normpath(out) or p.startswith(os.path.normpath(out) + os.sep):
            return OUTPUT_DIR_VAR + p[len(os.path.normpath(out)) :].replace(os.sep, "/")
        return p.replace(os.sep, "/")
    if isinstance(value, Mapping):
        return {str(k): _canon(v, out) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_canon(v, out) for v in value]
    raise TypeError(f"cannot canonicalise {type(value).__name__}")


#: List-valued keys whose order carries no meaning: sorted before hashing.
_SET_KEYS = ("seeds", "fractions", "recalibrators", "layers")


def canonical_content(cfg: BenchmarkConfig) -> dict[str, Any]:
    """The semantic content that :func:`config_hash` hashes (execution settings removed)."""
    dumped = cfg.model_dump(exclude=set(EXECUTION_FIELDS))
    content = _canon(dumped, cfg.output_dir)
    for key in _SET_KEYS:
        content[key] = sorted(content[key])
    content["perturbations"]["names"] = sorted(content["perturbations"]["names"])
    content["perturbations"]["severities"] = sorted(content["perturbations"]["severities"])
    content["probes"]["logistic"]["c_grid"] = sorted(content["probes"]["logistic"]["c_grid"])
    content["regimes"]["lora"]["seeds"] = sorted(content["regimes"]["lora"]["seeds"])
    if not _anchors_is_path(cfg.anchors):
        content["anchors"] = cfg.anchors
    else:
        content["anchors"] = _canon(Path(cfg.anchors), cfg.output_dir)
    return content


def config_json(cfg: BenchmarkConfig) -> str:
    """The full resolved config (execution settings included) as canonical JSON text."""
    return json.dumps(_canon(cfg.model_dump(), Path("/nonexistent-output")), sort_keys=True)


def config_hash(cfg: BenchmarkConfig) -> str:
    """sha256 hex digest of :func:`canonical_content` as sorted-key compact JSON.

    Reordered keys, ``0.1`` vs ``1e-1``, ``./data`` vs an absolute path, list order of
    set-like keys and execution settings leave it unchanged; any semantic edit changes it.
    """
    text = json.dumps(canonical_content(cfg), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
