"""A user's contingency-table loss made fast: compiled once, searched by branch and bound.

Three pieces serve :class:`structfs.losses.ContingencyLoss`:

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
* That verification also records Delta's largest steps per block of tables (:class:`TableSteps`),
  which give a second bound on small rectangles (see :func:`_expand`). The first bound is loose by
  the first-order change of Delta across a rectangle, while near the maximum H is flat to second
  order: with the first alone, the rectangles there shrink to single tables before any is dropped
  (at n = 10^5 with 50% positives, 590,000-760,000 rectangles a call); the second cancels the
  first-order terms and leaves 10,000-13,000.
"""
from __future__ import annotations

import types
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from .._jit import njit

# A table grid is verified monotone when every value is within MONOTONE_TOL * (1 + |value|) of the
# order: round-off of a monotone formula stays far below; the oracle then errs by at most that much.
MONOTONE_TOL = 1e-12


@njit(cache=True)
def _scalar_where(condition: bool, x: float, y: float) -> float:
    return x if condition else y


@njit(cache=True)
def _scalar_clip(x: float, lo: float, hi: float) -> float:
    return min(max(x, lo), hi)


def _scalar_numpy() -> types.ModuleType:
    """A module that is numpy except for the functions numba implements with 0-d arrays on scalars."""
    module = types.ModuleType("numpy")
    module.__dict__.update(np.__dict__)
    module.__dict__.update(where=_scalar_where, clip=_scalar_clip)
    return module


# fn -> its compilation (or None): copies of a loss (clones in a search, unpickled in workers) share it
_COMPILED: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def compile_table_function(fn: Callable[..., Any]) -> Callable[..., Any] | None:
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


def _compile(fn: Callable[..., Any]) -> Callable[..., Any] | None:
    import numba

    scalar_np = _scalar_numpy()
    scope = {key: (scalar_np if value is np else value) for key, value in fn.__globals__.items()}
    rebound = types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__, fn.__closure__)
    try:
        return numba.vectorize(["float64(int64, int64, int64, int64)"], nopython=True)(rebound)
    except Exception:  # numba reports an unsupported construct by many exception types
        return None


@njit(cache=True)
def _check_monotone_rows(values: np.ndarray, a_first: int, column_min: np.ndarray, previous: np.ndarray,
                         steps_a: np.ndarray, steps_b: np.ndarray, block: int, tol: float) -> bool:
    """Check a block of rows (rows a_first, a_first + 1, ...) against the running column minima and
    record the largest steps of Delta per block of ``block`` x ``block`` tables, each step filed
    under the block of the table it leads to: ``steps_a`` the drops Delta(a - 1, b) - Delta(a, b),
    ``steps_b`` the rises Delta(a, b) - Delta(a, b - 1). ``previous``: the row before this block.
    False at the first order violation."""
    n_columns = values.shape[1]
    for i in range(values.shape[0]):
        a = a_first + i
        row_block = a // block
        running_max = -np.inf
        left = values[i, 0]
        for column_block in range(steps_b.shape[1]):
            largest_rise = 0.0
            largest_drop = 0.0
            for b in range(column_block * block, min(n_columns, (column_block + 1) * block)):
                v = values[i, b]
                slack = tol * (1.0 + abs(v))
                if running_max > v + slack or v > column_min[b] + slack:
                    return False
                largest_rise = max(largest_rise, v - left)
                largest_drop = max(largest_drop, previous[b] - v)
                left = v
                running_max = max(running_max, v)
                column_min[b] = min(column_min[b], v)
            steps_b[row_block, column_block] = max(steps_b[row_block, column_block], largest_rise)
            if a > 0:
                steps_a[row_block, column_block] = max(steps_a[row_block, column_block], largest_drop)
        previous[:] = values[i]
    return True


class TableSteps:
    """The largest steps of Delta per block of tables, recorded while its monotonicity is verified:
    ``drop[i, j]`` bounds Delta(a - 1, b) - Delta(a, b) and ``rise[i, j]`` bounds Delta(a, b) -
    Delta(a, b - 1) for (a, b) in block (i, j) (``block`` tables a side). The steps inside a rectangle
    [a0, a1] x [b0, b1] lead to its own tables, so its blocks bound them all."""

    __slots__ = ("block", "drop", "rise")

    def __init__(self, block: int, drop: np.ndarray, rise: np.ndarray) -> None:
        self.block, self.drop, self.rise = block, drop, rise


# at most this many blocks of steps are kept (2 float64 each): 4 MB whatever the grid
_STEP_BLOCKS = 250_000


