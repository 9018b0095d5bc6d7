"""Optimisers: the master QCQP, the inner cutting-plane layer and the outer feature-generation layer.

A :class:`Solver` holds the settings; ``Solver.path(X, y, loss, C, penalty, bias)`` yields the model
after each generated feature group and ``Solver.solve`` runs it to the end. The regulariser is a
penalty object (:mod:`structfs.solvers.penalties`).
"""
from . import penalties
from .data import occurring_columns, select_columns
from .feature_generation import Solver, SolverPath, SolverResult, solve
from .objective import ksupport_sq, primal_objective
from .path import PathRefitter, refit_path
from .penalties import *  # noqa: F403 -- the penalties' names, listed once in penalties.__all__

__all__ = ["Solver", "SolverPath", "SolverResult", "solve", "refit_path", "PathRefitter", "select_columns",
           "occurring_columns", "ksupport_sq", "primal_objective", *penalties.__all__]
