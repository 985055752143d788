"""Small HTML building blocks: escaped tables, figures, sections and the page shell.

The page inlines its stylesheet, its script and every figure (SVG as a ``data:`` URI), so
``index.html`` alone opens offline; it references no font, script or image on any server.
"""

from __future__ import annotations

import base64
import hashlib
import html
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from crsbench.report.plotstyle import Figure
from crsbench.resources import resource_file


def esc(value: object) -> str:
    """HTML-escape ``str(value)``."""
    return html.escape(str(value), quote=True)


def fmt(value: object, digits: int = 3) -> str:
    """Floats to ``digits`` decimals, integral floats and ints as integers, NaN as an em dash."""
    if value is pd.NA or value is None:
        return "—"
    if isinstance(value, bool | np.bool_):
        return "yes" if value else "no"
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating):
        if not np.isfinite(value):
            return "—"
        return f"{value:.{digits}f}"
    return str(value)


def table_html(
    df: pd.DataFrame,
    *,
    headers: Mapping[str, str] | None = None,
    sortable: bool = False,
    table_id: str | None = None,
    digits: int = 3,
) -> str:
    """``df`` as an HTML table; numeric columns right-aligned and sortable by value."""
    headers = headers or {}
    numeric = {c: df[c].dtype.kind in "fiu" for c in df.columns}
    attrs = ' class="sortable"' if sortable else ""
    attrs += f' id="{esc(table_id)}"' if table_id else ""
    head = "".join(
        f'<th scope="col"{" class=num" if numeric[c] else ""}>{esc(headers.get(c, c))}</th>'
        for c in df.columns
    )
    rows = []
    for rec in df.itertuples(index=False):
        cells = []
        for c, v in zip(df.columns, rec, strict=True):
            if numeric[c]:
                raw = "" if fmt(v, digits) == "—" else f"{v}"
                cells.append(f'<td class="num" data-value="{esc(raw)}">{esc(fmt(v, digits))}</td>')
            else:
                cells.append(f"<td>{esc(fmt(v, digits))}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return (
        f'<div class="table-wrap"><table{attrs}><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def figure_html(fig: Figure, alt: str) -> str:
    """An inline ``<figure>`` (SVG data URI) with links to the PNG and SVG files."""
    return (
        f'<figure id="fig-{esc(fig.name)}"><img src="{fig.data_uri()}" alt="{esc(alt)}">'
        f"<figcaption>{esc(fig.caption)} "
        f'<span class="files">(<a href="figures/{esc(fig.png.name)}">PNG</a> · '
        f'<a href="figures/{esc(fig.svg.name)}">SVG</a>)</span></figcaption></figure>'
    )


def note_html(text: str) -> str:
    """A visible "not available" note (used instead of an empty figure)."""
    return f'<p class="note">{esc(text)}</p>'


def stats_html(items: Iterable[tuple[str, str]]) -> str:
    """A row of headline numbers: (label, formatted value) pairs."""
    body = "".join(
        f'<div class="stat"><div class="v">{esc(v)}</div><div class="k">{esc(k)}</div></div>'
        for k, v in items
    )
    return f'<div class="stat-row">{body}</div>'


def kv_html(pairs: Iterable[tuple[str, object]]) -> str:
    """A definition list of (key, value) pairs."""
    body = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in pairs)
    return f'<dl class="kv">{body}</dl>'


def files_html(paths: Sequence[str]) -> str:
    """Links to the CSV tables written beside the page."""
    links = " · ".join(f'<a href="{esc(p)}">{esc(p)}</a>' for p in paths)
    return f'<p class="files">Tables: {links}</p>' if paths else ""


@dataclass
class Section:
    """One report section: anchor id, heading, the one-or-two-sentence reading guide, body."""

    id: str
    title: str
    lede: str
    parts: list[str] = field(default_factory=list)

    def render(self) -> str:
        """The ``<section>`` element."""
        return (
            f'<section id="{esc(self.id)}"><h2>{esc(self.title)}</h2>'
            f'<p class="lede">{esc(self.lede)}</p>{"".join(self.parts)}</section>'
        )


def _asset(name: str) -> str:
    return resource_file("report", name).read_text(encoding="utf-8")


#: The page's scripts, in order, inlined as one ``<script>`` whose hash the CSP names.
SCRIPTS: tuple[str, ...] = ("sortable.js", "weights.js")


def page_script() -> tuple[str, str]:
    """The page's one inline script and its CSP source (``'sha256-…'``)."""
    text = "\n".join(_asset(name) for name in SCRIPTS)
    digest = base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")
    return text, f"'sha256-{digest}'"


def page_html(title: str, subtitle: str, sections: Sequence[Section], footer: str) -> str:
    """The whole self-contained page (inline CSS and JS; no external reference).

    The Content-Security-Policy is ``default-src 'none'`` with inline styles, ``data:`` and
    ``file:`` images, and only the page's own script (by its SHA-256 hash).
    """
    script, script_src = page_script()
    toc = "".join(f'<a href="#{esc(s.id)}">{esc(s.title)}</a>' for s in sections)
    body = "".join(s.render() for s in sections)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<link rel="icon" href="data:,">'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        f"img-src data: file:; style-src 'unsafe-inline'; script-src {script_src}\">"
        f"<title>{esc(title)}</title><style>{_asset('report.css')}</style></head><body>"
        f'<header class="top"><div class="wrap"><h1>{esc(title)}</h1>'
        f'<p class="subtitle">{esc(subtitle)}</p><nav class="toc">{toc}</nav></div></header>'
        f'<main class="wrap">{body}</main>'
        f'<footer class="wrap">{esc(footer)}</footer>'
        f"<script>{script}</script></body></html>\n"
    )
