"""The exported model: round trip, no pickle, checksums, the encoder weights hash."""

from __future__ import annotations

import json
import pickle
import struct
from pathlib import Path

import numpy as np
import pytest

from crsbench.calibration import fit_recalibrator
from crsbench.cohort.artefact import MODEL_JSON, TENSORS_FILE, ModelArtefact, load_model, save_model
from crsbench.cohort.predict import load_encoder
from crsbench.core.errors import DataError, EncoderError
from crsbench.protocol import RECALIBRATORS
from crsbench.store.outputs import MARKER_NAME


def _model(
    task: str, method: str | None, weights: str = "0" * 64
) -> tuple[ModelArtefact, np.ndarray]:
    rng = np.random.default_rng(1)
    d, k, n = 6, 3, 300
    X = rng.normal(size=(n, d))
    coef, intercept = rng.normal(size=(d, k)), rng.normal(size=k)
    model = ModelArtefact(
        encoder={
            "name": "pixel",
            "weights_sha256": weights,
            "input_size": 64,
            "working_size": 224,
            "precision": "fp32",
            "revision": "x",
        },
        task=task,
        labels=["a", "b", "c"],
        probe={"C": 0.1, "seed": 0},
        coef=coef,
        intercept=intercept,
        mean=X.mean(0),
        scale=X.std(0),
    )
    if method is not None:
        p = model.probe_proba(X)
        truth = ModelArtefact(**{**model.__dict__, "coef": coef / 3, "intercept": intercept / 3})
        q = truth.probe_proba(X)  # the probe is overconfident: every method has work to do
        if task == "multiclass":
            y = np.array([rng.choice(k, p=row) for row in q])
        else:
            y = (rng.random((n, k)) < q).astype(float)
        recal = fit_recalibrator(method, p, y, task, seed=0)
        model = ModelArtefact(**{**model.__dict__, "recalibrator": recal})
    return model, X


@pytest.mark.parametrize("task", ["multiclass", "multilabel"])
@pytest.mark.parametrize("method", [None, *RECALIBRATORS])
def test_round_trip_predicts_identically(tmp_path: Path, task: str, method: str | None) -> None:
    model, X = _model(task, method)
    save_model(model, tmp_path / "m")
    back = load_model(tmp_path / "m")
    assert np.array_equal(back.predict_proba(X), model.predict_proba(X))
    if method is not None:
        assert back.recalibrator.record() == model.recalibrator.record()
        assert model.recalibrator.choice in ("fitted", "mixed")  # a real map is carried


def test_files_hold_no_pickle_and_loading_never_unpickles(tmp_path: Path, monkeypatch) -> None:
    model, X = _model("multiclass", "isotonic")
    save_model(model, tmp_path / "m")
    names = sorted(p.name for p in (tmp_path / "m").iterdir())
    assert names == [MARKER_NAME, MODEL_JSON, TENSORS_FILE]  # the marker: crsbench wrote them
    claim = json.loads((tmp_path / "m" / MARKER_NAME).read_text())
    assert sorted(claim["files"]) == [MODEL_JSON, TENSORS_FILE]
    blob = (tmp_path / "m" / TENSORS_FILE).read_bytes()
    (n,) = struct.unpack("<Q", blob[:8])  # safetensors: u64 header length, JSON header, raw data
    header = json.loads(blob[8 : 8 + n])
    assert {v["dtype"] for k, v in header.items() if k != "__metadata__"} == {"F64"}
    end = max(v["data_offsets"][1] for k, v in header.items() if k != "__metadata__")
    assert len(blob) == 8 + n + end  # nothing but the declared tensors
    assert not blob.startswith(b"\x80") and b"PK\x03\x04" not in blob[: 8 + n]  # pickle / zip
    json.loads((tmp_path / "m" / MODEL_JSON).read_text())

    def refuse(*a, **k):
        raise AssertionError("unpickling during load")

    monkeypatch.setattr(pickle, "load", refuse)
    monkeypatch.setattr(pickle, "loads", refuse)
    assert np.array_equal(load_model(tmp_path / "m").predict_proba(X), model.predict_proba(X))


def test_a_changed_tensor_byte_is_refused(tmp_path: Path) -> None:
    model, _ = _model("multiclass", "temperature")
    save_model(model, tmp_path / "m")
    path = tmp_path / "m" / TENSORS_FILE
    data = bytearray(path.read_bytes())
    data[-3] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(DataError, match="sha256 .* does not match"):
        load_model(tmp_path / "m")


def test_an_edited_json_value_is_refused(tmp_path: Path) -> None:
    model, _ = _model("multiclass", "vector")
    save_model(model, tmp_path / "m")
    path = tmp_path / "m" / MODEL_JSON
    doc = json.loads(path.read_text())
    doc["labels"] = ["c", "b", "a"]  # a swap that would silently relabel every prediction
    path.write_text(json.dumps(doc))
    with pytest.raises(DataError, match="checksum mismatch"):
        load_model(tmp_path / "m")


def test_encoder_weights_of_another_hash_are_refused(tmp_path: Path) -> None:
    model, _ = _model("multiclass", None, weights="f" * 64)
    save_model(model, tmp_path / "m")
    with pytest.raises(EncoderError, match="f{64}"):
        load_encoder(load_model(tmp_path / "m"))
