"""Static checks: every torch.load in src/ passes weights_only=True; no trust_remote_code=True."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[3] / "src"


def _calls(attr: str) -> list[tuple[Path, ast.Call]]:
    out = []
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Call):
                f = node.func
                name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
                if name == attr:
                    out.append((path, node))
    return out


def test_every_torch_load_is_weights_only() -> None:
    calls = _calls("load")
    torch_loads = [
        (p, c)
        for p, c in calls
        if isinstance(c.func, ast.Attribute) and getattr(c.func.value, "id", "") == "torch"
    ]
    assert torch_loads, "expected at least one torch.load (crsbench.encoders.weights)"
    for path, call in torch_loads:
        kw = {k.arg: k.value for k in call.keywords}
        assert "weights_only" in kw, f"{path}:{call.lineno} torch.load without weights_only"
        val = kw["weights_only"]
        assert isinstance(val, ast.Constant) and val.value is True, f"{path}:{call.lineno}"


def test_trust_remote_code_never_hardcoded_true() -> None:
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.keyword) and node.arg == "trust_remote_code":
                assert not (isinstance(node.value, ast.Constant) and node.value.value is True), (
                    f"{path}:{node.value.lineno}"
                )
