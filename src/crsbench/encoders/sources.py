"""Where each encoder's weight files come from, checked without any download.

Each registered encoder's ``available_fn`` is one of these callables: calling it answers "are
the weights on this machine?" (local lookups only, see :mod:`crsbench.encoders.weights`), and
:meth:`places` says where a user must put the files, which is what ``crsbench doctor`` and the
preflight of ``crsbench run`` print.
"""

from __future__ import annotations

from dataclasses import dataclass

from crsbench.encoders.llava_projector import ProjectorWeights
from crsbench.encoders.weights import WEIGHTS_ENV, file_available, hub_available


@dataclass(frozen=True)
class HubWeights:
    """Files of one Hugging Face hub repository (found in the HF cache or the weights folder)."""

    name: str
    repo_id: str
    files: tuple[str, ...]
    revision: str | None = None
    #: The hub can fetch these files when the machine is online (gated repos need a token).
    downloadable: bool = True

    def __call__(self) -> bool:
        return hub_available(self.name, self.repo_id, self.files, self.revision)

    def places(self) -> list[str]:
        """Where to put the files, one sentence per option."""
        rev = f" --revision {self.revision}" if self.revision else ""
        return [
            f"Hugging Face cache: `huggingface-cli download {self.repo_id} "
            f"{' '.join(self.files)}{rev}` (then copy ~/.cache/huggingface to this machine)",
            f"${WEIGHTS_ENV}/{self.name}/ holding {', '.join(self.files)}",
        ]


@dataclass(frozen=True)
class LocalWeights:
    """Files that no hub serves: the user downloads them by hand (see the card's access note)."""

    name: str
    files: tuple[str, ...]
    downloadable: bool = False

    def __call__(self) -> bool:
        return all(file_available(self.name, f) for f in self.files)

    def places(self) -> list[str]:
        """Where to put the files, one sentence per option."""
        return [
            f"${WEIGHTS_ENV}/{self.name}/{', '.join(self.files)}",
            "the file's path as `weights_path:` of this encoder in the config",
        ]


@dataclass(frozen=True)
class AllWeights:
    """Several sources that must all be present (e.g. a vision tower plus a checkpoint)."""

    parts: tuple[HubWeights | LocalWeights | ProjectorWeights, ...]

    @property
    def downloadable(self) -> bool:
        return all(p.downloadable for p in self.parts)

    def __call__(self) -> bool:
        return all(p() for p in self.parts)

    def places(self) -> list[str]:
        """Where to put the files of every part that is still missing."""
        return [line for p in self.parts if not p() for line in p.places()]

    def reason(self) -> str | None:
        """Why the weights are not on this machine (each missing part), or None."""
        return unavailable_reason(self.parts)


def unavailable_reason(parts: tuple[object, ...]) -> str | None:
    """The reasons of the missing ``parts`` joined, or None when all are present."""
    found: list[str] = []
    for part in parts:
        why = getattr(part, "reason", None)
        if callable(why):
            text = why()
            if text:
                found.append(text)
        elif callable(part) and not part():
            files = ", ".join(getattr(part, "files", ()))
            found.append(f"{getattr(part, 'repo_id', 'local')} file(s) {files} not found locally")
    return "; ".join(found) or None
