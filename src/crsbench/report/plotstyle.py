"""Colour-blind-safe styling and figure saving shared by every report figure.

Colours are the Okabe–Ito palette (yellow swapped for grey, which reads on white); encoders
beyond eight reuse the colours with another line style and marker, so up to 24 encoders get a
distinct (colour, dash, marker) triple. Figures are written as PNG and SVG.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crsbench.core.diskio import write_atomic

OKABE_ITO: tuple[str, ...] = (
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#56B4E9", "#CC79A7", "#000000", "#999999",
)  # fmt: skip
DASHES: tuple[str, ...] = ("-", "--", ":")
MARKERS: tuple[str, ...] = ("o", "s", "^")
#: Better / worse / unchanged (slope chart), and the two series of paired bars.
UP, DOWN, SAME = "#0072B2", "#D55E00", "#999999"
SERIES = ("#56B4E9", "#D55E00")
HEATMAP_CMAP = "cividis"

_RC: dict[str, Any] = {
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#e3e3e3",
    "grid.linewidth": 0.6,
    "legend.frameon": False,
    "svg.fonttype": "path",
    "svg.hashsalt": "crsbench-report",
    "figure.dpi": 100,
}


@dataclass(frozen=True)
class Figure:
    """A saved figure: its stem, PNG and SVG paths, and a caption for the page."""

    name: str
    png: Path
    svg: Path
    caption: str

    def data_uri(self) -> str:
        """The SVG as a ``data:`` URI (so the page needs no file beside it)."""
        payload = base64.b64encode(self.svg.read_bytes()).decode("ascii")
        return f"data:image/svg+xml;base64,{payload}"


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the Agg backend with the report's rc settings."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    plt.rcParams.update(_RC)
    return plt


def encoder_styles(encoders: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Encoder → matplotlib line keywords (colour, linestyle, marker), stable by position."""
    out = {}
    for i, name in enumerate(encoders):
        k = i % len(OKABE_ITO)
        cycle = (i // len(OKABE_ITO)) % len(DASHES)
        out[name] = {"color": OKABE_ITO[k], "linestyle": DASHES[cycle], "marker": MARKERS[cycle]}
    return out


def save(fig: Any, fig_dir: Path, name: str, caption: str) -> Figure:
    """Write ``fig`` as ``name.png`` (110 dpi) and ``name.svg`` under ``fig_dir``; close it."""
    plt = pyplot()
    png, svg = fig_dir / f"{name}.png", fig_dir / f"{name}.svg"
    write_atomic(png, lambda tmp: fig.savefig(tmp, format="png", dpi=110, bbox_inches="tight",
                                              facecolor="white"))  # fmt: skip
    write_atomic(svg, lambda tmp: fig.savefig(tmp, format="svg", bbox_inches="tight",
                                              facecolor="white", metadata={"Date": None}))  # fmt: skip
    plt.close(fig)
    return Figure(name, png, svg, caption)


def grid_shape(n: int, max_cols: int) -> tuple[int, int]:
    """(rows, cols) of a small-multiples grid of ``n`` panels at most ``max_cols`` wide."""
    cols = max(1, min(n, max_cols))
    return (n + cols - 1) // cols, cols


def percent(fraction: float) -> str:
    """0.05 → ``'5%'``, 0.001 → ``'0.1%'``."""
    value = 100 * float(fraction)
    return f"{value:.0f}%" if value >= 1 and abs(value - round(value)) < 1e-9 else f"{value:g}%"


def annotate_heatmap(ax: object, vals: object) -> None:
    """Write each finite cell of the heatmap ``vals`` on ``ax`` (3 decimals), in black on
    the light half of the colour range and white on the dark half."""
    import numpy as np

    arr = np.asarray(vals, dtype=float)
    finite = arr[np.isfinite(arr)]
    mid = (finite.min() + finite.max()) / 2 if finite.size else 0.0
    for (r, c), v in np.ndenumerate(arr):
        if np.isfinite(v):
            ax.text(c, r, f"{v:.3f}", ha="center", va="center", fontsize=8.5,
                    color="black" if v > mid else "white")  # fmt: skip
