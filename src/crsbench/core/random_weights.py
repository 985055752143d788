"""The dry-run marker: run records of encoders built with seeded random weights.

A dry run (``crsbench run --dry-run``, or ``weights: random`` on an encoder entry) builds each
encoder's real architecture at its real size with seeded random weights. Its records carry
:data:`RANDOM_WEIGHTS_TAG` in ``encoder_revision``; ``score``, ``analyze`` and ``report``
refuse a store holding such records unless told it is a dry run, so random-weight numbers are
never read as a benchmark result.
"""

from __future__ import annotations

from collections.abc import Iterable

from crsbench.core.errors import StoreError

#: First part of the ``encoder_revision`` of every record of a random-weight encoder.
RANDOM_WEIGHTS_TAG = "random-weights"


def dry_run_encoders(encoders: Iterable[str], revisions: Iterable[str]) -> list[str]:
    """Sorted names of the encoders whose records carry :data:`RANDOM_WEIGHTS_TAG`.

    Parameters
    ----------
    encoders, revisions : iterable of str
        The ``encoder`` and ``encoder_revision`` columns of the runs table, row by row.
    """
    return sorted(
        {str(e) for e, r in zip(encoders, revisions, strict=True) if RANDOM_WEIGHTS_TAG in str(r)}
    )


def refuse_dry_run(encoders: Iterable[str], revisions: Iterable[str], source: str) -> None:
    """Raise :class:`StoreError` when any record of ``source`` comes from random weights.

    Raises
    ------
    StoreError
        Names the random-weight encoders and the flag that accepts them (``--dry-run-ok``).
    """
    found = dry_run_encoders(encoders, revisions)
    if found:
        raise StoreError(
            f"store {source} is a dry run: encoders {', '.join(found)} were built with seeded "
            f"random weights (encoder_revision '{RANDOM_WEIGHTS_TAG}|…'), so its numbers are not "
            "benchmark results. Pass --dry-run-ok to score or report it anyway."
        )
