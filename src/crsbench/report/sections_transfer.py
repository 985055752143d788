"""Report sections "Operating points under shift" and "Prediction flips": what a deployed
threshold does on the test set and on each shift target, and how many individual decisions a
perturbation changes."""

from __future__ import annotations

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
    "misses in addition at the new site. An encoder keeps its operating point on a target when "
    "no label loses more than {tol:g}."
)
FLIP_GUIDE = (
    "How to read: the share of test images whose decision changes when the image is "
    "perturbed (the predicted class for multi-class tasks; any label's yes/no at the "
    "validation sensitivity-{sens:g} threshold for multi-label tasks). A model can keep its "
    "AUROC and still change many individual decisions: compare the flip share with the AUROC "
    "drop of the same condition."
)


def transfer_summary(lost: pd.DataFrame) -> pd.DataFrame:
    """Per (encoder, dataset, shift target): labels, mean sensitivity on test and on the
    target, the label losing most (by name) and whether the operating point is kept."""
    g = lost.groupby(["encoder", "dataset", "shift_target"], sort=True)
    worst = lost.loc[g["sensitivity_lost"].idxmax().dropna()]
    out = g.agg(labels=("label", "count"), sensitivity_test=("sensitivity_test", "mean"),
                sensitivity_shift=("sensitivity_shift", "mean"),
                keeps=("keeps_operating_point", "all")).reset_index()  # fmt: skip
    key = ["encoder", "dataset", "shift_target"]
    worst = worst.set_index(key)[["label", "sensitivity_lost"]]
    out = out.join(worst, on=key)
    out["keeps"] = out["keeps"].map({True: "yes", False: "no"})
    return out.rename(columns={"label": "label losing most", "sensitivity_lost": "its loss",
                               "keeps": "keeps operating point"})  # fmt: skip


def operating_points_section(p: PredictionData, w: Writer) -> Section:
    """Section 13: validation thresholds applied on test and on each shift target."""
    from crsbench.stats.operating_points import DEFAULT_TARGET_SENSITIVITY, DEFAULT_TOLERANCE

    s = Section("operating-points", "13. Operating points under shift",
                OP_GUIDE.format(sens=DEFAULT_TARGET_SENSITIVITY, tol=DEFAULT_TOLERANCE))  # fmt: skip
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
    g = flips.sort_values("severity").groupby(["encoder", "dataset", "condition"], sort=True)
    return g.agg(flip_share=("flip_share", "mean"), flip_share_strongest=("flip_share", "last"),
                 auroc_drop=("auroc_drop", "mean"), decision=("decision", "first")
                 ).reset_index()  # fmt: skip


def flips_section(p: PredictionData, w: Writer) -> Section:
    """Section 14: share of decisions a perturbation changes, beside the AUROC drop."""
    from crsbench.stats.operating_points import DEFAULT_TARGET_SENSITIVITY

    s = Section("flips", "14. Prediction flips",
                FLIP_GUIDE.format(sens=DEFAULT_TARGET_SENSITIVITY))  # fmt: skip
    if p.flips is None:
        s.parts.append(note_html(p.missing.get("flips", "not available")))
        return s
    s.parts.append(figure_html(flips_figure(p.flips, w.fig_dir), "Prediction flips heat map"))
    table = table_html(flips_summary(p.flips), sortable=True, table_id="flips")
    s.parts.append(details_html("Per encoder, dataset and condition: full table", table))
    s.parts.append(files_html([w.csv(p.flips, "prediction_flips")]))
    return s
