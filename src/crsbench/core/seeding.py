"""Process- and machine-independent seeding derived from sha256.

Python's ``hash`` is salted per process and numpy's global RNG is shared state; neither is
used. Every random stream in crsbench comes from :func:`stable_rng` over a tuple of names.
"""

from __future__ import annotations

import hashlib

import numpy as np


def stable_seed(*parts: object) -> int:
    """64-bit seed from the sha256 of ``"|".join(map(str, parts))``.

    Parameters
    ----------
    *parts : object
        Values whose string forms identify the stream (dataset name, seed, purpose, ...).

    Returns
    -------
    int
        ``int.from_bytes(sha256(key).digest()[:8], "big")``.
    """
    key = "|".join(str(p) for p in parts)
    return int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "big")


def perturbation_seed(image_id: str, perturbation: str, severity: int) -> int:
    """Seed of one (image, perturbation, severity) stream, exactly as docs/protocol.md section 5."""
    return stable_seed(image_id, perturbation, severity)


def stable_rng(*parts: object) -> np.random.Generator:
    """A fresh :class:`numpy.random.Generator` (PCG64) seeded by :func:`stable_seed`."""
    return np.random.default_rng(stable_seed(*parts))
