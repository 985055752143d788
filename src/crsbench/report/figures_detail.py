"""Figures of the detail sections: calibration, label efficiency, robustness, shift, depth."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from crsbench.report.plotstyle import (
    HEATMAP_CMAP,
    OKABE_ITO,
    SERIES,
    Figure,
    annotate_heatmap,
    encoder_styles,
    grid_shape,
    percent,
    pyplot,
    save,
)


def _recal_order(methods: list[str]) -> list[str]:
    return ["none", *sorted(m for m in methods if m != "none")] if "none" in methods else methods


def reliability_figure(rel: pd.DataFrame, cell: tuple[str, str], fig_dir: Path) -> Figure:
    """True reliability diagrams of one cell, one panel per recalibrator (seeds pooled,
    bins weighted by their counts); marker area follows the bin's share of samples."""
    plt = pyplot()
    methods = _recal_order(sorted(rel["recalibrator"].unique()))
    rows, cols = grid_shape(len(methods), 5)
    fig, axes = plt.subplots(rows, cols, figsize=(2.9 * cols, 3.0 * rows), squeeze=False,
                             sharex=True, sharey=True)  # fmt: skip
    for i, ax in enumerate(axes.flat):
        if i >= len(methods):
            ax.set_visible(False)
            continue
        part = rel[rel["recalibrator"] == methods[i]].copy()
        part["w_conf"] = part["conf"] * part["count"]
        part["w_acc"] = part["acc"] * part["count"]
        g = part.groupby("bin")[["w_conf", "w_acc", "count"]].sum()
        g = g[g["count"] > 0]
        conf, acc = g["w_conf"] / g["count"], g["w_acc"] / g["count"]
        ax.plot([0, 1], [0, 1], color="#999999", ls="--", lw=1)
        ax.plot(conf, acc, color=OKABE_ITO[0], lw=1.5)
        ax.scatter(conf, acc, s=10 + 200 * g["count"] / g["count"].sum(), color=OKABE_ITO[0],
                   zorder=3)  # fmt: skip
        ax.set_title(methods[i])
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_aspect("equal")
    for ax in axes[:, 0]:
        ax.set_ylabel("observed frequency")
    for ax in axes[-1, :]:
        ax.set_xlabel("predicted probability")
    fig.suptitle(f"Reliability diagrams, {cell[0]} on {cell[1]} (dashed = perfect)", fontsize=10)
    fig.tight_layout()
    return save(fig, fig_dir, "reliability", f"Reliability diagrams for {cell[0]}/{cell[1]}.")


def cell_ece_figure(cell_ece: pd.DataFrame, cell: tuple[str, str], fig_dir: Path) -> Figure:
    """ECE of one cell before (``none``) and after each recalibrator: a bar per method at the
    seed mean and a dot per seed."""
    plt = pyplot()
    methods = _recal_order(sorted(cell_ece["recalibrator"].unique()))
    means = cell_ece.groupby("recalibrator")["ece"].mean().reindex(methods)
    fig, ax = plt.subplots(figsize=(6.4, 0.45 * len(methods) + 1.3))
    y = np.arange(len(methods))
    colours = [SERIES[1] if m == "none" else SERIES[0] for m in methods]
    ax.barh(y, means.to_numpy(), color=colours, height=0.6)
    for yi, m in zip(y, methods, strict=True):
        seeds = cell_ece.loc[cell_ece["recalibrator"] == m, "ece"].to_numpy()
        jitter = np.linspace(-0.15, 0.15, len(seeds)) if len(seeds) > 1 else np.zeros(1)
        ax.scatter(seeds, yi + jitter, s=12, color="#222222", zorder=3)
        ax.text(means[m], yi + 0.38, f" {means[m]:.3f}", va="center", fontsize=8)
    ax.set_yticks(y, ["none (before)" if m == "none" else m for m in methods])
    ax.set_ylim(len(methods) - 0.4, -0.6)
    ax.set_xlabel("expected calibration error (15 bins; lower is better)")
    ax.set_title(f"ECE before and after recalibration, {cell[0]} on {cell[1]}")
    ax.grid(axis="y", visible=False)
    fig.tight_layout()
    return save(fig, fig_dir, "calibration_cell", f"ECE per recalibrator, {cell[0]}/{cell[1]}.")


