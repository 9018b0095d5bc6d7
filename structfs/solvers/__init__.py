"""Optimisers: the master QCQP, the inner cutting-plane layer and the outer feature-generation layer."""
from .feature_generation import (PathRefitter, SolverResult, effective_budget, occurring_columns, refit_path,
                                 select_columns, solve)
from .objective import ksupport_sq, primal_objective

__all__ = ["solve", "refit_path", "select_columns", "occurring_columns", "PathRefitter", "effective_budget", "SolverResult", "ksupport_sq", "primal_objective"]
