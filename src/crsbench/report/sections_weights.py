"""Report section "Weights and the Pareto front": whether the leader survives other CRS
weights, and which encoders no other dominates on the four axes."""

from __future__ import annotations

from crsbench.report.beyond_data import BeyondData
from crsbench.report.data import ReportData
from crsbench.report.figures_weights import weights_figure
from crsbench.report.html import Section, esc, figure_html, files_html, note_html, stats_html
from crsbench.report.sections import Writer

SECTION_ID = "weights"


def _headline(h: dict) -> list[tuple[str, str]]:
    w = h["default_weights"]
    near, simplex = h["near_default"], h["simplex"]
    return [
        ("leader at 0.60 / 0.25 / 0.15", h["default_leader"]),
        (f"first within ±{h['radius']:g} of them", ", ".join(near["ever_first"])),
        ("first under some weighting", ", ".join(simplex["ever_first"])),
        ("most often first (any weights)",
         f"{simplex['most_often_first']} ({simplex['share_first']:.0%})"),
        ("default weights", f"P {w['P']:g} · I {w['I']:g} · W {w['W']:g}"),
    ]  # fmt: skip


def weights_section(d: ReportData, b: BeyondData, w: Writer) -> Section:
    """Section 11: first-place shares under sampled weights, rank ranges, the Pareto front."""
    s = Section(
        SECTION_ID, "11. Weights and the Pareto front",
        "The CRS weights are a choice. If the leader ranks first for most weightings near the "
        "defaults (and the front below holds few encoders), the verdict does not hinge on the "
        "weights; if several encoders take turns, it does.",
    )  # fmt: skip
    if b.sweep is None or b.front is None:
        s.parts.append(note_html(b.missing.get("weights", "not available")))
        return s
    s.parts.append(stats_html(_headline(b.sweep_headline)))
    s.parts.append(figure_html(weights_figure(b.sweep, d.board, b.front, w.fig_dir),
                               "First-place shares and Pareto front"))  # fmt: skip
    on = b.front.loc[b.front["on_front"], "encoder"].tolist()
    s.parts.append(f'<p class="legend">Pareto front (no other encoder is at least as good on '
                   f"all four axes and better on one): {esc(', '.join(on))}. Weights are drawn "
                   "uniformly on the simplex, and uniformly on its part within ±0.1 of the "
                   "defaults (rejection sampling: nothing clipped or renormalised); the rank "
                   "range is over all draws of a region.</p>")  # fmt: skip
    rels = [w.csv(b.sweep, "weight_sensitivity"), w.csv(b.front, "pareto_front")]
    s.parts.append(files_html(rels))
    return s
