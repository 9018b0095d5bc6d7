"""The data as the solver sees it: the columns that occur, the products it needs, the column cache.

Per outer iteration feature generation needs one product X~' beta over all columns; per cutting plane
only the columns of the selected groups (the cache) and one oracle call on the n scores. Everything
that touches X goes through this module.

Besides ndarrays and scipy.sparse matrices X may be :class:`RowBlocks`: rows on disk, on a cluster, or
columns formed on demand, which the solver reads only through that class's few operations, so such
data are never loaded whole.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from .._jit import njit

if TYPE_CHECKING:
    from .working_set import WorkingSet


class RowBlocks(ABC):
    """An (n_samples, n_features) matrix the solver reads in passes over its rows, never whole.

    What a fit needs of X, and all it asks of such data: the product X' v over every column
    (:meth:`rmatvec`, feature generation's one pass per group), X w (:meth:`matvec`), a few columns in
    memory (:meth:`take_columns`, the selected groups' cache), and the columns that occur with the
    compact view numbered by them (:meth:`occurring_columns`, :meth:`compacted`). Implemented by
    :class:`structfs.shards.ShardedMatrix` (rows on disk), :class:`structfs.cluster.DaskRowBlocks`
    (rows on a cluster) and the pair products of ``interactions=True``; another source is a subclass
    (or registered with ``RowBlocks.register``). Only budgeted fits take such data: the unbudgeted
    problem needs every column at once.
    """

    shape: tuple[int, int]

    @abstractmethod
    def rmatvec(self, v: np.ndarray) -> np.ndarray:
        """X' v (n_features,), one pass over the rows."""

    @abstractmethod
    def matvec(self, w: np.ndarray) -> np.ndarray:
        """X w (n_samples,) for dense weights on every column, one pass."""

    @abstractmethod
    def take_columns(self, cols: np.ndarray) -> Any:
        """The columns ``cols`` (sorted) in memory, CSC or dense (n_samples x len(cols)), one pass."""

    @abstractmethod
    def occurring_columns(self) -> np.ndarray | None:
        """The sorted columns with a nonzero entry (None: every column, or numbered so already)."""

    @abstractmethod
    def compacted(self) -> RowBlocks:
        """The same rows on the occurring columns only, numbered 0..len-1 in their order."""

    def dot(self, columns: np.ndarray, values: np.ndarray) -> np.ndarray:
        """X w for the weights ``values`` on the original (sorted) indices ``columns`` (predictions): one
        pass of the compact view's :meth:`matvec`."""
        compact = self.compacted()
        return compact.matvec(compact_weights(self.occurring_columns(), compact.shape[1], columns, values))


def compact_weights(occurring: np.ndarray | None, n_columns: int, columns: Any, values: Any) -> np.ndarray:
    """Weights ``values`` on original (sorted) indices ``columns`` as a dense vector over the compact
    columns ``occurring`` (None: the identity); weights of columns that do not occur are dropped
    (they multiply zeros)."""
    w = np.zeros(n_columns)
    columns = np.asarray(columns, dtype=np.int64)
    if occurring is None:
        w[columns] = values
    elif occurring.shape[0]:
        at = np.minimum(np.searchsorted(occurring, columns), occurring.shape[0] - 1)
        hit = occurring[at] == columns
        w[at[hit]] = np.asarray(values)[hit]
    return w


def is_row_blocks(X: Any) -> bool:
    """True for :class:`RowBlocks`, which stay where they are."""
    return isinstance(X, RowBlocks)


def as_solver_matrix(X: Any) -> Any:
    """CSC float64 for sparse input (cheap column slices and X' v); dense stays dense."""
    if is_row_blocks(X):
        return X
    if sp.issparse(X):
        return sp.csc_matrix(X, dtype=np.float64)
    return np.asarray(X, dtype=np.float64, order="F")


class SolverData:
    """X as the solves see it: its columns that occur (``columns``, None: all of them; see
    :func:`occurring_columns`) in the solver's format (``X``), and its width ``n_features`` for mapping
    weights back. Every solve on X starts by building it; the fits of a search that share a fold's
    rows build it once (R8: 17 ms a fold, as much as a debiasing refit)."""

    def __init__(self, X: Any) -> None:
        self.n_features = X.shape[1]
        self.columns = occurring_columns(X)
        self.X = as_solver_matrix(X if self.columns is None else select_columns(X, self.columns))

    @classmethod
    def of(cls, X: Any) -> SolverData:
        """``X`` itself when it is a SolverData already, else one built from it."""
        return X if isinstance(X, cls) else cls(X)


# Above this many features a fit's weights are returned sparse (a (1, m) CSR row, as after
# scikit-learn's ``sparsify()``): a dense vector would be O(index space) -- 16 GB for hashed features in
# 2^31 -- where the model has a few thousand weights. Below it (a dense row of at most 128 MB) they stay
# an ndarray, what scikit-learn users expect of ``coef_``.
MAX_DENSE_WEIGHTS = 2 ** 24


def weights_in(columns: np.ndarray, values: np.ndarray, n_features: int) -> Any:
    """Weights ``values`` on the sorted ``columns`` of an ``n_features`` space: an ndarray (m,), or a
    (1, m) CSR row without its zeros when m exceeds MAX_DENSE_WEIGHTS."""
    if n_features > MAX_DENSE_WEIGHTS:
        keep = values != 0
        return sp.csr_matrix((values[keep], columns[keep], np.array([0, int(keep.sum())])), shape=(1, n_features))
    w = np.zeros(n_features)
    w[columns] = values
    return w


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """np.unique of integer indices, by one sort: NumPy 2.4's np.unique hashes, 5.5 s on 6e6 indices
    where the sort takes 0.2 s (shard writing, occurring columns of hashed spaces)."""
    values = np.sort(np.asarray(values).ravel())
    if values.shape[0] == 0:
        return values
    first = np.empty(values.shape[0], dtype=bool)
    first[0] = True
    np.not_equal(values[1:], values[:-1], out=first[1:])
    return values[first]


def column_positions(columns: np.ndarray, n_features: int, dtype: Any = np.int64) -> np.ndarray:
    """A table t of ``n_features`` entries with t[columns[i]] = i and -1 elsewhere: renumbering indices
    to the sorted ``columns`` is then one gather per index. Binary searches cost log2(m) cache misses
    each -- 42 s of a 10^6-row fit renumbering 3e7 entries into 10^7 indices, 0.5 s by the table. Built
    only when the index space is no larger than the entries renumbered (memory follows the data)."""
    table = np.full(n_features, -1, dtype=dtype)
    table[columns] = np.arange(columns.shape[0], dtype=dtype)
    return table


def occurring_columns(X: Any) -> np.ndarray | None:
    """Sorted indices of the columns of a sparse X that hold an entry, or None when X is dense or
    every column does. Memory follows the data: a hashed feature space of 2^31 indices with a few
    thousand in use costs the few thousand (CSC's column pointers alone would be 2^31 entries)."""
    if is_row_blocks(X):
        return X.occurring_columns()
    if not sp.issparse(X):
        return None
    X = X if X.format in ("csr", "csc", "coo") else X.tocsr()
    index = X.col if X.format == "coo" else X.indices if X.format == "csr" else None
    if index is None:                                         # CSC: its column pointers say it
        columns = np.flatnonzero(np.diff(X.indptr))
    elif index.shape[0] < X.shape[1]:
        columns = sorted_unique(index)
    else:
        seen = np.zeros(X.shape[1], dtype=bool)
        seen[index] = True
        columns = np.flatnonzero(seen)
    return None if columns.shape[0] == X.shape[1] else columns.astype(np.int64)


def select_columns(X: Any, columns: np.ndarray) -> Any:
    """The sorted ``columns`` of a sparse X as CSR, by renumbering the stored indices: no structure
    of the size of X's index space is built (CSC's column pointers, or scipy's column indexing,
    would be one entry per index). Dense X is indexed as usual; row blocks on disk are renumbered
    already (their compact view)."""
    if is_row_blocks(X):
        return X.compacted()
    if not sp.issparse(X):
        return np.asarray(X)[:, columns]
    X = X.tocsr() if X.format != "csr" else X
    if X.shape[1] <= X.indices.shape[0]:          # an index space no larger than the entries
        renumbered = column_positions(columns, X.shape[1])[X.indices]
        keep = renumbered >= 0
        renumbered = renumbered[keep]
    else:
        keep = np.isin(X.indices, columns)
        renumbered = np.searchsorted(columns, X.indices[keep])
    kept_before = np.concatenate(([0], np.cumsum(keep)))
    return sp.csr_matrix((X.data[keep], renumbered, kept_before[X.indptr]), shape=(X.shape[0], columns.shape[0]))


def matvec_t(X: Any, v: np.ndarray) -> np.ndarray:
    """X' v. For CSC X a compiled loop over its columns: scipy's ``X.T @ v`` first builds (and
    validates) a transposed matrix object, ~0.4 ms per call -- 11% of a cross-validated R8 fit,
    which makes ~20,000 such products on small group slices."""
    if is_row_blocks(X):
        return X.rmatvec(v)
    if sp.issparse(X) and X.format == "csc" and X.dtype == np.float64:
        return compressed_dot(X.indptr, X.indices, X.data, np.ascontiguousarray(v, dtype=np.float64))
    return np.asarray(X.T @ v).ravel()


@njit(cache=True)
def compressed_dot(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, v: np.ndarray) -> np.ndarray:
    """For each compressed row (CSR) or column (CSC): the dot product of its entries with v."""
    out = np.empty(indptr.shape[0] - 1)
    for j in range(out.shape[0]):
        acc = 0.0
        for p in range(indptr[j], indptr[j + 1]):
            acc += data[p] * v[indices[p]]
        out[j] = acc
    return out


@njit(cache=True)
def compressed_dot_blocks(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, v: np.ndarray,
                          stride: int) -> np.ndarray:
    """:func:`compressed_dot` of a matrix whose compressed rows come in runs of ``stride``, each a copy
    of the run's first with every index moved by one more (:func:`label_stride`): the first of each run
    is read once and the run's ``stride`` sums formed together -- the same sums, in the same order.
    ``stride`` 1: :func:`compressed_dot` itself, whose one sum per row stays out of memory."""
    if stride == 1:
        return compressed_dot(indptr, indices, data, v)
    out = np.zeros(indptr.shape[0] - 1)
    for j in range(0, out.shape[0], stride):
        # slices, not out[j + lag] and v[at + lag]: numba then keeps the run's sums out of memory (2.4x
        # on R8's eight labels, where indexing the two vectors gained 1.1x over the full pass)
        run = out[j:j + stride]
        for p in range(indptr[j], indptr[j + 1]):
            x, window = data[p], v[indices[p]:indices[p] + stride]
            for lag in range(stride):
                run[lag] += x * window[lag]
    return out


@njit(cache=True)
def _shifted_copy(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, a: int, b: int, shift: int) -> bool:
    """Whether compressed row (or column) b is row a with every index moved by ``shift``."""
    if indptr[b + 1] - indptr[b] != indptr[a + 1] - indptr[a]:
        return False
    for p in range(indptr[a + 1] - indptr[a]):
        if indices[indptr[b] + p] != indices[indptr[a] + p] + shift or data[indptr[b] + p] != data[indptr[a] + p]:
            return False
    return True


@njit(cache=True)
def label_stride(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, n_rows: int) -> int:
    """L where the CSC matrix (``n_rows`` rows) is B (x) I_L for some matrix B, else 1: its columns in runs
    of L, column b L + l being column b L with every row moved down by l, the run's first column on
    rows that are multiples of L. That is the joint multi-label problem's layout, which then costs
    one pass over B instead of L (:func:`compressed_dot_blocks`). L is read off the first nonempty
    column's run of shifted copies, then checked on every column (one pass over the entries)."""
    n_columns = indptr.shape[0] - 1
    first = 0
    while first < n_columns and indptr[first + 1] == indptr[first]:
        first += 1
    if first == n_columns:
        return 1
    L = 1
    while first + L < n_columns and _shifted_copy(indptr, indices, data, first, first + L, L):
        L += 1
    if L == 1 or first % L or n_columns % L or n_rows % L:
        return 1
    for b in range(0, n_columns, L):
        for p in range(indptr[b], indptr[b + 1]):
            if indices[p] % L:
                return 1
        for lag in range(1, L):
            if not _shifted_copy(indptr, indices, data, b, b + lag, lag):
                return 1
    return L


def matvec(X: Any, v: np.ndarray) -> np.ndarray:
    if is_row_blocks(X):
        return X.matvec(v)
    return np.asarray(X @ v).ravel()


def take_columns(X: Any, cols: np.ndarray) -> Any:
    """X[:, cols] in memory (one pass over row blocks on disk)."""
    return X.take_columns(cols) if is_row_blocks(X) else X[:, cols]


class ColumnCache:
    """The union U of the groups' columns: its slice of X and each group's positions within it."""

    def __init__(self, X: Any) -> None:
        self.X_full = X
        self.cols = np.zeros(0, dtype=np.int64)
        self.X = take_columns(X, self.cols)
        # a sparse cache's own buffers (self.X views them)
        self._data: np.ndarray = np.zeros(0)
        self._indices: np.ndarray | None = None
        # id(cols) -> (cols, positions) until the cache grows
        self._positions: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        # (X, its CSC arrays in int64, its CSR arrays in int64 or None until asked) for the compiled loop
        self._arrays: tuple[Any, tuple[np.ndarray, np.ndarray, np.ndarray],
                            tuple[np.ndarray, np.ndarray, np.ndarray] | None] | None = None
        self._stride: int | None = None           # label_stride of those arrays, once asked
        self._dense_rows: np.ndarray | None = None   # a dense cache in C order for the compiled loop, once asked

    def extend(self, new_cols: np.ndarray) -> None:
        """Add columns; only the new ones are read from X (one pass for data on disk)."""
        # np.setdiff1d(new_cols, self.cols) by one search in the sorted cache: the feature generation's
        # groups and the refits' selections extend small caches thousands of times a search
        new = np.asarray(new_cols)
        if new.ndim != 1 or not (new[1:] > new[:-1]).all():      # (selections come sorted: no sort then)
            new = np.unique(new)
        new = new.astype(np.int64, copy=False)
        at = np.searchsorted(self.cols, new)
        cached = at < self.cols.shape[0]
        cached[cached] = self.cols[at[cached]] == new[cached]
        new, at = new[~cached], at[~cached]
        if new.shape[0] == 0:
            return
        block = take_columns(self.X_full, new)
        self._positions, self._arrays, self._dense_rows = {}, None, None   # (they may view buffers about to move)
        if sp.issparse(block):
            cols = np.concatenate((self.cols, new))
            order = np.argsort(cols, kind="stable")
            self._merge(sp.csc_matrix(block, dtype=np.float64), order)
            self.cols = cols[order]
            return
        # Dense: the new columns at their places among the cached ones, column-major -- the values and the
        # layout that stacking and reordering gave (so products with the cache sum in the same order)
        place = at + np.arange(new.shape[0])
        total = self.cols.shape[0] + new.shape[0]
        old = np.ones(total, dtype=bool)
        old[place] = False
        cols = np.empty(total, dtype=np.int64)
        cols[old], cols[place] = self.cols, new
        X = np.empty((block.shape[0], total), dtype=np.result_type(self.X, block), order="F")
        X[:, old], X[:, place] = self.X, block
        self.X, self.cols = X, cols

    def _merge(self, block: Any, order: np.ndarray) -> None:
        """The cache's CSC and ``block``'s columns in the merged ``order``, in the cache's own buffers
        grown and then filled in place: the cache is the largest thing a large fit holds (100 columns
        of 10^6 entries at 2e7 rows, 1.2 GB), and stacking then reordering held it three times over."""
        old = sp.csc_matrix(self.X, dtype=np.float64)
        n_old = old.shape[1]
        lengths = np.concatenate((np.diff(old.indptr), np.diff(block.indptr)))[order]
        indptr = np.zeros(lengths.shape[0] + 1, dtype=np.int64)
        np.cumsum(lengths, out=indptr[1:])
        total = int(indptr[-1])
        index_dtype = np.int32 if max(total, old.shape[0]) < 2 ** 31 else np.int64
        old_indptr = old.indptr.astype(np.int64)
        if self._indices is None or self._indices.dtype != index_dtype:     # first columns: own buffers
            self._data, self._indices = old.data.copy(), old.indices.astype(index_dtype)
        self.X = old = None                   # no view of the buffers may outlive their move
        # NumPy 2.4's resize copies into a new buffer (it does not reach glibc's page-remapping
        # realloc): growing costs old + new, where stacking and reordering held three copies
        self._data.resize(total, refcheck=False)
        self._indices.resize(total, refcheck=False)
        _merge_columns_backward(old_indptr, self._data, self._indices, n_old,
                                (block.indptr.astype(np.int64), block.indices, block.data), order, indptr)
        self.X = sp.csc_matrix((self._data, self._indices, indptr.astype(index_dtype)),
                               shape=(block.shape[0], lengths.shape[0]), copy=False)

    def positions(self, cols: np.ndarray) -> np.ndarray:
        """Where the cached columns ``cols`` (sorted) are in the cache. Remembered per array until the
        cache grows: every plane asks it for each group twice (a search over 10^4 columns each, 8% of
        an unbudgeted R8 fit)."""
        known = self._positions.get(id(cols))
        if known is not None and known[0] is cols:
            return known[1]
        positions = np.searchsorted(self.cols, cols)
        self._positions[id(cols)] = (cols, positions)
        return positions

    def csc_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(indptr, indices, data) of a sparse cache as int64, int64 and float64 arrays, as compiled
        code takes them; kept until the cache grows (a debiasing path solves on one cache many times)."""
        if self._arrays is None or self._arrays[0] is not self.X:
            X = sp.csc_matrix(self.X)
            self._arrays = (self.X, (X.indptr.astype(np.int64), X.indices.astype(np.int64),
                                     np.asarray(X.data, dtype=np.float64)), None)
            self._stride = None
        return self._arrays[1]

    def dense_rows(self) -> np.ndarray:
        """A dense cache as a C-contiguous float64 array, as the compiled loop reads it; kept until the
        cache grows (the cache is column-major, and a debiasing path solves on one cache many times)."""
        if self._dense_rows is None:
            self._dense_rows = np.ascontiguousarray(self.X, dtype=np.float64)
        return self._dense_rows

    def label_stride(self) -> int:
        """:func:`label_stride` of a sparse cache (1 for a dense one), kept as long as its arrays. Where it
        is L > 1, the CSR arrays are those of B (x) I_L as well (row i L + l of the product is row i of B
        with every column index moved by l), so both compiled passes read one copy."""
        if not sp.issparse(self.X):
            return 1
        indptr, indices, data = self.csc_arrays()
        if self._stride is None:
            self._stride = label_stride(indptr, indices, data, self.X.shape[0])
        return self._stride

    def csr_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The same for the cache's rows (CSR), kept as long: X w by rows reads w and writes each score
        once, where by columns it scatters into the scores (2.2x the time on R8's multi-label rows)."""
        columns = self.csc_arrays()
        assert self._arrays is not None
        rows = self._arrays[2]
        if rows is None:
            X = sp.csr_matrix(self.X)
            rows = (X.indptr.astype(np.int64), X.indices.astype(np.int64), np.asarray(X.data, dtype=np.float64))
            self._arrays = (self.X, columns, rows)
        return rows

    def columns(self, cols: np.ndarray) -> Any:
        """X[:, cols] for cached columns ``cols``, from the cache."""
        return self.X[:, self.positions(cols)]

    def weights(self, ws: WorkingSet) -> np.ndarray:
        """d on the cache: d_j = sum of mu_t over the groups t holding column j."""
        d = np.zeros(self.cols.shape[0])
        for g, mu in zip(ws.groups, ws.mu):
            if mu > 0:
                d[self.positions(g.cols)] += mu
        return np.minimum(d, 1.0)


@njit(cache=True)
def _merge_columns_backward(old_indptr: np.ndarray, data: np.ndarray, indices: np.ndarray, n_old: int, block: Any,
                            order: np.ndarray, indptr: np.ndarray) -> None:
    """Lay out final column p (old column order[p], or block column order[p] - n_old) at indptr[p],
    from the last column to the first. Columns only move right (the new ones are inserted before
    them), and an old column's entries move from the last, so nothing is overwritten before it
    has moved. ``block``: the new columns' (indptr, indices, data)."""
    block_indptr, block_indices, block_data = block
    for p in range(order.shape[0] - 1, -1, -1):
        source, start = order[p], indptr[p]
        if source < n_old:
            a, b = old_indptr[source], old_indptr[source + 1]
            if start != a:
                for q in range(b - 1, a - 1, -1):
                    data[start + q - a] = data[q]
                    indices[start + q - a] = indices[q]
        else:
            a, b = block_indptr[source - n_old], block_indptr[source - n_old + 1]
            for q in range(a, b):
                data[start + q - a] = block_data[q]
                indices[start + q - a] = block_indices[q]