def _curve_panels(
    curves: pd.DataFrame, x: str, fig_dir: Path, name: str, xlabel: str, title: str
) -> Figure:
    plt = pyplot()
    datasets = sorted(curves["dataset"].unique())
    encoders = sorted(curves["encoder"].unique())
    styles = encoder_styles(encoders)
    rows, cols = grid_shape(len(datasets), 2 if len(datasets) == 4 else 3)
    fig, axes = plt.subplots(rows, cols, figsize=(4.4 * cols + 1.6, 3.4 * rows), squeeze=False,
                             sharey=True)  # fmt: skip
    xs = sorted(curves[x].unique())
    for i, ax in enumerate(axes.flat):
        if i >= len(datasets):
            ax.set_visible(False)
            continue
        part = curves[curves["dataset"] == datasets[i]]
        for enc, grp in part.groupby("encoder", sort=True):
            ax.plot(grp[x], grp["auroc"], label=enc, lw=1.4, ms=3.5, **styles[enc])
        ax.set_title(datasets[i])
        if x == "fraction":
            ax.set_xscale("log")
            ax.set_xticks(xs, [percent(v) for v in xs])
            ax.minorticks_off()
        else:
            ax.set_xticks(xs, [f"{v:g}" for v in xs])
        ax.set_xlabel(xlabel)
    for ax in axes[:, 0]:
        ax.set_ylabel("AUROC (seed mean)")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    seen = dict(zip(labels, handles, strict=True))
    for ax in axes.flat[1:]:
        for h, lbl in zip(*ax.get_legend_handles_labels(), strict=True):
            seen.setdefault(lbl, h)
    fig.legend(list(seen.values()), list(seen), loc="center left", bbox_to_anchor=(1.0, 0.5),
               fontsize=8.5, title="encoder")  # fmt: skip
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return save(fig, fig_dir, name, title)


def label_efficiency_figure(curves: pd.DataFrame, fig_dir: Path) -> Figure:
    """AUROC against the labelled fraction (log scale), one panel per dataset."""
    return _curve_panels(curves, "fraction", fig_dir, "label_efficiency",
                         "labelled training fraction (log scale)",
                         "AUROC vs label fraction per domain")  # fmt: skip


def layer_depth_figure(curves: pd.DataFrame, fig_dir: Path) -> Figure:
    """AUROC against the relative depth of the probed block, one panel per dataset."""
    return _curve_panels(curves, "layer", fig_dir, "layer_depth",
                         "relative depth of the probed block (1 = last)",
                         "AUROC vs layer depth per domain")  # fmt: skip


def robustness_figure(rob: pd.DataFrame, fig_dir: Path) -> Figure:
    """Heatmaps (perturbation × severity) of the mean AUROC drop and the mean ECE increase."""
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10.5, 0.5 * rob["condition"].nunique() + 2.0))
    for ax, col, title in ((axes[0], "auroc_drop", "AUROC drop (clean − perturbed)"),
                           (axes[1], "ece_increase", "ECE increase (perturbed − clean)")):  # fmt: skip
        grid = rob.pivot_table(index="condition", columns="severity", values=col, aggfunc="mean")
        vals = grid.to_numpy(dtype=float)
        im = ax.imshow(vals, cmap=HEATMAP_CMAP, aspect="auto")
        ax.set_xticks(range(grid.shape[1]), [f"severity {s}" for s in grid.columns])
        ax.set_yticks(range(grid.shape[0]), list(grid.index))
        ax.grid(False)
        annotate_heatmap(ax, vals)
        ax.set_title(title)
        fig.colorbar(im, ax=ax, fraction=0.046, pad=0.03)
    fig.suptitle("Mean over encoders and datasets", fontsize=10)
    fig.tight_layout()
    return save(fig, fig_dir, "robustness", "AUROC drop and ECE increase per perturbation.")


