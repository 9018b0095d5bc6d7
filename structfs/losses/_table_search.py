"""A user's contingency-table loss made fast: compiled once, searched by branch and bound.

Two independent pieces serve :class:`structfs.losses.ContingencyLoss`:

* :func:`compile_table_function` turns ``fn(a, b, c, d)`` into a numba ufunc over int64 tables. A
  function written with NumPy operations and one written for scalars (with ``if``) both compile; inside
  it ``np.where`` and ``np.clip`` are replaced by scalar selections, because numba's versions return
  0-d arrays there (an allocation per table, about 100 times slower than the arithmetic).
* :func:`monotone_maximum` maximises H(a, b) = Delta(a, b) + A[a] + G[b] over the table grid when Delta
  is monotone: non-increasing in a (a true positive never costs) and non-decreasing in b (a false
  alarm never pays). A and G, the score parts of the oracle, are concave: their increments are the
  class's scores sorted in decreasing order. So rows a > a* (a* = positives scoring > 0) and columns
  b < b* (b* = negatives scoring > 0) are dominated, and on a rectangle [a0, a1] x [b0, b1] of the
  rest, H <= Delta(a0, b1) + A[a1] + G[b0]. Rectangles are split in halves, all of one level at a
  time, so that ``fn`` is called once per level on the new corners (tens of calls per oracle), and a
  rectangle whose bound does not beat the best corner seen is dropped. The answer is the exact
  maximum; where Delta is not monotone the bound can be wrong, which is why the caller verifies
  monotonicity over the whole grid of a class size first (:func:`check_monotone`).
"""
import types
import weakref

import numpy as np

from .._jit import njit

# A table grid is verified monotone when every value is within MONOTONE_TOL * (1 + |value|) of the
# order: round-off of a monotone formula stays far below; the oracle then errs by at most that much.
MONOTONE_TOL = 1e-12


@njit(cache=True)
def _scalar_where(condition, x, y):
    return x if condition else y


@njit(cache=True)
def _scalar_clip(x, lo, hi):
    return min(max(x, lo), hi)


def _scalar_numpy():
    """A module that is numpy except for the functions numba implements with 0-d arrays on scalars."""
    module = types.ModuleType("numpy")
    module.__dict__.update(np.__dict__)
    module.where = _scalar_where
    module.clip = _scalar_clip
    return module


# fn -> its compilation (or None): copies of a loss (clones in a search, unpickled in workers) share it
_COMPILED = weakref.WeakKeyDictionary()


def compile_table_function(fn):
    """``fn`` as a numba ufunc ``(int64 a, b, c, d) -> float64``, or None where numba cannot compile it.

    Only plain functions compile (not methods or callable objects); the function's globals are kept,
    except that numpy is seen through :func:`_scalar_numpy`. Division by zero gives inf or NaN, as in
    NumPy, instead of raising. Compiled once per function and process.
    """
    if not isinstance(fn, types.FunctionType):
        return None
    if fn not in _COMPILED:
        _COMPILED[fn] = _compile(fn)
    return _COMPILED[fn]


def _compile(fn):
    import numba

    scalar_np = _scalar_numpy()
    scope = {key: (scalar_np if value is np else value) for key, value in fn.__globals__.items()}
    rebound = types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__, fn.__closure__)
    try:
        return numba.vectorize(["float64(int64, int64, int64, int64)"], nopython=True)(rebound)
    except Exception:  # numba reports an unsupported construct by many exception types
        return None


@njit(cache=True)
def _check_monotone_rows(values, column_min, row_max_out, tol):
    """Update the running column minima with a block of rows; False at the first order violation."""
    for i in range(values.shape[0]):
        running_max = -np.inf
        for b in range(values.shape[1]):
            v = values[i, b]
            slack = tol * (1.0 + abs(v))
            if running_max > v + slack or v > column_min[b] + slack:
                return False
            running_max = max(running_max, v)
            column_min[b] = min(column_min[b], v)
        row_max_out[0] = max(row_max_out[0], running_max)
    return True


