"""Report sections "Operating points under shift" and "Prediction flips": what a deployed
threshold does on the test set and on each shift target, and how many individual decisions a
perturbation changes."""

from __future__ import annotations

import numpy as np
import pandas as pd

from crsbench.report.collapse import details_html
from crsbench.report.figures_predictions import flips_figure, transfer_figure
from crsbench.report.html import Section, esc, figure_html, files_html, note_html, table_html
from crsbench.report.prediction_data import PredictionData
from crsbench.report.sections import Writer

OP_GUIDE = (
    "How to read: a clinic deploys a threshold, not an AUROC. For each label the threshold "
    "that reaches sensitivity {sens:g} on the source validation split is kept fixed and "
    "applied to the source test set and to every shift target (another hospital's images). "
    "'Sensitivity lost' is test minus target: the share of positive cases the same threshold "
    "misses in addition at the new site, with its 95% CI (basic bootstrap over the test and "
    "target patients at the fixed threshold; shown to cover on planted worlds). A label needs "
    "at least {n_min} positives on validation, on test and on the target (settings {version}): "
    "below that it is shown as 'too few positives (n)', its sensitivity is too noisy to read "
    "(standard error about 0.05 at 40 positives) and it does not decide. An encoder keeps its "
    "operating point on a target when no label with enough positives loses more than {tol:g}; "
    "'not decided' when no label has enough."
)
FLIP_GUIDE = (
    "How to read: the share of decisions that change when the image is perturbed. A decision "
    "is the predicted class of an image for multi-class tasks and each label's yes/no at its "
    "validation sensitivity-{sens:g} threshold for multi-label tasks, so the share is on one "
    "scale for every task (for multi-label, the mean of the labels' flip shares; the share of "
    "images with any label changed, which grows with the number of labels, and the per-label "
    "shares are in the CSV). A model can keep its AUROC and still change many individual "
    "decisions: compare the flip share with the AUROC drop of the same condition."
)


def _loss(row: pd.Series) -> str:
    if pd.isna(row["sensitivity_lost"]):
        return "—"
    lo, hi = row.get("lost_ci_low", float("nan")), row.get("lost_ci_high", float("nan"))
    ci = f" [{lo:.3f}, {hi:.3f}]" if pd.notna(lo) and pd.notna(hi) else ""
    return f"{row['sensitivity_lost']:.3f}{ci}"


def _few_names(rows: pd.DataFrame, shown: int = 5) -> str:
    """``No Finding (12), Fracture (3), … (+4)``: the labels below the minimum, fewest first."""
    rows = rows.sort_values("n_positives")
    names = [f"{lab} ({int(n)})" for lab, n in zip(rows["label"], rows["n_positives"], strict=True)]
    more = f", … (+{len(names) - shown})" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def _too_few(lost: pd.DataFrame, keys: pd.DataFrame) -> np.ndarray:
    """Per row of ``keys``, the labels with too few positives named with their counts ("" for
    none; a store where every label has enough has no such label at all)."""
    few = lost[lost["status"] != "ok"] if "status" in lost else lost.iloc[:0]
    if few.empty:
        return np.full(len(keys), "", dtype=object)
    named = few.groupby(list(keys.columns), dropna=False)[["label", "n_positives"]].apply(
        _few_names
    )
    if not isinstance(named, pd.Series) or named.empty:
        return np.full(len(keys), "", dtype=object)
    return named.reindex(pd.MultiIndex.from_frame(keys)).fillna("").to_numpy()


