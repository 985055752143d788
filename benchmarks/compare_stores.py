"""Compare the ``runs`` rows of two results stores: identity columns exact, metrics to 1e-12.

Stores written on different CPUs are compared with ``--rtol`` (identity columns still exact):
``benchmarks/golden_kernels.py`` measures how far the metrics move between numeric kernels.

Usage::

    python benchmarks/compare_stores.py STORE_A STORE_B
    python benchmarks/compare_stores.py STORE --write-csv runs.csv

Each STORE is a run's output folder (holding the store file), the store file itself, or a CSV
written by ``--write-csv`` (a golden copy). Rows are matched on the identity columns; a row on
one side only, or a metric that differs (relative tolerance 1e-12, NaN equal to NaN), is
printed and the exit status is 1. Identical rows exit 0.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

from crsbench.store.columns import IDENTITY_COLUMNS
from crsbench.store.files import STORE_FILE

#: The metric columns compared (spelled here, not imported, so that the comparison does not
#: move when the package's own list does).
METRICS: tuple[str, ...] = ("auroc", "ece", "brier", "nll", "sens_at_spec90", "sens_at_spec95")
#: Two runs on the same machine and numeric kernels (a resume, a refactor that should not move
#: numbers) agree to this relative tolerance.
RTOL = 1e-12
_DTYPES = {"seed": "int64", "severity": "int64", "layer": "float64", "fraction": "float64"}


def load_runs(path: Path) -> pd.DataFrame:
    """The identity and metric columns of ``path``'s ``runs`` rows, sorted by identity.

    Parameters
    ----------
    path : Path
        An output folder, a store file or a CSV written by :func:`write_csv`.
    """
    path = Path(path)
    if path.suffix == ".csv":
        frame = pd.read_csv(path, dtype={c: "string" for c in IDENTITY_COLUMNS if c not in _DTYPES})
    else:
        db = path / STORE_FILE if path.is_dir() else path
        if not db.is_file():
            raise FileNotFoundError(f"no results store at {db}")
        cols = ", ".join(IDENTITY_COLUMNS + METRICS)
        with duckdb.connect(str(db), read_only=True) as con:
            frame = con.execute(f"SELECT {cols} FROM runs").df()
    frame = frame[list(IDENTITY_COLUMNS + METRICS)]
    for col in IDENTITY_COLUMNS:
        frame[col] = frame[col].astype(_DTYPES.get(col, "string"))
    for col in METRICS:
        frame[col] = frame[col].astype("float64")
    return frame.sort_values(list(IDENTITY_COLUMNS)).reset_index(drop=True)


def write_csv(frame: pd.DataFrame, out: Path) -> None:
    """Write ``frame`` (from :func:`load_runs`) so that every float reads back bit for bit."""
    frame.to_csv(out, index=False, float_format="%.17g")


def differences(a: pd.DataFrame, b: pd.DataFrame, rtol: float = RTOL) -> list[str]:
    """Human-readable lines, one per row that differs between ``a`` and ``b`` (empty: equal).

    Identity columns must match exactly; metrics to the relative tolerance ``rtol`` (NaN
    equal to NaN).
    """
    keys = list(IDENTITY_COLUMNS)
    dup = [
        f"duplicate identity in {n}: {r}"
        for n, f in (("A", a), ("B", b))
        for r in f[f.duplicated(keys, keep=False)][keys].to_dict("records")
    ]
    both = a.merge(b, on=keys, how="outer", suffixes=("_a", "_b"), indicator=True)
    out = dup + [
        f"only in {'A' if s == 'left_only' else 'B'}: {row}"
        for s, row in zip(both["_merge"], both[keys].to_dict("records"), strict=True)
        if s != "both"
    ]
    matched = both[both["_merge"] == "both"]
    bad = np.zeros(len(matched), dtype=bool)
    for m in METRICS:
        x, y = matched[f"{m}_a"].to_numpy(), matched[f"{m}_b"].to_numpy()
        bad |= ~np.isclose(x, y, rtol=rtol, atol=0.0, equal_nan=True)
    for _, row in matched[bad].iterrows():
        diff = {
            m: (row[f"{m}_a"], row[f"{m}_b"])
            for m in METRICS
            if not np.isclose(row[f"{m}_a"], row[f"{m}_b"], rtol=rtol, atol=0.0, equal_nan=True)
        }
        out.append(f"metrics differ: {dict(row[keys])} (A, B) = {diff}")
    return out


def max_relative_differences(a: pd.DataFrame, b: pd.DataFrame) -> dict[str, float]:
    """The largest relative difference of each metric over the rows matched on identity.

    A NaN on both sides counts as equal; a NaN on one side only counts as infinite.
    """
    both = a.merge(b, on=list(IDENTITY_COLUMNS), how="inner", suffixes=("_a", "_b"))
    out: dict[str, float] = {}
    for m in METRICS:
        x, y = both[f"{m}_a"].to_numpy(float), both[f"{m}_b"].to_numpy(float)
        nan_a, nan_b = np.isnan(x), np.isnan(y)
        if (nan_a != nan_b).any():
            out[m] = float("inf")
            continue
        x, y = x[~nan_a], y[~nan_a]
        scale = np.maximum(np.abs(x), np.abs(y))
        rel = np.divide(np.abs(x - y), scale, out=np.zeros_like(x), where=scale > 0)
        out[m] = float(rel.max()) if rel.size else 0.0
    return out


def main(argv: list[str] | None = None) -> int:
    """Compare two stores (exit 1 when they differ) or write one store's rows as CSV."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("store_a", type=Path)
    parser.add_argument("store_b", type=Path, nargs="?")
    parser.add_argument("--write-csv", type=Path, help="write STORE_A's rows to this CSV")
    parser.add_argument(
        "--rtol", type=float, default=RTOL, help=f"metrics' relative tolerance (default {RTOL:g})"
    )
    args = parser.parse_args(argv)
    a = load_runs(args.store_a)
    if args.write_csv is not None:
        write_csv(a, args.write_csv)
        print(f"wrote {len(a)} rows to {args.write_csv}")
        return 0
    if args.store_b is None:
        parser.error("give STORE_B to compare with, or --write-csv")
    lines = differences(a, load_runs(args.store_b), rtol=args.rtol)
    for line in lines:
        print(line)
    print(f"{len(a)} rows in A; {len(lines)} differences")
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())
