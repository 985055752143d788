"""The ``missing`` notes of the axes tables: why a value is NaN, in words a reader can act on.

A per-seed note reads ``"L: fraction 0.05 missing"`` or ``"R: conditions jpeg/3, rician/1
missing"``; a cell's note gathers them with the seeds they hold for
(``"R: condition jpeg/3 missing (seed 2)"``); an encoder's note prefixes each cell's note with
its dataset. Notes are joined with :data:`SEP`; an empty string means nothing is missing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

SEP = "; "


def listed(axis: str, noun: str, labels: Sequence[str], problem: str) -> str:
    """``"L: fraction 0.05 missing"`` / ``"L: fractions 0.05, 0.1 missing"``."""
    word = noun if len(labels) == 1 else f"{noun}s"
    return f"{axis}: {word} {', '.join(labels)} {problem}"


def join(notes: Iterable[str]) -> str:
    """Join non-empty notes with :data:`SEP`, keeping first-seen order, without repeats."""
    seen: dict[str, None] = {}
    for note in notes:
        for part in str(note).split(SEP) if note else ():
            if part:
                seen.setdefault(part, None)
    return SEP.join(seen)


def split(note: object) -> list[str]:
    """The parts of a joined note (``[]`` for an empty or missing one)."""
    if not isinstance(note, str) or not note:
        return []
    return [p for p in note.split(SEP) if p]


def by_seed(notes_per_seed: Iterable[tuple[object, str]]) -> str:
    """Cell note from ``(seed, joined note)`` pairs: each part once, with the seeds it holds for."""
    seeds_of: dict[str, list[str]] = {}
    for seed, note in notes_per_seed:
        for part in split(note):
            seeds_of.setdefault(part, []).append(str(seed))
    out = []
    for part, seeds in seeds_of.items():
        word = "seed" if len(seeds) == 1 else "seeds"
        out.append(f"{part} ({word} {', '.join(seeds)})")
    return SEP.join(out)
