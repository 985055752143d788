"""DICOM radiographs: detection, a cheap probe, and decoding to display intensities in [0, 1].

Decoding rule (:data:`DICOM_POLICY`, part of the feature decoder's policy):

1. ``pydicom.dcmread`` (a file without the ``DICM`` preamble is not DICOM); one frame, one
   sample per pixel, ``MONOCHROME1`` or ``MONOCHROME2``, else refused.
2. Compressed transfer syntaxes are decoded by pydicom's plugins where one is installed
   (``pylibjpeg`` + ``pylibjpeg-libjpeg``/``-openjpeg``/``-rle``, or ``python-gdcm``); without
   one the file is refused with ``unsupported_codec``, naming the file, the syntax and what
   to install. pydicom masks the bits above ``BitsStored`` and sign-extends signed data.
3. The Modality LUT / rescale (``apply_modality_lut``), then the VOI LUT or window
   (``apply_voi_lut``: the first VOI LUT Sequence item, else the first Window Center/Width).
4. To [0, 1]: with a VOI step, its output range (LUT: 0 .. 2**bits-1 of the LUT descriptor;
   window: pydicom's range from ``BitsStored``, signedness and rescale) maps linearly and is
   clipped (values outside a window are what the window means). Without one, the image is
   rescaled per image from its min .. max (as for 16-bit PNG: no clipping, no truncation).
5. ``MONOCHROME1`` (bright = low values) is inverted: ``1 - v``.
6. Non-square pixels (``PixelSpacing`` or ``ImagerPixelSpacing`` with unequal row and column
   spacing) are resampled (bilinear) so one pixel covers the same distance on both axes.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

DICOM_POLICY = "dicom-v1:modality-lut;voi-first;voi-range|minmax;mono1-invert;square-pixels"
DICOM_SUFFIXES = (".dcm", ".dicom")
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".tif", ".tiff", ".bmp", ".gif", ".webp")
PREAMBLE = 128
MAGIC = b"DICM"
PLUGIN_HINT = (
    "pip install pylibjpeg pylibjpeg-libjpeg pylibjpeg-openjpeg pylibjpeg-rle "
    "(or pip install python-gdcm)"
)
SEQUENCE_END = b"\xfe\xff\xdd\xe0\x00\x00\x00\x00"


class DicomError(Exception):
    """A DICOM file that cannot be read; ``error_class`` says why (like ImageDecodeError)."""

    def __init__(self, error_class: str, message: str) -> None:
        super().__init__(f"{error_class}: {message}")
        self.error_class = error_class
        self.message = message


def is_dicom(path: str | os.PathLike[str], head: bytes | None = None) -> bool:
    """True when ``path`` has a DICOM suffix or its bytes 128..132 are ``DICM``.

    Without ``head``, a file with a common image suffix (``.jpg``, ``.png``, ...) is taken as
    not DICOM without reading it; other files are peeked at.
    """
    name = str(path).lower()
    if name.endswith(DICOM_SUFFIXES):
        return True
    if head is None and name.endswith(IMAGE_SUFFIXES):
        return False  # a named image format: no extra read per JPEG/PNG
    if head is None:
        try:
            with open(path, "rb") as handle:
                head = handle.read(PREAMBLE + 4)
        except OSError:
            return False
    return head[PREAMBLE : PREAMBLE + 4] == MAGIC


def _require_pydicom() -> Any:
    try:
        import pydicom
    except ImportError as exc:
        raise DicomError(
            "unsupported_codec",
            "reading DICOM needs pydicom, which is not installed: pip install 'crsbench[dicom]'",
        ) from exc
    return pydicom


def _read(path: Path | str, **kwargs: Any) -> Any:
    pydicom = _require_pydicom()
    try:
        return pydicom.dcmread(str(path), **kwargs)
    except pydicom.errors.InvalidDicomError as exc:
        raise DicomError("not_an_image", f"{path} is not a DICOM file ({exc})") from exc
    except (EOFError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise DicomError("truncated", f"{path}: DICOM header cannot be parsed ({exc})") from exc


def _check_layout(ds: Any, path: Path) -> None:
    if "PixelData" not in ds:
        raise DicomError("not_an_image", f"{path}: DICOM file has no pixel data")
    photometric = str(ds.get("PhotometricInterpretation", ""))
    frames = int(ds.get("NumberOfFrames", 1) or 1)
    if int(ds.get("SamplesPerPixel", 1)) != 1 or photometric not in ("MONOCHROME1", "MONOCHROME2"):
        raise DicomError(
            "unsupported_mode",
            f"{path}: must be one grey sample per pixel (MONOCHROME1/2). Got "
            f"PhotometricInterpretation {photometric!r} instead.",
        )
    if frames != 1:
        raise DicomError("unsupported_mode", f"{path}: must have 1 frame. Got {frames} instead.")


def _check_codec(ds: Any, path: Path) -> None:
    from pydicom.pixels.decoders.base import get_decoder

    syntax = ds.file_meta.get("TransferSyntaxUID") if hasattr(ds, "file_meta") else None
    if syntax is None or not syntax.is_compressed:
        return
    try:
        available = get_decoder(syntax).is_available
    except (NotImplementedError, ValueError):
        available = False
    if not available:
        raise DicomError(
            "unsupported_codec",
            f"{path}: pixel data are compressed as {syntax.name} ({syntax}) and no installed "
            f"pydicom plugin decodes it. Install one: {PLUGIN_HINT}.",
        )


def _voi_range(ds: Any) -> tuple[float, float] | None:
    """Output range of the VOI step pydicom applies, or None when there is none."""
    seq = ds.get("VOILUTSequence")
    if seq and seq[0].get("LUTDescriptor") is not None and seq[0].get("LUTData") is not None:
        return 0.0, float(2 ** int(seq[0].LUTDescriptor[2]) - 1)
    if ds.get("WindowCenter") is None or ds.get("WindowWidth") is None:
        return None
    bits = int(ds.BitsStored)
    if ds.get("ModalityLUTSequence"):
        lo, hi = 0.0, float(2 ** int(ds.ModalityLUTSequence[0].LUTDescriptor[2]) - 1)
    elif int(ds.get("PixelRepresentation", 0)) == 0:
        lo, hi = 0.0, float(2**bits - 1)
    else:
        lo, hi = float(-(2 ** (bits - 1))), float(2 ** (bits - 1) - 1)
    slope, intercept = ds.get("RescaleSlope"), ds.get("RescaleIntercept")
    if slope is not None and intercept is not None:
        lo, hi = lo * float(slope) + float(intercept), hi * float(slope) + float(intercept)
    return lo, hi


def _unit_range(arr: np.ndarray, voi: tuple[float, float] | None) -> np.ndarray:
    if voi is not None:
        lo, hi = voi
        return np.clip((arr - lo) / max(hi - lo, 1e-12), 0.0, 1.0)
    lo, hi = float(arr.min()), float(arr.max())
    if hi <= lo:
        return np.zeros(arr.shape, dtype=np.float64)
    return (arr - lo) / (hi - lo)


def _square_pixels(unit: np.ndarray, ds: Any) -> np.ndarray:
    spacing = ds.get("PixelSpacing") or ds.get("ImagerPixelSpacing")
    if not spacing or len(spacing) != 2:
        return unit
    row, col = float(spacing[0]), float(spacing[1])
    if row <= 0 or col <= 0 or abs(row - col) <= 1e-6 * max(row, col):
        return unit
    from PIL import Image

    h, w = unit.shape
    size = (max(1, round(w * col / min(row, col))), max(1, round(h * row / min(row, col))))
    image = Image.fromarray(unit.astype(np.float32), mode="F")
    return np.asarray(image.resize(size, Image.Resampling.BILINEAR), dtype=np.float64)


def read_dicom(path: str | os.PathLike[str]) -> np.ndarray:
    """Decode one DICOM radiograph under :data:`DICOM_POLICY`.

    Parameters
    ----------
    path : str or path-like
        The ``.dicom`` / ``.dcm`` file.

    Returns
    -------
    numpy.ndarray
        float64 in [0, 1], shape (H, W), bright = dense (MONOCHROME2 convention).

    Raises
    ------
    DicomError
        ``not_an_image``, ``truncated``, ``unsupported_mode``, ``unsupported_codec`` or
        ``decode_error``, the message naming the file.
    """
    from pydicom.pixels import apply_modality_lut, apply_voi_lut

    p = Path(path)
    ds = _read(p)
    _check_layout(ds, p)
    _check_codec(ds, p)
    try:
        raw = ds.pixel_array
    except (ValueError, RuntimeError, NotImplementedError, EOFError, OSError) as exc:
        low = str(exc).lower()
        kind = "truncated" if "length" in low or "truncat" in low else "decode_error"
        raise DicomError(kind, f"{p}: pixel data cannot be decoded ({exc})") from exc
    voi = _voi_range(ds)
    arr = apply_voi_lut(apply_modality_lut(raw, ds), ds, index=0)
    unit = _unit_range(np.asarray(arr, dtype=np.float64), voi)
    if str(ds.PhotometricInterpretation) == "MONOCHROME1":
        unit = 1.0 - unit
    return _square_pixels(unit, ds)


def probe_dicom(path: str, decode: bool = False) -> tuple[str, str] | None:
    """Check one DICOM file cheaply; ``(error_class, message)`` or ``None`` when fine.

    Without ``decode``: the header parses (pixel data deferred, not read), the layout is a
    supported grey image, a decoder exists for its transfer syntax, and the file is long
    enough for its pixel data (native) or ends with the encapsulated data's sequence
    delimiter (compressed). With ``decode``: a full :func:`read_dicom`.
    """
    p = Path(path)
    try:
        if decode:
            read_dicom(p)
            return None
        ds = _read(p, defer_size="64 KB")
        _check_layout(ds, p)
        _check_codec(ds, p)
        return _probe_length(ds, p)
    except DicomError as exc:
        return exc.error_class, exc.message


def _probe_length(ds: Any, path: Path) -> tuple[str, str] | None:
    element = ds.get_item(0x7FE00010)
    tell, length = getattr(element, "value_tell", None), getattr(element, "length", None)
    size = path.stat().st_size
    if tell is None or length is None:
        return None
    if length == 0xFFFFFFFF:
        with open(path, "rb") as handle:
            handle.seek(max(0, size - 64))
            tail = handle.read()
        if SEQUENCE_END not in tail:
            return "truncated", "encapsulated pixel data have no sequence delimiter (cut short?)"
        return None
    if size < tell + length:
        return "truncated", f"pixel data need {length} bytes from offset {tell}; file has {size}"
    return None
