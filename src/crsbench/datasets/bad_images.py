"""The one rule for images that cannot be read, shared by ``crsbench run`` and ``datasets check``.

An image is *bad* when it is missing, empty, truncated, not an image or otherwise cannot be
decoded. A dataset (after its ``max_images`` cap) may hold at most :data:`MAX_BAD_FRACTION`
of bad images:

* at or below that share, every bad image is **quarantined**: named (file and reason) on the
  console, counted per split in the run record (``details["n_quarantined"]``), kept in the
  store's ``quarantine`` table, and left out of every split; the cells run on the other rows.
  ``datasets check`` reports the same files as warnings and passes;
* above it, both ``run`` and ``datasets check`` fail, naming the first files.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from crsbench.core.errors import DataError

#: Largest share of a dataset's images that may be bad (quarantined) before a run fails.
MAX_BAD_FRACTION = 0.01
#: Bad files named in a refusal message.
SHOWN_IN_ERROR = 20


def bad_image_budget(n_images: int) -> int:
    """Most bad images a dataset of ``n_images`` may hold: ``floor(MAX_BAD_FRACTION · n)``."""
    return int(math.floor(round(MAX_BAD_FRACTION * int(n_images), 9)))


def too_many_bad(n_bad: int, n_images: int) -> bool:
    """True when ``n_bad`` bad images exceed the budget of a dataset of ``n_images``."""
    return int(n_bad) > bad_image_budget(n_images)


def refuse_bad_images(dataset: str, bad: Sequence[tuple[str, str]], n_images: int) -> None:
    """Raise :class:`DataError` when ``bad`` exceeds the budget of ``dataset``; else nothing.

    Parameters
    ----------
    dataset : str
        Dataset name (for the message).
    bad : sequence of (path, reason)
        Every distinct bad image found so far.
    n_images : int
        Images of the dataset (after its ``max_images`` cap).

    Raises
    ------
    DataError
        Naming the count, the budget and the first :data:`SHOWN_IN_ERROR` files.
    """
    if not too_many_bad(len(bad), n_images):
        return
    shown = "; ".join(f"{path} ({reason})" for path, reason in bad[:SHOWN_IN_ERROR])
    more = f"; ... and {len(bad) - SHOWN_IN_ERROR} more" if len(bad) > SHOWN_IN_ERROR else ""
    raise DataError(
        f"dataset {dataset}: unreadable images must be at most {MAX_BAD_FRACTION:.0%} of its "
        f"{n_images} images ({bad_image_budget(n_images)}) to be quarantined. Got "
        f"{len(bad)} instead: {shown}{more}. Fix or remove these files (see "
        "`crsbench datasets check`)."
    )