def transfer_summary(lost: pd.DataFrame) -> pd.DataFrame:
    """Per (encoder, dataset, shift target): labels with enough positives (of all), mean
    sensitivity on test and on the target over them, the label losing most (by name) with its
    loss and 95% CI, whether the operating point is kept (``not decided`` when no label has
    enough positives) and the labels with too few positives (with their counts)."""
    key = ["encoder", "dataset", "shift_target"]
    ok = lost[lost["status"] == "ok"] if "status" in lost else lost
    out = lost.groupby(key, sort=True).agg(labels=("label", "count")).reset_index()
    means = ok.groupby(key).agg(decided=("label", "count"),
                                sensitivity_test=("sensitivity_test", "mean"),
                                sensitivity_shift=("sensitivity_shift", "mean"))  # fmt: skip
    out = out.join(means, on=key)
    worst = ok.sort_values("sensitivity_lost", ascending=False).drop_duplicates(key)
    worst = worst.assign(loss=worst.apply(_loss, axis=1)).set_index(key)[["label", "loss"]]
    out = out.join(worst, on=key)
    keeps = lost.groupby(key, sort=True)["keeps_operating_point"].first()
    out["keeps"] = [("not decided" if pd.isna(k) else "yes" if k else "no")
                    for k in keeps.reindex(pd.MultiIndex.from_frame(out[key]))]  # fmt: skip
    out["too few positives"] = _too_few(lost, out[key])
    out["labels"] = [f"{int(d) if pd.notna(d) else 0} of {n}"
                     for d, n in zip(out["decided"], out["labels"], strict=True)]  # fmt: skip
    return out.drop(columns="decided").rename(columns={
        "labels": "labels with enough positives", "label": "label losing most",
        "loss": "its loss [95% CI]", "keeps": "keeps operating point"})  # fmt: skip


def operating_points_section(p: PredictionData, w: Writer) -> Section:
    """Section 13: validation thresholds applied on test and on each shift target."""
    st = p.operating_points
    s = Section("operating-points", "13. Operating points under shift",
                OP_GUIDE.format(sens=st["target_sensitivity"], tol=st["tolerance"],
                                n_min=st["min_positives"], version=st["version"]))  # fmt: skip
    if p.transfer is None:
        s.parts.append(note_html(p.missing.get("operating_points", "not available")))
        return s
    rels = [w.csv(p.transfer, "operating_point_transfer")]
    if p.lost is None:
        s.parts.append(note_html(p.missing.get("transfer", "not available")))
    else:
        targets = ", ".join(sorted(p.lost["shift_target"].unique()))
        s.parts.append(f"<p>Shift targets: {esc(targets)}. The per-label table (label names, "
                       "thresholds, sensitivity and specificity on test and on each target, "
                       "also at specificity 0.90) is in the CSV files below.</p>")  # fmt: skip
        s.parts.append(figure_html(transfer_figure(p.lost, w.fig_dir),
                                   "Sensitivity on test and on each shift target"))  # fmt: skip
        table = table_html(transfer_summary(p.lost), sortable=True, table_id="operating-points")
        s.parts.append(details_html("Per encoder and target: full table", table))
        rels.append(w.csv(p.lost, "operating_points"))
    s.parts.append(files_html(rels))
    return s


def flips_summary(flips: pd.DataFrame) -> pd.DataFrame:
    """Per (encoder, dataset, condition): flip share and AUROC drop, mean over severities,
    and the flip share at the strongest severity."""
    if "label" in flips:  # the decision-level rows; the per-label ones are in the CSV
        flips = flips[flips["label"] == "all"]
    g = flips.sort_values("severity").groupby(["encoder", "dataset", "condition"], sort=True)
    return g.agg(flip_share=("flip_share", "mean"), flip_share_strongest=("flip_share", "last"),
                 auroc_drop=("auroc_drop", "mean"), decision=("decision", "first")
                 ).reset_index()  # fmt: skip


def flips_section(p: PredictionData, w: Writer) -> Section:
    """Section 14: share of decisions a perturbation changes, beside the AUROC drop."""
    s = Section("flips", "14. Prediction flips",
                FLIP_GUIDE.format(sens=p.operating_points["target_sensitivity"]))  # fmt: skip
    if p.flips is None:
        s.parts.append(note_html(p.missing.get("flips", "not available")))
        return s
    s.parts.append(figure_html(flips_figure(p.flips, w.fig_dir), "Prediction flips heat map"))
    table = table_html(flips_summary(p.flips), sortable=True, table_id="flips")
    s.parts.append(details_html("Per encoder, dataset and condition: full table", table))
    s.parts.append(files_html([w.csv(p.flips, "prediction_flips")]))
    return s
