"""Resample counts that are a pure function of (dataset, replicate): the pairing of the
test-set bootstrap.

Replicate ``b`` of dataset ``d`` draws the dataset's test patients (its groups: patient,
lesion or image) with replacement from a generator seeded by ``(seed, d, b)`` alone, so two
encoders' cells computed apart, in different processes or on different machines, resample the
same patients in the same replicate. The seeds are resampled by the same rule with the
dataset-independent stream ``"seeds"``: the test-set bootstrap is crossed with the seeds.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from crsbench.core.errors import ConfigError, DataError

#: Default replicates of the test-set bootstrap (10,000 by option).
DEFAULT_REPLICATES = 2_000
SEED_STREAM = "seeds"
_UINT8_MAX = int(np.iinfo(np.uint8).max)


def _stream_key(name: str) -> int:
    """A stable 64-bit integer of a stream name (Python's ``hash`` is salted per process)."""
    return int.from_bytes(hashlib.sha256(name.encode("utf-8")).digest()[:8], "little")


def replicate_ids(n_replicates: int, start: int = 0) -> np.ndarray:
    """The replicate numbers ``start … start + n_replicates - 1`` (checked)."""
    if isinstance(n_replicates, bool) or not isinstance(n_replicates, int) or n_replicates < 1:
        raise ConfigError(f"n_replicates must be a positive integer. Got {n_replicates!r}.")
    return np.arange(start, start + n_replicates)


def resample_counts_for(
    stream: str,
    n_items: int,
    replicates: Sequence[int] | np.ndarray,
    seed: int = 0,
    narrow: bool = False,
) -> np.ndarray:
    """``(B, n_items)`` multiplicities of ``n_items`` items drawn with replacement, one row
    per replicate, each row a pure function of ``(seed, stream, replicate)``.

    Parameters
    ----------
    stream : str
        The dataset name (its test patients) or :data:`SEED_STREAM`.
    n_items : int
        Patients of the dataset's test split (in sorted patient order) or seeds.
    replicates : sequence of int
        Replicate numbers (replicate 7 is the same draw whatever else is computed).
    seed : int
        The bootstrap's seed.
    narrow : bool
        Return uint8 when every multiplicity fits (an item drawn more than 255 times in a
        replicate: int32): a quarter of the memory, written once, for the replicate kernels
        (:class:`crsbench.stats.replicate_weights.ReplicateWeights` keeps uint8). Default:
        int32, whatever the draws.
    """
    if n_items < 1:
        raise DataError(f"cannot resample {n_items} items of stream {stream!r}.")
    key = _stream_key(stream)
    reps = np.asarray(replicates, dtype=np.int64)
    out = np.empty((len(reps), n_items), dtype=np.uint8 if narrow else np.int32)
    for row, b in enumerate(reps):
        rng = np.random.default_rng([int(seed), key, int(b)])
        drawn = np.bincount(rng.integers(0, n_items, n_items), minlength=n_items)
        if out.dtype == np.uint8 and n_items > _UINT8_MAX and drawn.max() > _UINT8_MAX:
            out = out.astype(np.int32)  # rows before this one fit; widen once, keep them
        out[row] = drawn
    return out


def patient_index(groups: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct patients of a test split and each row's position among them."""
    patients, inverse = np.unique(np.asarray(groups).astype(str), return_inverse=True)
    return patients, inverse.astype(np.int64)


def row_weights(
    dataset: str, groups: np.ndarray, replicates: Sequence[int] | np.ndarray, seed: int = 0
) -> np.ndarray:
    """``(B, n_rows)`` bootstrap weights of a test split's rows: each row weighs as many times
    as its patient was drawn in that replicate (all images of a patient move together)."""
    patients, inverse = patient_index(groups)
    counts = resample_counts_for(dataset, len(patients), replicates, seed)
    return counts[:, inverse]
