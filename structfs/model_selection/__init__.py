"""Model selection: :class:`StructSVMCV` chooses C, the budget and the number of feature groups by
cross-validation along each fold's feature-generation path.

* ``_grid``: the default grid and the rules behind it (C per example and per unit squared norm, the
  budgets, the cap rule);
* ``_path``: one (fold, C, budget) task -- a path fitted and each of its points scored;
* ``_results``: the candidates' table, the path-smoothed choice, ``cv_results_``;
* ``_scoring``: the scorers a search accepts;
* ``_search``: the estimator, its refit and the fallback to a ranking loss.
"""
from ._grid import (
    DEFAULT_BUDGETS,
    DEFAULT_C_PER_SAMPLE,
    MIN_PATH_POINTS,
    budget_under_cap,
    check_grid,
    data_bias,
    default_budgets,
    grid_unit,
    squared_norms,
)
from ._path import Fold, PathScoring, best_threshold, fold_path
from ._results import best_candidate, cv_results, grid_results, path_smoothed_scores
from ._scoring import check_scoring
from ._search import FALLBACK_LOSS, StructSVMCV

__all__ = ["StructSVMCV", "DEFAULT_C_PER_SAMPLE", "DEFAULT_BUDGETS", "MIN_PATH_POINTS", "FALLBACK_LOSS",
           "budget_under_cap", "default_budgets", "best_threshold", "check_grid", "check_scoring", "data_bias",
           "grid_unit", "squared_norms", "Fold", "PathScoring", "fold_path", "best_candidate", "cv_results",
           "grid_results", "path_smoothed_scores"]
