"""DICOM and 16-bit PNG decoding: the documented intensity rules, checked on hand-made files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from crsbench.datasets.files import probe_image
from crsbench.features.decode import ImageDecodeError, decode_image

pydicom = pytest.importorskip("pydicom")
from pydicom.dataset import Dataset, FileMetaDataset  # noqa: E402
from pydicom.uid import ExplicitVRLittleEndian, JPEGLosslessSV1, generate_uid  # noqa: E402


def write_dicom(path: Path, stored: np.ndarray, bits: int = 12, **tags) -> Path:
    """An uncompressed grey DICOM file with ``stored`` pixel values and extra ``tags``."""
    meta = FileMetaDataset()
    meta.MediaStorageSOPClassUID = "1.2.840.10008.5.1.4.1.1.1.1"
    meta.MediaStorageSOPInstanceUID = generate_uid()
    meta.TransferSyntaxUID = tags.pop("syntax", ExplicitVRLittleEndian)
    ds = Dataset()
    ds.file_meta = meta
    ds.SOPClassUID, ds.SOPInstanceUID = (
        meta.MediaStorageSOPClassUID,
        meta.MediaStorageSOPInstanceUID,
    )
    ds.Rows, ds.Columns = stored.shape
    ds.SamplesPerPixel, ds.BitsAllocated, ds.BitsStored, ds.HighBit = 1, 16, bits, bits - 1
    ds.PixelRepresentation = 0
    ds.PhotometricInterpretation = tags.pop("photometric", "MONOCHROME2")
    encapsulated = tags.pop("encapsulated", None)
    for key, value in tags.items():
        setattr(ds, key, value)
    ds.PixelData = np.ascontiguousarray(stored, dtype=np.uint16).tobytes()
    if encapsulated is not None:
        ds.PixelData = encapsulated
        ds["PixelData"].VR = "OB"
    ds.save_as(path, enforce_file_format=True)
    return path


def ramp(lo: int, hi: int, side: int = 8) -> np.ndarray:
    return np.linspace(lo, hi, side * side).reshape(side, side).round().astype(np.uint16)


def test_dicom_without_voi_is_rescaled_min_to_max(tmp_path):
    stored = ramp(100, 1100)
    out = decode_image(write_dicom(tmp_path / "a.dicom", stored), 8)
    expected = np.rint((stored - 100.0) / 1000.0 * 255.0).astype(np.uint8)
    np.testing.assert_array_equal(out, expected)


def test_monochrome1_is_inverted(tmp_path):
    stored = ramp(0, 4095)
    mono2 = decode_image(write_dicom(tmp_path / "m2.dcm", stored), 8)
    mono1 = decode_image(write_dicom(tmp_path / "m1.dcm", stored, photometric="MONOCHROME1"), 8)
    np.testing.assert_array_equal(mono1.astype(int), 255 - mono2.astype(int))
    assert mono1[0, 0] == 255 and mono1[-1, -1] == 0


def test_window_is_applied_over_the_stored_range(tmp_path):
    stored = ramp(0, 4095)
    path = write_dicom(tmp_path / "w.dcm", stored, WindowCenter=1024, WindowWidth=1024)
    out = decode_image(path, 8).astype(int)
    # DICOM LINEAR window: below c - 0.5 - (w-1)/2 -> 0, above c - 0.5 + (w-1)/2 -> top
    x = stored.astype(float)
    ref = np.clip(((x - 1023.5) / 1023.0 + 0.5), 0, 1)
    np.testing.assert_allclose(out, np.rint(ref * 255), atol=1)
    assert (out[stored < 500] == 0).all() and (out[stored > 1600] == 255).all()


def test_bits_above_bits_stored_are_ignored(tmp_path):
    stored = ramp(0, 4095)
    noisy = stored | np.uint16(0xF000)  # garbage in the 4 unused high bits
    clean = decode_image(write_dicom(tmp_path / "c.dcm", stored), 8)
    dirty = decode_image(write_dicom(tmp_path / "d.dcm", noisy), 8)
    np.testing.assert_array_equal(clean, dirty)


def test_non_square_pixels_are_resampled(tmp_path):
    stored = np.zeros((8, 16), np.uint16)
    stored[:, 8:] = 1000  # right half bright
    path = write_dicom(tmp_path / "s.dcm", stored, PixelSpacing=[0.2, 0.1])
    from crsbench.datasets.dicom import read_dicom

    assert read_dicom(path).shape == (16, 16)  # rows 0.2 mm: twice as many rows


def test_compressed_without_plugin_is_refused_naming_file_and_fix(tmp_path):
    from pydicom.pixels.decoders.base import get_decoder

    if get_decoder(JPEGLosslessSV1).is_available:
        pytest.skip("a JPEG Lossless decoder plugin is installed here")
    from pydicom.encaps import encapsulate

    path = tmp_path / "jpegls.dicom"
    frame = encapsulate([b"\xff\xd8\xff\xc3fake-jpeg-lossless\xff\xd9"])
    write_dicom(path, ramp(0, 10), syntax=JPEGLosslessSV1, encapsulated=frame)
    with pytest.raises(ImageDecodeError) as info:
        decode_image(path, 8)
    assert info.value.error_class == "unsupported_codec"
    assert str(path) in info.value.message and "pip install pylibjpeg" in info.value.message
    assert probe_image(str(path))[0] == "unsupported_codec"


def test_a_dicom_that_is_not_one_is_named(tmp_path):
    path = tmp_path / "fake.dicom"
    path.write_bytes(b"this is a text file, not DICOM" * 10)
    with pytest.raises(ImageDecodeError) as info:
        decode_image(path, 8)
    assert info.value.error_class == "not_an_image" and str(path) in info.value.message
    kind, message = probe_image(str(path))
    assert kind == "not_an_image" and str(path) in message


def test_truncated_dicom_is_caught_by_the_cheap_probe(tmp_path):
    path = write_dicom(tmp_path / "t.dcm", ramp(0, 4095, side=32))
    assert probe_image(str(path)) is None
    path.write_bytes(path.read_bytes()[:-100])
    kind, _ = probe_image(str(path))
    assert kind == "truncated"


def test_16bit_png_uses_its_actual_range_not_8bit_truncation(tmp_path):
    stored = ramp(0, 4095)  # 12-bit values in a 16-bit PNG
    Image.fromarray(stored).save(tmp_path / "p.png")
    assert Image.open(tmp_path / "p.png").mode.startswith("I")
    out = decode_image(tmp_path / "p.png", 8)
    np.testing.assert_array_equal(out, np.rint(stored / 4095.0 * 255.0).astype(np.uint8))
    assert probe_image(str(tmp_path / "p.png"), decode=True) is None
