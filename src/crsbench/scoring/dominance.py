"""Weak Pareto dominance counts against a fixed panel, vectorised with bit masks.

Profile ``u`` weakly dominates ``p`` when ``u >= p`` on every axis and ``u > p`` on at least
one; equivalently ``p <= u`` everywhere and ``p != u``. For each axis the panel points with
``p_a <= x`` form a prefix of the panel sorted on that axis, so the set is one row of a
cumulative bit-mask table; the dominated set is the AND of four rows, counted with
``np.bitwise_count``. This costs O(words) per query instead of O(panel size), which keeps the
10,000-replicate bootstrap at a few seconds.

Anchors v2 replace the panel by its limit, the uniform distribution on the utility cube
(:class:`UniformReference`): the share of it a profile ``u`` weakly dominates is the volume of
the box ``[0, u]``, ``prod(u)``, computed exactly by :class:`UniformDominance`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_CHUNK = 131_072
_ALL_BITS = np.uint64(np.iinfo(np.uint64).max)
#: The YAML spelling of :class:`UniformReference` in an anchors file's ``reference_panel``.
UNIFORM_EXACT = "uniform-exact"


@dataclass(frozen=True)
class UniformReference:
    """The uniform distribution on the utility cube ``[0, 1]^d``, used as a reference panel.

    It is the limit of the Halton panel (anchors v1) as its size grows: the Halton points are
    equidistributed, so the share of them inside any box tends to the box's volume.
    """

    d: int = 4

    def __str__(self) -> str:
        return UNIFORM_EXACT


class UniformDominance:
    """Exact share of :class:`UniformReference` that each query weakly dominates.

    A profile ``u`` weakly dominates the reference points ``p`` with ``p <= u`` on every axis
    and ``p != u``. Under the uniform distribution on ``[0, 1]^d`` the points equal to ``u``
    have probability 0, so the share is the volume of the box ``[0, u_1] × ... × [0, u_d]``:
    ``prod_a clip(u_a, 0, 1)``. No grid, so no grid error.
    """

    def __init__(self, reference: UniformReference | None = None) -> None:
        self.d = (reference or UniformReference()).d

    def share(self, queries: np.ndarray) -> np.ndarray:
        """Share of the reference each row of ``queries`` (shape ``(..., d)``) weakly dominates.

        Parameters
        ----------
        queries : numpy.ndarray
            Utility profiles; a row with any NaN gives NaN.

        Returns
        -------
        numpy.ndarray
            Float array of shape ``queries.shape[:-1]``, in [0, 1].
        """
        q = np.asarray(queries, dtype=float)
        if q.shape[-1] != self.d:
            raise ValueError(f"queries must have {self.d} columns. Got shape {q.shape}.")
        return np.prod(np.clip(q, 0.0, 1.0), axis=-1)


class DominanceCounter:
    """Counts how many points of a fixed ``panel`` (shape ``(m, d)``) each query dominates."""

    def __init__(self, panel: np.ndarray) -> None:
        panel = np.asarray(panel, dtype=float)
        if panel.ndim != 2 or 0 in panel.shape:
            raise ValueError(f"panel must be a non-empty 2-D array. Got shape {panel.shape}.")
        self.m, self.d = panel.shape
        self.words = (self.m + 63) // 64
        onehot = np.zeros((self.m, self.words), dtype=np.uint64)
        idx = np.arange(self.m)
        onehot[idx, idx // 64] = np.left_shift(np.uint64(1), (idx % 64).astype(np.uint64))
        self._sorted = []
        self._cum = []
        for a in range(self.d):
            order = np.argsort(panel[:, a], kind="stable")
            self._sorted.append(panel[order, a])
            cum = np.zeros((self.m + 1, self.words), dtype=np.uint64)
            cum[1:] = np.bitwise_or.accumulate(onehot[order], axis=0)
            self._cum.append(cum)

    def count(self, queries: np.ndarray) -> np.ndarray:
        """Number of panel points each row of ``queries`` weakly dominates (NaN row → NaN).

        Parameters
        ----------
        queries : numpy.ndarray
            Shape ``(..., d)``.

        Returns
        -------
        numpy.ndarray
            Float array of shape ``queries.shape[:-1]``.
        """
        q = np.asarray(queries, dtype=float)
        if q.shape[-1] != self.d:
            raise ValueError(f"queries must have {self.d} columns. Got shape {q.shape}.")
        flat = q.reshape(-1, self.d)
        out = np.empty(flat.shape[0], dtype=float)
        for start in range(0, flat.shape[0], _CHUNK):
            out[start : start + _CHUNK] = self._count_chunk(flat[start : start + _CHUNK])
        return out.reshape(q.shape[:-1])

    def _count_chunk(self, q: np.ndarray) -> np.ndarray:
        finite = np.isfinite(q).all(axis=1)
        qq = np.where(finite[:, None], q, 0.0)
        le = np.full((q.shape[0], self.words), _ALL_BITS)  # AND over the axes
        hi = np.empty((q.shape[0], self.d), dtype=np.intp)
        tied = np.ones(q.shape[0], dtype=bool)
        for a in range(self.d):
            hi[:, a] = np.searchsorted(self._sorted[a], qq[:, a], side="right")
            # a panel value equals the query on this axis iff the last one <= it is equal
            tied &= (hi[:, a] > 0) & (self._sorted[a][np.maximum(hi[:, a] - 1, 0)] == qq[:, a])
            rows = self._cum[a][hi[:, a]]
            le &= rows
        counts = np.bitwise_count(le).sum(axis=1, dtype=np.int64).astype(float)
        ties = np.flatnonzero(tied)
        if ties.size:
            eq = np.full((ties.size, self.words), _ALL_BITS)
            for a in range(self.d):
                lo = np.searchsorted(self._sorted[a], qq[ties, a], side="left")
                rows = self._cum[a][hi[ties, a]] & ~self._cum[a][lo]
                eq &= rows
            counts[ties] -= np.bitwise_count(eq).sum(axis=1)
        counts[~finite] = np.nan
        return counts

    def share(self, queries: np.ndarray) -> np.ndarray:
        """Share of the panel each query weakly dominates, in [0, 1]."""
        return self.count(queries) / self.m


def dominance_counter(
    reference: np.ndarray | UniformReference,
) -> DominanceCounter | UniformDominance:
    """The dominance share against ``reference``: counted on a finite panel (an array of
    profiles) or exact for :class:`UniformReference`. Both have ``share(queries)``."""
    if isinstance(reference, UniformReference):
        return UniformDominance(reference)
    return DominanceCounter(reference)


def cohort_dominance(u: np.ndarray) -> np.ndarray:
    """Dominance share within a cohort: for each member, the share of the *other* members
    it weakly dominates.

    Parameters
    ----------
    u : numpy.ndarray
        Shape ``(..., n, d)``; a member with any NaN is absent (its share is NaN and it
        counts for no one).

    Returns
    -------
    numpy.ndarray
        Shape ``(..., n)``; 0 where a member has no peer.
    """
    u = np.asarray(u, dtype=float)
    present = np.isfinite(u).all(axis=-1)
    a = u[..., :, None, :]
    b = u[..., None, :, :]
    dom = (a >= b).all(axis=-1) & (a > b).any(axis=-1)
    dom &= present[..., :, None] & present[..., None, :]
    n_peers = present.sum(axis=-1, keepdims=True) - 1
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(n_peers > 0, dom.sum(axis=-1) / np.maximum(n_peers, 1), 0.0)
    return np.where(present, share, np.nan)