def shift_figure(shift: pd.DataFrame, fig_dir: Path) -> Figure:
    """Source vs shift-target AUROC per encoder, medical, general and baseline encoders in
    separate blocks (one column per source → target pair); dotted lines are the group means."""
    plt = pyplot()
    pairs = sorted(set(zip(shift["dataset"], shift["eval_dataset"], strict=True)))
    n_enc = shift["encoder"].nunique()
    fig, axes = plt.subplots(1, len(pairs), figsize=(6.2 * len(pairs), 0.42 * n_enc + 1.8),
                             squeeze=False)  # fmt: skip
    group_rank = {"medical": 0, "general": 1}
    for ax, (src, tgt) in zip(axes[0], pairs, strict=True):
        part = shift[(shift["dataset"] == src) & (shift["eval_dataset"] == tgt)].copy()
        part["g"] = part["group"].map(group_rank).fillna(2)
        part = part.sort_values(["g", "shift_auroc"], ascending=[True, False])
        y = np.arange(len(part))
        ax.barh(y - 0.2, part["source_auroc"], height=0.38, color=SERIES[0],
                label=f"source ({src})")  # fmt: skip
        ax.barh(y + 0.2, part["shift_auroc"], height=0.38, color=SERIES[1],
                label=f"target ({tgt})")  # fmt: skip
        ax.set_yticks(y, [f"{e}  [{g}]" for e, g in zip(part["encoder"], part["group"],
                                                        strict=True)])  # fmt: skip
        ax.set_ylim(len(part) - 0.5, -0.7)
        for grp, sub in part.groupby("group"):
            ys = y[part["group"].to_numpy() == grp]
            mean = sub["shift_auroc"].mean()
            ax.plot([mean, mean], [ys.min() - 0.4, ys.max() + 0.4], color="black", ls=":", lw=1.2)
        bounds = np.flatnonzero(np.diff(part["g"].to_numpy()) != 0)
        for b in bounds:
            ax.axhline(b + 0.5, color="#555555", lw=0.8)
        lo = float(np.nanmin(part[["source_auroc", "shift_auroc"]].to_numpy()))
        ax.set_xlim(max(0.0, lo - 0.05), 1.0)
        ax.set_xlabel("AUROC (seed mean)")
        ax.set_title(f"{src} → {tgt}")
        ax.grid(axis="y", visible=False)
        ax.legend(loc="lower right", fontsize=8.5, frameon=True)
    fig.tight_layout()
    return save(fig, fig_dir, "shift", "Source vs shift-target AUROC, medical vs general.")


def recalibration_summary_figure(recal: pd.DataFrame, fig_dir: Path) -> Figure:
    """Across cells: mean ECE reduction per recalibrator with its bootstrap range over cells."""
    plt = pyplot()
    r = recal[np.isfinite(recal["mean_abs_reduction"])]
    r = r.sort_values("mean_abs_reduction", ascending=False).reset_index(drop=True)
    y = np.arange(len(r))
    fig, ax = plt.subplots(figsize=(6.4, 0.45 * len(r) + 1.3))
    err = np.vstack([r["mean_abs_reduction"] - r["abs_reduction_ci_low"],
                     r["abs_reduction_ci_high"] - r["mean_abs_reduction"]]).clip(min=0)  # fmt: skip
    ax.barh(y, r["mean_abs_reduction"], xerr=err, color=SERIES[0], height=0.6, capsize=3)
    for yi, row in zip(y, r.itertuples(index=False), strict=True):
        ax.text(row.abs_reduction_ci_high, yi, f"  {100 * row.relative_reduction:.0f}% lower",
                va="center", fontsize=8)  # fmt: skip
    ax.set_yticks(y, r["method"])
    ax.set_ylim(len(r) - 0.4, -0.6)
    xmax = float(np.nanmax(r["abs_reduction_ci_high"])) if len(r) else 1.0
    ax.set_xlim(min(0.0, float(np.nanmin(r["abs_reduction_ci_low"]))), xmax * 1.35 + 1e-6)
    ax.set_xlabel("mean ECE reduction over cells (before − after; bootstrap range over cells)")
    ax.set_title("ECE reduction by recalibrator, all cells")
    ax.grid(axis="y", visible=False)
    fig.tight_layout()
    return save(fig, fig_dir, "recalibration", "Mean ECE reduction per recalibrator.")
