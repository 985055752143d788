"""Recalibration CV selection: one-by-one fits (the former path) against the batched solver.

``fit_recalibrator(method, ..., batched=False)`` fits every (grid point, fold) calibrator on its
own (25 (λ, μ) × 5 folds for Dirichlet, 6 reg × 5 folds for vector scaling, per label for a
multi-label task); the default fits them together (``crsbench.calibration.batched``). Three
demo-sized calibration splits of over-confident probe probabilities:

- CheXpert-like: multi-label, 5 labels, 130 rows (~35 % positives, 10 % unlabelled entries);
- ISIC-like: multi-class, 8 imbalanced classes, 150 rows (rarest class 15 rows);
- APTOS-like: multi-class, 5 grades, 110 rows (rarest grade 15 rows).

Each (split, method) is timed ``REPEATS`` times with each path, alternating, BLAS on one thread
(as the benchmark's probe stage runs it); prints every time, the medians, ``ratio=`` (median
one-by-one / median batched), whether the records' choices agree and the largest relative
difference of the recalibrated test probabilities.

Run: ``python benchmarks/recal_selection.py``
"""

import statistics
import time

import numpy as np
from scipy.special import expit, softmax
from threadpoolctl import threadpool_limits

from crsbench.calibration import fit_recalibrator
from crsbench.protocol import PROBE_BLAS_THREADS

REPEATS = 7
N_TEST = 500


def multiclass(counts: list[int], seed: int):
    """Over-confident probabilities (logits × 3) of the calibration rows and N_TEST test rows."""
    rng = np.random.default_rng(seed)
    k = len(counts)
    y = np.r_[np.repeat(np.arange(k), counts), rng.integers(0, k, N_TEST)]
    p = softmax(3.0 * (rng.normal(size=(len(y), k)) + 1.5 * np.eye(k)[y]), axis=1)
    n = sum(counts)
    return p[:n], y[:n], p[n:], "multiclass"


def multilabel(n: int, labels: int, seed: int):
    """Over-confident per-label probabilities; 10 % of the label entries unlabelled (NaN)."""
    rng = np.random.default_rng(seed)
    y = (rng.uniform(size=(n + N_TEST, labels)) < 0.35).astype(float)
    p = expit(3.0 * (rng.normal(size=y.shape) + 1.5 * y - 0.75))
    y[:n][rng.uniform(size=(n, labels)) < 0.1] = np.nan
    return p[:n], y[:n], p[n:], "multilabel"


SPLITS = {
    "chexpert-like (multilabel, 5 labels, 130 rows)": multilabel(130, 5, seed=0),
    "isic-like (8 classes, 150 rows)": multiclass([45, 30, 15, 15, 15, 15, 15, 15], seed=1),
    "aptos-like (5 classes, 110 rows)": multiclass([40, 20, 20, 15, 15], seed=2),
}


def timed(method: str, split, batched: bool):
    p, y, test, task = split
    t0 = time.perf_counter()
    fit = fit_recalibrator(method, p, y, task, seed=0, batched=batched)
    return time.perf_counter() - t0, fit


def choices(record: dict) -> list:
    return [(r["choice"], r["params"]) for r in record.get("labels", [record])]


def main() -> None:
    totals = {"old": 0.0, "new": 0.0}
    with threadpool_limits(PROBE_BLAS_THREADS):
        for name, split in SPLITS.items():
            for method in ("dirichlet", "vector"):
                times: dict[str, list[float]] = {"old": [], "new": []}
                for _ in range(REPEATS):
                    t_old, ref = timed(method, split, batched=False)
                    t_new, fit = timed(method, split, batched=True)
                    times["old"].append(t_old)
                    times["new"].append(t_new)
                old, new = statistics.median(times["old"]), statistics.median(times["new"])
                totals["old"] += old
                totals["new"] += new
                test = split[2]
                p_ref, p_new = ref.predict_proba(test), fit.predict_proba(test)
                rel = float(np.max(np.abs(p_new - p_ref) / np.abs(p_ref)))
                same = choices(ref.record()) == choices(fit.record())
                print(
                    f"{name} {method}: one-by-one {[round(t, 3) for t in times['old']]} s, "
                    f"batched {[round(t, 3) for t in times['new']]} s, "
                    f"median {old:.3f} / {new:.3f} s, ratio={old / new:.1f}, "
                    f"same choices={same}, max rel |dp|={rel:.1e}"
                )
    print(
        f"all splits and methods (sum of medians): one-by-one {totals['old']:.2f} s, "
        f"batched {totals['new']:.2f} s, ratio={totals['old'] / totals['new']:.1f}"
    )


if __name__ == "__main__":
    main()
