"""Decode one image file to a uint8 array at the working resolution, with a fixed policy.

The policy (every step below) is versioned by :data:`DECODE_POLICY` and enters every cache
key, so changing it can never reuse features computed under the old one.

1. Open with Pillow; ``Image.LOAD_TRUNCATED_IMAGES`` must be False (checked on every call).
   Pillow's decompression-bomb limit stays on: above 2 x ``MAX_IMAGE_PIXELS`` it raises.
2. For JPEG, ask the decoder for a DCT-domain downscale (``draft``) that keeps both sides at
   least the working resolution (a 2-4x faster decode of large files).
3. Force a full decode with ``load()`` (``verify()`` misses truncation); a PNG must also
   end with its complete IEND chunk (a file cut in its trailer is refused).
4. EXIF orientation is applied (``ImageOps.exif_transpose``).
5. Explicit mode conversion: grayscale modes ("1", "L", "LA") give an H x W array; 16- and
   32-bit modes ("I;16*", "I", "F") are **rescaled** per image from their min..max to 0..255
   (Pillow's own conversion clips them); colour modes give H x W x 3: "RGB" as is, "RGBA" and
   "LA" drop alpha, "P" goes through RGBA (palette transparency kept out), "CMYK", "YCbCr",
   "LAB", "HSV" use Pillow's conversion to RGB.
   A 16-bit PNG (PadChest) is mode "I;16": its actual min..max becomes 0..255, rounded, so
   a 12-bit image stored in 16 bits keeps its full contrast and nothing is clipped.
6. DICOM files (``.dcm``/``.dicom`` or the ``DICM`` preamble) are read with pydicom under
   ``crsbench.datasets.dicom.DICOM_POLICY`` (modality LUT, VOI LUT or window, MONOCHROME1
   inverted, square pixels) to [0, 1], then ``rint(255 * v)`` gives the grey uint8 array.
7. Resize so the shorter side equals the working resolution W (bicubic, antialiased), then
   centre-crop W x W. W is the run's, not an encoder's (:mod:`crsbench.features.resolution`):
   perturbations are applied at W, encoders resize from W in their own preprocessing.

Failures raise :class:`ImageDecodeError` carrying a stable ``error_class``.
"""

from __future__ import annotations

import errno
import os
import time
import warnings
from pathlib import Path

import numpy as np

from crsbench.datasets.bounds import ImageBounds
from crsbench.datasets.dicom import DICOM_POLICY, DicomError, is_dicom, read_dicom

DECODE_POLICY = (
    "decode-v2:exif=apply;draft=jpeg;16bit=minmax;alpha=drop;resize=short-bicubic-crop;"
    f"dicom={DICOM_POLICY}"
)

_GRAY_MODES = {"1", "L", "LA"}
_WIDE_MODES = {"I", "I;16", "I;16B", "I;16L", "I;16N", "F"}
_TRANSIENT_RETRIES = (0.05, 0.2, 0.5)


def _check_geometry(path: Path, width: int, height: int, bounds: ImageBounds) -> None:
    problem = bounds.problem(width, height)
    if problem is not None:
        raise ImageDecodeError("bad_geometry", f"{path} is {width} x {height} px: {problem}")


def _check_finite(path: Path, arr: np.ndarray) -> None:
    bad = int(np.count_nonzero(~np.isfinite(arr)))
    if bad:
        raise ImageDecodeError(
            "non_finite", f"{path}: {bad} of {arr.size} pixel values are NaN or infinite"
        )


class ImageDecodeError(Exception):
    """An image could not be decoded; ``error_class`` says why (stable, machine-readable).

    Classes: ``missing``, ``is_directory``, ``empty_file``, ``permission``, ``io_error``,
    ``not_an_image``, ``truncated``, ``decompression_bomb``, ``decode_error``,
    ``unsupported_mode``, ``unsupported_codec`` (a compressed DICOM with no decoder plugin),
    ``bad_geometry`` (outside :class:`ImageBounds`), ``non_finite`` (NaN or infinite pixels
    in a float image).
    """

    def __init__(self, error_class: str, message: str) -> None:
        super().__init__(f"{error_class}: {message}")
        self.error_class = error_class
        self.message = message


def _to_array(im, path: Path) -> np.ndarray:
    """Apply the explicit per-mode conversion of the module policy."""
    mode = im.mode
    if mode in _WIDE_MODES:
        arr = np.asarray(im, dtype=np.float64)
        _check_finite(path, arr)
        lo, hi = float(arr.min()), float(arr.max())
        if hi <= lo:
            return np.zeros(arr.shape, dtype=np.uint8)
        return np.rint((arr - lo) * (255.0 / (hi - lo))).astype(np.uint8)
    if mode in _GRAY_MODES:
        return np.asarray(im.convert("L"), dtype=np.uint8)
    if mode == "RGB":
        return np.asarray(im, dtype=np.uint8)
    if mode == "P":
        return np.asarray(im.convert("RGBA").convert("RGB"), dtype=np.uint8)
    if mode in {"RGBA", "RGBa", "RGBX", "CMYK", "YCbCr", "LAB", "HSV", "PA", "La"}:
        return np.asarray(im.convert("RGB"), dtype=np.uint8)
    try:
        return np.asarray(im.convert("RGB"), dtype=np.uint8)
    except (ValueError, OSError) as exc:  # pragma: no cover - exotic modes
        raise ImageDecodeError("unsupported_mode", f"mode {mode!r}: {exc}") from exc


