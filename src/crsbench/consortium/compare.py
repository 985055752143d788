"""Which site summaries may be pooled: the same scale, the same question, the same weights.

Summaries are refused together when they differ in the anchors version, the protocol versions,
the task or the label set, or when the same encoder ran with different weights (the weight
files' sha256 from each site's weights lock). The first summary is the reference; every
difference is named with both sites, the field and both values, all in one error.
"""

from __future__ import annotations

from collections.abc import Sequence

from crsbench.consortium.summary import SiteSummary
from crsbench.core.errors import DataError

#: Site-level fields every summary must share.
SHARED_FIELDS: tuple[str, ...] = ("anchors_version", "protocol", "task", "labels")


def _weights_text(w: dict[str, str] | None) -> str:
    if w is None:
        return "no weight files"
    return ", ".join(f"{f} sha256 {h}" for f, h in sorted(w.items()))


def differences(summaries: Sequence[SiteSummary]) -> list[str]:
    """Every reason the summaries may not be pooled together (empty when they may)."""
    out: list[str] = []
    names = [s.site for s in summaries]
    for name in sorted({n for n in names if names.count(n) > 1}):
        out.append(f"site {name!r} appears {names.count(name)} times (site names must differ)")
    ref = summaries[0]
    for s in summaries[1:]:
        for f in SHARED_FIELDS:
            a, b = getattr(ref, f), getattr(s, f)
            if a != b:
                out.append(f"site {s.site!r}: {f} is {b!r}, site {ref.site!r} has {a!r}")
    first: dict[str, SiteSummary] = {}
    for s in summaries:
        for e in s.encoders:
            seen = first.setdefault(e.encoder, s)
            other = seen.encoder(e.encoder)
            if seen is not s and other is not None and other.weights != e.weights:
                out.append(f"site {s.site!r}: weights of encoder {e.encoder!r} are "
                           f"{_weights_text(e.weights)}; site {seen.site!r} ran "
                           f"{_weights_text(other.weights)}")  # fmt: skip
    return out


def check_comparable(summaries: Sequence[SiteSummary]) -> None:
    """Refuse summaries that may not be pooled together, naming each site and field.

    Raises
    ------
    DataError
        Fewer than two summaries, or any of :func:`differences`.
    """
    if len(summaries) < 2:
        raise DataError(f"combine needs the summaries of at least two sites. Got {len(summaries)}.")
    problems = differences(summaries)
    if problems:
        raise DataError("these site summaries cannot be pooled:\n  - " + "\n  - ".join(problems)
                        + "\nEvery site must profile with the same crsbench protocol, anchors, "
                        "label set and weights (docs/consortium.md).")  # fmt: skip
