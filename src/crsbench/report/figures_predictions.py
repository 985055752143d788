"""Figures of the prediction sections: the subgroup forest plot (one panel per axis, the
permutation test's verdict beside each compared attribute), operating-point transfer and
prediction flips."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from crsbench.report.plotstyle import DOWN, HEATMAP_CMAP, SAME, SERIES, UP, Figure, pyplot, save

#: The forest plot's axes: column of ``subgroup_cells``, label, and which way is better.
FOREST_AXES: tuple[tuple[str, str], ...] = (
    ("auroc", "AUROC (higher is better)"),
    ("ece_debiased", "ECE, debiased (lower is better)"),
    ("robustness_drop", "R: drop (lower is better)"),
)
WORST_METRIC = {"auroc": "auroc", "ece_debiased": "ece", "robustness_drop": "robustness_drop"}


#: At most this many subgroup rows in the forest plot (it stays legible and its drawing time
#: bounded); the attributes with the smallest permutation p-values come first.
MAX_FOREST_ROWS = 96
GROUP = ["encoder", "dataset", "attribute"]


def forest_rows(sub: pd.DataFrame, worst: pd.DataFrame | None = None,
                max_rows: int = MAX_FOREST_ROWS) -> pd.DataFrame:  # fmt: skip
    """The subgroups a forest plot shows: reported (``ok``) ones of attributes with at least
    two reported subgroups, ordered by dataset, attribute, encoder and subgroup; beyond
    ``max_rows`` only the attributes with the smallest permutation p-value (any axis)."""
    ok = sub[sub["status"] == "ok"]
    n = ok.groupby(GROUP)["subgroup"].transform("nunique")
    ok = ok[n >= 2]
    if len(ok) > max_rows:
        p = (worst.groupby(GROUP)["p_value"].min() if worst is not None and not worst.empty
             else pd.Series(dtype=float))  # fmt: skip
        sizes = ok.groupby(GROUP).size().to_frame("n").join(p).fillna({"p_value": 1.0})
        sizes = sizes.sort_values(["p_value", "n"])
        keep = sizes.index[sizes["n"].cumsum() <= max_rows]
        ok = ok.set_index(GROUP).loc[keep].reset_index()
    return ok.sort_values(["dataset", "attribute", "encoder", "subgroup"])


def _verdicts(worst: pd.DataFrame | None, metric: str) -> dict[tuple, str]:
    """(encoder, dataset, attribute) → "p = 0.012 *" (``*``: the gap is real, p < 0.05)."""
    if worst is None or worst.empty:
        return {}
    part = worst[(worst["metric"] == metric) & worst["p_value"].notna()]
    return {(e, d, a): f"p = {p:.3f}{' *' if real else ''}"
            for e, d, a, p, real in zip(part["encoder"], part["dataset"], part["attribute"],
                                        part["p_value"], part["real_difference"], strict=True)}  # fmt: skip


def _panel(ax, rows: pd.DataFrame, col: str, title: str, verdicts: dict[tuple, str]) -> None:
    y = np.arange(len(rows))[::-1]
    v = rows[col].to_numpy(dtype=float)
    lo, hi = rows[f"{col}_lo"].to_numpy(dtype=float), rows[f"{col}_hi"].to_numpy(dtype=float)
    has = np.isfinite(lo) & np.isfinite(hi)
    keys = list(zip(rows["encoder"], rows["dataset"], rows["attribute"], strict=True))
    real = np.array(["*" in verdicts.get(k, "") for k in keys])
    colour = np.where(real, DOWN, UP)
    ax.hlines(y[has], lo[has], hi[has], color=colour[has], lw=1.4)
    ax.scatter(v, y, s=14, color=colour, zorder=3)
    ax.set_title(title, fontsize=9)
    ax.grid(axis="x", color="#e5e5e5", lw=0.6)
    ax.tick_params(axis="y", length=0)
    for k, yy in zip(keys, y, strict=True):
        text = verdicts.pop(k, None)  # once per compared attribute, at its first row
        if text:
            ax.annotate(text, (1.0, yy), xycoords=("axes fraction", "data"), xytext=(3, 0),
                        textcoords="offset points", fontsize=6.5, va="center",
                        color=SAME if "*" not in text else "#000000")  # fmt: skip


def subgroup_forest_figure(sub: pd.DataFrame, worst: pd.DataFrame | None,
                           fig_dir: Path) -> Figure | None:  # fmt: skip
    """One forest panel per axis: each reported subgroup's value with its 95% interval,
    highlighted where the permutation test calls the attribute's gap real (``*``)."""
    rows = forest_rows(sub, worst)
    shown = rows.groupby(GROUP).ngroups
    total = forest_rows(sub, max_rows=10**9).groupby(GROUP).ngroups
    axes = [(c, t) for c, t in FOREST_AXES if c in rows and rows[c].notna().any()]
    if rows.empty or not axes:
        return None
    plt = pyplot()
    fig, panels = plt.subplots(1, len(axes), sharey=True,
                               figsize=(3.6 * len(axes) + 2.6, 0.17 * len(rows) + 1.3))  # fmt: skip
    panels = np.atleast_1d(panels)
    for ax, (col, title) in zip(panels, axes, strict=True):
        _panel(ax, rows, col, title, _verdicts(worst, WORST_METRIC[col]))
    labels = [f"{e} · {d} · {a}: {s}" for e, d, a, s in
              zip(rows["encoder"], rows["dataset"], rows["attribute"], rows["subgroup"],
                  strict=True)]  # fmt: skip
    panels[0].set_yticks(np.arange(len(rows))[::-1])
    panels[0].set_yticklabels(labels, fontsize=7)
    fig.tight_layout()
    part = "" if shown == total else (f"; the {shown} of {total} attributes with the smallest "
                                      "p (all in the table and CSV)")  # fmt: skip
    return save(fig, fig_dir, "subgroup_forest",
                "Subgroups per axis with their bootstrap ranges (2.5–97.5 %, not a 95 % CI); p: "
                "permutation test of the gap "
                f"(* and red: p < 0.05){part}")  # fmt: skip


