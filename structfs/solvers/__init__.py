"""Optimisers: the master QCQP, the inner cutting-plane layer and the outer feature-generation layer."""
from .data import occurring_columns, select_columns
from .feature_generation import SolverResult, effective_budget, solve
from .objective import ksupport_sq, primal_objective
from .path import PathRefitter, refit_path

__all__ = ["solve", "refit_path", "select_columns", "occurring_columns", "PathRefitter", "effective_budget",
           "SolverResult", "ksupport_sq", "primal_objective"]
