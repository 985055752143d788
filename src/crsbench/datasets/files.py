"""Image-file existence from directory listings, and cheap per-file image probes.

Existence is decided from one ``os.scandir`` per distinct parent directory (one listing for
the 25k ISIC images, not 25k ``stat`` calls). The probe used by ``crsbench datasets check``
reads each file's first and last bytes and its image header; full decoding is optional.
"""

from __future__ import annotations

import os
import stat
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from crsbench.core.errors import DataError

from .bounds import ImageBounds
from .csvio import MAX_LISTED
from .dicom import PREAMBLE, is_dicom, probe_dicom

JPEG_MAGIC = b"\xff\xd8\xff"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
PNG_IEND = b"\x00\x00\x00\x00IEND\xaeB`\x82"  # the whole (fixed) IEND chunk, CRC included


def listed_files(directories: np.ndarray) -> set[str]:
    """Absolute paths of the regular files (or symlinks to them) in each directory."""
    found: set[str] = set()
    for directory in directories:
        try:
            with os.scandir(str(directory)) as entries:
                for entry in entries:
                    try:
                        if entry.is_file():
                            found.add(entry.path)
                    except OSError:
                        continue
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            continue
    return found


def exists_mask(paths: np.ndarray) -> np.ndarray:
    """Boolean mask: which ``paths`` exist as files, from one listing per parent directory."""
    series = pd.Series(np.asarray(paths, dtype=object))
    parents = series.str.rpartition(os.sep)[0]
    found = listed_files(parents.unique())
    return series.isin(found).to_numpy()


def require_files(paths: np.ndarray, source: Path, root: Path) -> None:
    """Raise :class:`DataError` listing the first missing images and their total."""
    mask = exists_mask(paths)
    rows = np.flatnonzero(~mask)
    if len(rows) == 0:
        return
    shown = "; ".join(f"row {int(r) + 1}: {paths[r]}" for r in rows[:MAX_LISTED])
    more = f"; ... ({len(rows) - MAX_LISTED} more)" if len(rows) > MAX_LISTED else ""
    raise DataError(
        f"{len(rows)} of {len(paths)} images listed in {source} are missing under {root}. "
        f"Every image must exist as a file (or pass check_files=False). Missing: {shown}{more}."
    )


@dataclass(frozen=True)
class FileProblem:
    """One image that failed the probe."""

    row: int  # 0-based row in the Dataset
    path: str
    error_class: str  # missing, not_a_file, empty, unreadable, not_an_image, truncated, ...
    message: str


def _tail_ok(kind: str, tail: bytes) -> bool:
    body = tail.rstrip(b"\x00\r\n \t")
    if kind == "jpeg":
        return body.endswith(b"\xff\xd9")
    return PNG_IEND in tail  # png


def probe_image(
    path: str, decode: bool = False, bounds: ImageBounds | None = None
) -> tuple[str, str] | None:
    """Check one image file; return ``(error_class, message)`` or ``None`` when it is fine.

    Without ``decode``: the file exists, is a regular non-empty file, starts with an image
    magic or has a header Pillow can parse, and (JPEG/PNG) ends with its end-of-image marker,
    which catches truncated files without decoding. With ``decode``: a full ``Image.load()``.
    DICOM files (suffix or ``DICM`` preamble) go to :func:`~crsbench.datasets.dicom.probe_dicom`.
    """
    from PIL import Image, UnidentifiedImageError

    try:
        info = os.stat(path)
    except FileNotFoundError:
        return "missing", "no such file (or a dangling symlink)"
    except PermissionError as exc:
        return "unreadable", f"permission denied ({exc.strerror})"
    except OSError as exc:
        return "io_error", str(exc)
    if stat.S_ISDIR(info.st_mode):
        return "not_a_file", "is a directory"
    if not stat.S_ISREG(info.st_mode):
        return "not_a_file", "is not a regular file"
    if info.st_size == 0:
        return "empty", "file has 0 bytes"
    try:
        with open(path, "rb") as handle:
            head = handle.read(PREAMBLE + 4)
            handle.seek(max(0, info.st_size - 64))
            tail = handle.read(64)
    except PermissionError as exc:
        return "unreadable", f"permission denied ({exc.strerror})"
    except OSError as exc:
        return "io_error", str(exc)
    if is_dicom(path, head):
        return probe_dicom(path, decode)
    kind = "jpeg" if head.startswith(JPEG_MAGIC) else "png" if head.startswith(PNG_MAGIC) else ""
    if kind and not _tail_ok(kind, tail):
        return "truncated", f"{kind.upper()} file has no end-of-image marker (cut short?)"
    try:
        with Image.open(path) as image:
            problem = _header_or_pixel_problem(image, decode, bounds or ImageBounds())
    except UnidentifiedImageError:
        return "not_an_image", "not an image file (no image header Pillow can read)"
    except Image.DecompressionBombError as exc:
        return "decompression_bomb", str(exc)
    except (OSError, SyntaxError, ValueError) as exc:
        return "truncated" if "truncated" in str(exc) else "decode_error", str(exc)
    return problem


def _header_or_pixel_problem(
    image: Any, decode: bool, bounds: ImageBounds
) -> tuple[str, str] | None:
    """Geometry outside :class:`ImageBounds` (from the header), then, with ``decode``, the
    pixels loaded and a float image's values checked finite: what a run's decoder refuses."""
    width, height = image.size
    problem = bounds.problem(width, height)
    if problem is not None:
        return "bad_geometry", f"{width} x {height} px: {problem}"
    if not decode:
        return None
    image.load()
    if image.mode in ("F", "I"):
        bad = int(np.count_nonzero(~np.isfinite(np.asarray(image, dtype=np.float64))))
        if bad:
            return "non_finite", f"{bad} of {width * height} pixel values are NaN or infinite"
    return None


def probe_images(
    paths: np.ndarray, decode: bool = False, workers: int = 8, bounds: ImageBounds | None = None
) -> list[FileProblem]:
    """Probe every path (threaded, I/O bound) against ``bounds`` (the run's ``image_bounds``;
    default: the built-in ones); return the problems in row order."""
    from PIL import ImageFile

    if ImageFile.LOAD_TRUNCATED_IMAGES:
        raise DataError(
            "PIL.ImageFile.LOAD_TRUNCATED_IMAGES must be False so truncated images are "
            "detected. Got True instead (set by some other code in this process)."
        )
    path_list = [str(p) for p in paths]
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        results = list(pool.map(lambda p: probe_image(p, decode, bounds), path_list, chunksize=64))
    return [
        FileProblem(row=i, path=path_list[i], error_class=res[0], message=res[1])
        for i, res in enumerate(results)
        if res is not None
    ]
