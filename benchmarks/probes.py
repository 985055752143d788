"""Benchmark: the batched probe engine vs a loop of scikit-learn LogisticRegression fits.

One cell's whole grid (13 C values × 5 label fractions × 5 seeds) on a fixed synthetic feature
matrix (default 20,000 train + 5,000 validation rows × 768 features, power-law spectrum),
for an 8-class multi-class task and a 14-label multi-label task (10 % of labels masked).
Both sides standardise with the fitted rows' statistics, use the same C grid, ``max_iter``
and ``tol``, and both solve identical subsets once (the 100 % fraction is shared by the
seeds), so the ratio is conservative. The baseline is ``StandardScaler`` +
``LogisticRegression(C, max_iter, tol)`` with the default ``lbfgs`` solver, one fit per
(subset, C) and, for multi-label, per label on its labelled rows.

Prints per task both times and the largest validation AUROC difference over every
(subset, C), then a final line ``speedup=<ratio>`` followed by ``name=value`` figures. The
engine's time is that of the grid in a process where its compiled row passes are ready: the
first call in a process compiles them (about 1.4 s, once; a run's worker then fits many cells),
timed separately on a tiny problem and printed (``compile_s=``, ``speedup_with_compile=``).
(A float32 fit that stalls goes on in float64, whose passes then compile inside the timing:
the ratio can only be conservative for it.)

The engine runs the protocol's budget and stopping rule (``max_iter`` 1000, ``stop``
"probabilities", ``tol`` 5e-7, from ``crsbench.protocol`` = paper.yaml: every fit's
probabilities within about 1e-5 of its optimum's). Two baselines (``--baseline``):

- ``as-written`` (default): the loop as one writes it, on the features as encoders give them
  (float32; scikit-learn then fits in float32) at the same ``max_iter`` and ``tol``, which
  for scikit-learn is a gradient tolerance: its fits stop where float32 stalls, often far
  from the optimum at large C.
- ``exact``: the loop that reaches the optimum, scikit-learn's exactness reference (float64
  features, ``tol`` 1e-10, ``max_iter`` 100,000). It also checks the engine's exactness: the
  largest difference of any training row's probability, over every (subset, C), between the
  engine and this reference (``max_train_prob_diff=``; goal ≤ 1e-5), and prints the three
  fits farthest from it (subset, C, difference).

Usage: ``python benchmarks/probes.py [--n 20000] [--d 768] [--tasks multiclass]
[--baseline as-written|exact] [--seeds 5] [--quick]``. Where the environment forces an older
OpenBLAS kernel (``OPENBLAS_CORETYPE``, set on some hosts for old OpenBLAS builds), run it as
``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/probes.py`` to measure the
kernel the CPU selects; the kernel is printed (``blas=``).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler

from crsbench.metrics import UndefinedMetricWarning, macro_auroc
from crsbench.probes import fit_probe_grid
from crsbench.protocol import C_GRID, LABEL_FRACTIONS, LOGISTIC_MAX_ITER, LOGISTIC_TOL, SEEDS


def make_data(n: int, n_val: int, d: int, k: int, n_labels: int, seed: int = 0):
    """Correlated features (singular values ∝ i^-0.6, rotated) and softmax / sigmoid labels."""
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.normal(size=(d, d)))
    spectrum = np.arange(1, d + 1) ** -0.6
    X = ((rng.normal(size=(n + n_val, d)) * spectrum) @ q.T * 3.0 + rng.normal(size=d)).astype(
        np.float32
    )
    Xs = (X - X.mean(0)) / X.std(0)
    logits = Xs @ rng.normal(size=(d, k)) * 0.08 + np.log(np.linspace(1.0, 0.15, k))
    g = rng.gumbel(size=logits.shape)
    y = (logits + g).argmax(axis=1)
    ml_logits = Xs @ rng.normal(size=(d, n_labels)) * 0.06 + np.linspace(-3.5, -0.5, n_labels)
    Y = (rng.random(ml_logits.shape) < 1 / (1 + np.exp(-ml_logits))).astype(np.float64)
    Y[rng.random(Y.shape) < 0.10] = np.nan
    return X[:n], y[:n], Y[:n], X[n:], y[n:], Y[n:]


def make_subsets(n: int, fractions, seeds) -> dict:
    """Nested random subsets per seed: the f-fraction rows are the first round(f·n) of a permutation."""
    out = {}
    for s in seeds:
        perm = np.random.default_rng(1000 + s).permutation(n)
        for f in fractions:
            out[(f, s)] = np.sort(perm[: max(2, int(round(f * n)))]) if f < 1 else np.arange(n)
    return out


#: The exactness reference: scikit-learn run to its optimum on float64 features.
EXACT_TOL, EXACT_MAX_ITER = 1e-10, 100_000


def sklearn_probabilities(Xs, y, Xq, task, C, max_iter, tol, k):
    """Probabilities of rows ``Xq`` from scikit-learn fits on standardised ``Xs``."""
    if task == "multiclass":
        clf = LogisticRegression(C=C, max_iter=max_iter, tol=tol).fit(Xs, y)
        P = np.zeros((len(Xq), k))
        P[:, clf.classes_] = clf.predict_proba(Xq)
        return P
    P = np.full((len(Xq), y.shape[1]), 0.5)
    for j in range(y.shape[1]):
        m = ~np.isnan(y[:, j])
        if y[m, j].min() == y[m, j].max():
            continue
        clf = LogisticRegression(C=C, max_iter=max_iter, tol=tol).fit(Xs[m], y[m, j])
        P[:, j] = clf.predict_proba(Xq)[:, 1]
    return P


def sklearn_grid(X, y, Xv, yv, task, Cs, subsets, max_iter, tol, k, exact=False):
    """Per (subset, C) from a plain loop of sklearn fits (identical subsets once): validation
    AUROC, and with ``exact`` the training rows' probabilities (n_rows, m, K)."""
    t0 = time.perf_counter()
    cache: dict[bytes, tuple] = {}
    out = {}
    if exact:
        X, Xv, max_iter, tol = (
            X.astype(np.float64),
            Xv.astype(np.float64),
            EXACT_MAX_ITER,
            EXACT_TOL,
        )
    for key, idx in subsets.items():
        sig = idx.tobytes()
        if sig not in cache:
            scaler = StandardScaler().fit(X[idx])
            Xs, Xvs = scaler.transform(X[idx]), scaler.transform(Xv)
            aucs = np.full(len(Cs), np.nan)
            train = []
            for c, C in enumerate(Cs):
                Xq = np.vstack([Xvs, Xs]) if exact else Xvs
                P = sklearn_probabilities(Xs, y[idx], Xq, task, C, max_iter, tol, k)
                aucs[c] = macro_auroc(yv, P[: len(Xv)], task)
                train.append(P[len(Xv) :])
            cache[sig] = (aucs, np.stack(train, axis=1) if exact else None)
            print(
                f"  sklearn {task}: subset {key} done, {len(cache)} unique so far, "
                f"{time.perf_counter() - t0:.0f} s",
                file=sys.stderr,
                flush=True,
            )
        out[key] = cache[sig]
    return out


