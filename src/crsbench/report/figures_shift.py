"""Figure of the multi-target shift: the shift drop per encoder and target, as a heat map."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from crsbench.report.plotstyle import HEATMAP_CMAP, Figure, annotate_heatmap, pyplot, save


def shift_drop_heatmap(drop: pd.DataFrame, fig_dir: Path) -> Figure:
    """Encoder × ``source→target`` heat map of the shift drop (source clean AUROC on the
    compared labels − target AUROC); blank where a pair was not evaluated.

    ``drop`` is :func:`crsbench.stats.shift.shift_drop_matrix`'s table.
    """
    plt = pyplot()
    vals = drop.to_numpy(dtype=float)
    fig, ax = plt.subplots(figsize=(1.6 * drop.shape[1] + 3.4, 0.42 * drop.shape[0] + 1.6))
    im = ax.imshow(np.ma.masked_invalid(vals), cmap=HEATMAP_CMAP, aspect="auto")
    ax.set_xticks(range(drop.shape[1]), [str(c) for c in drop.columns], rotation=20, ha="right")
    ax.set_yticks(range(drop.shape[0]), [str(i) for i in drop.index])
    ax.grid(False)
    annotate_heatmap(ax, vals)
    ax.set_title("Shift drop (source AUROC on the compared labels − target AUROC)")
    fig.colorbar(im, ax=ax, fraction=0.046, pad=0.03)
    fig.tight_layout()
    return save(fig, fig_dir, "shift_drop", "Shift drop per encoder and target.")
