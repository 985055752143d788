"""A leaderboard written as CSV, Markdown and LaTeX (computed by
:func:`crsbench.stats.leaderboard.build_leaderboard`), and the sentence on estimates outside
their intervals printed under it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from crsbench.core.diskio import make_folder, write_csv_atomic, write_text_atomic
from crsbench.protocol import TEST_PATIENTS_X_SEEDS, outside_phrase


def estimate_outside_interval_sentence(board: pd.DataFrame) -> str:
    """One short phrase per encoder whose CRS estimate lies outside its own basic interval:
    its bias-corrected estimate and why (:func:`crsbench.protocol.outside_phrase`);
    ``""`` when every estimate is inside its interval.

    Parameters
    ----------
    board : pandas.DataFrame
        A leaderboard with ``encoder``, ``CRS``, ``crs_ci_low`` and ``crs_ci_high`` (and
        ``crs_corrected`` when known); with an ``interval`` column, only its test-patient rows
        (basic intervals) are considered.
    """
    need = {"encoder", "CRS", "crs_ci_low", "crs_ci_high"}
    if not need <= set(board.columns):
        return ""
    if "interval" in board:  # only the basic intervals are moved by a bias correction
        board = board[board["interval"] == TEST_PATIENTS_X_SEEDS]
    fixed = board.get("crs_corrected", pd.Series(np.nan, index=board.index))
    cols = (board["CRS"], board["crs_ci_low"], board["crs_ci_high"], fixed)
    said = [
        f"{enc}: {why}."
        for enc, *vals in zip(board["encoder"], *(c.astype(float) for c in cols), strict=True)
        if (why := outside_phrase(*vals))
    ]
    return " ".join(said)


def _fmt(value: object) -> str:
    if value is pd.NA:
        return ""
    if isinstance(value, float | np.floating):
        return "" if not np.isfinite(value) else f"{value:.3f}"
    return str(value)


def to_markdown(df: pd.DataFrame) -> str:
    """A GitHub-flavoured Markdown table (floats to 3 decimals)."""
    head = "| " + " | ".join(df.columns) + " |"
    sep = "|" + "|".join("---:" if df[c].dtype.kind in "fiu" else "---" for c in df) + "|"
    body = ["| " + " | ".join(_fmt(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join([head, sep, *body]) + "\n"


def _tex_escape(text: str) -> str:
    for a, b in (("\\", r"\textbackslash{}"), ("_", r"\_"), ("%", r"\%"), ("&", r"\&"),
                 ("#", r"\#"), ("$", r"\$")):  # fmt: skip
        text = text.replace(a, b)
    return text


def to_latex(df: pd.DataFrame, caption: str = "CRS-Bench leaderboard") -> str:
    """A ``booktabs`` LaTeX table (floats to 3 decimals, special characters escaped)."""
    align = "".join("r" if df[c].dtype.kind in "fiu" else "l" for c in df)
    lines = [r"\begin{table}[t]", r"\centering", f"\\caption{{{_tex_escape(caption)}}}",
             f"\\begin{{tabular}}{{{align}}}", r"\toprule",
             " & ".join(_tex_escape(str(c)) for c in df.columns) + r" \\", r"\midrule"]  # fmt: skip
    for row in df.itertuples(index=False):
        lines.append(" & ".join(_tex_escape(_fmt(v)) for v in row) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(lines) + "\n"


def write_tables(df: pd.DataFrame, out_dir: str | Path, stem: str = "leaderboard") -> list[Path]:
    """Write ``df`` as ``stem.csv``, ``stem.md`` and ``stem.tex`` under ``out_dir``."""
    out = Path(out_dir)
    make_folder(out)
    paths = [out / f"{stem}.csv", out / f"{stem}.md", out / f"{stem}.tex"]
    write_csv_atomic(df, paths[0], index=False)
    write_text_atomic(paths[1], to_markdown(df))
    write_text_atomic(paths[2], to_latex(df))
    return paths
