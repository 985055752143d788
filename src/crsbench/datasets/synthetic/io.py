"""Atomic, deterministic writing of one synthetic dataset folder."""

from __future__ import annotations

import contextlib
import csv
import json
import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Protocol

import numpy as np
from PIL import Image

from crsbench.core.diskio import disk_error, disk_errors, make_folder
from crsbench.core.errors import DataError, DiskError
from crsbench.datasets.synthetic.sampling import Progress
from crsbench.datasets.synthetic.sizes import SynthSize, resolve_size
from crsbench.store.outputs import SYNTH_MARKER, refuse_clearing

MARKER = SYNTH_MARKER
#: 2: the demo size changed (class floor, common chest findings, 64 px): old folders are rewritten
GENERATOR_VERSION = 2
#: zlib level of every synthetic PNG: 1 writes a 128-px image about 5x faster than the
#: default 6 for files about 15 % larger (the pixels are the same at any level).
PNG_COMPRESS_LEVEL = 1


def read_marker(root: Path) -> dict | None:
    """The completion marker of ``root`` as a dict, or ``None`` if absent or unreadable."""
    try:
        return json.loads((root / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def write_atomically(
    root: Path, spec: dict, build: Callable[[Path], None], overwrite: bool = False
) -> Path:
    """Build a dataset folder in a temporary sibling, then rename it to ``root``.

    Parameters
    ----------
    root : Path
        Final dataset folder.
    spec : dict
        JSON-serialisable description of what is written (dataset, size, seed, version);
        stored as the completion marker, written last.
    build : Callable[[Path], None]
        Writes every file of the dataset under the folder it is given.
    overwrite : bool
        Replace an existing ``root`` whose marker differs; a folder crsbench did not write
        (no synth or output marker, not empty) is never replaced.

    Returns
    -------
    Path
        ``root``. If ``root`` already holds a complete dataset with the same ``spec`` and
        ``overwrite`` is false, nothing is written (a no-op).

    Raises
    ------
    DataError
        ``root`` exists, was not written with this ``spec`` and ``overwrite`` is false.
    StoreError
        ``overwrite`` is true but ``root`` is a file or a folder crsbench did not write.
    """
    root = Path(root)
    spec = {"generator": "crsbench synth", "version": GENERATOR_VERSION, **spec}
    if root.exists():
        if not overwrite and read_marker(root) == spec:
            return root
        if not overwrite:
            raise DataError(
                f"{root} must be absent or a complete `crsbench synth` output with the same "
                f"size and seed. Got an existing folder with marker {read_marker(root)!r} "
                f"instead; pass overwrite=True (--overwrite) to replace it."
            )
        refuse_clearing(root, "--overwrite")  # only a folder crsbench wrote is replaced
    make_folder(root.parent)
    with disk_errors(root):
        tmp = Path(tempfile.mkdtemp(prefix=f".{root.name}.partial-", dir=root.parent))
    try:
        os.chmod(tmp, 0o755)
        build(tmp)
        marker = json.dumps(spec, sort_keys=True, indent=2) + "\n"
        (tmp / MARKER).write_text(marker, encoding="utf-8")
        if root.exists():
            old = root.parent / f".{root.name}.old-{uuid.uuid4().hex[:8]}"
            os.rename(root, old)
            os.rename(tmp, root)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(tmp, root)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise _named(exc, tmp, root) from exc
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return root


def _named(exc: OSError, tmp: Path, root: Path) -> OSError | DiskError:
    """A refused write while building in ``tmp``, as a :class:`DiskError` naming the file under
    ``root`` (where it was to be) or ``root`` itself; any other error unchanged."""
    named = getattr(exc, "filename", None)
    where = root
    if named is not None:
        with contextlib.suppress(TypeError, ValueError):
            where = root / Path(os.fsdecode(named)).relative_to(tmp)
    return disk_error(exc, where, exact=True) or exc


def write_dataset(
    name: str,
    build: Callable[[Path, SynthSize, int, Progress], None],
    root: str | Path,
    size: str | dict | SynthSize = "small",
    seed: int = 0,
    overwrite: bool = False,
    progress: Progress = None,
) -> Path:
    """Write one synthetic dataset atomically: the shared body of every ``write_<dataset>``.

    Parameters
    ----------
    name : str
        Dataset name, recorded in the completion marker with ``seed`` and the resolved size.
    build : Callable[[Path, SynthSize, int, Progress], None]
        ``build(folder, size, seed, progress)`` writes every file of the dataset under
        ``folder`` and calls ``progress`` with ``1`` after each image.
    root : str or Path
        The dataset folder to create (e.g. ``DIR/<name>``).
    size : str, dict or SynthSize
        ``"small"``, ``"medium"`` or overrides (see :func:`resolve_size`).
    seed : int
        Generation seed; the same seed gives byte-identical files.
    overwrite : bool
        Replace an existing folder written with other parameters.
    progress : callable, optional
        Called with ``1`` after each image.

    Returns
    -------
    Path
        ``root``.
    """
    sz = resolve_size(size)
    spec = {"dataset": name, "seed": seed, "size": asdict(sz)}

    def write(tmp: Path) -> None:
        build(tmp, sz, seed, progress)

    return write_atomically(Path(root), spec, write, overwrite)


class DatasetWriter(Protocol):
    """The signature of every ``write_<dataset>`` (see :func:`~crsbench.datasets.synthetic.io.write_dataset`)."""

    def __call__(
        self,
        root: str | Path,
        size: str | dict | SynthSize = "small",
        seed: int = 0,
        overwrite: bool = False,
        progress: Progress = None,
    ) -> Path: ...


def dataset_writer(
    name: str, build: Callable[[Path, SynthSize, int, Progress], None], summary: str
) -> DatasetWriter:
    """The public ``write_<name>`` function: :func:`write_dataset` bound to ``name`` and ``build``.

    Parameters
    ----------
    name : str
        Dataset name (the writer is called ``write_<name>``).
    build : Callable[[Path, SynthSize, int, Progress], None]
        Writes every file of the dataset (see :func:`~crsbench.datasets.synthetic.io.write_dataset`).
    summary : str
        First line of the writer's docstring.

    Returns
    -------
    DatasetWriter
        ``writer(root, size="small", seed=0, overwrite=False, progress=None) -> root``.
    """

    def writer(
        root: str | Path,
        size: str | dict | SynthSize = "small",
        seed: int = 0,
        overwrite: bool = False,
        progress: Progress = None,
    ) -> Path:
        return write_dataset(name, build, root, size, seed, overwrite, progress)

    writer.__name__ = writer.__qualname__ = f"write_{name}"
    writer.__doc__ = (
        f"{summary}\n\n    Parameters and return value: see "
        ":func:`~crsbench.datasets.synthetic.io.write_dataset`.\n"
    )
    return writer


def write_csv(path: Path, header: Sequence[str], rows: Iterable[Sequence[object]]) -> None:
    """Write a comma-separated file with ``\\n`` line ends and minimal quoting."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)


def to_uint8(image: np.ndarray) -> np.ndarray:
    """Clip a float image in [0, 1] and round it to uint8."""
    return np.clip(np.rint(image * 255.0), 0, 255).astype(np.uint8)


def save_jpeg(path: Path, image: np.ndarray, quality: int = 92) -> None:
    """Save a float image in [0, 1] (H×W grey or H×W×3 RGB) as a baseline JPEG."""
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(to_uint8(image)).save(path, format="JPEG", quality=quality)


def save_png(path: Path, image: np.ndarray) -> None:
    """Save a float image in [0, 1] as an 8-bit PNG at :data:`PNG_COMPRESS_LEVEL`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(to_uint8(image)).save(path, format="PNG", compress_level=PNG_COMPRESS_LEVEL)
