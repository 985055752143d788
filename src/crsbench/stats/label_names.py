"""The names of a dataset's labels (or classes), in output order, for the tables.

Read from the dataset card (:data:`crsbench.datasets.DATASETS`); a dataset whose card does not
name its outputs (a bring-your-own ``folder`` dataset) or names another number of them gets
``output <j>`` names, so a table never shows a bare index.
"""

from __future__ import annotations

from functools import cache


@cache
def _card_names(dataset: str) -> tuple[str, ...]:
    from crsbench.datasets import DATASETS

    if dataset not in DATASETS:
        return ()
    return tuple(DATASETS.get(dataset).card.label_names)


def label_names(dataset: str, n_outputs: int) -> list[str]:
    """The ``n_outputs`` label names of ``dataset`` in column order.

    Parameters
    ----------
    dataset : str
        Registry name of the source dataset (a shift target is scored on its source's labels).
    n_outputs : int
        Columns of the stored probabilities.

    Returns
    -------
    list of str
        The card's names, or ``output 0`` ... when the card does not name exactly
        ``n_outputs`` labels.
    """
    names = _card_names(dataset)
    if len(names) == n_outputs:
        return list(names)
    return [f"output {j}" for j in range(n_outputs)]
