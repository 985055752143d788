"""Worker-side work of the engine: decode each image once, then apply every condition.

A :class:`DecodeSet` item is one image: decoded and resized once to the run's working
resolution W (:mod:`crsbench.features.resolution`, independent of the encoder), then each
requested condition (clean, or a perturbation at a severity) is applied to that same array,
giving a ``(n_conditions, 3, W, W)`` uint8 stack: the degraded images every encoder's own
preprocessing receives. Batches never cross shard boundaries
(:func:`shard_batches`), so a shard is complete as soon as its last batch is encoded.
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from crsbench.core.errors import ConfigError
from crsbench.core.types import Condition
from crsbench.datasets.bounds import ImageBounds
from crsbench.features import decode as _decode
from crsbench.features.pixel_memo import PIXEL_MEMO
from crsbench.protocol import CLEAN

PerturbFn = Callable[[np.ndarray, str, int, str], np.ndarray]


def _source_hash(paths: Sequence[Path]) -> str:
    h = hashlib.sha256()
    for p in sorted(paths):
        h.update(p.name.encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


def resolve_perturb(perturb_fn: PerturbFn | None) -> tuple[PerturbFn | None, str]:
    """The perturbation function and a version string that enters the cache key.

    The default is ``crsbench.perturb.apply``; its version is the package's table version
    (if it declares one) plus a hash of the package's source and severity-table files, so an
    edit to any perturbation or severity invalidates cached perturbed features. A custom function is versioned by
    its qualified name and source hash.
    """
    if perturb_fn is not None:
        try:
            src = inspect.getsource(perturb_fn).encode()
        except (OSError, TypeError):
            src = repr(perturb_fn).encode()
        name = getattr(perturb_fn, "__qualname__", "?")
        return perturb_fn, f"custom:{name}:{hashlib.sha256(src).hexdigest()[:16]}"
    try:
        from crsbench import perturb
    except ImportError:
        return None, "unavailable"
    table = next(
        (
            str(getattr(perturb, a))
            for a in ("PERTURBATION_TABLE_VERSION", "TABLE_VERSION", "VERSION")
            if hasattr(perturb, a)
        ),
        "",
    )
    files = [
        p
        for p in Path(perturb.__file__).parent.rglob("*")
        if p.is_file() and p.suffix in {".py", ".yaml", ".yml", ".json"}
    ]
    files.append(perturb.DEFAULT_TABLE_PATH)  # the packaged severity table (resources/perturb)
    return perturb.apply, f"crsbench.perturb:{table}:{_source_hash(files)}"


def perturbation_version(version: str, name: str) -> str:
    """The cache-key version of perturbation ``name`` under ``version`` (:func:`resolve_perturb`).

    A perturbation registered outside crsbench (a config's ``encoder_modules``, a user's
    package) adds a hash of its module's source file and of its registered severities, so an
    edit to either recomputes its features instead of reusing them. Code it imports from
    other modules is not hashed. Crsbench's own perturbations and a custom ``perturb_fn`` keep
    ``version`` unchanged.

    Parameters
    ----------
    version : str
        The run's perturbation version, as :func:`resolve_perturb` returns it.
    name : str
        A registered perturbation.

    Returns
    -------
    str
        The version that enters the cache key of ``name``'s perturbed features.
    """
    if not version.startswith("crsbench.perturb:"):
        return version
    import json
    import sys

    from crsbench.perturb import PERTURBATIONS

    spec = PERTURBATIONS.get(name)
    module = spec.fn.__module__
    if module.startswith("crsbench."):
        return version
    file = getattr(sys.modules.get(module), "__file__", None)
    src = Path(file).read_bytes() if file else inspect.getsource(spec.fn).encode()
    values = json.dumps({str(k): v for k, v in (spec.severities or {}).items()},
                        sort_keys=True, default=dict)  # fmt: skip
    digest = hashlib.sha256(src + b"\0" + values.encode()).hexdigest()[:16]
    return f"{version}:{module}:{digest}"


def feature_code_hash() -> str:
    """Hash of the source that changes pixel values (decode policy, DICOM reader, this module)."""
    from crsbench.datasets import dicom

    here = Path(__file__).parent
    return _source_hash([here / "decode.py", here / "loader.py", Path(dicom.__file__)])


def file_fingerprint(path: str) -> str:
    """``"<size>:<mtime_ns>"`` of a file (``"missing"`` if it cannot be stat'ed): what the cache
    keys and the decode workers compare to notice a file that changed."""
    import os

    try:
        st = os.stat(path)
    except OSError:
        return "missing"
    return f"{st.st_size}:{st.st_mtime_ns}"


class DecodeSet:
    """Map-style dataset: row index -> (row, stack | None, failure | None).

    Parameters
    ----------
    paths : sequence of str
        Image files (all rows of the request).
    image_ids : sequence of str
        Ids used to seed each perturbation stream.
    size : int
        Working resolution W (not an encoder's input size).
    conditions : sequence of Condition
        Conditions to produce for every image, in this order.
    perturb : callable or None
        ``perturb(image, name, severity, image_id) -> image``; needed for non-clean conditions.
    fingerprints : sequence of str, optional
        :func:`file_fingerprint` of every row when the run was planned (and keyed). A file
        whose fingerprint differs after decoding changed in between: the row fails with
        error class ``changed`` instead of giving features of bytes the key does not describe.
    bounds : ImageBounds, optional
        The image geometry accepted (the run's ``image_bounds``; default: the built-in ones).

    Each (image, condition) array is kept in :data:`crsbench.features.pixel_memo.PIXEL_MEMO`
    (bounded), so the next encoder of the run reuses it instead of decoding and perturbing the
    image again: the same bytes, so the same features and cache keys.
    """

    def __init__(
        self,
        paths: Sequence[str],
        image_ids: Sequence[str],
        size: int,
        conditions: Sequence[Condition],
        perturb: PerturbFn | None,
        fingerprints: Sequence[str] | None = None,
        bounds: ImageBounds | None = None,
    ) -> None:
        self.paths = list(paths)
        self.bounds = bounds or ImageBounds()
        self.fingerprints = None if fingerprints is None else list(fingerprints)
        self.image_ids = list(image_ids)
        self.size = int(size)
        self.conditions = list(conditions)
        self.perturb = perturb
        if perturb is None and any(c.name != CLEAN for c in self.conditions):
            raise ConfigError(
                "perturbed conditions need crsbench.perturb (or perturb_fn=...). "
                "Got neither instead."
            )
        try:
            hash(perturb)
            self._perturb_hashable = True
        except TypeError:
            self._perturb_hashable = False

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, row: int) -> tuple[int, np.ndarray | None, dict[str, Any] | None]:
        path, image_id = self.paths[row], self.image_ids[row]
        before = file_fingerprint(path)
        keys = [self._memo_key(path, before, image_id, c) for c in self.conditions]
        views = [None if k is None else PIXEL_MEMO.get(k) for k in keys]
        img = None
        if any(v is None for v in views):
            try:
                img = _decode.decode_image(path, self.size, self.bounds)
            except _decode.ImageDecodeError as exc:
                fail = {"error_class": exc.error_class, "message": exc.message}
                return row, None, fail
        now = file_fingerprint(path) if img is not None else before
        if self.fingerprints is not None and now != self.fingerprints[row]:
            msg = (f"file changed while the run was going on (size:mtime_ns "
                   f"{self.fingerprints[row]} when planned, {now} after decoding); "
                   "run again to extract its current content")  # fmt: skip
            return row, None, {"error_class": "changed", "message": msg}
        out = np.empty((len(self.conditions), 3, self.size, self.size), dtype=np.uint8)
        for k, cond in enumerate(self.conditions):
            view = views[k]
            if view is None:
                view = self._condition_view(img, cond, image_id)  # type: ignore[arg-type]
                if keys[k] is not None and now == before:  # unchanged while decoded
                    PIXEL_MEMO.put(keys[k], view)
            out[k] = _decode.to_rgb_chw(view)
        return row, out, None

    def _memo_key(self, path: str, fingerprint: str, image_id: str, cond: Condition) -> Any:
        """What determines the bytes of ``cond`` applied to this image (None: not memoised,
        for a perturbation function that cannot be a dict key)."""
        clean = cond.name == CLEAN
        if not clean and not self._perturb_hashable:
            return None
        return (path, fingerprint, self.size, _decode.DECODE_POLICY, self.bounds, image_id,
                cond.name, cond.severity, None if clean else self.perturb)  # fmt: skip

    def _condition_view(self, img: np.ndarray, cond: Condition, image_id: str) -> np.ndarray:
        """``img`` (decoded at W) under ``cond``: itself when clean, else perturbed."""
        if cond.name == CLEAN:
            return img
        view = np.asarray(self.perturb(img.copy(), cond.name, cond.severity, image_id))  # type: ignore[misc]
        if view.dtype != np.uint8 or view.shape[:2] != img.shape[:2]:
            view = _decode._resize_square(np.clip(view, 0, 255).astype(np.uint8), self.size)
        return view


def collate(items: list[tuple[int, np.ndarray | None, dict[str, Any] | None]]) -> dict[str, Any]:
    """Stack the decoded items of one batch; failures are passed through by row."""
    import torch

    ok = [(r, x) for r, x, _ in items if x is not None]
    failed = [(r, f) for r, _, f in items if f is not None]
    stack = torch.from_numpy(np.stack([x for _, x in ok])) if ok else None
    return {"rows": [r for r, _ in ok], "images": stack, "failed": failed}


def shard_batches(shards: Sequence[Sequence[int]], batch_size: int) -> list[list[int]]:
    """Consecutive row batches of at most ``batch_size``, never crossing a shard."""
    out: list[list[int]] = []
    for rows in shards:
        rows = list(rows)
        out.extend(rows[i : i + batch_size] for i in range(0, len(rows), batch_size))
    return out
