"""Write synthetic radiographs as uncompressed DICOM files with pydicom (VinDr twin)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from crsbench.core.errors import ConfigError

DX_SOP_CLASS = "1.2.840.10008.5.1.4.1.1.1.1"  # Digital X-Ray Image Storage - For Presentation


def require_pydicom() -> None:
    """Raise :class:`ConfigError` when pydicom (the ``dicom`` extra) is not installed."""
    try:
        import pydicom  # noqa: F401
    except ImportError:
        raise ConfigError(
            "writing synthetic DICOM (VinDr-CXR) needs pydicom: pip install 'crsbench[dicom]'"
        ) from None


def save_dicom(
    path: Path, image: np.ndarray, uid_seed: str, look: dict, sex: str, age: int, view: str
) -> None:
    """Save a float image in [0, 1] (bright = dense) as a MONOCHROME1/2 DICOM file.

    ``look`` holds ``bits`` (BitsStored), ``monochrome1`` (store inverted), ``window``
    (add Window Center/Width spanning the data) and ``gain`` (fraction of the range used).
    """
    from pydicom.dataset import Dataset, FileMetaDataset
    from pydicom.uid import UID, ExplicitVRLittleEndian, generate_uid

    top = 2 ** look["bits"] - 1
    values = np.clip(image, 0.0, 1.0) * look["gain"]
    if look["monochrome1"]:
        values = look["gain"] - values
    stored = np.rint(values * top).astype(np.uint16)
    meta = FileMetaDataset()
    meta.MediaStorageSOPClassUID = UID(DX_SOP_CLASS)
    meta.MediaStorageSOPInstanceUID = generate_uid(entropy_srcs=[uid_seed])
    meta.TransferSyntaxUID = ExplicitVRLittleEndian
    ds = Dataset()
    ds.file_meta = meta
    ds.SOPClassUID, ds.SOPInstanceUID = DX_SOP_CLASS, meta.MediaStorageSOPInstanceUID
    ds.Modality, ds.PatientSex, ds.PatientAge, ds.ViewPosition = "DX", sex, f"{age:03d}Y", view
    ds.Rows, ds.Columns = stored.shape
    ds.SamplesPerPixel, ds.BitsAllocated, ds.BitsStored = 1, 16, look["bits"]
    ds.HighBit, ds.PixelRepresentation = look["bits"] - 1, 0
    ds.PhotometricInterpretation = "MONOCHROME1" if look["monochrome1"] else "MONOCHROME2"
    ds.PixelSpacing = [0.15, 0.15]
    if look["window"]:
        lo, hi = float(stored.min()), float(stored.max())
        ds.WindowCenter, ds.WindowWidth = round((lo + hi) / 2, 1), round(max(hi - lo, 2.0), 1)
    ds.PixelData = stored.tobytes()
    path.parent.mkdir(parents=True, exist_ok=True)
    ds.save_as(path, enforce_file_format=True)
