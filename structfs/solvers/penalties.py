"""Regularisers: what the outer layer needs of one.

Without a budget the regulariser is ½‖w‖² (SVMperf's problem) and every feature sits in one group.
With a budget B it is half the squared B-support norm, min over d ∈ [0,1]^m with Σd ≤ B of
Σ_j w_j²/d_j (Mao & Tsang), whose worst case for a fixed dual point puts d_j = 1 on the B features with
the largest c_j² (c = X̃'β): feature generation adds that group, and the dual function at the current
α gives a certified lower bound. A penalty object holds the value and these two pieces, so another
regulariser is another object, not another branch of the solver: :class:`GroupBSupport` counts the
budget in groups of features (FGM's group selection).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
from numba import types

from .._jit import first_class, njit
from .objective import ksupport_sq, ksupport_sq_kernel

if TYPE_CHECKING:
    from .working_set import WorkingSet

__all__ = ["Penalty", "SquaredL2", "BSupport", "GroupBSupport", "penalty_for", "group_indices"]


class Penalty:
    """A regulariser as the solvers use it: its value, and what feature generation asks of it.

    Without a budget (``budget`` None) the problem is solved in one group of every feature. With one,
    the outer layer adds the worst-case group for the current dual point (:meth:`select`), bounds the
    optimum from below (:meth:`lower_bound`) and stops when no group violates the optimality condition
    by more than the tolerance (:meth:`violation`). A new regulariser is a subclass, not a branch of
    the solver.
    """

    budget: int | None = None

    def value(self, w: Any, cols: np.ndarray | None = None) -> float:
        """The penalty of weights ``w`` on the columns ``cols`` (None: every column, in order)."""
        raise NotImplementedError

    def compiled_value(self, cols: np.ndarray) -> tuple[Any, np.ndarray] | None:
        """:meth:`value` on the columns ``cols`` for compiled code: (a function of PENALTY_TYPE, (w, params)
        -> float, and its params, a float64 vector), or None where only :meth:`value` computes it (the
        restricted problems are then solved by the Python driver). A subclass that changes ``value``
        changes this too."""
        return None

    def on_columns(self, columns: np.ndarray) -> Penalty:
        """The penalty of the problem restricted to ``columns`` (the columns that occur in X)."""
        return self

    def restricted(self, n_features: int, max_features: int | None) -> Penalty:
        """The penalty actually solved for on ``n_features`` columns under the cap ``max_features``."""
        return self

    def select(self, c: np.ndarray) -> np.ndarray:
        """Sorted indices of the worst-case group for the dual point whose products are ``c``: every
        column, for a penalty without a budget."""
        return np.arange(c.shape[0])

    @staticmethod
    def lower_bound(ws: WorkingSet, c_top: np.ndarray) -> float:
        """max over t in [0, 1/sum(abar)] of D(t alpha): the dual function on the ray through alpha.

        D(t alpha) = t A - t^2 Q / 2 with A = Delta'alpha and Q = c_b^2 + (sum of the B largest c_j^2,
        ``c_top`` being c on the selection) (c scales with t, its top-B set does not), so the best
        scaling is closed-form. alpha comes from
        the restricted problem, whose planes ignore the features outside the groups: at t = 1 the bound
        is often far below zero (Q >> A), while the rescaled alpha stays a feasible dual point and
        gives A^2 / (2 Q) instead.
        """
        beta_sum = ws.C * float(ws.abar @ ws.coef_sum)
        c_b = ws.bias * beta_sum
        A = ws.C * float(ws.delta @ ws.abar)
        Q = c_b * c_b + float(c_top @ c_top)
        t_max = 1.0 / max(float(ws.abar.sum()), 1e-300)      # keeps sum(t alpha) <= C
        t = t_max if Q <= 0 else min(max(A / Q, 0.0), t_max)
        return t * A - 0.5 * t * t * Q

    @staticmethod
    def violation(ws: WorkingSet, c_top: np.ndarray, c_on: Callable[[np.ndarray], np.ndarray]) -> float:
        """(||c_top||^2 - max_t ||c_t||^2) / 2: how much the most violated group would raise the dual
        bound at the current alpha above the restricted problem's (FGM's optimality condition);
        ``c_on(cols)`` gives c on a group's columns."""
        active = max((_squared_norm(c_on(g.cols)) for g in ws.groups), default=0.0)
        return 0.5 * (float(c_top @ c_top) - active)


class SquaredL2(Penalty):
    """½‖w‖²: one group of every feature, nothing to generate."""

    def value(self, w: Any, cols: np.ndarray | None = None) -> float:
        return 0.5 * ksupport_sq(w, None)

    def compiled_value(self, cols: np.ndarray) -> tuple[Any, np.ndarray] | None:
        return first_class(_half_squared_norm, PENALTY_SIGNATURE), np.zeros(0)

    def __repr__(self) -> str:
        return "SquaredL2()"


