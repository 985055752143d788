"""The CRS-Bench report: one self-contained HTML page of a results store.

Public API
----------
- :func:`build_report`: ``store_dir`` → ``out_dir/index.html`` with every figure (PNG + SVG
  in ``figures/``) and every table (CSV in ``tables/``).
- :func:`compute_report_data`, :class:`ReportData`: the tables behind the page.

The report reads results only; it never imports the pipeline (``crsbench.runs``,
``crsbench.features``, ``crsbench.encoders``), enforced by an import-linter contract.
"""

from __future__ import annotations

from crsbench.report.build import build_report
from crsbench.report.data import ReportData, compute_report_data

__all__ = ["ReportData", "build_report", "compute_report_data"]
