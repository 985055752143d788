"""Random draws shared by the dataset writers: class counts, unique ids, progress callbacks."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

Progress = Callable[[int], None] | None


def class_counts(
    n: int, prevalence: Sequence[float], minimum_fraction: float = 0.02, class_floor: int = 0
) -> list[int]:
    """Integer counts summing to ``n`` that follow ``prevalence`` with a per-class floor.

    Without ``class_floor`` the floor is ``max(2, round(minimum_fraction * n))`` so that every
    class can appear in each split of a small dataset; the most prevalent class absorbs the
    rounding. With ``class_floor`` every class first gets ``min(class_floor, n // classes)``
    images and the rest are shared out by ``prevalence`` the same way, so no class falls below
    that floor (``SynthSize.class_floor``).
    """
    p = np.asarray(prevalence, dtype=np.float64)
    p = p / p.sum()
    base = min(int(class_floor), n // len(p))
    if base:  # the floor for all, the rest by prevalence (largest remainders)
        rest = n - base * len(p)
        counts = np.floor(p * rest).astype(int)
        order = np.argsort(-(p * rest - counts), kind="stable")
        counts[order[: rest - int(counts.sum())]] += 1
        return [int(c) + base for c in counts]
    floor = max(2, int(round(minimum_fraction * n)))
    counts = np.maximum(floor, np.rint(p * n)).astype(int)
    top = int(np.argmax(p))
    counts[top] += n - int(counts.sum())
    return [int(c) for c in counts]


def shuffled_labels(rng: np.random.Generator, counts: Sequence[int]) -> np.ndarray:
    """Class indices repeated by ``counts`` then shuffled."""
    labels = np.repeat(np.arange(len(counts)), counts)
    return rng.permutation(labels)


def unique_ints(rng: np.random.Generator, n: int, low: int, high: int) -> np.ndarray:
    """``n`` distinct sorted integers in ``[low, high)``."""
    return np.sort(rng.choice(np.arange(low, high), size=n, replace=False))


def unique_hex(rng: np.random.Generator, n: int, n_bytes: int) -> list[str]:
    """``n`` distinct lowercase hex strings of ``2 * n_bytes`` characters."""
    out: list[str] = []
    seen: set[str] = set()
    while len(out) < n:
        token = rng.bytes(n_bytes).hex()
        if token not in seen:
            seen.add(token)
            out.append(token)
    return out


def tick(progress: Progress) -> None:
    """Advance a progress callback by one item, if there is one."""
    if progress is not None:
        progress(1)
