"""Second-order features: every product x_j * x_k (j < k) of two input features as a candidate of
feature generation, without forming the n x m^2 matrix.

Feature generation only needs, of all candidate columns, the ``budget`` with the largest scores
c = X~' beta (the worst-case d) and the columns it selects. For a product column the score is
c_jk = sum_i beta_i x_ij x_ik, so the best pairs are found from the rows: for each feature j the
products of the rows holding j are scattered into one reusable m-vector, and a heap keeps the best
``budget`` pairs. The work is sum_i nnz(x_i)^2 / 2 per outer iteration (not m^2) and the memory the
data plus O(m + budget). Dense data use one Gram matrix X' diag(beta) X instead (BLAS), m^2 values.

The expanded space numbers the linear feature j as column j and the product of j < k as column
m + j * m + k (so the pair is (key // m, key % m) of key = column - m; half the index space is unused,
which costs nothing: only selected columns are ever stored). Squares x_j^2 are not candidates: on
binary features they equal x_j, and on scaled real features they mostly measure a feature's spread.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from .._jit import njit
from .data import (
    RowBlocks,
    as_solver_matrix,
    is_row_blocks,
    matvec_t,
    occurring_columns,
    select_columns,
    take_columns,
    weights_in,
)

# Dense data score the pairs with an m x m Gram matrix; above this many bytes of it, sparse input is
# required (its scoring holds O(m) per feature instead).
MAX_DENSE_SCORE_BYTES = 2 ** 30


def check_pair_scoring(X: Any, name: str = "interactions") -> None:
    """ValueError (naming ``name``) when the pairs of dense X would need an m x m matrix above
    MAX_DENSE_SCORE_BYTES."""
    m = X.shape[1]
    if not sp.issparse(X) and not is_row_blocks(X) and 8 * m * m > MAX_DENSE_SCORE_BYTES:
        limit = MAX_DENSE_SCORE_BYTES / 2 ** 30
        raise ValueError(f"{name}=True on dense X with {m} features scores the pairs with an {m} x {m} matrix "
                         f"of {8 * m * m / 2 ** 30:.1f} GiB (more than {limit:.0f} GiB); pass X as a scipy.sparse "
                         "matrix, whose pair scoring needs memory of the order of the data, or select features first.")


def expand(X: Any) -> tuple[PairExpansion, np.ndarray | None]:
    """(the :class:`PairExpansion` of X's occurring columns, those columns in X's numbering or None
    for all): what a fit with interactions solves on."""
    columns = occurring_columns(X)
    base = X if columns is None else select_columns(X, columns)
    return PairExpansion(as_solver_matrix(base)), columns


def split_columns(cols: np.ndarray, values: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                  np.ndarray]:
    """(linear columns, their values, pairs (p, 2), their values) of weights on expanded columns."""
    cols = np.asarray(cols, dtype=np.int64)
    values = np.asarray(values, dtype=float)
    linear = cols < m
    keys = cols[~linear] - m
    pairs = np.column_stack((keys // m, keys % m)).astype(np.int64)
    return cols[linear], values[linear], pairs, values[~linear]


def split_weights(cols: np.ndarray, values: np.ndarray, columns: np.ndarray | None, n_features: int,
                  n_inputs: int) -> tuple[Any, np.ndarray, np.ndarray]:
    """A model on an expansion's columns (``cols``, ``values``; ``columns``, ``n_inputs`` as
    :func:`expand` gave them) in X's numbering: (linear weights over ``n_features`` as
    ``solvers.data.weights_in``, pairs (p, 2) sorted, their weights), zeros left out."""
    nonzero = np.asarray(values) != 0
    linear, w_linear, pairs, w_pairs = split_columns(np.asarray(cols)[nonzero], np.asarray(values)[nonzero], n_inputs)
    if columns is not None:
        linear, pairs = columns[linear], columns[pairs]
    return weights_in(linear, w_linear, n_features), pairs.reshape(-1, 2), w_pairs


def pair_columns(X_inputs: Any, left: np.ndarray, right: np.ndarray) -> Any:
    """The products X_inputs[:, left] * X_inputs[:, right], column by column (CSC or dense)."""
    if sp.issparse(X_inputs):
        X_inputs = sp.csc_matrix(X_inputs)
        return sp.csc_matrix(X_inputs[:, left].multiply(X_inputs[:, right]))
    X_inputs = np.asarray(X_inputs)
    return X_inputs[:, left] * X_inputs[:, right]


def pair_products(X: Any, pairs: np.ndarray) -> Any:
    """The n x p matrix of the products x_j * x_k of ``pairs`` (p, 2) of X's columns (X's numbering),
    reading only the columns involved (one pass for row blocks on disk or on a cluster)."""
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    needed, where = np.unique(pairs, return_inverse=True)
    where = where.reshape(pairs.shape)
    if is_row_blocks(X):
        occurring = X.occurring_columns()
        if occurring is None:
            block = X.take_columns(needed)
        else:                              # the blocks' compact numbering; a column that never occurs is 0
            at = np.minimum(np.searchsorted(occurring, needed), max(occurring.shape[0] - 1, 0))
            present = np.flatnonzero(occurring[at] == needed) if occurring.shape[0] else np.zeros(0, np.int64)
            taken = X.compacted().take_columns(at[present])
            spread = sp.csr_matrix((np.ones(present.shape[0]), (np.arange(present.shape[0]), present)),
                                   shape=(present.shape[0], needed.shape[0]))
            block = sp.csc_matrix(taken @ spread)
    elif sp.issparse(X):
        block = sp.csc_matrix(X)[:, needed]
    else:
        block = np.asarray(X)[:, needed]
    return pair_columns(block, where[:, 0], where[:, 1])


class PairExpansion(RowBlocks):
    """The n x (m + m^2) matrix [X, x_j * x_k (j < k)] as the solver sees row blocks: any columns on
    demand (:meth:`take_columns`) and, in place of the product X' v over every column, the candidates
    of feature generation (:meth:`candidate_scores`). ``X``: the solver's matrix of the m input features
    (CSC, dense, or row blocks in their compact numbering)."""

    def __init__(self, X: Any) -> None:
        check_pair_scoring(X)
        self.base = X
        n, m = X.shape
        self.n_inputs = m
        self.shape = (n, m + m * m)
        # sparse X's rows and columns for the pair scoring
        self._structure: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None

    def occurring_columns(self) -> None:
        return None                             # the input features are compacted by the caller

    def compacted(self) -> PairExpansion:
        return self

    def rmatvec(self, v: np.ndarray) -> np.ndarray:
        raise TypeError("PairExpansion never forms X' v over all m^2 pairs; use candidate_scores.")

    def matvec(self, w: np.ndarray) -> np.ndarray:
        raise TypeError("PairExpansion multiplies selected columns only (take_columns).")

    def take_columns(self, cols: np.ndarray) -> Any:
        """Expanded columns ``cols`` (sorted) in memory: the linear ones read from X, the products
        from the columns of their two features."""
        cols = np.asarray(cols, dtype=np.int64)
        m = self.n_inputs
        linear, _, pairs, _ = split_columns(cols, np.zeros(cols.shape[0]), m)
        lin_block = take_columns(self.base, linear)
        if pairs.shape[0] == 0:
            return lin_block
        products = pair_products(self.base, pairs)
        if sp.issparse(products):
            return sp.hstack([sp.csc_matrix(lin_block), products], format="csc")
        return np.hstack([np.asarray(lin_block), products])

    def candidate_scores(self, v: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(columns, scores): the score c_j = x_j' v of every linear column and the ``k`` pairs with the
        largest |c_jk| (ties to the smaller index; pairs scoring 0 left out), by increasing column."""
        m = self.n_inputs
        linear = matvec_t(self.base, v)
        keys, pair_scores = self._top_pairs(np.ascontiguousarray(v, dtype=np.float64), int(k))
        order = np.argsort(keys, kind="stable")
        cols = np.concatenate((np.arange(m, dtype=np.int64), m + keys[order]))
        return cols, np.concatenate((linear, pair_scores[order]))

    def _top_pairs(self, v: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        m = self.n_inputs
        X = self.base
        if not sp.issparse(X) and not is_row_blocks(X):
            X = np.asarray(X)
            G = X.T @ (X * v[:, None])
            j, kk = np.triu_indices(m, 1)
            scores = G[j, kk]
            keys = j.astype(np.int64) * m + kk
            nonzero = np.flatnonzero(scores)
            order = np.lexsort((keys[nonzero], -(scores[nonzero] ** 2)))[:k]
            chosen = nonzero[order]
            return keys[chosen], scores[chosen]
        if self._structure is None:
            csr = sp.csr_matrix(take_columns(X, np.arange(m)) if is_row_blocks(X) else X, dtype=np.float64)
            csr.sum_duplicates()                    # canonical: sorted column indices, no repeats
            row_ptr = csr.indptr.astype(np.int64)
            row_cols = csr.indices.astype(np.int64)
            col_ptr, col_rows, col_pos = _columns_of_rows(row_ptr, row_cols, m)
            self._structure = (col_ptr, col_rows, col_pos, row_ptr, row_cols, csr.data)
        return _top_pair_scores(*self._structure, v, k, m)


@njit(cache=True)
def _columns_of_rows(row_ptr: np.ndarray, row_cols: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For a CSR matrix: each column's rows (increasing) and the positions of those entries in CSR."""
    col_ptr = np.zeros(m + 1, dtype=np.int64)
    for p in range(row_cols.shape[0]):
        col_ptr[row_cols[p] + 1] += 1
    for j in range(m):
        col_ptr[j + 1] += col_ptr[j]
    fill = col_ptr[:-1].copy()
    col_rows = np.empty(row_cols.shape[0], dtype=np.int64)
    col_pos = np.empty(row_cols.shape[0], dtype=np.int64)
    for i in range(row_ptr.shape[0] - 1):
        for p in range(row_ptr[i], row_ptr[i + 1]):
            dest = fill[row_cols[p]]
            col_rows[dest] = i
            col_pos[dest] = p
            fill[row_cols[p]] += 1
    return col_ptr, col_rows, col_pos


@njit(cache=True)
def _worse(sq_a: float, key_a: int, sq_b: float, key_b: int) -> bool:
    """Whether candidate a ranks below b: a smaller square, or the same and a larger key."""
    return sq_a < sq_b or (sq_a == sq_b and key_a > key_b)


@njit(cache=True)
def _sift_down(heap_sq: np.ndarray, heap_key: np.ndarray, heap_val: np.ndarray, size: int, at: int) -> None:
    while True:
        low, left, right = at, 2 * at + 1, 2 * at + 2
        if left < size and _worse(heap_sq[left], heap_key[left], heap_sq[low], heap_key[low]):
            low = left
        if right < size and _worse(heap_sq[right], heap_key[right], heap_sq[low], heap_key[low]):
            low = right
        if low == at:
            return
        heap_sq[at], heap_sq[low] = heap_sq[low], heap_sq[at]
        heap_key[at], heap_key[low] = heap_key[low], heap_key[at]
        heap_val[at], heap_val[low] = heap_val[low], heap_val[at]
        at = low


# Over 8 parameters: the CSC and CSR arrays of X as a compiled kernel takes them (numba caches no objects).
@njit(cache=True)
def _top_pair_scores(col_ptr: np.ndarray, col_rows: np.ndarray, col_pos: np.ndarray, row_ptr: np.ndarray,
                     row_cols: np.ndarray, row_vals: np.ndarray, v: np.ndarray, k: int, m: int) -> tuple[np.ndarray,
                     np.ndarray]:
    """The ``k`` pairs j < l with the largest |sum_i v_i x_ij x_il| (keys j * m + l, scores), in no
    order. For each j the rows holding j scatter their later entries into ``acc``; a min-heap of the
    worst kept pair decides in O(1) for most pairs."""
    acc = np.zeros(m)
    seen = np.zeros(m, dtype=np.bool_)
    touched = np.empty(m, dtype=np.int64)
    heap_sq = np.empty(k)
    heap_key = np.empty(k, dtype=np.int64)
    heap_val = np.empty(k)                         # the signed scores
    size = 0
    for j in range(m):
        n_touched = 0
        for p in range(col_ptr[j], col_ptr[j + 1]):
            i = col_rows[p]
            q = col_pos[p]
            a = v[i] * row_vals[q]
            if a == 0.0:
                continue
            for r in range(q + 1, row_ptr[i + 1]):
                other = row_cols[r]
                if not seen[other]:
                    seen[other] = True
                    touched[n_touched] = other
                    n_touched += 1
                acc[other] += a * row_vals[r]
        for t in range(n_touched):
            other = touched[t]
            s = acc[other]
            acc[other] = 0.0
            seen[other] = False
            sq = s * s
            if sq == 0.0 or k == 0:
                continue
            key = j * m + other
            if size < k:
                heap_sq[size] = sq
                heap_key[size] = key
                heap_val[size] = s
                size += 1
                at = size - 1
                while at > 0:                          # sift up: the worst at the root
                    parent = (at - 1) // 2
                    if _worse(heap_sq[at], heap_key[at], heap_sq[parent], heap_key[parent]):
                        heap_sq[at], heap_sq[parent] = heap_sq[parent], heap_sq[at]
                        heap_key[at], heap_key[parent] = heap_key[parent], heap_key[at]
                        heap_val[at], heap_val[parent] = heap_val[parent], heap_val[at]
                        at = parent
                    else:
                        break
            elif _worse(heap_sq[0], heap_key[0], sq, key):
                heap_sq[0] = sq
                heap_key[0] = key
                heap_val[0] = s
                _sift_down(heap_sq, heap_key, heap_val, size, 0)
    return heap_key[:size].copy(), heap_val[:size].copy()