def check_monotone(table_rows: Callable[[np.ndarray], np.ndarray], P: int, N: int,
                   block_cells: int = 1 << 22) -> tuple[bool, TableSteps | None]:
    """(whether Delta(a, b) is non-increasing in a and non-decreasing in b on the whole (P+1) x (N+1)
    grid, its :class:`TableSteps` or None), reading it by blocks of rows: ``table_rows(a)`` gives Delta
    on rows ``a`` (a column vector) times all b. One pass over the grid; memory of one block of rows."""
    block = max(16, int(np.ceil(np.sqrt((P + 1.0) * (N + 1.0) / _STEP_BLOCKS))))
    shape = (P // block + 1, N // block + 1)
    steps = TableSteps(block, np.zeros(shape), np.zeros(shape))
    column_min = np.full(N + 1, np.inf)
    previous = np.zeros(N + 1)
    rows = max(1, block_cells // (N + 1))
    for a0 in range(0, P + 1, rows):
        a = np.arange(a0, min(P + 1, a0 + rows), dtype=np.int64)[:, None]
        if not _check_monotone_rows(np.ascontiguousarray(table_rows(a)), a0, column_min, previous, steps.drop,
                                    steps.rise, block, MONOTONE_TOL):
            return False, None
    return True, steps


# Over 8 parameters: a compiled kernel takes its buffers as arrays (numba caches no objects).
@njit(cache=True)
def _expand(nodes: np.ndarray, m: int, A: np.ndarray, G: np.ndarray, best: float, children: np.ndarray,
            query: np.ndarray, drop: np.ndarray, rise: np.ndarray, block: int) -> tuple[float, int, int, int]:
    """One level of the branch and bound, in place.

    Row i < m of ``nodes`` is a rectangle (a0, a1, b0, b1, Delta(a0, b1), Delta(a1, b0)) as float64:
    Delta(a0, b1) is the largest Delta on it. Its two corners raise the best value seen; if its bound
    still beats that value, its halves go to ``children`` with the corner value each inherits, and
    the corner each needs goes to column j of ``query`` as (a, b, column of ``children`` to fill). Returns (best,
    its a and b, or -1 where no corner beat the ``best`` given, number of children).

    With verified steps (``block`` > 0, see :class:`TableSteps`) a rectangle within 2 x 2 blocks gets a
    second bound, from its corner (a1, b0) of largest score part: moving from it by one table lowers
    the score part by at least the smallest increment of A or G on the rectangle and raises Delta by at
    most the largest step, so H <= H(a1, b0) + (a1 - a0) max(0, drop - dA) + (b1 - b0) max(0, rise - dG).
    Near the maximum, where both sides nearly cancel, it is far tighter than the first."""
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
        if a0 == a1 and b0 == b1:
            continue
        bound = d_lo + A[a1] + G[b0]
        if block > 0 and a1 // block - a0 // block <= 1 and b1 // block - b0 // block <= 1:
            i0, i1, j0, j1 = a0 // block, a1 // block, b0 // block, b1 // block
            largest_drop = max(max(drop[i0, j0], drop[i0, j1]), max(drop[i1, j0], drop[i1, j1]))
            largest_rise = max(max(rise[i0, j0], rise[i0, j1]), max(rise[i1, j0], rise[i1, j1]))
            by_steps = d_hi + A[a1] + G[b0]
            if a1 > a0:
                by_steps += (a1 - a0) * max(0.0, largest_drop - (A[a1] - A[a1 - 1]))
            if b1 > b0:
                by_steps += (b1 - b0) * max(0.0, largest_rise + (G[b0 + 1] - G[b0]))
            bound = min(bound, by_steps)
        if bound <= best:
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
def _fill(children: np.ndarray, query: np.ndarray, k: int, values: np.ndarray) -> None:
    for j in range(k):
        children[j, query[2, j]] = values[j]


def monotone_maximum(table: Callable[[np.ndarray, np.ndarray], np.ndarray], P: int, N: int, A: np.ndarray,
                     G: np.ndarray, a_max: int, b_min: int, steps: TableSteps | None = None) -> tuple[int, int]:
    """(a, b) maximising table(a, b) + A[a] + G[b] for a monotone table (see the module docstring),
    searched over [0, a_max] x [b_min, N]; ``table(a, b)`` evaluates Delta on int64 vectors; ``steps``:
    the table's :class:`TableSteps`, where known, for the tighter bound near the maximum."""
    if steps is None:
        drop = rise = np.zeros((1, 1))
        block = 0
    else:
        drop, rise, block = steps.drop, steps.rise, steps.block
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
        level_best, level_a, level_b, k = _expand(nodes, m, A, G, best, children, query, drop, rise, block)
        if level_a >= 0:
            best, best_a, best_b = level_best, int(level_a), int(level_b)
        if k:
            _fill(children, query, k, table(query[0, :k], query[1, :k]))
        nodes, children, m = children, nodes, k
    return best_a, best_b
