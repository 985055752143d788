"""The bad-image rule shared by `crsbench run` and `datasets check`: at most 1 % quarantined."""

from __future__ import annotations

import pytest

from crsbench.core.errors import DataError
from crsbench.datasets.bad_images import (
    MAX_BAD_FRACTION,
    bad_image_budget,
    refuse_bad_images,
    too_many_bad,
)
from crsbench.datasets.check import CheckReport, _judge_bad_files
from crsbench.datasets.files import FileProblem


def test_budget_is_the_floor_of_one_percent() -> None:
    assert MAX_BAD_FRACTION == 0.01
    assert [bad_image_budget(n) for n in (0, 99, 100, 199, 400, 480, 224316)] == [
        0, 0, 1, 1, 4, 4, 2243,
    ]  # fmt: skip
    assert not too_many_bad(4, 400) and too_many_bad(5, 400) and too_many_bad(1, 99)


def test_refusal_names_count_budget_and_files_literally() -> None:
    refuse_bad_images("isic2019", [("a.jpg", "truncated")], 100)  # within: nothing
    bad = [(f"/d/[red]{i}.jpg", "missing") for i in range(25)]
    with pytest.raises(DataError) as exc:
        refuse_bad_images("isic2019", bad, 400)
    msg = str(exc.value)
    assert "at most 1% of its 400 images (4)" in msg and "Got 25 instead" in msg
    assert "/d/[red]0.jpg (missing)" in msg and "... and 5 more" in msg


def _report(n_images: int, n_bad: int) -> CheckReport:
    report = CheckReport(name="isic2019", root="/d", n_images=n_images)
    report.file_problems = [FileProblem(i, f"/d/{i}.jpg", "truncated", "cut") for i in range(n_bad)]
    _judge_bad_files(report)
    return report


def test_check_follows_the_same_rule() -> None:
    within = _report(400, 4)
    assert within.ok and not within.errors
    assert "4 unreadable image(s), within what `crsbench run` quarantines" in within.warnings[0]
    above = _report(400, 5)
    assert not above.ok and "more than `crsbench run` quarantines" in above.errors[0]
    assert not _report(50, 1).ok and _report(50, 0).ok
