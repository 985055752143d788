"""The registered analyses of the paper's section 10 (:data:`PAPER_ANALYSES`): the cells and
the leaderboard, AUROC-vs-CRS agreement, the bootstrap, anchor insertion, calibration,
institutional shift, label efficiency, external validity, regimes, layers, control probes."""

from __future__ import annotations

import pandas as pd

from crsbench.protocol import BOOTSTRAP_REPLICATES
from crsbench.scoring.aggregate import encoder_means
from crsbench.scoring.planned import ranked_per_seed
from crsbench.stats.agreement import rank_agreement, rank_moves
from crsbench.stats.analysis_registry import Analysis, AnalysisInputs, records
from crsbench.stats.at_a_glance import axis_replicates_of
from crsbench.stats.calibration_effects import (
    discrimination_calibration_correlation,
    ece_increase_by_condition,
    recalibration_effect,
)
from crsbench.stats.control_probes import agreement_headline, control_probe_agreement
from crsbench.stats.insertion import insertion_experiment, insertion_summary
from crsbench.stats.label_summaries import (
    label_efficiency_cells,
    label_efficiency_correlations,
)
from crsbench.stats.layers import layer_depth
from crsbench.stats.regimes import regime_comparison
from crsbench.stats.shift import (
    default_groups,
    shift_auroc_by_encoder,
    shift_drop_matrix,
    shift_welch_by_target,
)
from crsbench.stats.uncertainty import crs_uncertainty, indistinguishable_sentences
from crsbench.stats.validity import leave_one_dataset_out, leave_one_target_out, shift_validity

#: Why the bootstrap is skipped with ``--replicates 0``.
NO_REPLICATES = "the bootstrap needs --replicates ≥ 1"


def cells_table(x: AnalysisInputs) -> tuple[pd.DataFrame, dict]:
    """The scored cells."""
    return x.cells, {"n_cells": len(x.cells), "n_encoders": len(x.board)}


def leaderboard(x: AnalysisInputs) -> tuple[pd.DataFrame, dict]:
    """The encoders' board, best CRS first."""
    return x.board, {"leader": x.board["encoder"].iloc[0]}


def agreement(x: AnalysisInputs) -> tuple[pd.DataFrame, dict]:
    """Rank agreement of AUROC and CRS (``rank_moves`` beside it)."""
    auc, crs = encoder_means(x.cells, "auroc"), encoder_means(x.cells, "CRS")
    stats = rank_agreement(auc, crs)
    x.side["rank_moves"] = rank_moves(auc, crs, names=("auroc", "crs"))
    return pd.DataFrame([stats]), stats


def bootstrap(x: AnalysisInputs) -> tuple[pd.DataFrame, dict]:
    """Intervals, tiers and rank probabilities (``bootstrap_pairwise`` beside it)."""
    from crsbench.core.errors import ConfigError

    if x.n_replicates < 1:
        raise ConfigError(NO_REPLICATES)
    unc = crs_uncertainty(ranked_per_seed(x.per_seed, x.cells), x.anchors, store=x.store,
                          interval=x.interval, n_replicates=x.n_replicates, seed=x.seed,
                          n_jobs=x.n_jobs)  # fmt: skip
    x.test_set_axes = axis_replicates_of(unc)
    ranks = unc.ranks()
    x.side["bootstrap_pairwise"] = unc.result.pairwise.assign(interval=unc.method)
    top = ranks.iloc[:3]
    return ranks, {
        "n_replicates": x.n_replicates,
        "quick_look": x.n_replicates < BOOTSTRAP_REPLICATES,
        "interval": unc.method,
        "note": unc.note,
        "n_test_patients": unc.n_patients,
        "p_rank1": dict(zip(top["encoder"], top["p_rank1"], strict=True)),
        "leading_tier": ranks.loc[ranks["tier"] == 1, "encoder"].tolist(),
        "indistinguishable": indistinguishable_sentences(unc),
    }


def insertion(x: AnalysisInputs) -> tuple[pd.DataFrame, dict]:
    """Anchor-insertion experiment (``insertion_trials`` beside it)."""
    trials = insertion_experiment(x.cells, x.anchors, seed=x.seed)
    x.side["insertion_trials"] = trials
    summ = insertion_summary(trials)
    return summ, {"by_rule": records(summ), "source": trials["source"].iloc[0]}


def shift(x: AnalysisInputs) -> tuple[pd.DataFrame, dict]:
    """One Welch test per (source, target) (``shift_auroc``, ``shift_drop`` beside it): the
    paper's CheXpert -> MIMIC-CXR row first, extra targets each on their own row."""
    per_enc = shift_auroc_by_encoder(x.runs)
    if per_enc.empty:
        return per_enc, {}
    x.side["shift_auroc"] = per_enc
    x.side["shift_drop"] = shift_drop_matrix(per_enc)
    encoders = sorted(per_enc["encoder"].unique())
    grp = x.groups if x.groups is not None else default_groups(encoders, x.runs)
    table = shift_welch_by_target(per_enc, grp)
    return table, {f"{r['source']}->{r['target']}": r for r in records(table)}


def control_probes(x: AnalysisInputs) -> tuple[pd.DataFrame, dict]:
    """Main vs control probe rankings (``control_probe_coverage`` beside it)."""
    table, coverage = control_probe_agreement(x.runs, x.anchors, plan=x.plan)
    if not coverage.empty:
        x.side["control_probe_coverage"] = coverage
    return table, agreement_headline(table, coverage)


PAPER_ANALYSES: tuple[Analysis, ...] = (
    Analysis("cells", ("cells", "board"), cells_table),
    Analysis("leaderboard", ("board",), leaderboard),
    Analysis("agreement_auroc_vs_crs", ("cells",), agreement),
    Analysis(
        "bootstrap",
        ("per_seed", "cells", "anchors", "store", "interval", "n_replicates", "seed", "n_jobs"),
        bootstrap,
    ),
    Analysis("insertion", ("cells", "anchors", "seed"), insertion),
    Analysis(
        "recalibration", ("runs", "seed"), lambda x: recalibration_effect(x.runs, seed=x.seed)
    ),
    Analysis(
        "calibration_under_perturbation", ("runs",), lambda x: ece_increase_by_condition(x.runs)
    ),
    Analysis(
        "discrimination_vs_calibration_loss",
        ("runs",),
        lambda x: discrimination_calibration_correlation(x.runs),
    ),
    Analysis("shift_welch", ("runs", "groups"), shift),
    Analysis(
        "label_efficiency_cells",
        ("runs", "cells"),
        lambda x: label_efficiency_cells(x.runs, x.cells),
    ),
    Analysis(
        "label_efficiency_correlations",
        ("cells",),
        lambda x: label_efficiency_correlations(x.cells),
    ),
    Analysis(
        "external_validity_shift",
        ("runs", "anchors", "plan"),
        lambda x: shift_validity(x.runs, x.anchors, plan=x.plan),
    ),
    Analysis("leave_one_dataset_out", ("cells",), lambda x: leave_one_dataset_out(x.cells)),
    Analysis(
        "leave_one_target_out",
        ("runs", "anchors", "plan"),
        lambda x: leave_one_target_out(x.runs, x.anchors, plan=x.plan),
    ),
    Analysis(
        "regime_comparison",
        ("runs", "anchors", "plan"),
        lambda x: regime_comparison(x.runs, x.anchors, plan=x.plan),
        "no 'lora' regime rows in the store (frozen vs adapted needs both)",
    ),
    Analysis(
        "layer_depth",
        ("runs",),
        lambda x: layer_depth(x.runs),
        "no layer-depth sweep rows in the store",
    ),
    Analysis(
        "control_probe_agreement",
        ("runs", "anchors", "plan"),
        control_probes,
        "no control-probe rows in the store (probe other than logistic)",
    ),
)