def transfer_figure(lost: pd.DataFrame, fig_dir: Path) -> Figure:
    """Mean sensitivity on the source test set and on each shift target, per encoder."""
    plt = pyplot()
    g = lost.groupby(["encoder", "shift_target"], sort=True)
    mean = g[["sensitivity_test", "sensitivity_shift"]].mean().reset_index()
    targets = sorted(mean["shift_target"].unique())
    fig, panels = plt.subplots(1, len(targets), sharex=True, squeeze=False,
                               figsize=(4.2 * len(targets) + 1.2,
                                        0.32 * mean["encoder"].nunique() + 1.4))  # fmt: skip
    for ax, target in zip(panels[0], targets, strict=True):
        part = mean[mean["shift_target"] == target].sort_values("encoder", ascending=False)
        y = np.arange(len(part))
        ax.hlines(y, part["sensitivity_shift"], part["sensitivity_test"], color=SAME, lw=1)
        ax.scatter(part["sensitivity_test"], y, color=SERIES[0], label="source test", zorder=3)
        ax.scatter(part["sensitivity_shift"], y, color=SERIES[1], label=target, zorder=3)
        ax.set_yticks(y)
        ax.set_yticklabels(part["encoder"])
        ax.set_title(f"→ {target}", fontsize=9)
        ax.set_xlabel("mean sensitivity at the validation threshold")
        ax.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    return save(
        fig,
        fig_dir,
        "operating_point_transfer",
        "Sensitivity at the fixed threshold: source test vs each shift target",
    )


def flips_figure(flips: pd.DataFrame, fig_dir: Path) -> Figure:
    """Flip share per encoder and condition, mean over severities (a heat map)."""
    plt = pyplot()
    wide = flips.groupby(["encoder", "condition"])["flip_share"].mean().unstack("condition")
    fig, ax = plt.subplots(figsize=(1.1 * wide.shape[1] + 2.6, 0.34 * wide.shape[0] + 1.4))
    im = ax.imshow(wide.to_numpy(dtype=float), cmap=HEATMAP_CMAP, aspect="auto", vmin=0)
    ax.set_xticks(np.arange(wide.shape[1]))
    ax.set_xticklabels(wide.columns, rotation=30, ha="right", fontsize=8)
    ax.set_yticks(np.arange(wide.shape[0]))
    ax.set_yticklabels(wide.index, fontsize=8)
    fig.colorbar(im, ax=ax, label="share of decisions flipped")
    ax.set_title("Decisions a perturbation changes (mean over severities and datasets)")
    fig.tight_layout()
    return save(fig, fig_dir, "prediction_flips", "Prediction flips per encoder and condition")
