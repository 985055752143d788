"""A realistic simulated results store, written by the store's own writer.

Rows are built in the store's own schema (:data:`crsbench.store.records.RUN_COLUMNS`: the
eleven identity columns, the metrics and the provenance) and written through
:meth:`crsbench.store.writer.ResultsStore.append_frame` (validated like every
:class:`~crsbench.store.records.RunRecord`) followed by :meth:`~ResultsStore.aggregate`, so the
``runs``, ``metrics`` and ``meta`` tables, their column names and the run keys are exactly the
real store's. Every analysis of docs/protocol.md section 10 has data in it: all label
fractions, the 15 paper conditions under the registry's perturbation names, the CheXpert →
MIMIC-CXR shift, four recalibrators, four layers, three probes, optionally LoRA.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from crsbench.core.errors import StoreError
from crsbench.protocol import (
    CLEAN,
    FROZEN,
    LABEL_FRACTIONS,
    LAYER_DEPTHS,
    LORA,
    PAPER_PERTURBATIONS,
    PAPER_SHIFTS,
    RECALIBRATORS,
    SEVERITIES,
)
from crsbench.store.cards import ENCODER_GROUP_COLUMN, CardFacts
from crsbench.store.columns import IDENTITY_COLUMNS, METRIC_COLUMNS, SCHEMA_VERSION
from crsbench.store.files import STORE_FILE
from crsbench.store.stored_plan import StoredPlan

#: (name, home dataset or None): the paper's 15 families (groups come from the encoder cards).
ENCODER_PANEL: tuple[tuple[str, str | None], ...] = (
    ("resnet50", None),
    ("vit_b16", None),
    ("clip", None),
    ("siglip", None),
    ("dinov2", None),
    ("mae", None),
    ("biomedclip", None),
    ("llava_med", None),
    ("medsiglip", None),
    ("medgemma", None),
    ("panderm", "isic2019"),
    ("retfound", "aptos2019"),
    ("rad_dino", "chexpert"),
    ("biovil", "chexpert"),
    ("chexzero", "chexpert"),
)
#: General-purpose encoders of the panel (a larger shift drop is planted for them).
GENERAL = frozenset({"resnet50", "vit_b16", "clip", "siglip", "dinov2", "mae"})
#: Cells that do not exist in the paper (no APTOS cell for the two chest-only models).
MISSING_CELLS = frozenset({("biovil", "aptos2019"), ("chexzero", "aptos2019")})
SHIFT_TARGET = dict(PAPER_SHIFTS)
#: A planted extra shift target's source reference minus the source's clean AUROC.
EXTRA_SHIFT_REFERENCE_GAP = 0.01
_NOT_COMPARED_3 = ("Enlarged Cardiomediastinum", "Fracture", "Support Devices")
_COMPARED_11 = ("No Finding", "Cardiomegaly", "Lung Opacity", "Lung Lesion", "Edema",
                "Consolidation", "Pneumonia", "Atelectasis", "Pneumothorax",
                "Pleural Effusion", "Pleural Other")  # fmt: skip
#: The config hash every simulated store is written under (sha256 of a fixed text).
SIMULATED_CONFIG_HASH = hashlib.sha256(b"crsbench simulated results store v1").hexdigest()
_BASE_AUROC = {"isic2019": 0.80, "aptos2019": 0.78, "chexpert": 0.72}
_RECAL_FACTOR = {"temperature": 0.42, "vector": 0.38, "isotonic": 0.30, "dirichlet": 0.35}


def _encoder_effects(n: int, rng: np.random.Generator) -> pd.DataFrame:
    names = [e[0] for e in ENCODER_PANEL]
    while len(names) < n:
        names.append(f"encoder_{len(names) + 1:02d}")
    homes = [ENCODER_PANEL[i][1] if i < len(ENCODER_PANEL) else None for i in range(n)]
    quality = np.linspace(-1.0, 1.0, n)[rng.permutation(n)]
    return pd.DataFrame(
        {
            "encoder": names[:n],
            "home": homes[:n],
            "quality": quality,
            "calib": rng.normal(0, 1, n),
            "fragility": rng.uniform(0.5, 1.5, n),
            "hunger": rng.uniform(0.6, 1.4, n),
            "best_depth": rng.choice(LAYER_DEPTHS, n, p=[0.05, 0.15, 0.3, 0.5]),
            "cal_sens": rng.uniform(0.2, 1.2, n),
        }
    )


def simulate_runs(
    n_encoders: int = 15,
    datasets: Sequence[str] = ("isic2019", "aptos2019", "chexpert"),
    seeds: int = 5,
    rng_seed: int = 0,
    regimes: Sequence[str] = (FROZEN,),
    extra_shift_targets: Sequence[str] = (),
) -> pd.DataFrame:
    """Simulated run rows in the results-store schema (every column but ``run_key``).

    Parameters
    ----------
    n_encoders : int
        Encoders (the first 15 carry the paper's family names).
    datasets : sequence of str
        Source datasets; ``chexpert`` also gets ``condition='shift'`` rows on ``mimic_cxr``.
    seeds : int
        Seeds per cell (LoRA uses the first ``min(3, seeds)``).
    rng_seed : int
        Seed of the generator (the frame is a pure function of the arguments).
    regimes : sequence of str
        ``"frozen"`` and/or ``"lora"``.
    extra_shift_targets : sequence of str
        More shift targets of ``chexpert`` beside MIMIC-CXR (extras, beside R). Each is
        planted as providing 11 of the 14 labels: its rows carry ``details["shift_labels"]``
        with a source reference :data:`EXTRA_SHIFT_REFERENCE_GAP` above the clean AUROC.

    Returns
    -------
    pandas.DataFrame
        One row per run: identity, metric and provenance columns of table ``runs``
        (:func:`write_store` fills ``run_key`` through the store's validator).
    """
    rng = np.random.default_rng(rng_seed)
    enc = _encoder_effects(n_encoders, rng)
    rows: list[dict] = []
    for regime in regimes:
        n_seeds = seeds if regime == FROZEN else min(3, seeds)
        for e in enc.itertuples():
            for ds in datasets:
                if (e.encoder, ds) in MISSING_CELLS:
                    continue
                home = 0.06 if e.home == ds else (-0.03 if e.home else 0.0)
                lora = 0.04 + rng.normal(0, 0.015) if regime == LORA else 0.0
                cell_auc = _BASE_AUROC.get(ds, 0.78) + 0.07 * e.quality + home + lora
                cell_auc += rng.normal(0, 0.01)
                cell_ece = 0.03 + 0.06 / (1 + np.exp(2 * e.calib)) + abs(rng.normal(0, 0.01))
                for seed in range(n_seeds):
                    seed_rows = _cell_seed_rows(e, ds, seed, regime, cell_auc, cell_ece, rng)
                    rows += seed_rows
                    if ds in SHIFT_TARGET:
                        rows += _extra_shift_rows(seed_rows, extra_shift_targets)
    return _with_groups(_add_provenance(pd.DataFrame(rows), rng))


def _with_groups(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with the ``encoder_group`` column :func:`crsbench.store.load_runs` adds: each
    registered encoder's card group (None for a name the registry lacks)."""
    from crsbench.encoders import ENCODERS, get_card

    names = set(ENCODERS.names())
    groups = {n: get_card(n).family_group for n in df["encoder"].unique() if n in names}
    df[ENCODER_GROUP_COLUMN] = df["encoder"].map(groups)
    return df


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

    def row(eval_ds=ds, probe="logistic", layer=1.0, fraction=1.0, cond=CLEAN, sev=0,
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

    for f in LABEL_FRACTIONS:
        gap = (auc - 0.5) * 0.09 * e.hunger * (-np.log10(f)) ** 1.3
        row(fraction=f, a=auc - gap + (rng.normal(0, 0.004) if f < 1 else 0.0),
            c=ece + (0.02 * (-np.log10(f)) if f < 1 else 0.0))  # fmt: skip
    out[-1]["details"] = _val_details(auc)  # the full-label row: depth 1.0's validation
    if regime == FROZEN:
        for depth in LAYER_DEPTHS[:-1]:
            gain = 0.015 if depth == e.best_depth else -0.03 * (1.0 - depth) * 2
            row(layer=depth, a=auc + gain + rng.normal(0, 0.004))
            out[-1]["details"] = _val_details(auc + gain)  # validation: the planted AUROC
        row(probe="mlp", a=auc + rng.normal(0.004, 0.006), c=ece * 1.3)
        row(probe="knn", a=auc - 0.03 + rng.normal(0, 0.008), c=ece * 1.8)
        for method in RECALIBRATORS:
            factor = _RECAL_FACTOR[method] * float(rng.uniform(0.8, 1.2))
            delta = 0.001 + rng.normal(0, 0.0015) - (0.002 if method == "isotonic" else 0)
            row(recal=method, a=auc + delta, c=ece * factor)
    for j, p in enumerate(PAPER_PERTURBATIONS):
        for sev in SEVERITIES:
            drop = abs(0.012 * sev * e.fragility * (1 + 0.4 * j) / 2 + rng.normal(0, 0.004))
            row(
                cond=p, sev=sev, a=auc - drop, c=ece + e.cal_sens * drop + abs(rng.normal(0, 0.008))
            )
    if ds in SHIFT_TARGET:
        shift = 0.16 if e.encoder in GENERAL else 0.05
        row(eval_ds=SHIFT_TARGET[ds], cond="shift",
            a=auc - shift - 0.02 * e.fragility + rng.normal(0, 0.01), c=ece + 0.05)  # fmt: skip
    return out


def _val_details(val_auroc: float) -> str:
    """A simulated probe row's details with the validation AUROC of its chosen C."""
    return json.dumps({"simulated": True, "val_auroc": float(val_auroc)})


def _extra_shift_rows(seed_rows: list[dict], targets: Sequence[str]) -> list[dict]:
    """Rows of the extra shift targets of one cell seed, planted from its clean and MIMIC rows:
    target ``k`` drops ``0.03·(k + 1)`` more than MIMIC-CXR from a reference
    :data:`EXTRA_SHIFT_REFERENCE_GAP` above the clean AUROC (compared labels: 11 of 14)."""
    if not targets:
        return []
    mine = [r for r in seed_rows if r["probe"] == "logistic" and r["recalibrator"] == "none"
            and r["layer"] == 1.0]  # fmt: skip
    clean = next(r for r in mine if r["condition"] == CLEAN and r["fraction"] == 1.0)
    base = next(r for r in mine if r["condition"] == "shift")
    out = []
    for k, target in enumerate(targets):
        ref = clean["auroc"] + EXTRA_SHIFT_REFERENCE_GAP
        details = {"simulated": True, "shift_labels": {"compared": list(_COMPARED_11),
                   "not_compared": list(_NOT_COMPARED_3), "source_clean_auroc": ref}}  # fmt: skip
        drop = (clean["auroc"] - base["auroc"]) + 0.03 * (k + 1)
        out.append({**base, "eval_dataset": target, "auroc": ref - drop,
                    "details": json.dumps(details)})  # fmt: skip
    return out


def _add_provenance(df: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    from crsbench import __version__
    from crsbench.scoring.anchors import load_anchors

    df["config_hash"] = SIMULATED_CONFIG_HASH
    df["package_version"] = __version__
    df["encoder_revision"] = "simulated"
    df["dataset_revision"] = "simulated"
    df["anchors_version"] = load_anchors().version
    df["wall_time_s"] = rng.uniform(0.05, 2.0, len(df))
    df["created_at"] = pd.Timestamp("2025-01-01")
    df["schema_version"] = SCHEMA_VERSION
    plain = json.dumps({"simulated": True})
    df["details"] = df["details"].fillna(plain) if "details" in df else plain
    for m in METRIC_COLUMNS:  # a declared metric the simulation does not model: NULL
        if m not in df:
            df[m] = np.nan
    return df[[*IDENTITY_COLUMNS, *METRIC_COLUMNS, *df.columns.difference(
        [*IDENTITY_COLUMNS, *METRIC_COLUMNS], sort=False)]]  # fmt: skip


def write_store(
    df: pd.DataFrame,
    store_dir: str | Path,
    config: dict | None = None,
    plan: StoredPlan | None = None,
) -> Path:
    """Write run rows into a new results store through the store's own writer.

    ``df`` is appended with :meth:`ResultsStore.append_frame` (validated, ``run_key`` filled)
    and the ``metrics`` table is rebuilt with :meth:`ResultsStore.aggregate`; an
    ``encoder_group`` column goes to the store's card facts (:mod:`crsbench.store.cards`). ``config`` (a
    mapping) is stored as the ``meta`` table's config text; ``plan`` (what each cell must
    hold, e.g. :func:`crsbench.runs.plan.recorded_plan` of that config) as table ``plan``.

    Returns
    -------
    pathlib.Path
        ``store_dir/results.duckdb``.

    Raises
    ------
    StoreError
        ``store_dir/results.duckdb`` already exists (never overwritten), or a row breaks the
        store's schema.
    """
    from crsbench.store.writer import ResultsStore

    path = Path(store_dir) / STORE_FILE
    if path.exists():
        raise StoreError(f"results store {path} must not exist yet. It does.")
    hashes = set(df["config_hash"]) if "config_hash" in df else {SIMULATED_CONFIG_HASH}
    if len(hashes) != 1:
        raise StoreError(f"simulated rows must share one config_hash. Got {sorted(hashes)}.")
    config_hash = hashes.pop()
    config_json = json.dumps(config if config is not None else {"simulated": True})
    frame, facts = split_card_facts(df.drop(columns=["run_key"], errors="ignore"))
    with ResultsStore(store_dir, config_hash, config_json=config_json) as store:
        store.append_frame(frame)
        store.aggregate()
        store.record_cards(facts)
        if plan is not None:
            store.record_plan(plan)
    return path


def split_card_facts(df: pd.DataFrame) -> tuple[pd.DataFrame, CardFacts]:
    """Simulated rows without their ``encoder_group`` column, and that column as the card
    facts the store records (:meth:`ResultsStore.record_cards`)."""
    if ENCODER_GROUP_COLUMN not in df:
        return df, CardFacts()
    pairs = df[["encoder", ENCODER_GROUP_COLUMN]].dropna().drop_duplicates("encoder")
    groups = dict(zip(pairs["encoder"], pairs[ENCODER_GROUP_COLUMN], strict=True))
    return df.drop(columns=[ENCODER_GROUP_COLUMN]), CardFacts(groups)
