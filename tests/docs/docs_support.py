"""Helpers shared by the documentation tests: paths, hook loading, code-block extraction."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
#: A fenced Python block that is a file of a page's example: ```python title="name.py"
TITLED_BLOCK = re.compile(r'```python title="(?P<name>[^"]+)"\n(?P<body>.*?)```', re.S)


def load_script(path: Path, name: str) -> ModuleType:
    """Import the Python file ``path`` as module ``name`` (by path, not as a package)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_hook(name: str) -> ModuleType:
    """Import ``docs/hooks/<name>.py`` the way mkdocs does (by path, not as a package)."""
    return load_script(DOCS / "hooks" / f"{name}.py", f"docs_hook_{name}")


def write_examples(page: str, dest: Path) -> list[str]:
    """Write every titled Python block of ``docs/<page>`` into ``dest``; return their names."""
    names = []
    for match in TITLED_BLOCK.finditer((DOCS / page).read_text(encoding="utf-8")):
        (dest / match["name"]).write_text(match["body"], encoding="utf-8")
        names.append(match["name"])
    return names


def run_script(script: str, cwd: Path, timeout: float = 120) -> str:
    """Run ``python script`` in ``cwd`` (crsbench from this checkout first); return stdout."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(cwd), str(REPO / "src")])}
    env.pop("CRSBENCH_WEIGHTS_DIR", None)
    done = subprocess.run(
        [sys.executable, script], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=timeout,
    )  # fmt: skip
    assert done.returncode == 0, f"{script} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout
