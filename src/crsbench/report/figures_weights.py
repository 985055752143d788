"""Figure of the weight-sensitivity section: first-place shares under sampled CRS weights, and
the four-axis Pareto front as parallel coordinates of the utilities."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from crsbench.report.plotstyle import DASHES, MARKERS, OKABE_ITO, SAME, SERIES, Figure, pyplot, save

UTILITY_AXES: tuple[tuple[str, str], ...] = (
    ("u_auroc", "D: AUROC"),
    ("u_ece", "C: ECE"),
    ("u_retention", "L: retention"),
    ("u_robustness", "R: drop"),
)
#: Front members' colours: Okabe–Ito without the grey that marks dominated encoders.
FRONT_COLOURS = tuple(c for c in OKABE_ITO if c != SAME)
REGION_LABELS = {"simplex": "any weights (simplex)", "near_default": "defaults ± 0.1"}


def _shares(ax, sweep: pd.DataFrame) -> None:
    """Grouped horizontal bars: share of weightings under which each encoder ranks first."""
    order = (sweep.groupby("encoder")["share_first"].max()
             .sort_values(ascending=True).index.tolist())  # fmt: skip
    y = np.arange(len(order))
    height = 0.38
    for k, (region, label) in enumerate(REGION_LABELS.items()):
        part = sweep[sweep["region"] == region].set_index("encoder")["share_first"]
        vals = part.reindex(order).fillna(0.0).to_numpy(dtype=float)
        ax.barh(y + (k - 0.5) * height, vals, height, color=SERIES[k], label=label)
    ax.set_yticks(y)
    ax.set_yticklabels(order)
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of weightings ranked first")
    ax.legend(loc="lower right", fontsize=8)
    ax.set_title("First place under sampled CRS weights")


def _front(ax, board: pd.DataFrame, front: pd.DataFrame) -> None:
    """Parallel coordinates of mean utilities: front members coloured, the others grey."""
    cols = [c for c, _ in UTILITY_AXES]
    on = dict(zip(front["encoder"], front["on_front"], strict=True))
    x = np.arange(len(cols))
    colour = 0
    for _, row in board.iterrows():
        u = row[cols].to_numpy(dtype=float)
        if not np.isfinite(u).all() or row["encoder"] not in on:
            continue
        if on[row["encoder"]]:
            cycle = (colour // len(FRONT_COLOURS)) % len(DASHES)
            ax.plot(
                x,
                u,
                color=FRONT_COLOURS[colour % len(FRONT_COLOURS)],
                lw=2,
                ms=4,
                linestyle=DASHES[cycle],
                marker=MARKERS[cycle],
                label=row["encoder"],
            )
            colour += 1
        else:
            ax.plot(x, u, color=SAME, lw=1, alpha=0.6)
    ax.set_xticks(x)
    ax.set_xticklabels([label for _, label in UTILITY_AXES])
    ax.set_ylim(0, 1.02)
    ax.set_ylabel("mean utility (1 = best bound)")
    ax.set_title("Pareto front of the four axes (grey: dominated)")
    ax.legend(loc="lower left", fontsize=8, ncol=2)


def weights_figure(
    sweep: pd.DataFrame, board: pd.DataFrame, front: pd.DataFrame, fig_dir: Path
) -> Figure:
    """First-place shares (left) and the Pareto front as parallel coordinates (right)."""
    plt = pyplot()
    n = sweep["encoder"].nunique()
    fig, axes = plt.subplots(1, 2, figsize=(11, max(3.2, 0.28 * n + 1.4)))
    _shares(axes[0], sweep)
    _front(axes[1], board, front)
    fig.tight_layout()
    return save(fig, fig_dir, "weights_pareto",
                "First-place shares under sampled weights; Pareto front")  # fmt: skip
