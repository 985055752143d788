"""``analyze`` computes and stores the analyses once; ``analyze`` again and ``score`` read them,
each saying which on stderr, and write what a fresh compute writes."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from crsbench.cli.app import app
from crsbench.testing import simulate_runs, write_store


def _invoke(*args: object) -> tuple[str, str]:
    res = CliRunner().invoke(app, [str(a) for a in args])
    assert res.exit_code == 0, res.output
    return res.stdout, res.stderr


def test_analyze_stores_then_analyze_and_score_read(tmp_path: Path) -> None:
    store = tmp_path / "store"
    df = simulate_runs(n_encoders=3, datasets=("isic2019",), seeds=2, rng_seed=4)
    write_store(df, store)
    _, said = _invoke("analyze", "--store", store, "--out", tmp_path / "a", "--replicates", 15)
    assert "computed the analyses (none stored for these inputs) and stored them in" in said
    (zipped,) = (store / "computed").glob("*.zip")
    assert str(zipped) in said
    _, said = _invoke("analyze", "--store", store, "--out", tmp_path / "b", "--replicates", 15)
    assert f"read the stored analyses ({zipped})" in said
    first = sorted(p.name for p in (tmp_path / "a").glob("*.csv"))
    assert "bootstrap.csv" in first
    assert first == sorted(p.name for p in (tmp_path / "b").glob("*.csv"))
    for name in [*first, "summary.json"]:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    _, said = _invoke("score", "--store", store, "--out", tmp_path / "s", "--replicates", 15)
    assert f"read the stored analyses ({zipped})" in said
    _, said = _invoke("score", "--store", store, "--out", tmp_path / "t", "--replicates", 16)
    assert "computed the analyses" in said  # another replicate count: another key
    assert len(list((store / "computed").glob("*.zip"))) == 2
