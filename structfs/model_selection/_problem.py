"""The problem a search solves, built once per search from :class:`StructSVMCV`'s parameters by one
function (:func:`search_problem`), the only home of the rules that tie them together."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _defaults
from .._validation import check_positive_float
from ..losses import Loss, get_loss
from ..problem import solver_of
from ..solvers import Solver
from ._grid import DEFAULT_C_PER_SAMPLE, check_budget, check_grid, default_budgets
from ._scoring import check_scoring


@dataclass(frozen=True)
class SearchProblem:
    """What a search solves: the ``loss`` object, the grids ``Cs`` and ``budgets`` (checked, defaults
    filled in), the ``scorer`` that validates, the ``solver`` of the fold fits, and the budget's
    ``groups`` (an array, or None)."""

    loss: Loss
    Cs: list[float]
    budgets: list[int | None]
    scorer: Callable[..., float]
    solver: Solver
    groups: np.ndarray | None


def search_problem(params: Mapping[str, Any]) -> SearchProblem:
    """The :class:`SearchProblem` of a :class:`StructSVMCV`'s parameters (``get_params()``), after the
    rules that tie them together and the checks of the grids' values: a ValueError naming the parameter."""
    Cs = check_grid(DEFAULT_C_PER_SAMPLE if params["Cs"] is None else params["Cs"], "Cs", check_positive_float)
    default = default_budgets(params["max_features"])
    budgets = check_grid(default if params["budgets"] is None else params["budgets"], "budgets", check_budget)
    if params["max_features"] is not None and None in budgets:
        raise ValueError("budgets contains None (no budget) but max_features needs a budget; drop None "
                         "or set max_features=None.")
    n_jobs = params["n_jobs"]
    if n_jobs == 0 or isinstance(n_jobs, (bool, np.bool_)):
        raise ValueError(f"n_jobs must be None or a nonzero integer (-1: every core), got {n_jobs!r}.")
    loss = get_loss(params["loss"], **(params["loss_params"] or {}))
    # the fold fits are silent: the search reports its own progress (verbose); tol None: the folds at the default
    solver = solver_of({**params, "tol": _defaults.TOL if params["tol"] is None else params["tol"], "verbose": 0})
    groups = None if params["groups"] is None else np.asarray(params["groups"])
    return SearchProblem(loss=loss, Cs=Cs, budgets=budgets, scorer=check_scoring(params["scoring"], loss,
                         params["pos_label"]), solver=solver, groups=groups)
