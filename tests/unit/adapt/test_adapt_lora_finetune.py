"""LoRA fine-tuning of a tiny random ViT on synthetic tensors (CPU, seconds)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")

from crsbench.adapt import (  # noqa: E402
    LoraClassifier,
    LoraTrainSettings,
    load_checkpoint,
    lora_parameter_names,
    merged_copy,
    predict_proba,
    save_checkpoint,
    train_lora,
    wrap_with_lora,
)
from crsbench.core.errors import CacheError, EncoderError  # noqa: E402
from crsbench.encoders import build  # noqa: E402


def _data(n: int, seed: int) -> tuple[torch.Tensor, np.ndarray]:
    """3 classes told apart by which third of the image is bright."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 3
    img = rng.integers(0, 80, size=(n, 3, 32, 32)).astype(np.uint8)
    for i, c in enumerate(y):
        img[i, :, :, c * 10 : c * 10 + 12] += 150
    return torch.from_numpy(img), y.astype(np.int64)


def _model() -> LoraClassifier:
    enc = build("random_vit", tiny=True)
    wrap_with_lora(enc, rank=4, alpha=8, dropout=0.1)
    return LoraClassifier(enc, 3, "multiclass")


def _base_state(module: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {
        k.replace(".base_layer", ""): v.clone()
        for k, v in module.state_dict().items()
        if "lora_" not in k
    }


SETTINGS = LoraTrainSettings(epochs=3, lrs=(3e-3, 1e-2), batch_size=16, patience=3)


@pytest.fixture(scope="module")
def data():
    X, y = _data(48, 0)
    Xv, yv = _data(24, 1)
    return X, y, Xv, yv


def _train_loss(model: LoraClassifier, X: torch.Tensor, y: np.ndarray) -> float:
    model.eval()
    with torch.no_grad():
        return float(model.loss(model.logits_from_images(X), torch.as_tensor(y)))


def test_only_lora_and_head_change_and_loss_goes_down(data, tmp_path):
    X, y, Xv, yv = data
    enc = build("random_vit", tiny=True)
    before = _base_state(enc.module)
    wrap_with_lora(enc, rank=4, alpha=8, dropout=0.1)
    assert enc.module.crsbench_lora_targets == [
        f"blocks.{b}.attn.{p}" for b in range(4) for p in ("qkv", "proj")
    ]
    model = LoraClassifier(enc, 3, "multiclass")
    model.reset(123)
    init = model.trainable_state()
    loss0 = _train_loss(model, X, y)
    fit = train_lora(model, X, np.arange(48), y, Xv, np.arange(24), yv, settings=SETTINGS,
                     seed=0, ckpt_dir=tmp_path, progress=False)  # fmt: skip
    after = _base_state(enc.module)
    assert before.keys() == after.keys()
    assert all(torch.equal(before[k], after[k]) for k in before), "base weights changed"
    trained = model.trainable_state()
    assert set(trained) == set(init)
    assert set(lora_parameter_names(model)) | {"head.weight", "head.bias"} == set(trained)
    changed = [k for k in trained if not torch.equal(trained[k], init[k])]
    assert {k for k in trained if "lora_B" in k} <= set(changed)
    assert {"head.weight", "head.bias"} <= set(changed)
    assert _train_loss(model, X, y) < 0.8 * loss0
    assert fit.lr in SETTINGS.lrs and 1 <= fit.best_epoch <= 3
    assert fit.best_val_auroc == max(fit.val_auroc_by_lr.values())
    assert len(fit.history) == 6  # 2 learning rates x 3 epochs (no early stop at patience 3)


def test_adapter_saves_and_reloads_to_identical_outputs(data, tmp_path):
    X, y, Xv, yv = data
    model = _model()
    train_lora(model, X, np.arange(48), y, Xv, np.arange(24), yv,
               settings=LoraTrainSettings(epochs=1, lrs=(1e-2,), batch_size=16), progress=False)  # fmt: skip
    path = save_checkpoint(tmp_path / "adapter.pt", model.trainable_state())
    p1 = predict_proba(model, Xv, np.arange(24))
    fresh = _model()
    assert not np.array_equal(predict_proba(fresh, Xv, np.arange(24)), p1)
    fresh.load_trainable_state(load_checkpoint(path))
    np.testing.assert_array_equal(predict_proba(fresh, Xv, np.arange(24)), p1)
    np.testing.assert_allclose(p1.sum(axis=1), 1.0, rtol=1e-6)


class Killed(RuntimeError):
    pass


def test_resume_after_kill_is_bit_identical(data, tmp_path):
    X, y, Xv, yv = data
    args = (X, np.arange(48), y, Xv, np.arange(24), yv)
    ref = _model()
    fit_ref = train_lora(ref, *args, settings=SETTINGS, seed=7, ckpt_dir=tmp_path / "ref",
                         progress=False)  # fmt: skip

    def kill(lr_index: int, epoch: int) -> None:
        if (lr_index, epoch) == (1, 1):
            raise Killed

    with pytest.raises(Killed):
        train_lora(_model(), *args, settings=SETTINGS, seed=7, ckpt_dir=tmp_path / "run",
                   progress=False, on_epoch_end=kill)  # fmt: skip
    assert load_checkpoint(tmp_path / "run" / "lr1.pt")["epoch"] == 1
    resumed = _model()
    seen: list[tuple[int, int]] = []
    fit = train_lora(resumed, *args, settings=SETTINGS, seed=7, ckpt_dir=tmp_path / "run",
                     progress=False, on_epoch_end=lambda i, e: seen.append((i, e)))  # fmt: skip
    assert seen == [(1, 2), (1, 3)]  # only the epochs after the kill ran again
    a, b = ref.trainable_state(), resumed.trainable_state()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert fit.history == fit_ref.history and fit.lr == fit_ref.lr


def test_different_seeds_give_different_adapters(data):
    X, y, Xv, yv = data
    s = LoraTrainSettings(epochs=1, lrs=(1e-2,), batch_size=16)
    states = []
    for seed in (0, 1):
        m = _model()
        train_lora(m, X, np.arange(48), y, Xv, np.arange(24), yv, settings=s, seed=seed,
                   progress=False)  # fmt: skip
        states.append(m.trainable_state()["head.weight"])
    assert not torch.equal(*states)


def test_pixel_encoder_has_no_lora():
    with pytest.raises(EncoderError, match="no weights: LoRA is not available"):
        wrap_with_lora(build("pixel"))


def test_bypassed_and_mha_targets_are_handled():
    beit = build("panderm", pretrained=False, tiny=True)
    wrap_with_lora(beit)
    # timm BEiT reads qkv.weight directly: those adapters would never train, so they are dropped
    assert all(t.endswith("attn.proj") for t in beit.module.crsbench_lora_targets)
    assert "dropped" in beit.module.crsbench_lora_source
    clip = build("clip", pretrained=False, tiny=True)
    wrap_with_lora(clip)
    # out_proj inside nn.MultiheadAttention is moved up to the attention module itself
    assert "transformer.resblocks.0.attn" in clip.module.crsbench_lora_targets
    with pytest.raises(EncoderError, match="already carries LoRA"):
        wrap_with_lora(clip)


def test_explicit_targets_and_bad_settings():
    enc = build("random_vit", tiny=True)
    with pytest.raises(EncoderError, match="must match a module"):
        wrap_with_lora(enc, target_modules=["no.such.layer"])
    with pytest.raises(EncoderError, match="rank >= 1"):
        wrap_with_lora(enc, rank=0)
    wrap_with_lora(enc, target_modules=["blocks.0.attn.qkv"])
    assert enc.module.crsbench_lora_targets == ["blocks.0.attn.qkv"]


def test_bad_checkpoint_is_a_clear_error(tmp_path):
    bad = tmp_path / "lr0.pt"
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(CacheError, match="delete it"):
        load_checkpoint(bad)
    assert load_checkpoint(tmp_path / "missing.pt") is None


@pytest.mark.parametrize("name", ["random_vit", "random_cnn"])
def test_merged_copy_predicts_like_the_adapted_model_and_leaves_it_alone(data, name):
    from peft.tuners.lora import LoraLayer

    X, y, Xv, yv = data
    enc = build(name, tiny=True)
    wrap_with_lora(enc, rank=4, alpha=8, dropout=0.1)
    model = LoraClassifier(enc, 3, "multiclass")
    train_lora(model, X, np.arange(48), y, Xv, np.arange(24), yv,
               settings=LoraTrainSettings(epochs=1, lrs=(1e-2,), batch_size=16), progress=False)  # fmt: skip
    before = {k: v.clone() for k, v in model.state_dict().items()}
    p = predict_proba(model, Xv, np.arange(24))
    twin = merged_copy(model)
    layers = [m for m in twin.modules() if isinstance(m, LoraLayer)]
    assert layers and all(m.merged for m in layers)
    assert not any(m.merged for m in model.modules() if isinstance(m, LoraLayer))
    np.testing.assert_allclose(predict_proba(twin, Xv, np.arange(24)), p, rtol=0, atol=1e-5)
    after = model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before), "the adapted model changed"
