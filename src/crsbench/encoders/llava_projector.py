"""Where LLaVA-Med's ``mm_projector`` lives: the shard(s) its index file names.

LLaVA-Med v1.5 stores the projector (``model.mm_projector.{0,2}.{weight,bias}``) inside the
sharded Mistral checkpoint. ``model.safetensors.index.json`` maps every key to its shard, so
the projector's shard(s) are found without opening any shard; only they are downloaded, read
and hashed (they enter the feature-cache key and the weights lock), never the other shards.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from crsbench.core.errors import EncoderError
from crsbench.encoders.weights import WEIGHTS_ENV, cached_hub_file, weights_dir

LLAVA_REPO = "microsoft/llava-med-v1.5-mistral-7b"
PROJECTOR_PREFIX = "model.mm_projector."
INDEX = "model.safetensors.index.json"


def projector_shards(index: Path) -> tuple[str, ...]:
    """File names of the shards holding ``model.mm_projector.*``, from the index file.

    Raises
    ------
    EncoderError
        The index is unreadable, has no ``weight_map``, or names no projector key.
    """
    try:
        weight_map = json.loads(index.read_text())["weight_map"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise EncoderError(f"{index}: cannot read its 'weight_map' ({exc})") from exc
    shards = sorted({f for k, f in weight_map.items() if k.startswith(PROJECTOR_PREFIX)})
    if not shards:
        raise EncoderError(
            f"{index}: no key starts with {PROJECTOR_PREFIX!r}; is this a LLaVA-Med checkpoint?"
        )
    return tuple(shards)


def _local_index(name: str, revision: str | None) -> Path | None:
    root = weights_dir()
    if root is not None and (root / name / INDEX).is_file():
        return root / name / INDEX
    return cached_hub_file(LLAVA_REPO, INDEX, revision)


@dataclass(frozen=True)
class ProjectorWeights:
    """The projector shard(s) of LLaVA-Med, found through the index (no download)."""

    name: str
    revision: str | None = None
    downloadable: bool = True

    def reason(self) -> str | None:
        """Why the projector is not on this machine, or None when it is."""
        index = _local_index(self.name, self.revision)
        if index is None:
            return (
                f"{LLAVA_REPO}/{INDEX} not found locally (it says which shard holds the projector)"
            )
        try:
            shards = projector_shards(index)
        except EncoderError as exc:
            return str(exc)
        missing = [s for s in shards if not (index.parent / s).is_file()]
        if missing:
            return (
                f"the mm_projector shard(s) {', '.join(missing)} named by {index} are missing "
                f"(LLaVA-Med features need the projector)"
            )
        return None

    def __call__(self) -> bool:
        return self.reason() is None

    def places(self) -> list[str]:
        """Where to put the index and the projector shard(s)."""
        return [
            f"Hugging Face cache: `huggingface-cli download {LLAVA_REPO} {INDEX} config.json` and "
            "the shard(s) the index names for model.mm_projector.* (crsbench fetches them itself "
            "when online)",
            f"${WEIGHTS_ENV}/{self.name}/ holding {INDEX}, config.json and those shard(s)",
        ]


def projector_files(folder: Path) -> tuple[Path, ...]:
    """The projector shard paths of a LLaVA-Med folder (each must exist)."""
    index = folder / INDEX
    if not index.is_file():
        raise EncoderError(f"LLaVA-Med folder {folder} has no {INDEX}")
    paths = tuple(folder / s for s in projector_shards(index))
    missing = [p.name for p in paths if not p.is_file()]
    if missing:
        raise EncoderError(
            f"LLaVA-Med folder {folder}: projector shard(s) {', '.join(missing)} named by {INDEX} "
            "are missing"
        )
    return paths
