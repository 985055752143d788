"""Labels are visible in the pixels, but not trivially; MIMIC looks unlike CheXpert."""

from __future__ import annotations

import csv

import numpy as np
from PIL import Image
from scipy import ndimage
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import cross_val_predict

from crsbench.core.seeding import stable_rng
from crsbench.datasets.synthetic.aptos_render import render_aptos
from crsbench.datasets.synthetic.cxr_labels import CHEXPERT_PROFILE, draw_findings
from crsbench.datasets.synthetic.cxr_render import CHEXPERT_SCANNER, MIMIC_SCANNER, render_cxr
from crsbench.datasets.synthetic.isic_render import lesion_params, render_isic


def _small(image: np.ndarray, side: int = 12) -> np.ndarray:
    pil = Image.fromarray(np.uint8(np.clip(image, 0, 1) * 255))
    return np.asarray(pil.resize((side, side), Image.Resampling.BILINEAR), np.float32).ravel()


def _probe_auroc(x: np.ndarray, y: np.ndarray) -> float:
    x = (x - x.mean(0)) / (x.std(0) + 1e-6)
    clf = LogisticRegression(C=0.05, max_iter=2000)
    scores = cross_val_predict(clf, x, y, cv=4, method="predict_proba")[:, 1]
    return float(roc_auc_score(y, scores))


def test_chexpert_findings_visible_but_not_trivial():
    feats, labels = [], []
    for i in range(240):
        rng = stable_rng("test-signal", i)
        f = draw_findings(rng, CHEXPERT_PROFILE, float(rng.normal()), ap=False)
        image = render_cxr(f, stable_rng("test-signal-img", i), 64, "PA", CHEXPERT_SCANNER)
        feats.append(_small(image))
        labels.append([f["Pleural Effusion"], f["Cardiomegaly"], f["Fracture"]])
    x, y = np.array(feats), np.array(labels, dtype=int)
    aurocs = [_probe_auroc(x, y[:, j]) for j in range(3)]
    assert 0.6 < aurocs[0] < 0.99, aurocs
    assert max(aurocs) < 0.99, aurocs


def test_isic_mel_vs_nv_visible_but_not_trivial():
    feats, labels = [], []
    for i in range(200):
        label = "MEL" if i % 2 else "NV"
        p = lesion_params(label, stable_rng("test-isic-lesion", i))
        image = render_isic(label, p, stable_rng("test-isic", i), 48, 64)
        feats.append(_small(image, 8))
        labels.append(i % 2)
    auroc = _probe_auroc(np.array(feats), np.array(labels))
    assert 0.6 < auroc < 0.99, auroc


def test_aptos_grade_visible_but_not_trivial():
    feats, labels = [], []
    for i in range(200):
        grade = (0, 1, 2, 3)[i % 4]
        image = render_aptos(grade, stable_rng("test-aptos", i), 96, 128)
        feats.append(_small(image, 16))
        labels.append(int(grade >= 2))
    auroc = _probe_auroc(np.array(feats), np.array(labels))
    assert 0.6 < auroc < 0.99, auroc


def _high_freq_std(image: np.ndarray) -> float:
    return float(np.std(image - ndimage.median_filter(image, size=3)))


def test_mimic_scanner_differs_from_chexpert():
    a, b = [], []
    for i in range(20):
        f = draw_findings(stable_rng("test-scan", i), CHEXPERT_PROFILE, 0.0, ap=False)
        a.append(render_cxr(f, stable_rng("test-scan-img", i), 64, "PA", CHEXPERT_SCANNER))
        b.append(render_cxr(f, stable_rng("test-scan-img", i), 64, "PA", MIMIC_SCANNER))
    assert np.mean([_high_freq_std(m) for m in b]) > 1.3 * np.mean([_high_freq_std(m) for m in a])
    assert np.mean([np.median(m) for m in b]) > np.mean([np.median(m) for m in a]) + 0.03


def test_mimic_prevalence_differs(tiny_out):
    def positive_rate(path, column):
        with open(path, newline="") as handle:
            rows = list(csv.DictReader(handle))
        return np.mean([r[column] in ("1.0", "-1.0") for r in rows])

    base = tiny_out / "chexpert" / "CheXpert-v1.0-small" / "train.csv"
    mimic = tiny_out / "mimic_cxr" / "mimic-cxr-2.0.0-chexpert.csv"
    diffs = [
        abs(positive_rate(base, c) - positive_rate(mimic, c))
        for c in ("Support Devices", "Pleural Effusion", "Edema")
    ]
    assert max(diffs) > 0.05, diffs
