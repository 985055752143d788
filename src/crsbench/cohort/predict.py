"""``crsbench predict``: encoder → probe → recalibrator on new images, through the same code.

Images are decoded, resized to the exported working size and encoded by the feature engine
(:func:`crsbench.features.extract`, in the exported precision), exactly as the profile
extracted its clean test features; the probe and the recalibration are then the artefact's.
The encoder's weights on this machine must hash to the artefact's ``weights_sha256``.
"""

from __future__ import annotations

import hashlib
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from crsbench.cohort.artefact import ModelArtefact
from crsbench.core.errors import DataError, EncoderError
from crsbench.protocol import CLEAN
from crsbench.store.outputs import write_output_file

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".dcm", ".dicom")


@dataclass(frozen=True)
class Predictions:
    """Calibrated probabilities of the images that decoded, and the ones that did not."""

    image_ids: list[str]
    paths: list[str]
    proba: np.ndarray
    labels: list[str]
    failed: list[dict[str, str]]

    def frame(self) -> pd.DataFrame:
        """One row per image: ``image``, ``path``, ``p_<label>`` columns, ``error``."""
        out = pd.DataFrame({"image": self.image_ids, "path": self.paths})
        for j, name in enumerate(self.labels):
            out[f"p_{name}"] = self.proba[:, j]
        out["error"] = ""
        bad = pd.DataFrame({"image": [f["image_id"] for f in self.failed],
                            "path": [f["path"] for f in self.failed],
                            "error": [f["error_class"] for f in self.failed]})  # fmt: skip
        return pd.concat([out, bad], ignore_index=True) if len(bad) else out


def list_images(source: Path, path_column: str = "path") -> tuple[list[str], list[str]]:
    """(ids, paths) of a folder's images (recursive, sorted) or of a CSV's path column."""
    source = Path(source)
    if source.is_dir():
        files = sorted(p for p in source.rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES)
        if not files:
            raise DataError(f"{source}: holds no image ({', '.join(IMAGE_SUFFIXES)}).")
        return [str(p.relative_to(source)) for p in files], [str(p) for p in files]
    if not source.is_file():
        raise DataError(f"--images must be a folder or a CSV file. Got {str(source)!r}.")
    from crsbench.datasets.csvio import raise_bad_rows, read_csv

    frame = read_csv(source, required=[path_column])
    cells = frame[path_column].str.strip()
    raise_bad_rows(source, path_column, (cells == "").to_numpy(), cells, "non-empty")
    paths = [c if Path(c).is_absolute() else str(source.parent / c) for c in cells]
    return list(cells), paths


def load_encoder(
    model: ModelArtefact, device: str = "cpu", weights_path: Path | None = None
) -> Any:
    """Build the artefact's encoder and refuse weights whose sha256 differs from the export's."""
    from crsbench.encoders import build

    ref = model.encoder
    enc = build(ref["name"], device=device, weights_path=weights_path)
    enc = enc.set_input_size(int(ref["input_size"]))
    if enc.weights_hash != ref["weights_sha256"]:
        raise EncoderError(
            f"encoder {ref['name']!r}: the weights found on this machine"
            f"{f' ({weights_path})' if weights_path else ''} have sha256 {enc.weights_hash}; "
            f"the model was exported with {ref['weights_sha256']}. Its probe is only valid "
            "on those weights: put the same weights in place (or pass --weights FILE)."
        )
    return enc


def encode(model: ModelArtefact, enc: Any, ids: list[str], paths: list[str],
           batch_size: int = 64) -> tuple[np.ndarray, list[str], list[dict[str, str]]]:  # fmt: skip
    """Clean last-layer features at the exported working size and precision."""
    from crsbench.features import ExtractSettings, FeatureCache, extract

    revision = hashlib.sha256("\n".join(paths).encode()).hexdigest()
    settings = ExtractSettings(batch_size=batch_size, num_workers=0, progress=False,
                               working_size=int(model.encoder["working_size"]),
                               precision=str(model.encoder["precision"]),
                               max_bad_fraction=1.0)  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="crsbench-predict-") as tmp:
        res = extract(enc, ids, paths, cache=FeatureCache(Path(tmp)), dataset_revision=revision,
                      settings=settings)  # fmt: skip
        fa = res[(CLEAN, 0), 1.0]
        failed = [{k: str(q[k]) for k in ("image_id", "path", "error_class")}
                  for q in res.quarantined]  # fmt: skip
        return np.asarray(fa.features, dtype=np.float64), [str(i) for i in fa.ids], failed


def _nothing_decoded(source: Path, skipped: list[dict[str, Any]], n: int) -> DataError:
    """The error of a folder (or CSV) where no image decoded, naming it and the first few."""
    first = "; ".join(f"{q.get('path')} ({q.get('error_class')})" for q in skipped[:5])
    return DataError(
        f"{source}: none of its {n} image(s) could be decoded"
        + (f"; first: {first}" if first else "")
        + ". Give a folder (or CSV) of readable images (PNG, JPEG, TIFF, DICOM)."
    )


def check_feature_width(model: ModelArtefact, width: int) -> None:
    """Refuse features whose width is not the probe's (``n_features`` in model.json)."""
    expected = int(model.coef.shape[0])
    if width != expected:
        raise DataError(
            f"encoder {model.encoder.get('name')!r} gives {width} features per image; the "
            f"model's probe takes {expected} (n_features in model.json): the model was not "
            "exported for this encoder. Export it again with `crsbench export`."
        )


def predict_images(model: ModelArtefact, source: Path, *, device: str = "cpu",
                   weights_path: Path | None = None, batch_size: int = 64,
                   path_column: str = "path") -> Predictions:  # fmt: skip
    """Calibrated probabilities of every image of ``source`` (folder or CSV)."""
    enc = load_encoder(model, device, weights_path)
    from crsbench.features.engine import NoImageDecoded

    ids, paths = list_images(source, path_column)
    try:
        X, done, failed = encode(model, enc, ids, paths, batch_size)
    except NoImageDecoded as exc:
        raise _nothing_decoded(Path(source), exc.skipped, len(paths)) from None
    check_feature_width(model, int(X.shape[1]))
    where = {i: p for i, p in zip(ids, paths, strict=True)}
    return Predictions(done, [where[i] for i in done], model.predict_proba(X),
                       list(model.labels), failed)  # fmt: skip


def write_predictions(pred: Predictions, out: Path) -> Path:
    """Write the predictions CSV (full float precision) atomically, where crsbench may
    write (:func:`crsbench.store.outputs.write_output_file`: never a store or a foreign
    file)."""
    frame = pred.frame()
    return write_output_file(out, lambda tmp: frame.to_csv(tmp, index=False, float_format="%.17g"))
