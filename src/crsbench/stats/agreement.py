"""Agreement of two rankings of the same encoders (AUROC vs CRS, frozen vs LoRA, ...)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
from scipy import stats as sps

from crsbench.core.errors import DataError


def _aligned(scores_a: Mapping[str, float], scores_b: Mapping[str, float]):
    common = sorted(set(scores_a) & set(scores_b))
    a = np.array([float(scores_a[k]) for k in common])
    b = np.array([float(scores_b[k]) for k in common])
    keep = np.isfinite(a) & np.isfinite(b)
    common = [k for k, ok in zip(common, keep, strict=True) if ok]
    if len(common) < 2:
        raise DataError(
            "rank agreement needs at least 2 encoders with a finite score in both rankings. "
            f"Got {len(common)} instead."
        )
    return common, a[keep], b[keep]


def ranks_desc(values: np.ndarray) -> np.ndarray:
    """1-based ranks, 1 = highest value; ties share their average rank."""
    return sps.rankdata(-np.asarray(values, dtype=float), method="average")


def rank_agreement(
    scores_a: Mapping[str, float], scores_b: Mapping[str, float], top_k: int = 3
) -> dict[str, float]:
    """How far two rankings of the same encoders agree (higher score = better rank).

    Parameters
    ----------
    scores_a, scores_b : mapping
        Encoder → score; only encoders present (and finite) in both are compared.
    top_k : int
        Size of the top set whose overlap is reported (key ``f"top{top_k}_overlap"``).

    Returns
    -------
    dict
        ``n``, ``kendall_tau`` (tau-b, as :func:`scipy.stats.kendalltau`), ``spearman_rho``,
        ``reversed_pairs`` (pairs ordered oppositely), ``n_pairs`` (n(n−1)/2),
        ``mean_abs_displacement`` (mean |rank_a − rank_b|), ``top3_overlap`` (share of the
        top-k of ``a`` that is also in the top-k of ``b``).
    """
    names, a, b = _aligned(scores_a, scores_b)
    n = len(names)
    sign = np.sign(a[:, None] - a[None, :]) * np.sign(b[:, None] - b[None, :])
    reversed_pairs = int((np.triu(sign, k=1) < 0).sum())
    ra, rb = ranks_desc(a), ranks_desc(b)
    k = min(top_k, n)
    top_a = set(np.asarray(names)[np.argsort(-a, kind="stable")[:k]])
    top_b = set(np.asarray(names)[np.argsort(-b, kind="stable")[:k]])
    return {
        "n": n,
        "kendall_tau": float(sps.kendalltau(a, b).statistic),
        "spearman_rho": float(sps.spearmanr(a, b).statistic),
        "reversed_pairs": reversed_pairs,
        "n_pairs": n * (n - 1) // 2,
        "mean_abs_displacement": float(np.abs(ra - rb).mean()),
        f"top{top_k}_overlap": len(top_a & top_b) / k,
    }


def rank_moves(
    scores_a: Mapping[str, float],
    scores_b: Mapping[str, float],
    names: tuple[str, str] = ("a", "b"),
) -> pd.DataFrame:
    """Per encoder: both scores, both ranks and ``rank_move`` (= rank_a − rank_b; > 0 moves up
    under ``b``), sorted by rank under ``b``."""
    enc, a, b = _aligned(scores_a, scores_b)
    na, nb = names
    out = pd.DataFrame(
        {
            "encoder": enc,
            na: a,
            nb: b,
            f"rank_{na}": ranks_desc(a),
            f"rank_{nb}": ranks_desc(b),
        }
    )
    out["rank_move"] = out[f"rank_{na}"] - out[f"rank_{nb}"]
    return out.sort_values(f"rank_{nb}", kind="stable").reset_index(drop=True)


def rank1_agreement(scores_a: Mapping[str, float], scores_b: Mapping[str, float]) -> dict:
    """Whether two rankings put the same encoder first (higher score = better rank).

    Only encoders present (and finite) in both are compared, as in :func:`rank_agreement`.
    Encoders tied for the top score share rank 1 and are joined with ``" = "``; the rank-1
    encoders agree when both top sets are the same.

    Returns
    -------
    dict
        ``rank1_a``, ``rank1_b`` (names) and ``rank1_agrees`` (bool).
    """
    names, a, b = _aligned(scores_a, scores_b)
    top_a = [n for n, v in zip(names, a, strict=True) if v == a.max()]
    top_b = [n for n, v in zip(names, b, strict=True) if v == b.max()]
    return {
        "rank1_a": " = ".join(top_a),
        "rank1_b": " = ".join(top_b),
        "rank1_agrees": top_a == top_b,
    }
