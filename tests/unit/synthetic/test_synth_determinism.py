"""Byte-identical output for a seed, in-process and in a fresh subprocess."""

from __future__ import annotations

import hashlib
import subprocess
import sys

from crsbench.datasets.synthetic import write_aptos2019

from .conftest import TINY


def _digest(root):
    out = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        out[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def test_same_seed_same_bytes_in_process_and_subprocess(tiny_out, tmp_path):
    reference = _digest(tiny_out)
    assert len(reference) > 150
    code = (
        "import sys; from crsbench.datasets.synthetic import write_all; "
        f"write_all(sys.argv[1], size={TINY!r}, seed=0)"
    )
    subprocess.run([sys.executable, "-c", code, str(tmp_path / "a")], check=True)
    assert _digest(tmp_path / "a") == reference


def test_other_seed_differs(tmp_path):
    small = {**TINY, "aptos2019": 10}
    write_aptos2019(tmp_path / "s0", size=small, seed=0)
    write_aptos2019(tmp_path / "s1", size=small, seed=1)
    a, b = _digest(tmp_path / "s0"), _digest(tmp_path / "s1")
    assert a != b


def test_parallel_writers_give_the_sequential_bytes(tiny_out, tmp_path):
    from crsbench.datasets.synthetic import write_all

    roots = write_all(tmp_path / "p", size=TINY, seed=0, processes=2)
    assert _digest(tmp_path / "p") == _digest(tiny_out)
    assert set(roots) == {p.name for p in tiny_out.iterdir() if p.is_dir()}
    assert all(root == tmp_path / "p" / name for name, root in roots.items())
