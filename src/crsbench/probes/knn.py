"""kNN control probe (k = 5): one similarity GEMM per query chunk, then a top-k.

Features are standardised with the training rows' statistics; ``metric="cosine"`` (default)
then L2-normalises every row and ranks by cosine similarity, ``"euclidean"`` ranks by squared
distance. Probabilities are neighbour votes: the share of the k neighbours in each class
(multiclass), or per label the mean of the neighbours' labelled 0/1 values (multilabel; the
training prevalence when none of the k neighbours is labelled). Ties in distance are broken
by training-row order (stable sort), so results are deterministic.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from crsbench.core.validation import check_features
from crsbench.probes.base import ProbeBase
from crsbench.protocol import KNN_K, KNN_METRIC

_METRICS = ("cosine", "euclidean")


class KNNProbe(ProbeBase):
    """k-nearest-neighbour probe with the scikit-learn estimator contract.

    Parameters
    ----------
    k : int, default 5
    metric : {"cosine", "euclidean"}, default "cosine"
    task : {"multiclass", "multilabel"}, default "multiclass"
    chunk_size : int, default 2048
        Query rows per similarity GEMM.
    n_outputs : int, optional
        Number of classes (multiclass); default ``max(y) + 1``.
    """

    def __init__(
        self,
        k: int = KNN_K,
        metric: str = KNN_METRIC,
        task: str = "multiclass",
        chunk_size: int = 2048,
        n_outputs: int | None = None,
    ) -> None:
        self.k = k
        self.metric = metric
        self.task = task
        self.chunk_size = chunk_size
        self.n_outputs = n_outputs

    def _embed(self, X: np.ndarray) -> np.ndarray:
        Z = (X - self.mean_) / self.scale_
        if self.metric == "cosine":
            norm = np.linalg.norm(Z, axis=1, keepdims=True)
            Z = Z / np.where(norm > 0, norm, 1.0)
        return Z

    def fit(self, X: npt.ArrayLike, y: npt.ArrayLike) -> KNNProbe:
        """Store the standardised training rows and their targets."""
        if not isinstance(self.k, (int, np.integer)) or self.k < 1:
            raise ValueError(f"k must be a positive integer. Got {self.k!r} instead.")
        if self.metric not in _METRICS:
            raise ValueError(f"metric must be one of {_METRICS}. Got {self.metric!r} instead.")
        if not isinstance(self.chunk_size, (int, np.integer)) or self.chunk_size < 1:
            raise ValueError(
                f"chunk_size must be a positive integer. Got {self.chunk_size!r} instead."
            )
        X, y, k = self._prepare(X, y, self.n_outputs)
        X = X.astype(np.float64)
        self.mean_ = X.mean(axis=0)
        std = X.std(axis=0)
        self.scale_ = np.where(std > 0, std, 1.0)
        self.train_ = self._embed(X)
        if self.task == "multiclass":
            Y = np.zeros((len(y), k))
            Y[np.arange(len(y)), y] = 1.0
            self.votes_ = Y
            self.labelled_ = np.ones_like(Y)
        else:
            self.labelled_ = (~np.isnan(y)).astype(np.float64)
            self.votes_ = np.nan_to_num(y)
        counts = self.labelled_.sum(axis=0)
        self.prior_ = np.where(counts > 0, self.votes_.sum(axis=0) / np.maximum(counts, 1), 0.5)
        self.n_neighbors_ = min(int(self.k), X.shape[0])
        self._set_fitted(X.shape[1], k)
        return self

    def kneighbors(self, X: np.ndarray) -> np.ndarray:
        """Indices (N × k) of the nearest training rows, nearest first."""
        self._check_fitted()
        X = check_features(X, "X", self.n_features_in_)
        out = np.empty((X.shape[0], self.n_neighbors_), dtype=np.int64)
        kk = self.n_neighbors_
        for start in range(0, X.shape[0], self.chunk_size):
            Q = self._embed(X[start : start + self.chunk_size].astype(np.float64))
            if self.metric == "cosine":
                dist = -(Q @ self.train_.T)
            else:
                dist = (self.train_**2).sum(axis=1)[None, :] - 2.0 * (Q @ self.train_.T)
            if kk < dist.shape[1]:
                part = np.argpartition(dist, kk - 1, axis=1)[:, :kk]
            else:
                part = np.tile(np.arange(dist.shape[1]), (dist.shape[0], 1))
            sub = np.take_along_axis(dist, part, axis=1)
            order = np.lexsort((part, sub), axis=1)
            out[start : start + len(Q)] = np.take_along_axis(part, order, axis=1)
        return out

    def _predict_proba(self, X: np.ndarray) -> np.ndarray:
        nb = self.kneighbors(X)
        votes = self.votes_[nb].sum(axis=1)
        counts = self.labelled_[nb].sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            p = votes / counts
        return np.where(counts > 0, p, self.prior_[None, :])
