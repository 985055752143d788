"""The project's protocol page is its own: every reference points to docs/protocol.md."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
FORBIDDEN = re.compile(
    r"PROTOCOL\.md|RELIABILITY\.md|ARCHITECTURE\.md|PERFORMANCE\.md|\.\./shared|/work/shared"
    r"|shared/encoders\.md"
)


def _tracked_text_files() -> list[Path]:
    out = subprocess.run(
        ["git", "ls-files", "src", "docs", "benchmarks", "README.md", "tests"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return [ROOT / f for f in out if f.endswith((".py", ".md", ".yaml", ".yml", ".toml"))]


def test_no_file_points_outside_the_project() -> None:
    here = Path(__file__).resolve()
    offenders = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in _tracked_text_files()
        if path.resolve() != here and path.exists()
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if FORBIDDEN.search(line)
    ]
    assert offenders == []


def test_protocol_page_exists_and_names_its_sections() -> None:
    page = (ROOT / "docs" / "protocol.md").read_text(encoding="utf-8")
    for heading in (
        "## 5. Perturbations",
        "## 7. The four axes",
        "## 8. The Clinical Reliability Score",
    ):
        assert heading in page


def test_every_section_reference_exists() -> None:
    page = (ROOT / "docs" / "protocol.md").read_text(encoding="utf-8")
    sections = {int(m) for m in re.findall(r"^## (\d+)\.", page, flags=re.M)}
    cited = set()
    for path in _tracked_text_files():  # tests of the docs hooks cite made-up sections on purpose
        if "tests/docs" in str(path):
            continue
        if not path.exists():
            continue
        text = path.read_text(encoding="utf-8")
        for m in re.finditer(r"docs/protocol\.md`? (?:sections? |§)(\d+)", text):
            cited.add((str(path.relative_to(ROOT)), int(m.group(1))))
    missing = sorted(c for c in cited if c[1] not in sections)
    assert cited and missing == []
