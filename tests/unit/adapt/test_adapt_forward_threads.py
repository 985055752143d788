"""The adapted model's predictions with forward passes side by side on CPU: the bytes of one
pass at a time (same torch threads per pass), in the source's order, for every condition."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")

from crsbench.adapt import LoraClassifier, wrap_with_lora  # noqa: E402
from crsbench.adapt import model as adapt_model  # noqa: E402
from crsbench.encoders import build  # noqa: E402


class _Conditions:
    """A ``B×n_cond×3×S×S`` source: each condition a different brightening of the images."""

    def __init__(self, images: torch.Tensor, n_conditions: int) -> None:
        self.images, self.n_conditions = images, n_conditions

    def __getitem__(self, rows: np.ndarray) -> torch.Tensor:
        base = self.images[torch.as_tensor(rows)]
        return torch.stack([(base + 20 * k).clamp(0, 255) for k in range(self.n_conditions)], 1)


def _predictions(name: str, n_forward: int, monkeypatch) -> tuple[np.ndarray, list[np.ndarray]]:
    monkeypatch.setattr(adapt_model, "forward_threads", lambda *a: n_forward)
    torch.manual_seed(0)
    enc = build(name, tiny=True)
    wrap_with_lora(enc, rank=4, alpha=8, dropout=0.1)
    model = LoraClassifier(enc, 3, "multiclass")
    images = torch.from_numpy(np.random.default_rng(0).integers(0, 256, (21, 3, 32, 32), np.uint8))
    rows = np.arange(21)[::-1].copy()
    single = adapt_model.predict_proba(model, images, rows, batch_size=4)
    per_condition = adapt_model.predict_proba_conditions(
        model, _Conditions(images, 3), rows, batch_size=4
    )
    return single, per_condition


@pytest.mark.parametrize("name", ["random_vit", "random_cnn"])
def test_side_by_side_predictions_equal_one_pass_at_a_time(name, monkeypatch):
    saved = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one, one_cond = _predictions(name, 1, monkeypatch)
        torch.set_num_threads(2)  # two passes at once, one torch thread each
        two, two_cond = _predictions(name, 2, monkeypatch)
    finally:
        torch.set_num_threads(saved)
    assert one.shape == (21, 3) and len(one_cond) == 3
    assert np.array_equal(one, two)
    for a, b in zip(one_cond, two_cond, strict=True):
        assert np.array_equal(a, b)
    assert not np.array_equal(one_cond[0], one_cond[2])  # conditions kept apart