def _resize_square(arr: np.ndarray, size: int) -> np.ndarray:
    """Shorter side to ``size`` (bicubic, antialiased), then centre crop ``size`` x ``size``."""
    from PIL import Image

    h, w = arr.shape[:2]
    if (h, w) == (size, size):
        return arr
    scale = size / min(h, w)
    nh, nw = max(size, round(h * scale)), max(size, round(w * scale))
    im = Image.fromarray(arr)
    im = im.resize((nw, nh), Image.Resampling.BICUBIC, reducing_gap=None)
    top, left = (nh - size) // 2, (nw - size) // 2
    im = im.crop((left, top, left + size, top + size))
    return np.asarray(im, dtype=np.uint8)


def _classify_os_error(exc: OSError, path: Path) -> ImageDecodeError:
    msg = str(exc)
    low = msg.lower()
    if "truncated" in low or "broken data stream" in low or "premature end" in low:
        return ImageDecodeError("truncated", msg)
    if isinstance(exc, FileNotFoundError):
        kind = "missing (dangling symlink)" if path.is_symlink() else "missing"
        return ImageDecodeError("missing", f"{kind}: {msg}")
    if isinstance(exc, IsADirectoryError):
        return ImageDecodeError("is_directory", msg)
    if isinstance(exc, PermissionError):
        return ImageDecodeError("permission", msg)
    if exc.errno in (errno.EIO, errno.EAGAIN, errno.ETIMEDOUT):
        return ImageDecodeError("io_error", msg)
    return ImageDecodeError("decode_error", msg)


_PNG_IEND = b"\x00\x00\x00\x00IEND\xaeB`\x82"


def _check_png_trailer(path: Path) -> None:
    """A PNG must contain its complete IEND chunk near the end (else it was cut short)."""
    with open(path, "rb") as f:
        f.seek(max(0, path.stat().st_size - 4096))
        tail = f.read()
    if _PNG_IEND not in tail:
        raise ImageDecodeError("truncated", f"{path}: PNG has no complete IEND chunk")


def _dicom_to_uint8(path: Path) -> np.ndarray:
    try:
        unit = read_dicom(path)
    except DicomError as exc:
        raise ImageDecodeError(exc.error_class, exc.message) from exc
    return np.rint(unit * 255.0).astype(np.uint8)


def _decode_once(path: Path, size: int, bounds: ImageBounds) -> np.ndarray:
    from PIL import Image, ImageFile, ImageOps, UnidentifiedImageError

    from crsbench.core.errors import DataError

    if ImageFile.LOAD_TRUNCATED_IMAGES:
        raise DataError(
            "PIL.ImageFile.LOAD_TRUNCATED_IMAGES must be False so truncated files are "
            "detected. Got True instead (some other library switched it on)."
        )
    if path.is_dir():
        raise ImageDecodeError("is_directory", f"{path} is a directory")
    try:
        if path.stat().st_size == 0:
            raise ImageDecodeError("empty_file", f"{path} has zero bytes")
        if is_dicom(path):
            grey = _dicom_to_uint8(path)
            _check_geometry(path, grey.shape[1], grey.shape[0], bounds)
            return _resize_square(grey, size)
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(path) as im:
                _check_geometry(path, *im.size, bounds)  # from the header: nothing decoded yet
                if im.format == "JPEG":
                    im.draft(im.mode, (size, size))
                im.load()
                if im.format == "PNG":
                    _check_png_trailer(path)
                arr = _to_array(ImageOps.exif_transpose(im), path)
    except ImageDecodeError:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise ImageDecodeError("decompression_bomb", str(exc)) from exc
    except UnidentifiedImageError as exc:
        raise ImageDecodeError("not_an_image", str(exc)) from exc
    except OSError as exc:
        raise _classify_os_error(exc, path) from exc
    except (ValueError, SyntaxError, EOFError) as exc:
        low = str(exc).lower()
        cls = "truncated" if "truncated" in low or isinstance(exc, EOFError) else "decode_error"
        raise ImageDecodeError(cls, f"{type(exc).__name__}: {exc}") from exc
    return _resize_square(arr, size)


def decode_image(
    path: str | os.PathLike[str], size: int, bounds: ImageBounds | None = None
) -> np.ndarray:
    """Decode ``path`` under :data:`DECODE_POLICY` to ``size`` x ``size``.

    Parameters
    ----------
    path : str or path-like
        Image file (any format Pillow reads).
    size : int
        Working resolution S.
    bounds : ImageBounds, optional
        The geometry accepted (the run's ``image_bounds``; default: the built-in bounds),
        checked from the header before decoding.

    Returns
    -------
    numpy.ndarray
        uint8, shape (S, S) for grayscale sources or (S, S, 3) for colour ones.

    Raises
    ------
    ImageDecodeError
        With ``error_class`` naming the failure. Permission and I/O errors are retried with
        backoff (0.05, 0.2, 0.5 s) before being raised as transient.
    """
    p = Path(path)
    for delay in (*_TRANSIENT_RETRIES, None):
        try:
            return _decode_once(p, int(size), bounds or ImageBounds())
        except ImageDecodeError as exc:
            if exc.error_class not in ("permission", "io_error") or delay is None:
                raise
            time.sleep(delay)
    raise AssertionError("unreachable")  # pragma: no cover


def to_rgb_chw(arr: np.ndarray) -> np.ndarray:
    """(S, S) or (S, S, 3) uint8 → (3, S, S) uint8 (grayscale replicated to 3 channels)."""
    if arr.ndim == 2:
        return np.repeat(arr[None, :, :], 3, axis=0)
    return np.ascontiguousarray(arr.transpose(2, 0, 1))
