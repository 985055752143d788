"""The CRS-Bench report: one self-contained HTML page of a results store.

Public API
----------
- :func:`build_report`: a store and its stored analyses → ``out_dir/index.html`` with every
  figure (PNG + SVG in ``figures/``) and every table (CSV in ``tables/``).
- :func:`compute_report_data`, :class:`ReportData`: the tables behind the page.

The report reads results only: the store's reader and the analyses stored in
``STORE/computed/`` (computed by ``crsbench.stats.compute`` in the command that asks for the
page). It imports only the store, core and the protocol's constants (an import-linter
contract), never ``crsbench.stats``, ``crsbench.scoring`` or the pipeline.
"""

from __future__ import annotations

from crsbench.report.build import build_report
from crsbench.report.data import ReportData, compute_report_data

__all__ = ["ReportData", "build_report", "compute_report_data"]
