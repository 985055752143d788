"""Report section "Your weights": the reader's own CRS weights, recomputed in the page.

The page embeds, per scored encoder, the utilities and dominance share P of each of its cells
(as JSON, a data block the browser never executes) and ``weights.js`` recomputes the CRS,
the ranking, its change against AUROC and the Pareto front when a slider moves. With the
exact uniform reference (anchors v2) P on a subset of the axes is ``prod(u)`` on those axes,
so the axes can be switched off too. The reference in Python is
:func:`crsbench.stats.weight_sensitivity.ranking_with_weights`; the anchors' signs, weights
and whether the reference is exact come with the stored analyses
(``crsbench.stats.report_tables``).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from crsbench.protocol import AXES, UTILITY_COLUMNS
from crsbench.report.data import ReportData
from crsbench.report.html import Section, esc

SECTION_ID = "your-weights"
AXIS_LABELS = {"auroc": "D: AUROC", "ece": "C: ECE", "retention": "L: retention",
               "robustness_drop": "R: drop"}  # fmt: skip
COMPONENT_LABELS = {"P": "P: Pareto dominance", "I": "I: ideal proximity", "W": "W: worst axis"}


@dataclass(frozen=True)
class PanelEncoder:
    """One scored encoder: per cell its four utilities and P; its mean raw axes with
    higher-is-better signs (the Pareto view) and its AUROC rank."""

    name: str
    u: list[list[float]]
    p: list[float]
    x: list[float]
    rank_auroc: int | None


@dataclass(frozen=True)
class PanelData:
    """What ``weights.js`` reads: the axes, the protocol weights, whether the reference is
    exact (axes can be switched off) and the encoders."""

    axes: list[str]
    labels: list[str]
    defaults: dict[str, float]
    exact: bool
    encoders: list[PanelEncoder]


def panel_data(d: ReportData) -> PanelData:
    """The panel's inputs from the report's cells and board (scored encoders only) and the
    anchors' signs, weights and reference as stored with the analyses."""
    panel = d.facts["weights_panel"]
    sign = np.array(panel["sign"], dtype=float)
    board = d.board[d.board["CRS"].notna()]
    cells = d.cells.sort_values(["encoder", "dataset"])
    encoders = []
    for _, row in board.iterrows():
        part = cells[cells["encoder"] == row["encoder"]]
        rank = row["rank_auroc"]
        values = part[[*UTILITY_COLUMNS, "P"]].to_numpy(dtype=float)
        if part.empty or not np.isfinite(values).all():
            continue  # an encoder with an unscored cell has no CRS to reweigh
        encoders.append(PanelEncoder(
            name=str(row["encoder"]),
            u=part[list(UTILITY_COLUMNS)].to_numpy(dtype=float).tolist(),
            p=part["P"].to_numpy(dtype=float).tolist(),
            x=(row[list(AXES)].to_numpy(dtype=float) * sign).tolist(),
            rank_auroc=None if pd.isna(rank) else int(rank),
        ))  # fmt: skip
    return PanelData(
        axes=list(AXES),
        labels=[AXIS_LABELS[a] for a in AXES],
        defaults={str(k): float(v) for k, v in panel["defaults"].items()},
        exact=bool(panel["exact"]),
        encoders=encoders,
    )


def _json_block(data: PanelData) -> str:
    text = json.dumps(asdict(data), separators=(",", ":"), allow_nan=False)
    text = text.replace("<", "\\u003c")  # never closes the element
    return f'<script type="application/json" id="wp-data">{text}</script>'


def _sliders(defaults: dict[str, float]) -> str:
    rows = []
    for k, label in COMPONENT_LABELS.items():
        v = round(defaults[k] * 100)
        rows.append(
            f'<label class="wp-slider"><span>{esc(label)}</span>'
            f'<input type="range" id="wp-{k}" min="0" max="100" step="1" value="{v}">'
            f'<output id="wp-{k}-out" for="wp-{k}">{defaults[k]:.2f}</output></label>'
        )
    return "".join(rows)


def _axis_boxes(data: PanelData) -> str:
    why = "" if data.exact else " disabled"
    boxes = "".join(
        f'<label><input type="checkbox" id="wp-ax-{esc(a)}" checked{why}> {esc(lab)}</label>'
        for a, lab in zip(data.axes, data.labels, strict=True)
    )
    note = "" if data.exact else (' <span class="legend">(switching axes off needs the '
                                  "exact reference of anchors v2)</span>")  # fmt: skip
    return f'<fieldset class="wp-axes"><legend>axes in the CRS</legend>{boxes}{note}</fieldset>'


BOARD_HEAD = ("rank", "encoder", "CRS (your weights)", "CRS (protocol)", "vs protocol rank",
              "AUROC rank", "vs AUROC rank", "Pareto front")  # fmt: skip


def weights_panel_section(d: ReportData) -> Section:
    """The interactive section (sliders, axes, the recomputed board and Pareto front)."""
    s = Section(
        SECTION_ID, "Your weights",
        "The CRS weights are a design choice, not clinical utilities. Move the sliders (and "
        "switch axes off) to see the ranking, its change against AUROC and the Pareto front "
        "under your own weights; every static table of this page uses the protocol weights. "
        "The address of the page keeps your choice, so a link reproduces it.",
    )  # fmt: skip
    data = panel_data(d)
    if len(data.encoders) < 1:
        s.parts.append('<p class="note">No encoder has a CRS: nothing to reweigh.</p>')
        return s
    head = "".join(f'<th scope="col">{esc(h)}</th>' for h in BOARD_HEAD)
    s.parts.append(
        f'<div class="wp-panel"><div class="wp-controls">{_sliders(data.defaults)}'
        '<button type="button" id="wp-reset">protocol weights</button></div>'
        f"{_axis_boxes(data)}"
        '<p class="legend" id="wp-status">Needs JavaScript; the static tables use the protocol '
        "weights.</p></div>"
        f'<div class="table-wrap"><table id="wp-board"><thead><tr>{head}</tr></thead>'
        '<tbody></tbody></table></div><p class="legend" id="wp-front"></p>' + _json_block(data)
    )
    return s
