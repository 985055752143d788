"""Parse and resolve a config (YAML, ${VAR} expansion, absolute paths); readable errors."""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, get_args, get_origin

import yaml
from pydantic import BaseModel, ValidationError

from crsbench.config.models import (
    _VAR,
    OUTPUT_DIR_VAR,
    BenchmarkConfig,
)
from crsbench.core.errors import ConfigError, CrsbenchError
from crsbench.resources import resource_label, resource_names, resource_path

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
        return f"{key}: {msg}" + ("" if msg.endswith((".", "?", "!")) else ".")
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
    _import_encoder_modules(cfg.encoder_modules, base, source)
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


class _DuplicateKey(yaml.YAMLError):
    """A mapping key written twice (YAML would silently keep the last value)."""

    def __init__(self, key: Any, line: int, first: int) -> None:
        super().__init__(f"key {key!r} at line {line} is written twice (first at line {first})")


#: Alias uses (``*name``) a YAML file may make: a config never needs many, and a few nested
#: ones expand exponentially (an "alias bomb") when the parsed value is walked.
MAX_ALIASES = 100


class _TooManyAliases(yaml.YAMLError):
    """More alias uses than :data:`MAX_ALIASES`."""

    def __init__(self, anchor: str, line: int) -> None:
        super().__init__(
            f"more than {MAX_ALIASES} aliases (the last *{anchor} at line {line}): nested "
            "aliases expand exponentially (an alias bomb)"
        )


class _UniqueKeyLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a key written twice in one mapping and more than
    :data:`MAX_ALIASES` alias uses."""

    _aliases = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):  # type: ignore[no-untyped-call]
            self._aliases += 1
            if self._aliases > MAX_ALIASES:
                event = self.peek_event()  # type: ignore[no-untyped-call]
                raise _TooManyAliases(str(event.anchor), event.start_mark.line + 1)
        return super().compose_node(parent, index)  # type: ignore[no-untyped-call]

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)  # type: ignore[no-untyped-call]
            if isinstance(key, list | dict):
                continue  # unhashable keys: SafeLoader itself reports them
            if key in seen:
                raise _DuplicateKey(key, key_node.start_mark.line + 1, seen[key] + 1)
            seen[key] = key_node.start_mark.line
        return super().construct_mapping(node, deep=deep)


def _read_yaml(text: str, source: str) -> Any:
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader)  # a SafeLoader subclass
    except _DuplicateKey as exc:
        raise ConfigError(f"invalid config {source}: {exc}; remove one of them.") from None
    except _TooManyAliases as exc:
        raise ConfigError(f"invalid config {source}: {exc}; write the values out.") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ConfigError(f"invalid config {source}: not valid YAML{where}: {exc}") from None
    if data is None:
        raise ConfigError(f"invalid config {source}: the file is empty.")
    return data


def _read_text(path: Path) -> str:
    """The file as UTF-8 text; a file that is not UTF-8 is named with the offending byte."""
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ConfigError(
            f"invalid config {path}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at line {line}); "
            "save the file as UTF-8."
        ) from None


def read_yaml_file(path: Path) -> Any:
    """A YAML file through the config's strict reader: UTF-8, no key written twice, at most
    :data:`MAX_ALIASES` aliases, safe tags only (the benchmark config and the cohort YAML).

    Raises
    ------
    ConfigError
        Naming the file and, where YAML says, the line.
    """
    if not path.is_file():
        raise ConfigError(f"config file {path} does not exist or is not a file.")
    return _read_yaml(_read_text(path), str(path))


def _import_encoder_modules(modules: list[str], base: Path, source: str) -> None:
    """Import the config's ``encoder_modules`` (the config's folder searched too)."""
    if not modules:
        return
    from crsbench.encoders.plugins import load_encoder_modules

    try:
        load_encoder_modules(modules, search_dir=base)
    except CrsbenchError as exc:
        raise ConfigError(f"invalid config {source}: {exc}") from exc


def load_config(path: Path | str, *, output_dir: Path | str | None = None) -> BenchmarkConfig:
    """Read, validate and resolve a YAML config file (relative paths: the file's folder).

    Raises
    ------
    ConfigError
        If the file is missing, not YAML, or fails validation.
    """
    p = Path(path)
    if p.is_dir():
        raise ConfigError(f"config file {p} is a directory; give the path of a YAML file.")
    if not p.is_file():
        raise ConfigError(f"config file {p} does not exist.")
    data = _read_yaml(_read_text(p), str(p))
    return parse_config(data, base_dir=p.parent, source=str(p), output_dir=output_dir)


def packaged_config_path(name: str) -> Path:
    """Path of a config shipped in ``crsbench/resources/configs`` (``"demo"`` or ``"paper"``)."""
    known = resource_names("configs")
    if name not in known:
        close = difflib.get_close_matches(name, known, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ConfigError(f"no shipped config {name!r}.{hint} Shipped: {', '.join(known)}.")
    return resource_path("configs", f"{name}.yaml")


def load_packaged_config(
    name: str, *, output_dir: Path | str | None = None, base_dir: Path | str | None = None
) -> BenchmarkConfig:
    """Load a shipped config; its relative paths resolve against ``base_dir`` (default: cwd)."""
    path = packaged_config_path(name)
    data = _read_yaml(path.read_text(encoding="utf-8"), resource_label("configs", f"{name}.yaml"))
    base = Path.cwd() if base_dir is None else Path(base_dir)
    return parse_config(data, base_dir=base, source=str(path), output_dir=output_dir)
