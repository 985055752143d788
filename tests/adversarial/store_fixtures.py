"""Small results stores for the adversarial tests, written by the real writer."""

from __future__ import annotations

from pathlib import Path

from crsbench.store.records import RunRecord
from crsbench.store.writer import ResultsStore

HASH = "ab" * 32


def run_record(seed: int = 0, config_hash: str = HASH) -> RunRecord:
    """One complete pixel × ISIC run record of ``seed``."""
    return RunRecord(
        encoder="pixel", dataset="isic2019", eval_dataset="isic2019", seed=seed,
        metrics={"auroc": 0.8, "ece": 0.05, "brier": 0.1, "nll": 0.4}, config_hash=config_hash, package_version="0.1.0",
        encoder_revision="sha256:enc", dataset_revision="sha256:data", anchors_version="v1",
        wall_time_s=0.25, details={"chosen_C": 1.0},
    )  # fmt: skip


def one_record_store(folder: Path, config_hash: str = HASH) -> Path:
    """A store in ``folder`` holding one run record; returns ``folder``."""
    with ResultsStore(folder, config_hash) as store:
        store.append([run_record(0, config_hash)])
    return folder
