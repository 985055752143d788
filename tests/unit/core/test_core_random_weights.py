"""The dry-run marker in encoder_revision and the refusal of score/report."""

from __future__ import annotations

import pytest

from crsbench.core.errors import StoreError
from crsbench.core.random_weights import dry_run_encoders, refuse_dry_run


def test_dry_run_encoders_are_found_by_their_revision():
    encoders = ["vit_b16", "vit_b16", "pixel"]
    revisions = ["random-weights|unpinned|weights-sha256:ab|precision:fp32",
                 "random-weights|unpinned|weights-sha256:ab|precision:fp32",
                 "unpinned|weights-sha256:cd|precision:fp32"]  # fmt: skip
    assert dry_run_encoders(encoders, revisions) == ["vit_b16"]
    with pytest.raises(StoreError, match=r"store S is a dry run: encoders vit_b16 .*--dry-run-ok"):
        refuse_dry_run(encoders, revisions, "S")
    refuse_dry_run(encoders[2:], revisions[2:], "S")  # real weights only: no error
