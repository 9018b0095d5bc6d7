"""Where the working set keeps its planes' per-example coefficients coef_k (K x n).

The working set needs four things of them: to add and drop rows, the combination sum_k a_k coef_k
(the dual direction beta), the products coef_k . u, and X_t' coef_k for a new group's columns. At
large n they are the biggest thing a fit holds (41 live planes x n doubles: 6.6 GB at n = 2e7).

* :class:`DensePlanes`: float64 rows, BLAS products (in-memory data).
* :class:`CodedPlanes`: a code per example and plane plus each plane's table of distinct values.
  The oracles of the contingency losses give every example one of a few values (error: 0 and
  +-100/n; F1, Prec@k: three), so the codes hold the coefficients exactly: two bits per example when
  a plane has at most four values (1/32 of the float64 memory), else one byte; the products are
  compiled loops over the codes. A plane with more than 255 distinct values (ROC area,
  AP) turns the store dense. Used for data on disk or on a cluster, where n is large.

The two agree up to the order of floating-point sums (tests/test_solvers.py).
"""
from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
from numba import types
from numba.typed import List

from .._jit import njit

_BLOCK = 4096          # examples per block of the coded combination: the output block stays in cache


class DensePlanes:
    def __init__(self, n_samples: int) -> None:
        self.n = n_samples
        self.K = 0
        self._coef = np.empty((16, n_samples))  # capacity grows by doubling; rows [:K] are live

    @classmethod
    def wrap(cls, buffer: np.ndarray, K: int) -> DensePlanes:
        """The store whose first ``K`` rows of ``buffer`` are its planes (the rest is capacity)."""
        store = cls.__new__(cls)
        store.n, store.K, store._coef = buffer.shape[1], K, buffer
        return store

    @property
    def coef(self) -> np.ndarray:
        return self._coef[:self.K]

    @property
    def buffer(self) -> np.ndarray:
        """The planes' rows and the capacity after them (what :meth:`wrap` takes back)."""
        return self._coef

    def append(self, coef: np.ndarray) -> bool:
        """Store a plane; False when this store cannot hold it (never, for the dense store)."""
        K = self.K
        if K == self._coef.shape[0]:
            # np.empty: the new rows stay untouched (not resident) until planes are written there;
            # vstack with zeros wrote them all, K x n x 8 bytes that large-n fits pay in memory.
            grown = np.empty((2 * K, self.n))
            grown[:K] = self._coef
            self._coef = grown
        self._coef[K] = coef
        self.K += 1
        return True

    def keep(self, kept: np.ndarray) -> None:
        """Keep the planes at the sorted positions ``kept``, in order."""
        # Close the gaps in place, in order, from the first dropped plane on: one row copy per moved
        # plane (a gather of every kept row, then writing it back, was two K x n copies -- 40 ms per
        # drop at n = 2e5, the largest single cost of out-of-core fits).
        first = _first_gap(kept)
        for position in range(first, kept.shape[0]):
            self._coef[position] = self._coef[kept[position]]
        self.K = kept.shape[0]

    def combination(self, weights: np.ndarray) -> np.ndarray:
        """sum_k weights_k coef_k (n,)."""
        return combination(self.coef, weights)

    def dots(self, u: np.ndarray, count: int) -> np.ndarray:
        """(coef_k . u) for the first ``count`` planes."""
        return self._coef[:count] @ u

    def to_dense(self) -> DensePlanes:
        """The store itself: it holds any plane."""
        return self

    def column_products(self, X_cols: Any) -> np.ndarray:
        """X_cols' coef_k for every plane: K x |t|."""
        return np.asarray(X_cols.T @ self.coef.T).T


