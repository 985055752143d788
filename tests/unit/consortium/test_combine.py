"""Site summaries through the JSON format → ``combine``: the refusals (each mismatch named with
the site and the field), the pooled numbers (equal to ``pool`` on the site values), the
leave-one-site-out ranks, P(rank 1) over sites, the tables and the command line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from crsbench.cli import app
from crsbench.consortium.combine import combine
from crsbench.consortium.meta import pool
from crsbench.consortium.planted import planted_consortium, site_summary, through_files, with_site
from crsbench.consortium.summary import QUANTITIES, read_summary, write_summary
from crsbench.core.errors import DataError


def _values(crs: float, var: float = 1e-4) -> dict[str, tuple[float, float]]:
    return {q: (crs if q == "CRS" else 0.8, var) for q in QUANTITIES}


def _three(tmp_path: Path):
    sites = (site_summary("a", {"x": _values(0.60), "y": _values(0.50)}),
             site_summary("b", {"x": _values(0.55), "y": _values(0.58)}),
             site_summary("c", {"x": _values(0.62), "y": _values(0.52)}))  # fmt: skip
    return through_files(sites, tmp_path)


@pytest.mark.parametrize(("field", "value", "named"), [
    ("anchors_version", "v1", "anchors_version"),
    ("protocol", {"recalibration": "v2", "severities": "v1"}, "protocol"),
    ("labels", ("benign", "malignant", "unclear"), "labels"),
    ("task", "multilabel", "task"),
])  # fmt: skip
def test_refuses_a_mismatch_naming_site_and_field(tmp_path, field, value, named) -> None:
    sites = list(_three(tmp_path))
    sites[2] = with_site(sites[2], **{field: value})
    with pytest.raises(DataError, match=rf"site 'c': {named} is .* site 'a' has"):
        combine(sites)


def test_refuses_different_weights_and_repeated_sites(tmp_path) -> None:
    a = site_summary("a", {"x": _values(0.6)}, weights={"x": {"w.bin": "11" * 32}})
    b = site_summary("b", {"x": _values(0.6)}, weights={"x": {"w.bin": "22" * 32}})
    with pytest.raises(DataError, match=r"site 'b': weights of encoder 'x' are w.bin sha256 2+; "
                                        r"site 'a' ran w.bin sha256 1+"):  # fmt: skip
        combine([a, b])
    with pytest.raises(DataError, match="site 'a' appears 2 times"):
        combine([a, with_site(b, site="a", encoders=a.encoders)])


def test_pooled_values_loso_and_rank_one(tmp_path) -> None:
    sites = _three(tmp_path)
    c = combine(sites, method="dl")
    crs_x = pool([0.60, 0.55, 0.62], [1e-4] * 3, "dl")
    assert c.row("x", "CRS").pooled == crs_x
    assert [r.encoder for r in c.stability] == ["x", "y"]
    x = c.stability[0]
    assert x.first_at == 2  # x beats y at sites a and c
    # leaving site a or c out: x still first; leaving c out: mean(0.60, 0.55) > mean(0.50, 0.58)
    assert x.loso_ranks == {"a": 1, "b": 1, "c": 1}
    assert 0.5 < x.p_rank1 <= 1.0 and c.stability[1].p_rank1 == pytest.approx(1 - x.p_rank1)


def test_zero_variance_is_not_pooled_and_named(tmp_path) -> None:
    vals = {q: (1.0, 0.0) if q == "auroc" else (0.6, 1e-4) for q in QUANTITIES}
    sites = [site_summary(n, {"x": vals}) for n in ("a", "b", "c")]
    c = combine(sites)
    assert c.row("x", "auroc").pooled is None
    assert "zero bootstrap variance at a, b, c" in c.row("x", "auroc").note
    assert c.row("x", "CRS").pooled is not None


def test_read_summary_names_file_and_key(tmp_path) -> None:
    path = write_summary(site_summary("a", {"x": _values(0.6)}), tmp_path / "a.json")
    doc = json.loads(path.read_text())
    doc["encoders"][0]["CRS"]["variance"] = "small"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    with pytest.raises(DataError, match=r"bad.json: encoders\[0\] \(x\)\.CRS\.variance must be"):
        read_summary(bad)


def test_combine_command_writes_tables_and_page(tmp_path) -> None:
    planted = planted_consortium(np.random.default_rng(0), 5, 0.02)
    paths = [write_summary(s, tmp_path / f"{s.site}.json") for s in planted.sites]
    out = tmp_path / "out"
    r = CliRunner().invoke(app, ["combine", *map(str, paths), "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert r.output.splitlines()[0].split("\t")[:3] == ["rank", "encoder", "k"]
    pooled = pd.read_csv(out / "pooled.csv")
    assert set(pooled["quantity"]) == set(QUANTITIES) and (pooled["k"] == 5).all()
    ece = [s.encoder("enc_a").estimates["ece"] for s in planted.sites]
    ref = pool([x.value for x in ece], [x.variance for x in ece], method="reml")
    row = pooled[(pooled["encoder"] == "enc_a") & (pooled["quantity"] == "ece")].iloc[0]
    assert row["mean"] == pytest.approx(ref.mean, abs=1e-12)
    assert row["pi_high"] == pytest.approx(ref.pi_high, abs=1e-12)
    doc = json.loads((out / "consortium.json").read_text())
    assert doc["settings"]["min_cell_size"] == 10 and doc["method"] == "reml"
    page = (out / "consortium.html").read_text()
    assert "default-src 'none'" in page and "enc_a" in page
    r = CliRunner().invoke(app, ["combine", *map(str, paths), "--out", str(out), "--json",
                                 "--method", "dl"])  # fmt: skip
    assert r.exit_code == 0 and json.loads(r.output)["method"] == "dl"


def test_combine_never_writes_into_a_foreign_folder(tmp_path) -> None:
    sites = _three(tmp_path / "in")
    paths = [tmp_path / "in" / f"{s.site}.json" for s in sites]
    foreign = tmp_path / "theirs"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    r = CliRunner().invoke(app, ["combine", *map(str, paths), "--out", str(foreign)])
    assert r.exit_code == 2 and "not written by crsbench" in " ".join(r.output.split())
    assert [p.name for p in foreign.iterdir()] == ["notes.txt"]


def test_combine_command_names_a_bad_summary(tmp_path) -> None:
    good = [tmp_path / f"{s.site}.json" for s in _three(tmp_path)]
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    r = CliRunner().invoke(app, ["combine", *map(str, good[:2]), str(bad), "--out",
                                 str(tmp_path / "out")])  # fmt: skip
    assert r.exit_code == 2 and "bad.json: not valid JSON" in " ".join(r.output.split())
    assert not (tmp_path / "out").exists()
    r = CliRunner().invoke(app, ["combine", *map(str, good), "--out", str(tmp_path / "o"),
                                 "--method", "pm"])  # fmt: skip
    assert r.exit_code == 2 and "--method must be one of" in " ".join(r.output.split())
