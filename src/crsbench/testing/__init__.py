"""Test tooling: simulated results stores and planted-truth worlds.

Nothing here is statistics API; the library (report, scoring, stats) never imports this
package. :mod:`crsbench.testing.simulated_store` builds run rows of the store's own schema and
writes them through the store's own writer; :mod:`crsbench.testing.planned_store` writes exactly
a config's planned records with planted predictions at real test-set sizes (paper scale);
:mod:`crsbench.testing.planted` simulates
per-sample predictions with known population axes, for coverage checks of the intervals.
"""

from crsbench.testing.simulated_store import (
    ENCODER_PANEL,
    MISSING_CELLS,
    SIMULATED_CONFIG_HASH,
    simulate_runs,
    write_store,
)

__all__ = [
    "ENCODER_PANEL",
    "MISSING_CELLS",
    "SIMULATED_CONFIG_HASH",
    "simulate_runs",
    "write_store",
]