def combination(rows: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """sum_k weights_k rows_k over the rows of a K x width array (plane coefficients, or plane values on a
    group)."""
    # The dense K x width product is memory-bound: when most planes are idle (budgeted fits, many groups)
    # gather the weighted rows; otherwise the gather's copy costs more than it saves.
    active = np.flatnonzero(weights)
    if 4 * active.shape[0] < rows.shape[0]:
        return weights[active] @ rows[active]
    return weights @ rows


class CodedPlanes:
    def __init__(self, n_samples: int) -> None:
        self.n = n_samples
        # One code row per live plane, each its own buffer: a new plane allocates its row and a dropped
        # one frees it. (A K x n block grown by doubling copied every row beside the old block --
        # 1.3 GB at once at n = 2e7 -- and kept the highest row ever written resident.) A plane with at
        # most 4 values -- error and F1 planes have 3 -- packs four codes per byte (n/4 bytes).
        self.codes = List.empty_list(types.Array(types.uint8, 1, "C"))
        self.bits = np.zeros(16, dtype=np.int64)   # 2 or 8 bits per code, per plane
        self.levels = np.zeros((16, 256))          # plane k's coefficient with code c: levels[k, c]

    @property
    def K(self) -> int:
        return len(self.codes)

    def append(self, coef: np.ndarray) -> bool:
        K = self.K
        if K == self.levels.shape[0]:
            levels = np.zeros((2 * K, 256))
            levels[:K] = self.levels
            self.levels, self.bits = levels, np.concatenate((self.bits, np.zeros(K, dtype=np.int64)))
        row = np.empty(self.n, dtype=np.uint8)
        n_levels = _encode(np.ascontiguousarray(coef, dtype=np.float64), row, self.levels[K])
        if n_levels < 0:
            return False
        if n_levels <= 4:
            row, self.bits[K] = _pack2(row), 2
        else:
            self.bits[K] = 8
        self.codes.append(row)
        return True

    def keep(self, kept: np.ndarray) -> None:
        codes = List.empty_list(types.Array(types.uint8, 1, "C"))
        for k in kept:
            codes.append(self.codes[k])
        self.codes = codes
        for position in range(_first_gap(kept), kept.shape[0]):
            self.levels[position] = self.levels[kept[position]]
            self.bits[position] = self.bits[kept[position]]

    def combination(self, weights: np.ndarray) -> np.ndarray:
        active = np.flatnonzero(weights)
        return _combination(self.codes, self.bits, self.levels, active, weights[active], self.n)

    def dots(self, u: np.ndarray, count: int) -> np.ndarray:
        return _dots(self.codes, self.bits, self.levels, count, np.ascontiguousarray(u, dtype=np.float64))

    def column_products(self, X_cols: Any) -> np.ndarray:
        X_cols = sp.csc_matrix(X_cols, dtype=np.float64)
        return _column_products(self.codes, self.bits, self.levels, self.K, X_cols.indptr, X_cols.indices,
                                X_cols.data)

    def to_dense(self) -> DensePlanes:
        """The same planes as a :class:`DensePlanes`."""
        dense = DensePlanes(self.n)
        for k in range(self.K):
            dense.append(self.levels[k][_unpacked(self.codes[k], self.bits[k], self.n)])
        return dense


def _first_gap(kept: np.ndarray) -> int:
    """The first position whose plane moves (kept[p] != p), or len(kept) when none does."""
    moved = np.flatnonzero(kept != np.arange(kept.shape[0]))
    return int(moved[0]) if moved.shape[0] else kept.shape[0]


@njit(cache=True)
def _encode(coef: np.ndarray, codes: np.ndarray, levels: np.ndarray) -> int:
    """codes/levels of one plane (levels in order of first appearance); the number of levels, or -1
    past 255 values."""
    n_levels = 0
    last_value, last_code = np.nan, 0
    for i in range(coef.shape[0]):
        value = coef[i]
        if value == last_value:                # runs are common (most examples share a value)
            codes[i] = last_code
            continue
        code = -1
        for c in range(n_levels):
            if levels[c] == value:
                code = c
                break
        if code < 0:
            if n_levels == 255 or value != value:
                return -1
            levels[n_levels] = value
            code = n_levels
            n_levels += 1
        codes[i] = code
        last_value, last_code = value, code
    return n_levels


@njit(cache=True)
def _pack2(codes: np.ndarray) -> np.ndarray:
    """Codes below 4, four to a byte: example i in bits 2 (i % 4) of byte i // 4."""
    out = np.zeros((codes.shape[0] + 3) // 4, dtype=np.uint8)
    for i in range(codes.shape[0]):
        out[i >> 2] |= np.uint8(codes[i] << ((i & 3) << 1))
    return out


@njit(cache=True, inline="always")
def _code(row: np.ndarray, bits: int, i: int) -> int:
    if bits == 2:
        return (row[i >> 2] >> ((i & 3) << 1)) & 3
    return row[i]


@njit(cache=True)
def _unpacked(row: np.ndarray, bits: int, n: int) -> np.ndarray:
    out = np.empty(n, dtype=np.uint8)
    for i in range(n):
        out[i] = _code(row, bits, i)
    return out


@njit(cache=True)
def _combination(codes: Any, bits: np.ndarray, levels: Any, active: np.ndarray, weights: np.ndarray,
                 n: int) -> np.ndarray:
    out = np.zeros(n)
    table = np.empty(256)
    for start in range(0, n, _BLOCK):
        stop = min(start + _BLOCK, n)
        for a in range(active.shape[0]):
            k = active[a]
            row = codes[k]
            for c in range(256):
                table[c] = weights[a] * levels[k, c]
            if bits[k] == 2:
                for i in range(start, stop):      # the branch on bits outside the loop
                    out[i] += table[_code(row, 2, i)]
            else:
                for i in range(start, stop):
                    out[i] += table[row[i]]
    return out


@njit(cache=True)
def _dots(codes: Any, bits: np.ndarray, levels: Any, K: int, u: np.ndarray) -> np.ndarray:
    out = np.zeros(K)
    for k in range(K):
        row = codes[k]
        acc = 0.0
        if bits[k] == 2:
            for i in range(u.shape[0]):
                acc += levels[k, _code(row, 2, i)] * u[i]
        else:
            for i in range(u.shape[0]):
                acc += levels[k, row[i]] * u[i]
        out[k] = acc
    return out


@njit(cache=True)
def _column_products(codes: Any, bits: np.ndarray, levels: Any, K: int, indptr: np.ndarray, indices: np.ndarray,
                     data: np.ndarray) -> np.ndarray:
    out = np.zeros((K, indptr.shape[0] - 1))
    for k in range(K):
        row, b = codes[k], bits[k]
        for j in range(indptr.shape[0] - 1):
            acc = 0.0
            for p in range(indptr[j], indptr[j + 1]):
                acc += data[p] * levels[k, _code(row, b, indices[p])]
            out[k, j] = acc
    return out
