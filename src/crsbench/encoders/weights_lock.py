"""The weights lock: which weight files each family was run with, checked on every later run.

The first run that loads a family writes its entry to ``weights.lock`` next to the results
(JSON, indented): the card's source, the resolved revision (the Hugging Face snapshot commit
when the files come from the hub cache, else the card's revision, else ``"local"``), and each
file's name and sha256. A later run (or ``profile``) whose files hash differently is refused,
naming the file and both hashes, unless it is told to update the lock
(``--update-weights-lock``). Where a card carries the authors' published MD5 (BioViL), the
file is checked against it while it is hashed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crsbench.core.diskio import write_text_atomic
from crsbench.core.errors import EncoderError

if TYPE_CHECKING:
    from crsbench.encoders.base import Encoder
    from crsbench.encoders.card import EncoderCard

LOCK_FILE = "weights.lock"
LOCK_VERSION = 1
UPDATE_FLAG = "--update-weights-lock"


def _digests(path: Path, chunk: int = 1 << 22) -> tuple[str, str]:
    """(sha256, md5) of a file in one read."""
    sha, md5 = hashlib.sha256(), hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            sha.update(block)
            md5.update(block)
    return sha.hexdigest(), md5.hexdigest()


def _revision(card: EncoderCard, files: Sequence[Path]) -> str:
    for p in files:
        parts = Path(p).parts
        if "snapshots" in parts and parts.index("snapshots") + 1 < len(parts):
            return parts[parts.index("snapshots") + 1]
    return card.revision or "local"


def lock_entry(card: EncoderCard, files: Sequence[Path]) -> dict[str, Any]:
    """The lock entry of one family loaded from ``files``.

    Raises
    ------
    EncoderError
        A file named like the card's first weight file does not have the card's published MD5.
    """
    entries = []
    for p in files:
        sha, md5 = _digests(Path(p))
        published = card.weights_md5
        if published and card.weight_files and Path(p).name == card.weight_files[0]:
            if md5 != published:
                raise EncoderError(
                    f"weight file {p} of encoder {card.name!r} has MD5 {md5}; the authors "
                    f"publish {published} (corrupt or different download: fetch it again)"
                )
        entries.append({"file": Path(p).name, "sha256": sha})
    return {"source": card.source, "revision": _revision(card, files), "files": entries}


def encoder_lock_entry(encoder: Encoder) -> dict[str, Any] | None:
    """:func:`lock_entry` of a built encoder; None for random or tiny builds (no files)."""
    files = encoder._weight_files
    return lock_entry(encoder.card, files) if files else None


def read_lock(path: Path) -> dict[str, Any]:
    """The families of a lock file (empty when there is none)."""
    if not path.is_file():
        return {}
    try:
        doc = json.loads(path.read_text())
        return dict(doc["families"])
    except (ValueError, KeyError, TypeError) as exc:
        raise EncoderError(f"{path} is not a crsbench weights lock ({exc})") from exc


def _differences(name: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    before = {f["file"]: f["sha256"] for f in old.get("files", ())}
    after = {f["file"]: f["sha256"] for f in new.get("files", ())}
    out = []
    for file in sorted(set(before) | set(after)):
        a, b = before.get(file, "(absent)"), after.get(file, "(absent)")
        if a != b:
            out.append(f"{name}: {file} locked sha256 {a}, now {b}")
    return out


def check_and_write(
    path: Path, entries: Mapping[str, Mapping[str, Any]], update: bool = False
) -> dict[str, Any]:
    """Compare ``entries`` with the lock at ``path``, then write the merged lock.

    Parameters
    ----------
    path : Path
        The ``weights.lock`` file (created when absent).
    entries : mapping
        Family name → :func:`lock_entry` of this run.
    update : bool
        Replace differing entries instead of refusing.

    Returns
    -------
    dict
        Every family of the lock after this run.

    Raises
    ------
    EncoderError
        Some family's files differ from the lock and ``update`` is False; each file is named
        with both hashes.
    """
    locked = read_lock(path)
    problems = [
        line
        for name, entry in entries.items()
        if name in locked
        for line in _differences(name, locked[name], entry)
    ]
    if problems and not update:
        raise EncoderError(
            f"the weights differ from {path}:\n  - "
            + "\n  - ".join(problems)
            + f"\nIf the new weights are intended, run again with {UPDATE_FLAG}."
        )
    merged = {**locked, **{k: dict(v) for k, v in entries.items()}}
    doc = {"version": LOCK_VERSION, "families": dict(sorted(merged.items()))}
    write_text_atomic(path, json.dumps(doc, indent=2) + "\n")
    return merged