def check_monotone(table_rows, P, N, block_cells=1 << 22):
    """Whether Delta(a, b) is non-increasing in a and non-decreasing in b on the whole (P+1) x (N+1)
    grid, reading it by blocks of rows: ``table_rows(a)`` gives Delta on rows ``a`` (a column vector)
    times all b. One pass over the grid; memory of one block."""
    column_min = np.full(N + 1, np.inf)
    row_max = np.full(1, -np.inf)
    rows = max(1, block_cells // (N + 1))
    for a0 in range(0, P + 1, rows):
        a = np.arange(a0, min(P + 1, a0 + rows), dtype=np.int64)[:, None]
        if not _check_monotone_rows(np.ascontiguousarray(table_rows(a)), column_min, row_max, MONOTONE_TOL):
            return False
    return True


@njit(cache=True)
def _expand(nodes, m, A, G, best, children, query):
    """One level of the branch and bound, in place.

    Row i < m of ``nodes`` is a rectangle (a0, a1, b0, b1, Delta(a0, b1), Delta(a1, b0)) as float64:
    Delta(a0, b1) is the largest Delta on it. Its two corners raise the best value seen; if its bound
    still beats that value, its halves go to ``children`` with the corner value each inherits, and
    the corner each needs goes to column j of ``query`` as (a, b, column of ``children`` to fill). Returns (best,
    its a and b, or -1 where no corner beat the ``best`` given, number of children)."""
    best_a = -1
    best_b = -1
    k = 0
    for i in range(m):
        a0 = np.int64(nodes[i, 0])
        a1 = np.int64(nodes[i, 1])
        b0 = np.int64(nodes[i, 2])
        b1 = np.int64(nodes[i, 3])
        d_lo = nodes[i, 4]
        d_hi = nodes[i, 5]
        h = d_lo + A[a0] + G[b1]
        if h > best:
            best, best_a, best_b = h, a0, b1
        h = d_hi + A[a1] + G[b0]
        if h > best:
            best, best_a, best_b = h, a1, b0
        if (a0 == a1 and b0 == b1) or d_lo + A[a1] + G[b0] <= best:
            continue
        if a1 - a0 >= b1 - b0:
            mid = (a0 + a1) // 2
            # [a0, mid] keeps Delta(a0, b1) and needs Delta(mid, b0); [mid + 1, a1] the converse
            children[k, 0], children[k, 1], children[k, 2], children[k, 3], children[k, 4] = a0, mid, b0, b1, d_lo
            query[0, k], query[1, k], query[2, k] = mid, b0, 5
            children[k + 1, 0], children[k + 1, 1], children[k + 1, 2], children[k + 1, 3] = mid + 1, a1, b0, b1
            children[k + 1, 5] = d_hi
            query[0, k + 1], query[1, k + 1], query[2, k + 1] = mid + 1, b1, 4
        else:
            mid = (b0 + b1) // 2
            # [b0, mid] keeps Delta(a1, b0) and needs Delta(a0, mid); [mid + 1, b1] the converse
            children[k, 0], children[k, 1], children[k, 2], children[k, 3], children[k, 5] = a0, a1, b0, mid, d_hi
            query[0, k], query[1, k], query[2, k] = a0, mid, 4
            children[k + 1, 0], children[k + 1, 1], children[k + 1, 2], children[k + 1, 3] = a0, a1, mid + 1, b1
            children[k + 1, 4] = d_lo
            query[0, k + 1], query[1, k + 1], query[2, k + 1] = a1, mid + 1, 5
        k += 2
    return best, best_a, best_b, k


@njit(cache=True)
def _fill(children, query, k, values):
    for j in range(k):
        children[j, query[2, j]] = values[j]


def monotone_maximum(table, P, N, A, G, a_max, b_min):
    """(a, b) maximising table(a, b) + A[a] + G[b] for a monotone table (see the module docstring),
    searched over [0, a_max] x [b_min, N]; ``table(a, b)`` evaluates Delta on int64 vectors."""
    capacity = 1024
    # two buffers used in turn, level after level: fresh pages would cost more than the search on them
    nodes, children = np.empty((capacity, 6)), np.empty((capacity, 6))
    query = np.empty((3, capacity), np.int64)
    nodes[0, :4] = (0, a_max, b_min, N)
    nodes[0, 4:] = table(np.array([0, a_max], np.int64), np.array([N, b_min], np.int64))
    m = 1
    best, best_a, best_b = -np.inf, 0, N
    while m:
        if 2 * m > capacity:
            capacity = 4 * m
            grown = np.empty((capacity, 6))
            grown[:m] = nodes[:m]
            nodes, children = grown, np.empty((capacity, 6))
            query = np.empty((3, capacity), np.int64)
        level_best, level_a, level_b, k = _expand(nodes, m, A, G, best, children, query)
        if level_a >= 0:
            best, best_a, best_b = level_best, int(level_a), int(level_b)
        if k:
            _fill(children, query, k, table(query[0, :k], query[1, :k]))
        nodes, children, m = children, nodes, k
    return best_a, best_b
