"""The default search grid: C per example and per unit squared norm, the budgets, the cap rule."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp

from .._validation import check_positive_int

# Chosen on all dev sets together (docs/model_selection.md, "The C grid"). C is svm_perf's, whose loss
# term is an average over the n examples (Delta in percent), so the same regularisation relative to a
# sum of losses -- LinearSVC's C = 100 C / n -- needs C proportional to n: the default grid is C / n,
# and a C chosen on folds of n_f examples is carried to the whole data as the same C / n.
DEFAULT_C_PER_SAMPLE = (0.3, 1.0, 3.0, 10.0)
# B = 5 is the path's step (B = 2 needs 2.5x the groups of B = 5 for the same features; given (2, 5) the
# CV chose 5 in 6 of 8 R8 topics and most musk1 splits). But a path does not grow without end: the optimum
# on the generated groups keeps a number of features set by B and C, and at B = 5 and small C that is
# 10-35 on R8 topics, whatever the number of groups. So the grid
# also holds a candidate that can reach any size: None (no budget; on SMS spam every sparse model was 4
# F1 points below the full one), or under a cap k, where a budget is needed, B = k // MIN_PATH_POINTS
# (see default_budgets; docs/model_selection.md, "The budget grid").
DEFAULT_BUDGETS = (5, None)
# Under a small cap a group of 5 leaves too short a path to choose on (max_features=10: two points).
# The default budget is shrunk so that the path to the cap has at least this many points (see
# budget_under_cap; measured on MIL with max_instances=10 and R8 with max_features=10).
MIN_PATH_POINTS = 5


def check_grid(values: Any, name: str, check: Callable[[Any, str], Any]) -> list[Any]:
    if values is None or isinstance(values, (str, bytes)) or not np.iterable(values):
        raise ValueError(f"{name} must be a non-empty sequence, got {values!r}.")
    values = list(values)
    if not values:
        raise ValueError(f"{name} is empty; give at least one value.")
    return [check(v, name) for v in values]


def budget_under_cap(budget: int | None, max_features: int | None) -> int | None:
    """A default budget under the cap ``max_features``: at most max_features / MIN_PATH_POINTS (at least
    1), so that feature generation reaches the cap in MIN_PATH_POINTS groups or more; unchanged
    without a cap or for caps of 25 and more."""
    if budget is None or max_features is None:
        return budget
    return max(1, min(budget, max_features // MIN_PATH_POINTS))


def default_budgets(max_features: int | None) -> list[int | None]:
    """StructSVMCV's default budgets: ``DEFAULT_BUDGETS`` without a cap. Under a cap k each is shrunk
    by :func:`budget_under_cap`, and None (no budget, which a cap excludes) becomes the largest group
    that still leaves a path of MIN_PATH_POINTS points to the cap, k // MIN_PATH_POINTS: the candidate
    whose path can reach the cap (k = 100: (5, 20); k = 25: (5,); k = 10: (2,))."""
    if max_features is None:
        return list(DEFAULT_BUDGETS)
    shrunk = {budget_under_cap(max_features if b is None else b, max_features) for b in DEFAULT_BUDGETS}
    return [*sorted(b for b in shrunk if b is not None)]     # under a cap every budget is a number


def check_budget(value: Any, name: str) -> int | None:
    return None if value is None else check_positive_int(value, name)


def squared_norms(X: Any, columns: np.ndarray | None = None) -> np.ndarray:
    """Squared norm of every row of X (over ``columns`` only, if given)."""
    if columns is not None:
        X = X[:, columns]
    if sp.issparse(X):
        return np.asarray(X.multiply(X).sum(axis=1), dtype=float).ravel()
    return np.einsum("ij,ij->i", X, X)


def _mean_squared_norm(norms: np.ndarray, sample_weight: np.ndarray | None = None) -> float:
    """The rows' mean squared norm (``norms``, one per row; weighted by ``sample_weight``, a row counting
    as that many copies); data of norm zero count as norm one."""
    mean = float(np.average(norms, weights=sample_weight))
    return mean if mean > 0 else 1.0


def grid_unit(norms: np.ndarray, sample_weight: np.ndarray | None = None) -> float:
    """What the default grid's C / n is per with ``scale_C``: the number of rows over their mean squared
    norm (``norms``, one per row; with ``sample_weight``, the rows' total weight over their weighted
    mean) -- SVMlight's default C = 1 / mean(x'x), which makes the grid invariant to a rescaling of the
    features."""
    rows = len(norms) if sample_weight is None else float(np.sum(sample_weight))
    return rows / _mean_squared_norm(norms, sample_weight)


def data_bias(bias: float, norms: np.ndarray, sample_weight: np.ndarray | None = None) -> float:
    """The bias feature's value with ``scale_C``: ``bias`` times the rows' root mean squared norm (weighted
    by ``sample_weight``), the constant feature on the scale of the others. With the grid's C / s this
    makes the whole problem (and the model's predictions) invariant to a rescaling of X: it is the
    problem on X / RMS norm with the constant feature ``bias``. A fixed bias of 1 beside rows of norm ~62
    (raw pixels, s ~ 3,850) regularises the intercept ~3,850 times more than the weights, and that cost
    F1 on raw data."""
    return float(bias * np.sqrt(_mean_squared_norm(norms, sample_weight)))
