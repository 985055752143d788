"""What ``crsbench profile`` is told about a cohort: from the command line or a short YAML.

A :class:`CohortSpec` names the cohort's CSV, the image folder, the label columns and the
optional patient column; everything else has a default chosen from the cohort's size
(:mod:`crsbench.cohort.profile_config`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crsbench.core.errors import ConfigError
from crsbench.datasets.bounds import ImageBounds, refuse_retired_env
from crsbench.encoders.devices import require_device

#: Where a profile goes when neither ``--out`` nor the YAML's ``out`` says.
DEFAULT_OUT = Path("cohort_profile")


@dataclass(frozen=True)
class CohortSpec:
    """A local cohort and the choices a user may override.

    Attributes
    ----------
    data : Path
        The cohort CSV (one row per image).
    images : Path
        The image folder; relative paths in the CSV resolve against it.
    label_columns : tuple of str
        One column: multi-class; several 0/1 columns: multi-label.
    group_column : str or None
        Patient id column (splits never cut a patient); None: every image is its own patient.
    path_column, id_column : str, str or None
        Image path column (default ``path``) and an optional image id column.
    classes : tuple of str or None
        Allowed classes of a single label column (a value outside them is refused).
    labels_per_image : bool
        Allow a patient's images to carry different labels (default: refused as a conflict).
    missing : {"error", "mask"}
        Blank multi-label cells: refused, or masked out of that label.
    encoders : tuple of str or None
        Encoder registry names; None: the paper's panel.
    out : Path
        Output directory (claimed like ``crsbench run``'s).
    seeds : tuple of int or None
        None: chosen from the cohort's size.
    max_images : int or None
        Cap (whole patients, chosen by a stable hash).
    device, batch_size, num_workers : execution settings.
    image_bounds : ImageBounds
        The image geometry accepted (YAML key ``image_bounds``: ``min_side``, ``max_side``,
        ``max_aspect``), applied by the image check and the run alike.
    """

    data: Path
    images: Path
    label_columns: tuple[str, ...]
    group_column: str | None = None
    path_column: str = "path"
    id_column: str | None = None
    classes: tuple[str, ...] | None = None
    labels_per_image: bool = False
    missing: str = "error"
    encoders: tuple[str, ...] | None = None
    out: Path = DEFAULT_OUT
    seeds: tuple[int, ...] | None = None
    max_images: int | None = None
    device: str = "auto"
    batch_size: int = 64
    num_workers: int = 0
    image_bounds: ImageBounds = ImageBounds()

    def __post_init__(self) -> None:
        """Refuse a device this machine cannot use (unknown, or ``cuda`` without a GPU) and
        image bounds that are not :class:`ImageBounds`, whatever built the spec (the YAML,
        the command line, Python), before any folder."""
        require_device(self.device, "device")
        refuse_retired_env()
        if not isinstance(self.image_bounds, ImageBounds):
            object.__setattr__(  # a mapping given in Python: checked like the YAML's
                self, "image_bounds", ImageBounds.from_mapping(self.image_bounds, "image_bounds")
            )


_FIELDS = {f.name for f in dataclasses.fields(CohortSpec)}
_LISTS = ("label_columns", "classes", "encoders", "seeds")
_PATHS = ("data", "images", "out")
#: Scalar keys and the type YAML must give them (a quoted "true" or "8" is refused).
_TYPES: dict[str, tuple[type, str]] = {
    "labels_per_image": (bool, "true or false (unquoted)"),
    "max_images": (int, "an integer (unquoted)"),
    "batch_size": (int, "an integer (unquoted)"),
    "num_workers": (int, "an integer (unquoted)"),
    "group_column": (str, "a column name"),
    "path_column": (str, "a column name"),
    "id_column": (str, "a column name"),
    "missing": (str, "error or mask"),
    "device": (str, "auto, cpu or cuda"),
}


def _wrong_type(value: Any, kind: type) -> bool:
    if value is None:
        return False
    if kind is int:
        return isinstance(value, bool) or not isinstance(value, int)
    return not isinstance(value, kind)


def _check_types(data: Mapping[str, Any], source: str) -> None:
    """Refuse a scalar key whose YAML value has the wrong type, naming the key."""
    for key, (kind, wanted) in _TYPES.items():
        value = data.get(key)
        if _wrong_type(value, kind):
            shown = f"{value!r} (a string)" if isinstance(value, str) else repr(value)
            raise ConfigError(f"{source}: key {key!r} must be {wanted}. Got {shown} instead.")


def names_list(value: Any, key: str) -> tuple[str, ...] | None:
    """``"a,b"`` or ``["a", "b"]`` → ``("a", "b")``; None stays None."""
    if value is None:
        return None
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)):
        raise ConfigError(f"{key} must be a list or a comma-separated string. Got {value!r}.")
    out = tuple(str(v).strip() for v in items if str(v).strip())
    if not out:
        raise ConfigError(f"{key} must name at least one value. Got {value!r} instead.")
    return out


def spec_from_mapping(data: Mapping[str, Any], base_dir: Path, source: str) -> CohortSpec:
    """A :class:`CohortSpec` from a parsed YAML mapping; relative paths resolve on ``base_dir``."""
    unknown = sorted(set(data) - _FIELDS)
    if unknown:
        raise ConfigError(
            f"{source}: unknown key(s) {unknown}. Known keys: {', '.join(sorted(_FIELDS))}."
        )
    for key in ("data", "images", "label_columns"):
        if data.get(key) in (None, ""):
            raise ConfigError(f"{source}: key {key!r} is required. Got none.")
    _check_types(data, source)
    values: dict[str, Any] = dict(data)
    for key in _LISTS:
        if key in values:
            values[key] = names_list(values[key], f"{source}: {key}")
    if values.get("seeds") is not None:
        try:
            values["seeds"] = tuple(int(s) for s in values["seeds"])
        except ValueError:
            raise ConfigError(f"{source}: seeds must be integers. Got {data['seeds']!r}.") from None
    if "image_bounds" in values:
        values["image_bounds"] = ImageBounds.from_mapping(
            values["image_bounds"], f"{source}: image_bounds"
        )
    for key in _PATHS:
        if key in values:
            path = Path(str(values[key])).expanduser()
            values[key] = path if path.is_absolute() else base_dir / path
    try:
        return CohortSpec(**values)
    except ConfigError as exc:  # the device: name the file too
        raise ConfigError(f"{source}: {exc}") from None


def read_spec(path: Path, device: str | None = None) -> CohortSpec:
    """Read a cohort YAML (keys: the fields of :class:`CohortSpec`).

    ``device`` (the command line's ``--device``) replaces the YAML's before the spec is
    checked, so a YAML written for a GPU machine can be run with ``--device cpu``.
    """
    from crsbench.config import read_yaml_file

    try:  # the benchmark config's strict reader: duplicate keys, alias bombs, not UTF-8
        data = read_yaml_file(path)
    except OSError as exc:
        raise ConfigError(f"cannot read cohort file {path}: {exc.strerror}.") from None
    if not isinstance(data, Mapping):
        raise ConfigError(f"{path}: the top level must be a mapping of keys. Got {data!r}.")
    if device is not None:
        data = {**data, "device": device}
    return spec_from_mapping(data, path.resolve().parent, str(path))