def max_train_prob_diff(fitted, X, subsets, ref) -> float:
    """Largest |engine - reference| probability of any training row, over every (subset, C);
    the three largest fits are printed (subset, C, difference)."""
    diffs = []
    for key, idx in subsets.items():
        for c in range(len(fitted[key].Cs)):
            P = fitted[key].predict_proba(X[idx], c)
            diffs.append((float(np.abs(P - ref[key][1][:, c]).max()), key, fitted[key].Cs[c]))
    diffs.sort(key=lambda t: -t[0])
    for diff, key, C in diffs[:3]:
        print(f"  training-row difference {diff:.2e} at subset {key}, C={C:g}", file=sys.stderr)
    return diffs[0][0] if diffs else float("nan")


def compile_seconds(task, X, y, Xv, yv, Cs) -> float:
    """Seconds of a first, tiny engine call in this process: numba compiles the objective's
    row passes once per process (a run's worker then fits many cells with them)."""
    t0 = time.perf_counter()
    fit_probe_grid(X[:60, :4], y[:60], Xv[:20, :4], yv[:20], task, Cs[:2], max_iter=3)
    return time.perf_counter() - t0


def run_task(task, X, y, Xv, yv, Cs, subsets, max_iter, tol, k, exact=False):
    t_compile = compile_seconds(task, X, y, Xv, yv, Cs)
    t0 = time.perf_counter()
    fitted = fit_probe_grid(X, y, Xv, yv, task, Cs, subsets, max_iter=max_iter, tol=tol)
    t_engine = time.perf_counter() - t0
    print(f"  engine {task}: {t_engine:.1f} s (+ {t_compile:.1f} s compiling once in this "
          "process)", file=sys.stderr, flush=True)  # fmt: skip
    t0 = time.perf_counter()
    ref = sklearn_grid(X, y, Xv, yv, task, Cs, subsets, max_iter, tol, k, exact)
    t_sklearn = time.perf_counter() - t0
    diffs = np.array([np.nanmax(np.abs(fitted[key].val_auroc - ref[key][0])) for key in subsets])
    chosen = np.array(
        [
            abs(fitted[key].val_auroc[fitted[key].C_index] - np.nanmax(ref[key][0]))
            for key in subsets
        ]
    )
    prob_diff = max_train_prob_diff(fitted, X, subsets, ref) if exact else float("nan")
    iters = [f.n_iter for f in fitted.values()]
    return {
        "engine_s": t_engine,
        "compile_s": t_compile,
        "sklearn_s": t_sklearn,
        "max_auroc_diff": float(diffs.max()),
        "max_best_auroc_diff": float(chosen.max()),
        "max_iter_used": int(max(iters)),
        "unconverged": int(sum((~f.converged).sum() for f in fitted.values())),
        "max_train_prob_diff": prob_diff,
    }


