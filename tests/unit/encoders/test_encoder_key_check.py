"""The one strict key check: grouping by module, allow-lists, prefix filters, shard reading."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file

from crsbench.core.errors import EncoderError
from crsbench.encoders.backends.common import load_checked, module_of, refuse_bad_keys
from crsbench.encoders.weights import ShardedTensors


def test_module_of_names_the_block_or_the_top_module() -> None:
    assert module_of("encoder.layer.1.attention.q_proj.weight") == "encoder.layer.1.*"
    assert module_of("fc_norm.weight") == "fc_norm.*"
    assert module_of("cls_token") == "cls_token"


def test_a_missing_block_is_one_group_truncated() -> None:
    keys = [f"blocks.1.k{i}" for i in range(18)] + ["cls_token"]
    with pytest.raises(EncoderError) as info:
        refuse_bad_keys(name="x", source="f.pth", missing=keys, unexpected=())
    msg = str(info.value)
    assert "missing keys [blocks.1.* (18 keys): blocks.1.k0, blocks.1.k1," in msg
    assert "(+14)" in msg and "cls_token (1 key): cls_token" in msg and "f.pth" in msg
    assert "unexpected keys" not in msg


def test_allow_lists_accept_only_what_they_name() -> None:
    refuse_bad_keys(
        name="x",
        source="f",
        missing=["fc_norm.weight"],
        unexpected=["decoder.0.weight"],
        allow_missing=["fc_norm.*"],
        ignore_unexpected=["decoder.*"],
    )
    with pytest.raises(EncoderError, match=r"unexpected keys \[teacher\.\* \(1 key\): teacher\.w"):
        refuse_bad_keys(
            name="x", source="f", missing=(), unexpected=["teacher.w"], ignore_unexpected=["d*"]
        )
    with pytest.raises(EncoderError, match=r"shape mismatches \[w \(1 key\): w must be \(2,\)"):
        refuse_bad_keys(
            name="x", source="f", missing=(), unexpected=(), mismatched=[("w", (2,), (3,))]
        )


def test_prefix_filter_refuses_keys_outside_it() -> None:
    lin = torch.nn.Linear(2, 2)
    sd = {f"student.{k}": v for k, v in lin.state_dict().items()}
    copy = {f"teacher.{k}": v + 1 for k, v in lin.state_dict().items()}
    load_checked(lin, sd, name="x", source="f", prefix="student.")
    with pytest.raises(EncoderError, match=r"teacher\.weight.*prefix 'student\.'"):
        load_checked(lin, {**sd, **copy}, name="x", source="f", prefix="student.")
    load_checked(
        lin,
        {**sd, **copy},
        name="x",
        source="f",
        prefix="student.",
        ignore_unexpected=["teacher.*"],
    )
    torch.testing.assert_close(lin.weight, sd["student.weight"])


def test_sharded_tensors_refuse_a_key_stored_twice(tmp_path: Path) -> None:
    save_file({"a": torch.zeros(1)}, tmp_path / "one.safetensors")
    save_file({"b": torch.ones(2)}, tmp_path / "two.safetensors")
    sd = ShardedTensors(tmp_path)
    assert sorted(sd) == ["a", "b"] and torch.equal(sd["b"], torch.ones(2))
    save_file({"a": torch.ones(1)}, tmp_path / "three.safetensors")
    with pytest.raises(EncoderError, match="stored twice"):
        ShardedTensors(tmp_path)
