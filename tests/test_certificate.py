"""A fit's certificate is never false: over random problems, feature scales from 1e-300 to 1e100, with
a budget or without, and every built-in loss, ``lower_bound_ <= objective_``; ``converged_`` only when
``gap_ <= C tol``; and on tiny problems at ordinary scales the optimum (cvxpy over every labeling) lies
between the bound and the objective.

Before: budgeted fits on unscaled columns said ``converged_`` with a bound of about 0 and a gap of the
whole objective; a column of scale 1e60 gave a bound above the objective.
"""
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_solvers import exact_objective

from structfs import StructSVM

pytestmark = pytest.mark.slow

LOSSES = [("error", {}), ("f1", {}), ("prbep", {}), ("prec@k", {"k": 2}), ("rec@k", {"k": 3}), ("auc", {}),
          ("ap", {}), ("pauc", {}), ("fbeta", {"beta": 2.0}), ("prec@rec", {"recall": 0.6}),
          ("rec@prec", {"precision": 0.6}), ("tpr@fpr", {"fpr": 0.3})]
EXACT = ("error", "f1", "prbep")          # enumerated by test_solvers.exact_objective at n = 7


@st.composite
def problems(draw):
    seed = draw(st.integers(0, 2 ** 32 - 1))
    loss, params = draw(st.sampled_from(LOSSES))
    exact = loss in EXACT and draw(st.booleans())
    rng = np.random.default_rng(seed)
    n, m = (7, 4) if exact else (draw(st.integers(8, 40)), draw(st.integers(2, 8)))
    y = np.where(rng.random(n) < 0.4, 1, 0)
    y[:3] = [1, 0, 1]
    X = rng.normal(size=(n, m)) + 0.5 * y[:, None] * rng.normal(size=m)
    # one exponent for the problem, columns spread around it by up to 10^2
    exponent = draw(st.floats(-1.0, 1.0) if exact else st.floats(-300.0, 100.0))
    X = X * 10.0 ** (exponent + rng.uniform(-1.0, 1.0, size=m) * (0.0 if exact else 1.0))
    largest = np.abs(X).max()
    if largest > 1e99:                             # the documented limit is 1e100
        X *= 1e99 / largest
    budget = draw(st.sampled_from([None, 1, 2, 3]))
    C = draw(st.sampled_from([0.1, 1.0, 10.0, 100.0]))
    return X, y, loss, params, budget, C, exact


@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_the_certificate_is_never_false(problem):
    X, y, loss, params, budget, C, exact = problem
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = StructSVM(loss=loss, loss_params=params or None, C=C, budget=budget, tol=1e-3,
                          max_iter=100).fit(X, y)
    # at most 100 planes: features at scale 1e60 make the problem a hard-margin one (C times the scale
    # squared) that no number of planes solves, and the certificate must hold wherever the fit stops
    objective, bound = model.objective_, model.lower_bound_
    assert np.isfinite(objective) and np.isfinite(bound)
    round_off = 1e-9 * abs(objective)            # the bound and the objective are sums of the same size
    assert bound <= objective + round_off + 1e-300
    assert model.gap_ == pytest.approx(objective - bound, rel=1e-9, abs=1e-12)
    if model.converged_:
        assert -round_off <= model.gap_ <= C * model.tol * (1 + 1e-9)
    if exact:
        y_pm = np.where(y > 0, 1.0, -1.0)
        optimum = exact_objective(X, y_pm, loss, C, budget, 1.0, params.get("k"))
        scale = 1e-6 * max(1.0, optimum)
        assert bound <= optimum + scale
        assert objective >= optimum - scale
