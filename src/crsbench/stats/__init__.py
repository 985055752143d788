"""Statistics of docs/protocol.md section 10; every function returns a tidy table (or a mapping).

Public API
----------
- :func:`rank_agreement`, :func:`rank_moves`: AUROC vs CRS (or any two) rankings.
- :func:`paired_seed_bootstrap`: P(rank 1), P(top 3), CIs of pairwise CRS differences, tiers.
- :func:`insertion_experiment`: fixed anchors vs cohort renormalisation.
- :func:`recalibration_effect`, :func:`ece_increase_by_condition`,
  :func:`discrimination_calibration_correlation`.
- :func:`shift_welch`, :func:`shift_welch_by_target`, :func:`label_efficiency_correlations`,
  :func:`layer_depth`, :func:`shift_validity`, :func:`leave_one_dataset_out`,
  :func:`leave_one_target_out`, :func:`regime_comparison`.
- :func:`control_probe_agreement`: encoder rankings under the MLP / kNN probes vs the logistic.
- :func:`contamination_flags`, :func:`shift_welch_without_flagged`,
  :func:`shift_validity_without_flagged`: pretraining-overlap flags and the shift analyses
  without the flagged results.
- :func:`weight_sensitivity`, :func:`weight_sweep`, :func:`pareto_front`: how the ranking
  depends on the CRS weights; the Pareto front of the four axes.
- :func:`at_a_glance_table`, :func:`seed_axis_replicates`: the per-dataset leader on each question.
- :func:`run_analyses`: all of them, as ``crsbench analyze`` runs them.
"""

from __future__ import annotations

from crsbench.stats.agreement import rank_agreement, rank_moves
from crsbench.stats.analyze import run_analyses
from crsbench.stats.at_a_glance import at_a_glance_table, seed_axis_replicates
from crsbench.stats.bootstrap import BootstrapResult, paired_seed_bootstrap
from crsbench.stats.calibration_effects import (
    discrimination_calibration_correlation,
    ece_increase_by_condition,
    recalibration_effect,
)
from crsbench.stats.contamination import (
    contamination_flags,
    shift_validity_without_flagged,
    shift_welch_without_flagged,
)
from crsbench.stats.control_probes import control_probe_agreement
from crsbench.stats.insertion import insertion_experiment, insertion_summary
from crsbench.stats.label_summaries import label_efficiency_cells, label_efficiency_correlations
from crsbench.stats.layers import layer_depth
from crsbench.stats.regimes import regime_comparison
from crsbench.stats.shift import (
    default_groups,
    shift_auroc_by_encoder,
    shift_welch,
    shift_welch_by_target,
)
from crsbench.stats.validity import leave_one_dataset_out, leave_one_target_out, shift_validity
from crsbench.stats.weight_sensitivity import pareto_front, weight_sensitivity, weight_sweep

__all__ = [
    "BootstrapResult",
    "contamination_flags",
    "control_probe_agreement",
    "default_groups",
    "discrimination_calibration_correlation",
    "ece_increase_by_condition",
    "insertion_experiment",
    "insertion_summary",
    "label_efficiency_cells",
    "label_efficiency_correlations",
    "layer_depth",
    "leave_one_dataset_out",
    "leave_one_target_out",
    "paired_seed_bootstrap",
    "pareto_front",
    "rank_agreement",
    "rank_moves",
    "recalibration_effect",
    "regime_comparison",
    "run_analyses",
    "seed_axis_replicates",
    "shift_auroc_by_encoder",
    "shift_validity",
    "shift_validity_without_flagged",
    "shift_welch",
    "shift_welch_by_target",
    "shift_welch_without_flagged",
    "at_a_glance_table",
    "weight_sensitivity",
    "weight_sweep",
]
