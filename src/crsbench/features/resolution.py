"""The working resolution: where perturbations are applied, once for every encoder of a run.

Every image is decoded to a ``W x W`` working image (:mod:`crsbench.features.decode`), each
condition is applied to that image, and the same degraded image then goes through each
encoder's own preprocessing (resize, crop or pad to its input size). ``W`` never depends on
the encoder being extracted, only on the run: it is pinned by the config key
``perturbations.working_size``, or else it is the largest input size of the run's encoders,
at least :data:`MIN_WORKING_SIZE`. See ``docs/perturbations.md`` (working resolution).
"""

from __future__ import annotations

from collections.abc import Iterable

from crsbench.core.errors import ConfigError

#: Version of the perturbation-resolution rule; part of every feature-cache key. v1: perturb
#: once at the run's working size W, before (never after) each encoder's preprocessing.
PERTURB_RESOLUTION_POLICY = "perturb-res-v1:once-at-working-size;then-encoder-preprocess"

#: Smallest default working size: perturbations are never applied to fewer pixels than the
#: common 224-px encoder input, so JPEG's 8x8 blocks and the noise grain keep the scale they
#: have in a 224-px pipeline even in runs of small (test, demo) encoders.
MIN_WORKING_SIZE = 224


def working_size(
    input_sizes: Iterable[int], pinned: int | None = None, *, key: str = "working_size"
) -> int:
    """The working resolution W of a run.

    Parameters
    ----------
    input_sizes : iterable of int
        Input size of every encoder of the run.
    pinned : int, optional
        A fixed W (the config's ``perturbations.working_size``); it must be at least the
        largest input size.
    key : str
        Name of the pinned setting, for messages.

    Returns
    -------
    int
        ``pinned``, or ``max(MIN_WORKING_SIZE, max(input_sizes))``.

    Raises
    ------
    ConfigError
        No input size, a non-positive one, or ``pinned`` below the largest.
    """
    sizes = [int(s) for s in input_sizes]
    if not sizes or min(sizes) < 1:
        raise ConfigError(f"encoder input sizes must be positive ints. Got {sizes} instead.")
    largest = max(sizes)
    if pinned is None:
        return max(largest, MIN_WORKING_SIZE)
    if isinstance(pinned, bool) or int(pinned) != pinned or int(pinned) < largest:
        raise ConfigError(
            f"{key} must be an int no smaller than the largest encoder input size of the run "
            f"({largest} px), so no encoder is given an upsampled degraded image. "
            f"Got {pinned!r} instead."
        )
    return int(pinned)
