"""Run identities of the orchestration, built in one place.

A run's identity is a :class:`~crsbench.store.records.RunIdentity` (the results store's type:
its columns are the store schema's ``IDENTITY_COLUMNS``). The planner, the cell evaluator and
the LoRA stage all build it with :meth:`CellIdentity.run`, so the identities ``crsbench
status`` counts are exactly the ones the evaluators write.
"""

from __future__ import annotations

from dataclasses import dataclass

from crsbench.protocol import CLEAN, FROZEN
from crsbench.store.records import RunIdentity

__all__ = ["CellIdentity", "RunIdentity"]


@dataclass(frozen=True)
class CellIdentity:
    """The columns every run of one cell shares: encoder, probe dataset and regime."""

    encoder: str
    dataset: str
    regime: str = FROZEN

    def run(
        self,
        seed: int,
        *,
        probe: str = "logistic",
        layer: float = 1.0,
        fraction: float = 1.0,
        condition: str = CLEAN,
        severity: int = 0,
        recalibrator: str = "none",
        eval_dataset: str | None = None,
    ) -> RunIdentity:
        """The identity of one run of this cell (validated; ``eval_dataset`` defaults to the
        cell's own dataset).

        The keywords are the identity columns themselves, so they are not bundled further.
        """
        return RunIdentity(
            encoder=self.encoder,
            dataset=self.dataset,
            eval_dataset=eval_dataset or self.dataset,
            seed=int(seed),
            regime=self.regime,
            probe=probe,
            layer=float(layer),
            fraction=float(fraction),
            condition=condition,
            severity=int(severity),
            recalibrator=recalibrator,
        )

    def shift(self, seed: int, probe: str, target: str, recalibrator: str = "none") -> RunIdentity:
        """The identity of one run evaluated on shift target ``target`` (full labels)."""
        return self.run(
            seed, probe=probe, condition="shift", recalibrator=recalibrator, eval_dataset=target
        )
