"""The report's first screen, "In short": which encoder, how sure, and what would change the
answer, in three lines drawn from the leaderboard, the bootstrap and the weight sweep."""

from __future__ import annotations

import pandas as pd

from crsbench.report.beyond_data import BeyondData
from crsbench.report.data import ReportData
from crsbench.report.html import Section, esc

SECTION_ID = "in-short"


def _which(board: pd.DataFrame) -> str:
    scored = board[board["CRS"].notna()]
    leader = scored.iloc[0]
    by_auroc = scored.sort_values(["auroc", "encoder"], ascending=[False, True]).iloc[0]
    same = by_auroc["encoder"] == leader["encoder"]
    tail = ("it also leads on AUROC alone." if same
            else f"AUROC alone would pick {by_auroc['encoder']}.")  # fmt: skip
    return (f"<b>{esc(leader['encoder'])}</b> has the highest CRS ({leader['CRS']:.3f}) of "
            f"{len(scored)} scored encoders; {esc(tail)}")  # fmt: skip


def _how_sure(board: pd.DataFrame) -> str:
    scored = board[board["CRS"].notna()]
    leader = scored.iloc[0]
    if pd.isna(leader.get("tier")):
        return "No bootstrap was run (replicates 0): the ranking has no uncertainty attached."
    same = scored.loc[(scored["tier"] == leader["tier"])
                      & (scored["encoder"] != leader["encoder"]), "encoder"].tolist()  # fmt: skip
    p1 = f"It ranks first in {leader['p_rank1']:.0%} of bootstrap replicates"
    if not same:
        return f"{p1}, and no other encoder shares its tier (significantly ahead)."
    return (f"{p1}; {esc(', '.join(same))} {'is' if len(same) == 1 else 'are'} in the same "
            "tier (not significantly different).")  # fmt: skip


def _what_changes(d: ReportData, b: BeyondData) -> str:
    parts = []
    if b.sweep_headline:
        h = b.sweep_headline
        others = [e for e in h["near_default"]["ever_first"] if e != h["default_leader"]]
        parts.append(
            f"weights within ±{h['radius']:g} of the protocol's also crown {', '.join(others)}"
            if others else f"no weighting within ±{h['radius']:g} of the protocol's changes "
            "the leader"
        )  # fmt: skip
        parts.append(f"over all weightings {h['simplex']['most_often_first']} is first most "
                     f"often ({h['simplex']['share_first']:.0%})")  # fmt: skip
    if b.front is not None:
        on = b.front.loc[b.front["on_front"], "encoder"].tolist()
        parts.append(f"{len(on)} encoder{'s' if len(on) != 1 else ''} on the Pareto front")
    leader = d.board.iloc[0]
    if str(leader.get("pretraining_overlap") or ""):
        parts.append("the leader's pretraining data may include some of these datasets")
    if not parts:
        return "Nothing else was computed on this store."
    return esc("; ".join(parts)[:1].upper() + "; ".join(parts)[1:] + ".") + (
        ' Try your own weights <a href="#your-weights">below</a>.'
    )


def summary_section(d: ReportData, b: BeyondData) -> Section:
    """Three lines answering which encoder, how sure, and what would change the answer."""
    s = Section(SECTION_ID, "In short", "The answer first; the sections below show why.")
    if d.board["CRS"].notna().sum() == 0:
        s.parts.append('<p class="note">No encoder has a CRS on this store.</p>')
        return s
    items = (("Which encoder", _which(d.board)), ("How sure", _how_sure(d.board)),
             ("What would change it", _what_changes(d, b)))  # fmt: skip
    body = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in items)
    s.parts.append(f'<dl class="answer">{body}</dl>')
    return s
