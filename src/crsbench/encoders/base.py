"""The :class:`Encoder` object: frozen module, preprocessing, and layer taps from one pass."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crsbench.core.errors import EncoderError
from crsbench.encoders.card import EncoderCard, tap_index
from crsbench.encoders.preprocess import Preprocessing, preprocess
from crsbench.protocol import LAYER_DEPTHS

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class BuildContext:
    """What :func:`crsbench.encoders.build` asks a backend for."""

    card: EncoderCard
    pretrained: bool = True
    tiny: bool = False
    weights_path: str | Path | None = None
    allow_remote_code: bool = False

    @property
    def load_weights(self) -> bool:
        """Load weights when pretrained (full size) or when a file is given (tiny round trip)."""
        return self.weights_path is not None or (self.pretrained and not self.tiny)


@dataclass
class Backbone:
    """What a backend returns.

    Attributes
    ----------
    module : torch.nn.Module
        ``module(x)`` returns the card's embedding ``N×D`` (depth 1.0).
    blocks : sequence of torch.nn.Module
        The depth-ordered units (transformer blocks, CNN stages); the tap at fraction ``f`` is
        the output of ``blocks[round_half_up(f * len(blocks)) - 1]``, caught by a forward hook.
    pool : callable
        Turns a hooked block output into ``N×D_l`` (CLS token after the final norm for ViTs,
        global average for CNNs, token mean for models without a CLS token).
    input_size : int
        Side of the square input this build expects (tiny builds use a small one).
    weight_files : tuple of Path
        Files the weights came from (hashed for ``weights_hash``); empty for random/tiny builds.
    concurrent_forwards : bool
        Whether ``module(x)`` may run in two threads at once (on CPU the extraction runs a few
        forward passes side by side). True for modules whose forward keeps no state between
        calls (every timm, Hugging Face and open_clip model in eval mode); set False for one
        that does.
    """

    module: Any
    blocks: Sequence[Any]
    pool: Callable[[Any], Any]
    input_size: int
    weight_files: tuple[Path, ...] = field(default_factory=tuple)
    concurrent_forwards: bool = True


def preprocessing_of(card: EncoderCard, input_size: int) -> Preprocessing:
    """The :class:`Preprocessing` a card asks for, at ``input_size``."""
    return Preprocessing(
        input_size=input_size,
        interpolation=card.interpolation,
        resize_mode=card.resize_mode,
        crop_pct=card.crop_pct,
        crop_rounding=card.crop_rounding,
        mean=card.mean,
        std=card.std,
        pad_fill=card.pad_fill,
        antialias=card.antialias,
        intensity=card.intensity,
        luma=card.luma,
        grey_pad_fill=card.grey_pad_fill,
        requantise=card.requantise,
    )


def _block_output(out: Any) -> Any:
    import torch

    if isinstance(out, torch.Tensor):
        return out
    if isinstance(out, (tuple, list)) or hasattr(out, "__getitem__"):
        return out[0]
    raise EncoderError(f"cannot read a layer tap from a block output of type {type(out).__name__}")


class Encoder:
    """A frozen image encoder with its preprocessing and layer taps.

    Attributes
    ----------
    card : EncoderCard
    module : torch.nn.Module
        Eval mode, ``requires_grad=False``; ``module(x)`` gives the depth-1.0 embedding.
    device : torch.device
    input_size : int
        Input side of *this* build (``card.input_size`` unless ``tiny``).
    preprocess_hash : str
    concurrent_forwards : bool
        Whether :meth:`forward_features` may run in two threads at once (the backbone's flag).
    """

    def __init__(self, card: EncoderCard, backbone: Backbone, device: str = "cpu") -> None:
        import torch

        self.card = card
        self.device = torch.device(device)
        self.module = backbone.module.to(self.device).eval()
        for p in self.module.parameters():
            p.requires_grad_(False)
        self._blocks = list(backbone.blocks)
        self._pool = backbone.pool
        self._weight_files = backbone.weight_files
        self.input_size = backbone.input_size
        self.concurrent_forwards = bool(backbone.concurrent_forwards)
        self.preprocessing = preprocessing_of(card, backbone.input_size)
        self.preprocess_hash = self.preprocessing.sha256()
        self._weights_hash: str | None = None
        self._tap_dims: dict[float, int] | None = None
        if not self._blocks:
            raise EncoderError(f"encoder {card.name!r}: backend returned no blocks to tap")

    def __repr__(self) -> str:
        return f"Encoder({self.card.name!r}, input_size={self.input_size}, device={self.device})"

    @property
    def n_blocks(self) -> int:
        """Number of tappable depth units."""
        return len(self._blocks)

    def tap_indices(self) -> dict[float, int]:
        """Block index used for each depth fraction."""
        return {d: tap_index(d, self.n_blocks) for d in LAYER_DEPTHS}

    @property
    def weights_hash(self) -> str:
        """sha256 of the weight files (real weights) or of the state dict (random/tiny)."""
        if self._weights_hash is None:
            from crsbench.encoders.weights import files_sha256, state_dict_sha256

            if self._weight_files:
                self._weights_hash = files_sha256(self._weight_files)
            else:
                self._weights_hash = state_dict_sha256(self.module)
        return self._weights_hash

    def set_input_size(self, size: int | None) -> Encoder:
        """Run at another input side (a config override); the preprocessing hash follows.

        Convolutional encoders and ViTs built with a dynamic image size accept any side.
        """
        if size is None or int(size) == self.input_size:
            return self
        self.input_size = int(size)
        self.preprocessing = dataclasses.replace(self.preprocessing, input_size=int(size))
        self.preprocess_hash = self.preprocessing.sha256()
        return self

    def use_recipe(self, name: str | None) -> Encoder:
        """Preprocess with the card's recipe ``name`` (None: keep the current one).

        The card and the preprocessing hash follow, so features of two recipes never share a
        cache key.
        """
        card = self.card.with_recipe(name)
        if card is not self.card:
            self.card = card
            self.preprocessing = preprocessing_of(card, self.input_size)
            self.preprocess_hash = self.preprocessing.sha256()
        return self

    def preprocess(self, images: torch.Tensor) -> torch.Tensor:
        """uint8 ``N×C×H×W`` (C = 1 or 3, any device) → normalised float ``N×3×S×S``."""
        return preprocess(images, self.preprocessing)

    def forward_features(
        self, x: torch.Tensor, depths: Sequence[float] = (1.0,)
    ) -> dict[float, torch.Tensor]:
        """Features at the requested depth fractions from ONE forward pass.

        Parameters
        ----------
        x : torch.Tensor
            Preprocessed batch ``N×3×S×S`` (output of :meth:`preprocess`).
        depths : sequence of float
            Subset of ``(0.25, 0.5, 0.75, 1.0)``.

        Returns
        -------
        dict
            ``{depth: float32 N×D_depth}``; depth 1.0 is the card's embedding.
        """
        import torch

        bad = [d for d in depths if d not in LAYER_DEPTHS]
        if bad or not depths:
            raise EncoderError(
                f"depths must be a non-empty subset of {LAYER_DEPTHS}. Got {list(depths)} instead."
            )
        wanted = sorted(set(float(d) for d in depths))
        caught: dict[float, torch.Tensor] = {}
        handles = []
        caller = threading.get_ident()  # a pass in another thread fires these hooks too
        for d in wanted:
            if d == 1.0:
                continue
            block = self._blocks[tap_index(d, self.n_blocks)]

            def hook(_m: Any, _inp: Any, out: Any, d: float = d) -> None:
                if threading.get_ident() == caller:
                    caught[d] = _block_output(out)

            handles.append(block.register_forward_hook(hook))
        try:
            with torch.inference_mode():
                final = self.module(x)
                out = {d: self._pool(caught[d]).float() for d in caught}
        finally:
            for h in handles:
                h.remove()
        if 1.0 in wanted:
            out[1.0] = final.float()
        return {d: out[d] for d in wanted}

    @property
    def tap_dims(self) -> dict[float, int]:
        """Feature width at each depth (measured once with a 1-image probe)."""
        if self._tap_dims is None:
            import torch

            probe = torch.zeros(1, 3, self.input_size, self.input_size, device=self.device)
            feats = self.forward_features(probe, LAYER_DEPTHS)
            self._tap_dims = {d: int(f.shape[1]) for d, f in feats.items()}
        return self._tap_dims

    @property
    def embed_dim(self) -> int:
        """Width of the depth-1.0 embedding of this build (``card.embed_dim`` when full size)."""
        return self.tap_dims[1.0]