class BSupport(Penalty):
    """Half the squared B-support norm: at most ``budget`` features in each generated group."""

    budget: int

    def __init__(self, budget: int) -> None:
        self.budget = int(budget)

    def value(self, w: Any, cols: np.ndarray | None = None) -> float:
        """The penalty of weights ``w`` on the columns ``cols`` (the norm does not depend on which)."""
        return 0.5 * ksupport_sq(w, self.budget)

    def compiled_value(self, cols: np.ndarray) -> tuple[Any, np.ndarray] | None:
        return first_class(_half_ksupport_sq, PENALTY_SIGNATURE), np.array([float(self.budget)])

    def restricted(self, n_features: int, max_features: int | None) -> Penalty:
        """The penalty actually solved for on ``n_features`` columns under the cap ``max_features``: no
        group larger than the cap, and ½‖w‖² when one group covers every feature."""
        budget = self.budget if max_features is None else min(self.budget, max_features)
        return BSupport(budget) if budget < n_features else SquaredL2()

    def select(self, c: np.ndarray) -> np.ndarray:
        """Sorted indices of the ``budget`` largest c_j² (the worst-case d; introselect, ties broken
        deterministically)."""
        if self.budget >= c.shape[0]:
            return np.arange(c.shape[0])
        minus_sq = c * c
        np.negative(minus_sq, out=minus_sq)  # -c^2 in one vector over the columns (3e7 of them for kddb)
        top = np.argpartition(minus_sq, self.budget - 1, kind="introselect")[:self.budget]
        return np.sort(top)

    def __repr__(self) -> str:
        return f"BSupport({self.budget})"


class GroupBSupport(BSupport):
    """Half the squared B-support norm over groups of features: the budget counts groups.

    With a partition of the columns into groups G, the regulariser is min over d ∈ [0,1]^p with Σd ≤ B of
    Σ_G ‖w_G‖²/d_G, the B-support norm of the vector of group norms (‖w_G‖)_G. For a fixed dual point the
    worst case puts d_G = 1 on the B groups with the largest ‖c_G‖², so feature generation adds the
    union of their columns; the lower bound and the optimality condition are those of
    :class:`BSupport` with that union as the selection.

    ``groups``: the group index of every column, integers 0..p-1 (see :func:`group_indices`).
    """

    def __init__(self, budget: int, groups: Any) -> None:
        super().__init__(budget)
        self.groups = np.asarray(groups, dtype=np.intp)
        self.n_groups = int(self.groups.max()) + 1 if self.groups.size else 0

    def value(self, w: Any, cols: np.ndarray | None = None) -> float:
        groups = self.groups if cols is None else self.groups[np.asarray(cols, dtype=np.intp)]
        sq_norms = np.bincount(groups, weights=np.asarray(w, dtype=float) ** 2, minlength=self.n_groups)
        return 0.5 * ksupport_sq(np.sqrt(sq_norms), self.budget)

    def compiled_value(self, cols: np.ndarray) -> tuple[Any, np.ndarray] | None:
        """None: group budgets are solved by the Python driver. The compiled loop could solve them too (the
        group norm is the only difference, at the same cost per fit), but the shared-budget searches then
        take other paths by round-off, and on labels that the budget leaves almost without words such a
        path decides which side of the shared cut they fall (docs/multilabel.md); they stay on the
        driver they were measured with."""
        return None

    def on_columns(self, columns: np.ndarray) -> Penalty:
        return GroupBSupport(self.budget, group_indices(self.groups[columns]))

    def restricted(self, n_features: int, max_features: int | None) -> Penalty:
        """No cap on the group budget (``max_features`` trims the last group's columns instead); ½‖w‖²
        when B groups cover every group."""
        return self if self.budget < self.n_groups else SquaredL2()

    def select(self, c: np.ndarray) -> np.ndarray:
        """Sorted columns of the ``budget`` groups with the largest ‖c_G‖² (introselect over the groups)."""
        scores = np.bincount(self.groups, weights=c * c, minlength=self.n_groups)
        np.negative(scores, out=scores)
        chosen = np.zeros(self.n_groups, dtype=bool)
        chosen[np.argpartition(scores, self.budget - 1, kind="introselect")[:self.budget]] = True
        return np.flatnonzero(chosen[self.groups])

    def __repr__(self) -> str:
        return f"GroupBSupport({self.budget}, {self.n_groups} groups)"



def _squared_norm(v: np.ndarray) -> float:
    return float(v @ v)


# What a penalty's compiled value must be (Penalty.compiled_value): (w, params) -> float, w the weights on
# the restricted problem's columns, params a float64 vector of the penalty's settings.
PENALTY_SIGNATURE = types.float64(types.float64[::1], types.float64[::1])
PENALTY_TYPE = types.FunctionType(PENALTY_SIGNATURE)


@njit(cache=True)
def _half_squared_norm(w: np.ndarray, params: np.ndarray) -> float:
    return 0.5 * (w @ w)


@njit(cache=True)
def _half_ksupport_sq(w: np.ndarray, params: np.ndarray) -> float:
    return 0.5 * ksupport_sq_kernel(w, int(params[0]))


def group_indices(groups: Any) -> np.ndarray:
    """Group labels (any integers) as indices 0..p-1, in the order of the sorted labels."""
    return np.unique(np.asarray(groups), return_inverse=True)[1].astype(np.intp).ravel()


def penalty_for(budget: int | None, groups: Any = None) -> Penalty:
    """The penalty of a budget (an int, or None for none), counted in features, or in groups when
    ``groups`` gives every feature's group label."""
    if budget is None:
        return SquaredL2()
    return BSupport(budget) if groups is None else GroupBSupport(budget, group_indices(groups))
