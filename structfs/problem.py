"""The problem a fit solves, built once per fit from an estimator's parameters by one function
(:func:`problem_of`), the only home of the rules that tie parameters together; each parameter alone is
checked by the estimator's ``_parameter_constraints``."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _defaults
from .losses import Loss, get_loss
from .solvers import Solver, penalty_for
from .solvers.penalties import Penalty


@dataclass(frozen=True)
class Problem:
    """What one :class:`~structfs.StructSVM` fit solves: the ``loss`` object, ``C``, the ``budget`` and
    its ``groups`` (as given: a fit checks them against X's columns), ``interactions``, the ``bias``
    feature's value, ``refit`` (the C that debiases a budgeted model, or None), the class ``pos_label``
    the loss measures, and the ``solver`` holding every setting of the solve."""

    loss: Loss
    C: float
    budget: int | None
    groups: Any
    interactions: bool
    bias: float
    refit: float | None
    pos_label: Any
    solver: Solver

    def penalty(self, groups: np.ndarray | None) -> Penalty:
        """The budget's penalty over the checked ``groups`` (None: each feature its own)."""
        return penalty_for(self.budget, groups)


def solver_of(params: Mapping[str, Any]) -> Solver:
    """The :class:`Solver` with an estimator's settings (``tol``, ``max_iter``, ``max_outer`` and, where
    it has them, ``max_features``, ``outer_tol``, ``master_solver``, ``verbose``)."""
    return Solver(tol=float(params["tol"]), max_iter=int(params["max_iter"]), max_outer=int(params["max_outer"]),
                  max_features=params.get("max_features"), outer_tol=params.get("outer_tol"),
                  master_solver=params.get("master_solver", _defaults.MASTER_SOLVER),
                  verbose=int(params.get("verbose", 0)))


def problem_of(params: Mapping[str, Any]) -> Problem:
    """The :class:`Problem` of a :class:`~structfs.StructSVM`'s parameters (``get_params()``), after the
    rules that tie them together: a ValueError naming the parameters that do not combine."""
    budget = params["budget"]
    if params["refit"] is not None and budget is None:
        raise ValueError("refit debiases a budgeted model and needs a budget; set budget=B or refit=None.")
    if params["max_features"] is not None and budget is None:
        raise ValueError("max_features needs a budget: set budget=B (budget=1 selects features one "
                         "at a time, like an L1 penalty), or leave max_features=None.")
    if params["groups"] is not None and budget is None:
        raise ValueError("groups needs a budget: the budget counts groups (budget=B keeps at most B groups "
                         "in each generated group); set budget=B or groups=None.")
    if params["interactions"] and budget is None:
        raise ValueError("interactions=True needs a budget: the products of all pairs of features are never "
                         "formed, only the budget's best ones at a time; set budget=B.")
    if params["interactions"] and params["groups"] is not None:
        raise ValueError("interactions=True does not combine with groups (a product of two features belongs to no "
                         "one group); set groups=None or interactions=False.")
    loss = get_loss(params["loss"], **(params["loss_params"] or {}))
    refit = None if params["refit"] is None else float(params["refit"])
    return Problem(loss=loss, C=float(params["C"]), budget=budget, groups=params["groups"],
                   interactions=bool(params["interactions"]), bias=float(params["bias"]), refit=refit,
                   pos_label=params["pos_label"], solver=solver_of(params))
