"""``build_report``: a results store → ``index.html`` + ``figures/`` + ``tables/``."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from crsbench.core.diskio import make_folder, write_text_atomic
from crsbench.protocol import BOOTSTRAP_REPLICATES
from crsbench.report import sections
from crsbench.report.beyond_data import compute_beyond
from crsbench.report.data import ReportData, compute_report_data
from crsbench.report.html import page_html
from crsbench.report.prediction_data import compute_predictions
from crsbench.report.sections_at_a_glance import at_a_glance_section
from crsbench.report.sections_control import control_probes
from crsbench.report.sections_overlap import overlap_section
from crsbench.report.sections_subgroups import subgroups_section
from crsbench.report.sections_summary import summary_section
from crsbench.report.sections_transfer import flips_section, operating_points_section
from crsbench.report.sections_uncertainty import uncertainty
from crsbench.report.sections_weights import weights_section
from crsbench.report.weights_panel import weights_panel_section
from crsbench.store.computed import ComputedTables
from crsbench.store.files import STORE_FILE
from crsbench.store.reader import skipped_cells


def _distinct(runs: pd.DataFrame, col: str) -> str:
    if col not in runs:
        return "not recorded"
    vals = sorted({str(v) for v in runs[col].dropna()})
    return ", ".join(vals) if vals else "not recorded"


def _quick_look(n_replicates: int) -> str:
    """`` (quick look; ...)`` after a replicate count below the protocol's, else empty."""
    if 0 < n_replicates < BOOTSTRAP_REPLICATES:
        return f" (quick look; the protocol's count is {BOOTSTRAP_REPLICATES:,})"
    return ""


def _provenance_facts(d: ReportData, store_dir: Path, now: dt.datetime) -> list[tuple[str, Any]]:
    from crsbench import __version__

    runs = d.runs
    created = pd.to_datetime(runs["created_at"], utc=True) if "created_at" in runs else None
    span = (
        f"{created.min():%Y-%m-%d %H:%M} – {created.max():%Y-%m-%d %H:%M} UTC"
        if created is not None and created.notna().any()
        else "not recorded"
    )
    store_anchor = _distinct(runs, "anchors_version")
    return [
        ("report generated", f"{now:%Y-%m-%d %H:%M} UTC"),
        ("store", str(store_dir / STORE_FILE)),
        ("runs in store", f"{len(runs):,}"),
        ("runs written", span),
        ("config hash", d.meta.get("config_hash") or _distinct(runs, "config_hash")),
        ("store schema version", d.meta.get("schema_version", _distinct(runs, "schema_version"))),
        ("package version (runs)", _distinct(runs, "package_version")),
        ("package version (report)", __version__),
        ("anchors version (scores)", d.anchors_version),
        ("anchors version (runs)", store_anchor),
        ("scoring rule", "fixed anchors"),
        (
            "bootstrap",
            f"{d.n_replicates:,} replicates{_quick_look(d.n_replicates)}, "
            f"{d.interval_method or 'not run'}, "
            f"seed {d.seed}" + (f" ({d.interval_note})" if d.interval_note else ""),
        ),
        (
            "encoders × datasets",
            f"{d.board['encoder'].nunique()} × "
            f"{d.cells['dataset'].nunique()} ({len(d.cells)} cells)",
        ),
        ("seeds", _distinct(runs, "seed")),
    ]


def build_report(
    store_dir: str | Path,
    out_dir: str | Path,
    analyses: ComputedTables,
    *,
    calibration_cell: tuple[str, str] | None = None,
) -> Path:
    """Write the self-contained HTML report of a results store from its stored analyses.

    Parameters
    ----------
    store_dir : path
        Directory holding ``results.duckdb``.
    out_dir : path
        Output directory (created): ``index.html``, ``figures/*.png|svg``, ``tables/*.csv``.
    analyses : ComputedTables
        The store's stored analyses (``crsbench.stats.compute.stored_analyses``, which
        computes and stores them first when absent or stale): their replicates (fewer than
        the protocol's are marked a quick look in the provenance table; ``0`` leaves the
        uncertainty section empty with a note), seed, anchors and interval are the page's.
    calibration_cell : (encoder, dataset), optional
        Cell of the calibration section; default the CRS leader's first dataset.

    Returns
    -------
    pathlib.Path
        Path of ``index.html``.

    Raises
    ------
    crsbench.core.errors.StoreError
        The store is missing, locked or has no complete cell to score.
    crsbench.core.errors.DataError
        ``calibration_cell`` is not a cell of the store.
    """
    store = Path(store_dir)
    out = Path(out_dir)
    make_folder(out)
    with np.errstate(all="ignore"):
        data = compute_report_data(store, analyses, calibration_cell=calibration_cell)
    data.cells_left_out += [f"{enc} × {ds} skipped by the last run (--skip-missing): {why}; "
                            "not imputed" for (enc, ds), why in skipped_cells(store).items()]  # fmt: skip
    writer = sections.Writer(out)
    now = dt.datetime.now(dt.timezone.utc)
    with np.errstate(all="ignore"):
        beyond = compute_beyond(data)
        preds = compute_predictions(data)
    body = [
        summary_section(data, beyond),
        at_a_glance_section(data, beyond, writer),
        sections.leaderboard(data, writer),
        weights_panel_section(data),
        sections.profiles(data, writer),
        sections.rank_shift(data, writer),
        uncertainty(data, writer),
        sections.calibration(data, writer),
        sections.label_efficiency(data, writer),
        sections.robustness(data, writer),
        sections.layer_depth(data, writer),
        control_probes(data, writer),
        overlap_section(data, beyond, writer),
        weights_section(data, beyond, writer),
        subgroups_section(preds, writer),
        operating_points_section(preds, writer),
        flips_section(preds, writer),
        sections.provenance(data, writer, _provenance_facts(data, store, now)),
    ]
    leader = data.board["encoder"].iloc[0]
    subtitle = (
        f"{data.board['encoder'].nunique()} encoders on {data.cells['dataset'].nunique()} "
        f"datasets · CRS leader: {leader} · anchors {data.anchors_version}"
    )
    footer = f"Generated by crsbench on {now:%Y-%m-%d %H:%M} UTC from {store / STORE_FILE}."
    index = out / "index.html"
    write_text_atomic(index, page_html("CRS-Bench report", subtitle, body, footer))
    return index