def blas_kernel() -> str:
    """The OpenBLAS kernel this process runs (set by the CPU, or by ``OPENBLAS_CORETYPE``)."""
    from threadpoolctl import threadpool_info

    np.ones(2) @ np.ones(2)  # load the BLAS library
    kinds = {i.get("architecture") or "?" for i in threadpool_info() if i["user_api"] == "blas"}
    return "/".join(sorted(kinds)) or "none"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20000, help="training rows (default 20000)")
    parser.add_argument("--d", type=int, default=768, help="feature dimension (default 768)")
    parser.add_argument("--classes", type=int, default=8)
    parser.add_argument("--labels", type=int, default=14)
    # the protocol's budget (docs/protocol.md section 6; paper.yaml)
    parser.add_argument("--max-iter", type=int, default=LOGISTIC_MAX_ITER)
    parser.add_argument("--tol", type=float, default=LOGISTIC_TOL)
    parser.add_argument("--tasks", default="multiclass,multilabel")
    parser.add_argument(
        "--baseline",
        choices=("as-written", "exact"),
        default="as-written",
        help="the scikit-learn loop: as one writes it (float32 features, the protocol's "
        "max_iter and tol) or run to its optimum (float64, tol 1e-10), which also checks the "
        "engine's exactness",
    )
    parser.add_argument(
        "--seeds", type=int, default=len(SEEDS), help="seeds of the grid (default 5, the protocol)"
    )
    parser.add_argument(
        "--quick", action="store_true", help="smoke run: n=400, d=16, 4 labels, 3 C, 2 fractions"
    )
    args = parser.parse_args(argv)
    n, d, fractions, seeds, Cs = (
        args.n,
        args.d,
        LABEL_FRACTIONS,
        SEEDS[: args.seeds],
        np.asarray(C_GRID),
    )
    labels = args.labels
    if args.quick:
        n, d, fractions, seeds, Cs = 400, 16, (0.5, 1.0), (0,), np.logspace(-3, 1, 3)
        labels = 4
    X, y, Y, Xv, yv, Yv = make_data(n, n // 4, d, args.classes, labels)
    subsets = make_subsets(n, fractions, seeds)
    print(
        f"grid: {len(Cs)} C x {len(fractions)} fractions x {len(seeds)} seeds; "
        f"train {n} x {d}, validation {len(Xv)}; max_iter {args.max_iter}, tol {args.tol:g}; "
        f"BLAS kernel {blas_kernel()} (both sides)"
    )
    results = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        for task in args.tasks.split(","):
            yt, yvt = (y, yv) if task == "multiclass" else (Y, Yv)
            r = run_task(
                task, X, yt, Xv, yvt, Cs, subsets, args.max_iter, args.tol, args.classes,
                args.baseline == "exact",
            )  # fmt: skip
            results[task] = r
            print(
                f"{task}: engine {r['engine_s']:.1f} s (+ {r['compile_s']:.1f} s compiling once "
                f"per process), sklearn loop {r['sklearn_s']:.1f} s, "
                f"ratio {r['sklearn_s'] / r['engine_s']:.1f}x, max |dAUROC| {r['max_auroc_diff']:.2e}"
                f" (best-C {r['max_best_auroc_diff']:.2e}), max iterations {r['max_iter_used']}, "
                f"unconverged C fits {r['unconverged']}, max |dp| of a training row vs the "
                f"optimum {r['max_train_prob_diff']:.2e}",
                flush=True,
            )
    engine = sum(r["engine_s"] for r in results.values())
    base = sum(r["sklearn_s"] for r in results.values())
    figures = [f"speedup={base / engine:.2f}"]
    figures.append(f"max_auroc_diff={max(r['max_auroc_diff'] for r in results.values()):.2e}")
    compile_s = sum(r["compile_s"] for r in results.values())
    figures.append(f"speedup_with_compile={base / (engine + compile_s):.2f}")
    figures += [f"engine_s={engine:.2f}", f"compile_s={compile_s:.2f}", f"sklearn_s={base:.2f}"]
    figures += [f"n={n}", f"d={d}"]
    figures += [f"tol={args.tol:g}", f"max_iter={args.max_iter}", f"baseline={args.baseline}"]
    figures.append(f"blas={blas_kernel()}")
    if args.baseline == "exact":
        worst = max(r["max_train_prob_diff"] for r in results.values())
        figures.append(f"max_train_prob_diff={worst:.2e}")
    for task, r in results.items():
        figures.append(f"{task}_speedup={r['sklearn_s'] / r['engine_s']:.2f}")
        figures.append(f"{task}_max_auroc_diff={r['max_auroc_diff']:.2e}")
    print(" ".join(figures))


if __name__ == "__main__":
    main()
