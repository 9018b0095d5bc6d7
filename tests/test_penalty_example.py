"""A new penalty is one object: the worked example of the developer guide (docs/developer.md).

``AllowedBSupport`` is the B-support penalty with its budget spent among allowed features only (the
others keep weight 0). Feature generation asks a penalty for the worst-case group (``select``), the
lower bound and the optimality condition; only ``select`` changes here, so the class is short. The
test checks what makes it right: the fit is certified, uses allowed features only, and reaches the
optimum of the same budget on the allowed columns alone.
"""
import numpy as np
from sklearn.datasets import make_classification

from structfs.losses import get_loss
from structfs.solvers import BSupport, Solver


class AllowedBSupport(BSupport):
    """Half the squared B-support norm, its ``budget`` features chosen among ``allowed`` (a flag per
    column) only."""

    def __init__(self, budget, allowed):
        super().__init__(budget)
        self.allowed = np.asarray(allowed, dtype=bool)

    def on_columns(self, columns):
        return AllowedBSupport(self.budget, self.allowed[columns])

    def restricted(self, n_features, max_features):
        budget = self.budget if max_features is None else min(self.budget, max_features)
        return AllowedBSupport(budget, self.allowed)

    def select(self, c):
        candidates = np.flatnonzero(self.allowed)
        return candidates[super().select(c[candidates])]


def test_a_budget_among_allowed_features_reaches_the_same_optimum():
    X, y01 = make_classification(120, 30, n_informative=6, random_state=0)
    y = np.where(y01 == 1, 1.0, -1.0)
    allowed = np.zeros(30, dtype=bool)
    allowed[::3] = True
    loss, solver, C = get_loss("f1"), Solver.default(tol=1e-3), 10.0
    mine = solver.solve(X, y, loss, C, AllowedBSupport(4, allowed), 1.0)
    reference = solver.solve(X[:, allowed], y, loss, C, BSupport(4), 1.0)
    assert mine.converged and reference.converged
    used = np.flatnonzero(mine.w)
    assert used.size and allowed[used].all()
    # both objectives are certified within C * tol of their optimum, which is the same problem's
    assert abs(mine.objective - reference.objective) <= C * 1e-3
