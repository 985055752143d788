"""Finding weight files without surprises, and loading them safely.

Order of lookup for every file: the ``weights_path`` given to :func:`crsbench.encoders.build`
(a file, or a folder holding the file), then ``$CRSBENCH_WEIGHTS_DIR/<encoder>/<file>``, then
the local Hugging Face cache, then the hub itself unless ``HF_HUB_OFFLINE=1``. Missing weights
raise one :class:`EncoderError` that lists every place that was tried and where to put them.

Loading: safetensors when the file is one, otherwise ``torch.load(..., weights_only=True)``
(no pickled code runs); a file that needs more than plain tensors is refused with advice.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crsbench.core.errors import EncoderError

if TYPE_CHECKING:
    import torch

WEIGHTS_ENV = "CRSBENCH_WEIGHTS_DIR"


def weights_dir() -> Path | None:
    """The folder named by ``$CRSBENCH_WEIGHTS_DIR``, or None when unset."""
    value = os.environ.get(WEIGHTS_ENV)
    return Path(value).expanduser() if value else None


def hub_offline() -> bool:
    """True when ``HF_HUB_OFFLINE`` is set to a true value."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}


def _local_candidates(name: str, filename: str, weights_path: str | Path | None) -> list[Path]:
    out: list[Path] = []
    if weights_path is not None:
        p = Path(weights_path).expanduser()
        out.append(p / filename if p.is_dir() else p)
    root = weights_dir()
    if root is not None:
        out += [root / name / filename, root / filename]
    return out


def cached_hub_file(repo_id: str, filename: str, revision: str | None = None) -> Path | None:
    """Path of ``filename`` in the local HF cache, or None (never touches the network)."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # pragma: no cover - huggingface_hub ships with timm
        return None
    hit = try_to_load_from_cache(repo_id, filename, revision=revision)
    return Path(hit) if isinstance(hit, str) else None


def missing_weights_error(
    name: str, filenames: Iterable[str], tried: list[str], hint: str
) -> EncoderError:
    """The one error raised when an encoder's weights cannot be found."""
    files = ", ".join(filenames)
    where = "\n  - ".join(tried) if tried else "(nothing)"
    env = os.environ.get(WEIGHTS_ENV) or f"${WEIGHTS_ENV} (unset)"
    return EncoderError(
        f"weights for encoder {name!r} not found (file(s): {files}).\n"
        f"Looked in:\n  - {where}\n"
        f"Put them in one of: the Hugging Face cache (run `huggingface-cli download` on a machine "
        f"with network, then copy ~/.cache/huggingface), {env}/{name}/, or pass "
        f"weights_path=... (config key `weights_path`). {hint}".rstrip()
    )


def find_file(
    name: str,
    filename: str,
    *,
    weights_path: str | Path | None = None,
    repo_id: str | None = None,
    revision: str | None = None,
    hint: str = "",
    download: bool = True,
) -> Path:
    """Locate one weight file (see module docstring for the order) or raise EncoderError."""
    tried: list[str] = []
    for cand in _local_candidates(name, filename, weights_path):
        tried.append(str(cand))
        if cand.is_file():
            return cand
    if repo_id is not None:
        tried.append(f"HF cache {repo_id}/{filename}@{revision or 'main'}")
        hit = cached_hub_file(repo_id, filename, revision)
        if hit is not None:
            return hit
        if download and not hub_offline():
            tried.append(f"HF hub {repo_id} (download)")
            try:
                from huggingface_hub import hf_hub_download

                return Path(hf_hub_download(repo_id, filename, revision=revision))
            except Exception as exc:  # network, gating, missing file: all one message
                tried[-1] += f" failed: {type(exc).__name__}"
    raise missing_weights_error(name, [filename], tried, hint)


def file_available(
    name: str, filename: str, repo_id: str | None = None, revision: str | None = None
) -> bool:
    """True if :func:`find_file` would succeed without any download."""
    try:
        find_file(name, filename, repo_id=repo_id, revision=revision, download=False)
    except EncoderError:
        return False
    return True


