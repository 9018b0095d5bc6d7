"""Debiasing refits along a feature-generation path: unbudgeted solves on one column set after another
that share their cutting planes."""
from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from .compiled_loop import solve_restricted
from .data import ColumnCache, SolverData, take_columns
from .feature_generation import BestIterate
from .penalties import penalty_for
from .working_set import WorkingSet

if TYPE_CHECKING:
    from .cutting_plane import LossOracle
    from .feature_generation import Solver


class PathRefitter:
    """Unbudgeted (SVMperf) solves restricted to one column set after another: the debiasing refit
    of every point of a feature-generation path.

    A cutting plane is a valid cut whatever columns the weights live on (it is stored by its
    per-example coefficients), so one working set carries its planes from one column set to the next
    and each refit starts from the previous one's cuts instead of from w = 0.
    """

    def __init__(self, X: Any, y: np.ndarray, loss: LossOracle, C: float, bias: float, solver: Solver) -> None:
        data = SolverData.of(X)                    # work on the columns that occur (see SolverPath)
        self.columns, self.X = data.columns, data.X
        self.y, self.loss, self.C = y, loss, C
        self.settings = solver.inner_settings()
        self.ws = WorkingSet(self.X.shape[0], bias, C, solver.master_solver)
        coef, self.delta0 = loss.oracle(y, np.zeros(self.X.shape[0]))
        self.ws.add_plane(coef, self.delta0)
        self.last: tuple[np.ndarray, np.ndarray, float] | None = None
        self.uncertified = 0        # refits that ended (max_iter, stalled master) without their certificate

    def refit(self, cols: Any) -> tuple[np.ndarray, np.ndarray, float]:
        """(columns, weights on them, w_b) of the unbudgeted problem on ``cols``."""
        cols = np.asarray(cols, dtype=np.int64)
        if self.last is not None and np.array_equal(cols, self.last[0]):   # same selection as before
            return self.last
        if self.columns is not None:               # X's numbering -> the occurring columns'
            cols = np.searchsorted(self.columns, cols[np.isin(cols, self.columns)])
        ws = self.ws
        ws.clear_groups()
        cache = ColumnCache(self.X)
        cache.extend(cols)
        # the group is the cache's columns (sorted, distinct, as the selections are): one slice of X for both
        ws.add_group(cols, cache.X if np.array_equal(cache.cols, cols) else take_columns(self.X, cols))
        state = BestIterate(penalty_for(None), self.C)
        state.record(np.zeros(cols.shape[0]), 0.0, self.delta0, cache.cols)
        status, _ = solve_restricted(ws, cache, self.y, self.loss, state, self.settings, outer=1)
        self.uncertified += status != "converged"
        out_cols = state.cols if self.columns is None else self.columns[state.cols]
        self.last = (out_cols, state.w_cache, state.w_b)
        return self.last


def refit_path(X: Any, y: np.ndarray, loss: LossOracle, C: float, column_sets: Iterable[Any], bias: float,
               solver: Solver) -> list[tuple[np.ndarray, np.ndarray, float]]:
    """:class:`PathRefitter` over a list of column sets; a list of (columns, weights, w_b)."""
    refitter = PathRefitter(X, y, loss, C, bias, solver)
    return [refitter.refit(cols) for cols in column_sets]
