"""Recalibration on a demo-like problem: fixed regularisation vs the cross-validated choice.

A 5-class logistic probe on 300 training rows of 32-D Gaussian features, 25 calibration rows
per class, 3,000 test rows; prints the mean test ECE over 5 seeds (and per seed).

Run: ``python benchmarks/recalibration.py``
"""

import numpy as np
from sklearn.linear_model import LogisticRegression

from crsbench.calibration import CALIBRATORS, fit_recalibrator
from crsbench.metrics import expected_calibration_error as ece
from crsbench.protocol import RECALIBRATORS

K, D = 5, 32
res = {}
for seed in range(5):
    rng = np.random.default_rng(seed)
    mu = rng.normal(size=(K, D)) * 0.35

    def draw(n_per, mu=mu, rng=rng):
        y = np.repeat(np.arange(K), n_per)
        return mu[y] + rng.normal(size=(len(y), D)), y

    Xtr, ytr = draw(60)
    Xc, yc = draw(25)
    Xt, yt = draw(600)
    clf = LogisticRegression(C=1.0, max_iter=2000).fit(Xtr, ytr)
    Pc, Pt = clf.predict_proba(Xc), clf.predict_proba(Xt)
    res.setdefault("none", []).append(ece(yt, Pt, "multiclass"))
    for m in RECALIBRATORS:
        old = CALIBRATORS.get(m)(task="multiclass").fit(Pc, yc).predict_proba(Pt)
        res.setdefault(m + " fixed", []).append(ece(yt, old, "multiclass"))
        f = fit_recalibrator(m, Pc, yc, "multiclass", seed)
        res.setdefault(m + " cv", []).append(ece(yt, f.predict_proba(Pt), "multiclass"))
        res.setdefault(m + " choice", []).append(f.choice)
for k, v in res.items():
    print(
        f"{k:20s}", v if "choice" in k else f"{np.mean(v):.4f}  " + " ".join(f"{x:.3f}" for x in v)
    )
