"""How :func:`crsbench.features.extract` extracts: conditions, depths, batching, storage."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from crsbench.core.errors import ConfigError
from crsbench.core.types import Condition
from crsbench.datasets.bad_images import MAX_BAD_FRACTION
from crsbench.datasets.bounds import ImageBounds
from crsbench.features.loader import PerturbFn
from crsbench.features.results import as_condition
from crsbench.protocol import CLEAN


@dataclass(frozen=True)
class ExtractSettings:
    """The settings of one extraction (every field but ``progress`` and ``num_workers``
    that changes the features enters the cache key).

    Attributes
    ----------
    conditions : sequence
        ``("clean", 0)`` and/or ``(perturbation, severity)`` pairs or Conditions.
    depths : sequence of float
        Relative layer depths in (0, 1].
    batch_size : int
        Images per forward pass.
    num_workers : int, optional
        Decoding processes (default: CPU count - 1, at most 8; 0 decodes in this process).
    working_size : int, optional
        Working resolution W of the run, at which images are decoded and perturbed: pass the
        run's value (:func:`crsbench.features.resolution.working_size` over every encoder of
        the run) so all encoders get the same degraded image. Default: the rule applied to
        this encoder alone, ``max(224, input size)``. Must be at least the encoder's input
        size.
    progress : bool
        Show a progress bar with images/s.
    shard_size : int
        Images per committed shard.
    max_bad_fraction : float
        The run fails (after recording) if more than this share of images cannot be decoded.
    dtype : {"float32", "float16"}
        Stored feature dtype.
    perturb_fn : callable, optional
        Replaces ``crsbench.perturb.apply``; versioned by its source in the key.
    perturbed_depths : sequence of float, optional
        Depths kept for the non-clean conditions (a subset of ``depths``; default: all of
        them). All taps still come from the one forward pass; this only limits what is stored.
    precision : {"auto", "fp32", "bf16"}
        Arithmetic of the forward pass: ``bf16`` is autocast to bfloat16 (weights and
        features stay float32). ``auto`` here, unresolved by a check, is fp32
        (:func:`crsbench.features.precision.resolve_precision`); a run resolves it first with
        :func:`crsbench.evaluation.precision_check.decide_precision`. It enters the cache key.
    fold_batchnorm : bool
        Fold eval-mode batch norms into the convolutions that feed them for the duration of
        the run (:func:`crsbench.encoders.fold.batchnorm_folded`: checked on a probe input,
        the encoder restored afterwards). Same features to float32 rounding, fewer passes
        over the activations. Enters the cache key when the encoder has pairs to fold.
    image_bounds : ImageBounds
        The image geometry accepted (the config's ``image_bounds``); an image outside it is
        quarantined as ``bad_geometry``. Enters the cache key when not the default.
    """

    conditions: Sequence[Condition | tuple[str, int] | str] = ((CLEAN, 0),)
    depths: Sequence[float] = (1.0,)
    batch_size: int = 64
    num_workers: int | None = None
    working_size: int | None = None
    progress: bool = True
    shard_size: int = 512
    max_bad_fraction: float = MAX_BAD_FRACTION
    dtype: str = "float32"
    perturb_fn: PerturbFn | None = None
    perturbed_depths: Sequence[float] | None = None
    precision: str = "auto"
    fold_batchnorm: bool = True
    image_bounds: ImageBounds = ImageBounds()

    def resolved(self) -> tuple[list[Condition], list[float], set[float]]:
        """The distinct conditions, depths and perturbed depths, checked.

        Raises
        ------
        ConfigError
            Empty conditions or depths, a depth outside (0, 1], perturbed depths that are not
            a subset of the depths, an unknown dtype or a batch or shard size below 1.
        """
        conds = list(dict.fromkeys(as_condition(c) for c in self.conditions))
        deps = [float(d) for d in dict.fromkeys(self.depths)]
        if not conds or not deps or any(not 0.0 < d <= 1.0 for d in deps):
            raise ConfigError(
                f"conditions must be non-empty and depths in (0, 1]. Got {conds}, {deps}"
            )
        p = self.perturbed_depths
        p_deps = set(deps) if p is None else {float(d) for d in p}
        if not p_deps or not p_deps <= set(deps):
            raise ConfigError(
                f"perturbed_depths must be a non-empty subset of depths {deps}. "
                f"Got {sorted(p_deps)} instead"
            )
        if self.dtype not in ("float32", "float16"):
            raise ConfigError(f"dtype must be 'float32' or 'float16'. Got {self.dtype!r} instead.")
        if self.batch_size < 1 or self.shard_size < 1:
            raise ConfigError(
                f"batch_size and shard_size must be >= 1. Got {self.batch_size}, {self.shard_size}"
            )
        return conds, deps, p_deps
