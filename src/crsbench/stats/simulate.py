"""A realistic synthetic ``runs`` table (the store schema) with encoder-level effects.

Used by the tests, the bootstrap benchmark and the report's layout test: every analysis of
docs/protocol.md section 10 has data in it (all fractions, the 15 perturbation conditions, the
CheXpert → MIMIC shift, four recalibrators, four layers, three probes, optionally LoRA).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from crsbench.core.conditions import PAPER_PERTURBATIONS, SEVERITIES
from crsbench.core.errors import StoreError

#: (name, group, home dataset or None): the paper's 15 families.
ENCODER_PANEL: tuple[tuple[str, str, str | None], ...] = (
    ("resnet50", "general", None),
    ("vit_b16", "general", None),
    ("clip", "general", None),
    ("siglip", "general", None),
    ("dinov2", "general", None),
    ("mae", "general", None),
    ("biomedclip", "medical", None),
    ("llava_med", "medical", None),
    ("medsiglip", "medical", None),
    ("medgemma", "medical", None),
    ("panderm", "medical", "isic2019"),
    ("retfound", "medical", "aptos2019"),
    ("rad_dino", "medical", "chexpert"),
    ("biovil", "medical", "chexpert"),
    ("chexzero", "medical", "chexpert"),
)
#: Cells that do not exist in the paper (no APTOS cell for the two chest-only models).
MISSING_CELLS = frozenset({("biovil", "aptos2019"), ("chexzero", "aptos2019")})
PERTURBATIONS: tuple[str, ...] = PAPER_PERTURBATIONS
FRACTIONS: tuple[float, ...] = (0.01, 0.05, 0.10, 0.25, 1.0)
LAYERS: tuple[float, ...] = (0.25, 0.5, 0.75, 1.0)
RECALIBRATORS: tuple[str, ...] = ("temperature", "vector", "isotonic", "dirichlet")
SHIFT_TARGET = {"chexpert": "mimic_cxr"}
_BASE_AUROC = {"isic2019": 0.80, "aptos2019": 0.78, "chexpert": 0.72}
_RECAL_FACTOR = {"temperature": 0.42, "vector": 0.38, "isotonic": 0.30, "dirichlet": 0.35}


def _encoder_effects(n: int, rng: np.random.Generator) -> pd.DataFrame:
    names = [e[0] for e in ENCODER_PANEL]
    while len(names) < n:
        names.append(f"encoder_{len(names) + 1:02d}")
    groups = [ENCODER_PANEL[i][1] if i < len(ENCODER_PANEL) else "general" for i in range(n)]
    homes = [ENCODER_PANEL[i][2] if i < len(ENCODER_PANEL) else None for i in range(n)]
    quality = np.linspace(-1.0, 1.0, n)[rng.permutation(n)]
    return pd.DataFrame(
        {
            "encoder": names[:n],
            "group": groups[:n],
            "home": homes[:n],
            "quality": quality,
            "calib": rng.normal(0, 1, n),
            "fragility": rng.uniform(0.5, 1.5, n),
            "hunger": rng.uniform(0.6, 1.4, n),
            "best_depth": rng.choice(LAYERS, n, p=[0.05, 0.15, 0.3, 0.5]),
            "cal_sens": rng.uniform(0.2, 1.2, n),
        }
    )


def simulate_runs(
    n_encoders: int = 15,
    datasets: Sequence[str] = ("isic2019", "aptos2019", "chexpert"),
    seeds: int = 5,
    rng_seed: int = 0,
    regimes: Sequence[str] = ("frozen",),
) -> pd.DataFrame:
    """Generate a synthetic ``runs`` table in the results-store schema.

    Parameters
    ----------
    n_encoders : int
        Encoders (the first 15 carry the paper's family names and groups).
    datasets : sequence of str
        Source datasets; ``chexpert`` also gets ``condition='shift'`` rows on ``mimic_cxr``.
    seeds : int
        Seeds per cell (LoRA uses the first ``min(3, seeds)``).
    rng_seed : int
        Seed of the generator (the table is a pure function of the arguments).
    regimes : sequence of str
        ``"frozen"`` and/or ``"lora"``.

    Returns
    -------
    pandas.DataFrame
        One row per run with identity, metric and provenance columns.
    """
    rng = np.random.default_rng(rng_seed)
    enc = _encoder_effects(n_encoders, rng)
    enc["encoder_group"] = enc["group"]
    rows: list[dict] = []
    for regime in regimes:
        n_seeds = seeds if regime == "frozen" else min(3, seeds)
        for e in enc.itertuples():
            for ds in datasets:
                if (e.encoder, ds) in MISSING_CELLS:
                    continue
                home = 0.06 if e.home == ds else (-0.03 if e.home else 0.0)
                lora = 0.04 + rng.normal(0, 0.015) if regime == "lora" else 0.0
                cell_auc = _BASE_AUROC.get(ds, 0.78) + 0.07 * e.quality + home + lora
                cell_auc += rng.normal(0, 0.01)
                cell_ece = 0.03 + 0.06 / (1 + np.exp(2 * e.calib)) + abs(rng.normal(0, 0.01))
                for seed in range(n_seeds):
                    rows += _cell_seed_rows(e, ds, seed, regime, cell_auc, cell_ece, rng)
    df = pd.DataFrame(rows)
    df["encoder_group"] = df["encoder"].map(dict(zip(enc["encoder"], enc["group"], strict=True)))
    return _add_provenance(df, rng)


def _metrics(auc: float, ece: float, rng: np.random.Generator) -> dict:
    auc = float(np.clip(auc, 0.5, 0.995))
    ece = float(np.clip(ece, 0.002, 0.4))
    return {
        "auroc": auc,
        "ece": ece,
        "brier": float(0.25 - 0.3 * (auc - 0.5) + 0.5 * ece + rng.normal(0, 0.003)),
        "nll": float(0.69 - 0.8 * (auc - 0.5) + 1.5 * ece + rng.normal(0, 0.01)),
        "sens_at_spec90": float(np.clip(2.2 * auc - 1.35 + rng.normal(0, 0.01), 0, 1)),
        "sens_at_spec95": float(np.clip(2.4 * auc - 1.65 + rng.normal(0, 0.01), 0, 1)),
    }


def _cell_seed_rows(e, ds, seed, regime, cell_auc, cell_ece, rng) -> list[dict]:
    ident = {"encoder": e.encoder, "dataset": ds, "seed": seed, "regime": regime}
    auc = cell_auc + rng.normal(0, 0.012)
    ece = cell_ece + rng.normal(0, 0.006)
    out = []

    def row(eval_ds=ds, probe="logistic", layer=1.0, fraction=1.0, cond="clean", sev=0,
            recal="none", a=auc, c=ece):  # fmt: skip
        out.append(
            {
                **ident,
                "eval_dataset": eval_ds,
                "probe": probe,
                "layer": layer,
                "fraction": fraction,
                "condition": cond,
                "severity": sev,
                "recalibrator": recal,
                **_metrics(a, c, rng),
            }
        )

    for f in FRACTIONS:
        gap = (auc - 0.5) * 0.09 * e.hunger * (-np.log10(f)) ** 1.3
        row(fraction=f, a=auc - gap + (rng.normal(0, 0.004) if f < 1 else 0.0),
            c=ece + (0.02 * (-np.log10(f)) if f < 1 else 0.0))  # fmt: skip
    if regime == "frozen":
        for depth in LAYERS[:-1]:
            gain = 0.015 if depth == e.best_depth else -0.03 * (1.0 - depth) * 2
            row(layer=depth, a=auc + gain + rng.normal(0, 0.004))
        row(probe="mlp", a=auc + rng.normal(0.004, 0.006), c=ece * 1.3)
        row(probe="knn", a=auc - 0.03 + rng.normal(0, 0.008), c=ece * 1.8)
        for method in RECALIBRATORS:
            factor = _RECAL_FACTOR[method] * float(rng.uniform(0.8, 1.2))
            delta = 0.001 + rng.normal(0, 0.0015) - (0.002 if method == "isotonic" else 0)
            row(recal=method, a=auc + delta, c=ece * factor)
    for j, p in enumerate(PERTURBATIONS):
        for sev in SEVERITIES:
            drop = abs(0.012 * sev * e.fragility * (1 + 0.4 * j) / 2 + rng.normal(0, 0.004))
            row(
                cond=p, sev=sev, a=auc - drop, c=ece + e.cal_sens * drop + abs(rng.normal(0, 0.008))
            )
    if ds in SHIFT_TARGET:
        shift = 0.16 if e.group == "general" else 0.05
        row(eval_ds=SHIFT_TARGET[ds], cond="shift",
            a=auc - shift - 0.02 * e.fragility + rng.normal(0, 0.01), c=ece + 0.05)  # fmt: skip
    return out


def _add_provenance(df: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    keys = df[["encoder", "dataset", "eval_dataset", "seed", "regime", "probe", "layer",
               "fraction", "condition", "severity", "recalibrator"]].astype(str)  # fmt: skip
    run_key = keys.agg("|".join, axis=1)
    df["config_hash"] = "sim-" + df["regime"]
    df["package_version"] = "simulated"
    df["encoder_revision"] = "sim"
    df["dataset_revision"] = "sim"
    df["wall_time_s"] = rng.uniform(0.05, 2.0, len(df))
    df["created_at"] = pd.Timestamp("2025-01-01", tz="UTC")
    df["run_key"] = run_key
    return df


def metrics_from_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """Seed aggregates (the store's ``metrics`` table): mean, std and count per identity."""
    ident = ["encoder", "dataset", "eval_dataset", "regime", "probe", "layer", "fraction",
             "condition", "severity", "recalibrator"]  # fmt: skip
    metric_cols = [c for c in ("auroc", "ece", "brier", "nll", "sens_at_spec90",
                               "sens_at_spec95") if c in runs]  # fmt: skip
    g = runs.groupby(ident, sort=True)
    mean = g[metric_cols].mean()
    std = g[metric_cols].std(ddof=1).add_suffix("_std")
    out = mean.join(std)
    out["n_seeds"] = g["seed"].nunique()
    return out.reset_index()


def write_store(df: pd.DataFrame, store_dir: str | Path) -> Path:
    """Write ``df`` as table ``runs`` (and its seed aggregates as ``metrics``) of a new store.

    Raises
    ------
    StoreError
        ``store_dir/results.duckdb`` already exists (never overwritten).
    """
    import duckdb

    path = Path(store_dir) / "results.duckdb"
    if path.exists():
        raise StoreError(f"results store {path} must not exist yet. It does.")
    path.parent.mkdir(parents=True, exist_ok=True)
    metrics = metrics_from_runs(df)
    con = duckdb.connect(str(path))
    try:
        con.register("runs_df", df)
        con.register("metrics_df", metrics)
        con.execute("CREATE TABLE runs AS SELECT * FROM runs_df")
        con.execute("CREATE TABLE metrics AS SELECT * FROM metrics_df")
    finally:
        con.close()
    return path
