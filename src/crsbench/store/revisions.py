"""A store describes one revision of each dataset: content, not names, decides "already done".

A dataset's revision (:func:`crsbench.datasets.base.compute_revision`: the sha256 of its label
files, which list the images, and of its label options) is in every run record, for the paper
datasets and a user's ``folder`` cohort alike: the probe dataset's in ``dataset_revision``, a
shift target's in its shift records' ``details.eval_dataset_revision``. A run whose dataset has another revision than the
store's records is not "already done": :class:`~crsbench.store.writer.ResultsStore` moves the
old store aside (``superseded/``, nothing deleted) and the run starts a new one.
"""

from __future__ import annotations

from collections.abc import Mapping

import duckdb

#: Per dataset, the revisions its stored runs used: a probe dataset's from ``dataset_revision``,
#: a shift target's from its shift records' ``details.eval_dataset_revision`` (records written
#: before crsbench recorded it carry none: such a target is not compared).
_STORED_SQL = """
SELECT dataset, dataset_revision FROM runs
UNION
SELECT eval_dataset, json_extract_string(details, '$.eval_dataset_revision') FROM runs
 WHERE eval_dataset <> dataset AND json_valid(details)
   AND json_extract_string(details, '$.eval_dataset_revision') IS NOT NULL
ORDER BY ALL
"""


def stored_revisions(con: duckdb.DuckDBPyConnection) -> dict[str, list[str]]:
    """Per dataset (probe dataset or shift target): the distinct revisions its stored runs used."""
    out: dict[str, list[str]] = {}
    for dataset, revision in con.execute(_STORED_SQL).fetchall():
        out.setdefault(str(dataset), []).append(str(revision))
    return out


def changed_revision(
    con: duckdb.DuckDBPyConnection, revisions: Mapping[str, str] | None
) -> tuple[str, str] | None:
    """The first dataset (probe dataset or shift target) whose stored runs carry another
    revision than ``revisions`` gives. ``crsbench run`` moves such a store aside, and
    ``crsbench status`` reports its cells as stale, on this one answer.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        An open store (with a ``runs`` table).
    revisions : mapping dataset name → revision, or None
        The revisions the run is about to use (None: nothing is checked).

    Returns
    -------
    (str, str) or None
        The reason in words (dataset, stored and new revision) and the label of the folder
        under ``superseded/`` (``data-<dataset>-<stored revision, 12 characters>``).
    """
    if not revisions:
        return None
    for dataset, stored in stored_revisions(con).items():
        new = revisions.get(dataset)
        old = [r for r in stored if r != new]
        if new is not None and old:
            reason = (
                f"dataset {dataset!r} changed: the store's runs are of revision {old[0][:12]}, "
                f"its label file and image list now give {new[:12]}"
            )
            return reason, f"data-{dataset}-{old[0][:12]}"
    return None
