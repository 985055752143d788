"""User text is printed literally: rich markup in data is never interpreted."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from crsbench.cli.app import fail


@pytest.mark.parametrize("value", ["[red]7", "[/]", "[bold]x[/bold]", "[link=file:///etc]a"])
def test_fail_prints_user_data_literally(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(typer.Exit) as exit_info:
        fail(f"bad label cell {value!r} in labels.csv row 3")
    assert exit_info.value.exit_code == 2
    assert f"bad label cell {value!r} in labels.csv row 3" in capsys.readouterr().err


def test_check_with_markup_in_a_label_name_prints_it(tmp_path: Path) -> None:
    from crsbench.cli import app

    root = tmp_path / "mine"
    root.mkdir()
    from PIL import Image

    rows = ["path,[/]"]
    for i in range(12):
        Image.new("L", (16, 16), color=i * 10).save(root / f"img{i}.png")
        rows.append(f"img{i}.png,{'[red]7' if i % 2 else 'b'}")
    (root / "labels.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["datasets", "check", "folder", "--root", str(root)])
    assert "MarkupError" not in result.output and "Traceback" not in result.output
    assert "[red]7" in result.output
