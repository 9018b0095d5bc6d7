"""The penalties' compiled values (what the compiled loop records as the objective) against their Python
values, on any weights and any subset of columns."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from structfs.solvers.penalties import BSupport, GroupBSupport, Penalty, SquaredL2


def _penalties(m, rng):
    return [SquaredL2(), BSupport(1), BSupport(3)]


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 30), st.integers(0, 2**31 - 1))
def test_a_penalty_compiled_value_is_its_value(m, seed):
    rng = np.random.default_rng(seed)
    cols = np.sort(rng.choice(m, size=rng.integers(1, m + 1), replace=False))
    w = rng.normal(size=cols.shape[0]) * (rng.random(cols.shape[0]) < 0.7)
    for penalty in _penalties(m, rng):
        function, params = penalty.compiled_value(cols)
        compiled = function(np.ascontiguousarray(w), params)
        assert compiled == pytest.approx(penalty.value(w, cols), rel=1e-12, abs=1e-300), penalty


def test_a_penalty_without_a_compiled_value_says_so():
    assert Penalty().compiled_value(np.arange(3)) is None
    assert GroupBSupport(1, np.array([0, 0, 1])).compiled_value(np.arange(3)) is None      # the Python driver's
