"""Optimisers: the master QCQP, the inner cutting-plane layer and the outer feature-generation layer."""
from .feature_generation import SolverResult, effective_budget, solve
from .objective import ksupport_sq, primal_objective

__all__ = ["solve", "effective_budget", "SolverResult", "ksupport_sq", "primal_objective"]
