"""Figures of the ranking sections: four-axis profiles, AUROC→CRS rank shift, uncertainty."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from crsbench.protocol import interval_label
from crsbench.report.plotstyle import (
    DOWN,
    OKABE_ITO,
    SAME,
    SERIES,
    UP,
    Figure,
    grid_shape,
    pyplot,
    save,
)

#: Utility columns in radar order, with their short axis labels.
PROFILE_AXES: tuple[tuple[str, str], ...] = (
    ("u_auroc", "D\ndiscrimination"),
    ("u_ece", "C\ncalibration"),
    ("u_retention", "L\nlabel eff."),
    ("u_robustness", "R\nrobustness"),
)


def profiles_figure(board: pd.DataFrame, fig_dir: Path) -> Figure:
    """One radar per encoder (CRS order) of its mean utilities on the fixed [0, 1] scale.

    The grey dashed outline in every panel is the median profile of all encoders, so each
    shape reads against the same reference.
    """
    plt = pyplot()
    cols = [c for c, _ in PROFILE_AXES]
    n = len(board)
    rows, ncols = grid_shape(n, 5)
    angles = np.linspace(0, 2 * np.pi, len(cols), endpoint=False)
    closed = np.append(angles, angles[0])
    median = board[cols].median().to_numpy(dtype=float)
    fig, axes = plt.subplots(
        rows, ncols, figsize=(2.6 * ncols, 3.15 * rows), subplot_kw={"projection": "polar"},
        squeeze=False,
    )  # fmt: skip
    for i, ax in enumerate(axes.flat):
        if i >= n:
            ax.set_visible(False)
            continue
        row = board.iloc[i]
        u = np.clip(row[cols].to_numpy(dtype=float), 0, 1)
        ax.plot(closed, np.append(median, median[0]), color=SAME, lw=1, ls="--")
        ax.fill(closed, np.append(u, u[0]), color=OKABE_ITO[0], alpha=0.25)
        ax.plot(closed, np.append(u, u[0]), color=OKABE_ITO[0], lw=1.8, marker="o", ms=3)
        ax.set_ylim(0, 1)
        ax.set_yticks([0.25, 0.5, 0.75, 1.0])
        ax.set_yticklabels([])
        ax.set_xticks(angles)
        ax.set_xticklabels([lbl.split("\n")[0] for _, lbl in PROFILE_AXES], fontsize=9)
        ax.set_title(f"#{int(row['rank_crs'])} {row['encoder']}\nCRS {row['CRS']:.3f}",
                     fontsize=9.5, pad=16)  # fmt: skip
    fig.suptitle(
        "Four-axis utility profiles (fixed anchors: 0 = worst bound, 1 = best; "
        "dashed = median encoder)",
        fontsize=10, y=1.0,
    )  # fmt: skip
    fig.tight_layout()
    return save(
        fig, fig_dir, "profiles",
        "Utility profiles: D discrimination, C calibration, L label efficiency, R robustness.",
    )  # fmt: skip


def rank_shift_figure(moves: pd.DataFrame, fig_dir: Path) -> Figure:
    """Slope chart from the AUROC rank (left) to the CRS rank (right), one line per encoder."""
    plt = pyplot()
    n = len(moves)
    fig, ax = plt.subplots(figsize=(6.4, 0.34 * n + 1.4))
    for row in moves.itertuples(index=False):
        a, c = int(row.rank_auroc), int(row.rank_crs)
        colour = UP if c < a else DOWN if c > a else SAME
        ax.plot([0, 1], [a, c], color=colour, lw=2 if a != c else 1.2, marker="o", ms=4)
        ax.text(-0.04, a, f"{row.encoder}  {a}", ha="right", va="center", fontsize=9)
        ax.text(1.04, c, f"{c}  {row.encoder}", ha="left", va="center", fontsize=9)
    ax.set_xlim(-0.75, 1.75)
    ax.set_ylim(n + 0.6, 0.4)
    ax.set_xticks([0, 1], ["AUROC rank", "CRS rank"], fontsize=10)
    ax.xaxis.tick_top()
    ax.set_yticks([])
    ax.grid(False)
    for side in ("left", "bottom", "top"):
        ax.spines[side].set_visible(False)
    ax.plot([], [], color=UP, lw=2, label="moves up under CRS")
    ax.plot([], [], color=DOWN, lw=2, label="moves down under CRS")
    ax.plot([], [], color=SAME, lw=1.2, label="same rank")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.01), ncol=3, fontsize=8.5)
    fig.tight_layout()
    return save(fig, fig_dir, "rank_shift", "Rank by AUROC (left) and by CRS (right).")


def uncertainty_figure(
    boot: pd.DataFrame, fig_dir: Path, n_replicates: int, method: str = "seed-only"
) -> Figure:
    """P(rank 1), P(top 3) bars and the CRS interval per encoder (CRS order), named as
    :func:`crsbench.protocol.interval_label` names ``method``'s."""
    plt = pyplot()
    b = boot.sort_values("CRS", ascending=False).reset_index(drop=True)
    n = len(b)
    y = np.arange(n)
    fig, axes = plt.subplots(
        1, 3, figsize=(11, 0.32 * n + 1.6), sharey=True, gridspec_kw={"width_ratios": [1, 1, 1.3]}
    )
    for ax, col, title, colour in (
        (axes[0], "p_rank1", "P(rank 1)", SERIES[1]),
        (axes[1], "p_top3", "P(top 3)", SERIES[0]),
    ):
        ax.barh(y, b[col], color=colour, height=0.7)
        for yi, v in zip(y, b[col], strict=True):
            ax.text(min(v, 1) + 0.02, yi, f"{v:.2f}", va="center", fontsize=8)
        ax.set_xlim(0, 1.18)
        ax.set_title(title)
        ax.grid(axis="y", visible=False)
    ax = axes[2]
    err = np.vstack([b["CRS"] - b["crs_ci_low"], b["crs_ci_high"] - b["CRS"]]).clip(min=0)
    ax.errorbar(b["CRS"], y, xerr=err, fmt="o", color=OKABE_ITO[0], ecolor="#555555",
                capsize=3, ms=5)  # fmt: skip
    for yi, t in zip(y, b["tier"], strict=True):
        ax.text(1.01, yi, f"tier {int(t)}", transform=ax.get_yaxis_transform(), va="center",
                fontsize=8)  # fmt: skip
    ax.set_title(f"CRS with its {interval_label(method)}")
    ax.grid(axis="y", visible=False)
    axes[0].set_yticks(y, b["encoder"])
    axes[0].set_ylim(n - 0.5, -0.5)
    fig.suptitle(f"Bootstrap over {method}, {n_replicates:,} replicates", fontsize=10)
    fig.tight_layout()
    return save(fig, fig_dir, "uncertainty", "Bootstrap rank probabilities and CRS intervals.")
