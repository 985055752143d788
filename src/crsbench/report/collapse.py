"""When an analysis cannot say anything on this store: the one line that says why (shown
instead of a table of dashes), and the collapsed box that holds a full table."""

from __future__ import annotations

import pandas as pd

from crsbench.report.html import esc

#: The Welch test needs at least this many encoders in each group (medical, general).
MIN_PER_GROUP = 2


def welch_reason(welch: pd.DataFrame | None) -> str:
    """Why the medical-vs-general Welch table says nothing ("" when some row has a test).

    Examples
    --------
    >>> welch_reason(pd.DataFrame({"n_medical": [0], "n_general": [5], "t": [float("nan")]}))
    'No medical-vs-general comparison: it needs at least 2 medical and 2 general encoders; this store has 0 medical and 5 general.'
    """
    if welch is None or welch.empty or not {"n_medical", "n_general"} <= set(welch):
        return ""
    enough = (welch["n_medical"] >= MIN_PER_GROUP) & (welch["n_general"] >= MIN_PER_GROUP)
    if enough.any():
        return ""
    return (f"No medical-vs-general comparison: it needs at least {MIN_PER_GROUP} medical and "
            f"{MIN_PER_GROUP} general encoders; this store has {int(welch['n_medical'].max())} "
            f"medical and {int(welch['n_general'].max())} general.")  # fmt: skip


def line_html(text: str) -> str:
    """The one line that replaces an analysis without content."""
    return f'<p class="empty-analysis">{esc(text)}</p>'


def details_html(summary: str, inner: str, *, open_: bool = False) -> str:
    """A collapsed ``<details>`` holding a full table (printed open)."""
    flag = " open" if open_ else ""
    return f'<details class="full"{flag}><summary>{esc(summary)}</summary>{inner}</details>'
