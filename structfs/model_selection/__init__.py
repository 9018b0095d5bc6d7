"""Model selection: :class:`StructSVMCV` chooses C, the budget and the number of feature groups by
cross-validation along each fold's feature-generation path.

* ``_grid``: the default grid and the rules behind it (C per example and per unit squared norm, the
  budgets, the cap rule);
* ``_path``: one (fold, C, budget) task -- a path fitted and each of its points scored;
* ``_results``: the candidates' table, the path-smoothed choice, ``cv_results_``;
* ``_scoring``: the scorers a search accepts;
* ``_data``: what a search fits on (a matrix, or a source with several versions of one);
* ``_search``: the estimator, its refit and the fallback to a ranking loss.
"""
from ._data import SearchData
from ._grid import DEFAULT_BUDGETS, DEFAULT_C_PER_SAMPLE

# the grid rules the package's other searches (MILESClassifier, MultiLabelStructSVMCV) apply to their own
# units (instances, groups of labels' weights); not part of __all__
from ._grid import budget_under_cap as budget_under_cap
from ._grid import check_grid as check_grid
from ._grid import default_budgets as default_budgets
from ._path import best_threshold
from ._scoring import check_scoring
from ._search import FALLBACK_LOSS, StructSVMCV

# What a user calls: the estimator, the protocol of the data it searches on, the cut of a measure on
# held-out scores, the scorers a search takes, and the default grid.
__all__ = ["StructSVMCV", "SearchData", "best_threshold", "check_scoring", "DEFAULT_C_PER_SAMPLE", "DEFAULT_BUDGETS",
           "FALLBACK_LOSS"]