def sha256_file(path: str | Path, chunk: int = 1 << 22) -> str:
    """sha256 hex digest of a file, read in chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def verify_sha256(path: Path, expected: str | None) -> None:
    """Raise EncoderError when ``expected`` is set and the file's sha256 differs."""
    if expected is None:
        return
    got = sha256_file(path)
    if got != expected:
        raise EncoderError(
            f"weight file {path} has the wrong sha256: must be {expected}. Got {got} instead "
            "(corrupt or different download; delete it and fetch it again)."
        )


def load_state_dict(path: str | Path) -> dict[str, Any]:
    """Load a checkpoint without executing pickled code.

    ``.safetensors`` files go through safetensors; anything else through
    ``torch.load(map_location="cpu", weights_only=True)`` with ``argparse.Namespace`` (stored
    by MAE-style training scripts, inert) allowed.
    """
    import argparse

    import torch

    path = Path(path)
    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        return load_file(str(path), device="cpu")
    try:
        with torch.serialization.safe_globals([argparse.Namespace]):
            obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:
        raise EncoderError(
            f"checkpoint {path} cannot be loaded with torch.load(weights_only=True): {exc}. "
            "crsbench never unpickles arbitrary objects. If you trust the file, convert it once "
            "in a separate process: `sd = torch.load(p, weights_only=False)['model']; "
            "safetensors.torch.save_file(sd, 'model.safetensors')` and point weights_path at it."
        ) from exc
    if not isinstance(obj, dict):
        raise EncoderError(
            f"checkpoint {path} must hold a dict of tensors. Got {type(obj).__name__} instead."
        )
    return obj


class ShardedTensors(Mapping[str, Any]):
    """Every tensor key of a safetensors checkpoint folder, read lazily.

    The keys come from ``model.safetensors.index.json`` when the folder has one (no shard is
    opened to list them), else from the headers of its ``*.safetensors`` files; a tensor is
    read from its shard only when asked for, so shards whose keys are never used (a language
    model) are never opened. A key stored in two files is refused.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        index = folder / "model.safetensors.index.json"
        if index.is_file():
            weight_map = json.loads(index.read_text())["weight_map"]
            self._where = {k: folder / f for k, f in weight_map.items()}
            return
        from safetensors import safe_open

        self._where = {}
        for file in sorted(folder.glob("*.safetensors")):
            with safe_open(str(file), framework="pt", device="cpu") as fh:
                for key in fh.keys():
                    if key in self._where:
                        raise EncoderError(
                            f"key {key!r} is stored twice in {folder}: in "
                            f"{self._where[key].name} and {file.name} (two copies of a model?)"
                        )
                    self._where[key] = file

    def __getitem__(self, key: str) -> Any:
        from safetensors import safe_open

        with safe_open(str(self._where[key]), framework="pt", device="cpu") as fh:
            return fh.get_tensor(key)

    def __iter__(self) -> Iterator[str]:
        return iter(self._where)

    def __len__(self) -> int:
        return len(self._where)


def state_dict_sha256(module: torch.nn.Module) -> str:
    """sha256 over (name, dtype, shape, bytes) of every tensor of ``module``, in sorted order."""
    h = hashlib.sha256()
    state = module.state_dict()
    for key in sorted(state):
        t = state[key].detach().cpu().contiguous()
        h.update(f"{key}|{t.dtype}|{tuple(t.shape)}|".encode())
        h.update(t.reshape(-1).view(_uint8()).numpy().tobytes())
    return h.hexdigest()


def _uint8() -> torch.dtype:
    import torch

    return torch.uint8


def files_sha256(paths: Iterable[Path]) -> str:
    """Combined sha256 of several weight files (each file's digest, in the given order)."""
    h = hashlib.sha256()
    for p in paths:
        h.update(f"{Path(p).name}:{sha256_file(p)}\n".encode())
    return h.hexdigest()


def hub_available(
    name: str, repo_id: str, filenames: Iterable[str], revision: str | None = None
) -> bool:
    """All ``filenames`` found locally ($CRSBENCH_WEIGHTS_DIR/<name>/ or the HF cache)."""
    return all(file_available(name, f, repo_id=repo_id, revision=revision) for f in filenames)
