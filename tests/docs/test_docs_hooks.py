"""The two mkdocs hooks: the generated command reference and the `docs/NAME.md` links."""

from __future__ import annotations

from pathlib import Path

import pytest

from .docs_support import load_hook

cli_reference = load_hook("cli_reference")
doc_links = load_hook("doc_links")


@pytest.fixture(scope="module")
def reference() -> str:
    from crsbench.cli import app

    return cli_reference.render(app)


def test_reference_has_a_section_per_command_with_its_options(reference: str) -> None:
    import typer.main

    from crsbench.cli import app

    root = typer.main.get_command(app)
    paths = [path for path, _ in cli_reference.walk(root) if path]
    assert ("run",) in paths and ("encoders", "list") in paths and ("datasets", "check") in paths
    for path in paths:
        assert f"`crsbench {' '.join(path)}`" in reference
    run = reference.split("## `crsbench run`")[1].split("\n## ")[0]
    assert "| `--skip-missing` |" in run
    assert "| `-q, --quiet` | Print only errors and the final result lines. |" in run
    assert "`--executor <str>` | local or ray. [default: local] |" in run
    assert "--help" not in run.split("```")[2]  # --help is left out of the table


def test_reference_escapes_pipes_in_table_cells(reference: str) -> None:
    check = reference.split("### `crsbench datasets check`")[1].split("\n### ")[0]
    assert "ignore\\|zeros\\|ones" in check


def _docs(tmp_path: Path) -> Path:
    (tmp_path / "protocol.md").write_text("# P\n\n## 5. Perturbations (stress)\n\ntext\n")
    (tmp_path / "scoring.md").write_text("# S\n\n## Statistics\n\n**Control probes.** MLP.\n")
    return tmp_path


def test_references_become_links_with_section_anchors(tmp_path: Path) -> None:
    docs = _docs(tmp_path)
    md = "See `docs/protocol.md` §5 and docs/protocol.md section 5."
    assert doc_links.link_markdown(md, "guide.md", docs) == (
        "See [`docs/protocol.md`](protocol.md#5-perturbations-stress) §5 and "
        "[docs/protocol.md](protocol.md#5-perturbations-stress) section 5."
    )
    md = '(`docs/scoring.md`, "Control probes")'
    assert doc_links.link_markdown(md, "sub/page.md", docs) == (
        '([`docs/scoring.md`](../scoring.md#statistics), "Control probes")'
    )


def test_code_and_unknown_pages_are_left_alone(tmp_path: Path) -> None:
    docs = _docs(tmp_path)
    md = "```bash\ncat docs/protocol.md\n```\n`cat docs/protocol.md` and docs/missing.md"
    assert doc_links.link_markdown(md, "x.md", docs) == md


def test_a_section_that_does_not_exist_is_a_warning(tmp_path: Path, caplog) -> None:
    docs = _docs(tmp_path)
    out = doc_links.link_markdown("docs/protocol.md §99", "x.md", docs)
    assert out == "[docs/protocol.md](protocol.md) §99"
    assert "section '99' of docs/protocol.md has no heading" in caplog.text
