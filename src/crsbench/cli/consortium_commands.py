"""``crsbench export-summary`` and ``combine``: several sites, no images shared
(docs/consortium.md)."""

from __future__ import annotations

from pathlib import Path

import typer

from crsbench.cli.app import app, console, fail
from crsbench.cli.output import EXIT_CODES_HELP, print_json, print_table
from crsbench.core.errors import CrsbenchError
from crsbench.store.outputs import claim_output_file, claimed_folder

#: Columns of the table ``combine`` prints (the pooled CRS per ranked encoder).
COMBINE_COLUMNS = {
    "rank": "#", "encoder": "encoder", "k": "sites", "mean": "pooled CRS", "ci_low": "95% low",
    "ci_high": "95% high", "pi_low": "new site low", "pi_high": "new site high",
    "tau2": "tau²", "i2": "I²", "p_rank1": "P(rank 1)", "loso_max_rank_change": "LOSO Δrank",
}  # fmt: skip


@app.command("export-summary", epilog=EXIT_CODES_HELP)
def export_summary(
    store: Path = typer.Option(..., "--store", help="The cohort profile's output directory."),
    site: str = typer.Option(..., "--site", help="The site's name as the consortium knows it."),
    out: Path = typer.Option(..., "--out", help="Summary JSON file to write (e.g. site_a.json)."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON too."),
) -> None:  # fmt: skip
    """Write the site summary of a cohort profile: no image, patient, path or prediction in it.

    Per encoder the four axes and the CRS with their bootstrap variance, the weights' sha256,
    the test-split sizes (small counts suppressed) and the versions. Read it before you send it.
    """
    from crsbench.consortium.export import build_summary
    from crsbench.consortium.summary import summary_to_dict, write_summary

    try:
        claim_output_file(out)  # refused before any work: never a store or a foreign file
        summary = build_summary(store, site)
        path = write_summary(summary, out)
    except CrsbenchError as exc:
        fail(exc)
        return
    if as_json:
        print_json(summary_to_dict(summary))
        return
    hidden = f"; suppressed: {', '.join(summary.suppressed)}" if summary.suppressed else ""
    typer.echo(f"wrote {path} ({len(summary.encoders)} encoders{hidden})")


def _rows(result) -> list[dict]:
    from crsbench.consortium.tables import pooled_table, stability_table

    pooled = pooled_table(result)
    crs = pooled[pooled["quantity"] == "CRS"].set_index("encoder")
    rows = []
    for s in stability_table(result).to_dict(orient="records"):
        rows.append({**crs.loc[s["encoder"]].to_dict(), **s, "encoder": s["encoder"]})
    return rows


@app.command("combine", epilog=EXIT_CODES_HELP)
def combine_command(
    summaries: list[Path] = typer.Argument(..., help="Site summaries (export-summary's JSON)."),
    out: Path = typer.Option(..., "--out", help="Folder of the page and tables (new, empty or crsbench's)."),
    method: str | None = typer.Option(None, "--method", help="Between-site variance: reml or dl (default: the settings', reml)."),
    as_json: bool = typer.Option(False, "--json", help="Print the consortium's tables as JSON."),
) -> None:  # fmt: skip
    """Pool site summaries: random-effects axes and CRS, a new site's prediction interval,
    the ranking's stability over sites; writes consortium.html and CSV / JSON tables."""
    from crsbench.consortium.combine import combine
    from crsbench.consortium.meta import METHODS
    from crsbench.consortium.page import write_page
    from crsbench.consortium.summary import read_summary
    from crsbench.consortium.tables import consortium_document, write_tables

    try:
        if method is not None and method not in METHODS:
            raise CrsbenchError(f"--method must be one of {list(METHODS)}. Got {method!r}.")
        result = combine([read_summary(p) for p in summaries], method=method)
        with claimed_folder(out) as folder:
            write_tables(result, folder)
            page = write_page(result, folder)
    except CrsbenchError as exc:
        fail(exc)
        return
    if as_json:
        print_json(consortium_document(result))
        return
    right = [k for k in COMBINE_COLUMNS if k != "encoder"]
    print_table(console, _rows(result), COMBINE_COLUMNS, title="Pooled CRS", right=right)
    typer.echo(f"wrote {page}", err=not console.is_terminal)
