"""A loss's Python oracle called from the compiled loop: same fits as the Python driver (test_solvers),
and what the oracle raises or answers wrongly reaches the caller instead of being lost in compiled code."""
import numpy as np
import pytest

from structfs import StructSVM
from structfs.losses import Loss, get_loss
from structfs.solvers import python_oracle


class _Raising(Loss):
    """F1's oracle until its ``after``-th call, then an error of its own."""

    name = "raising"

    def __init__(self, after: int = 5) -> None:
        self.after = after
        self.calls = 0
        self.f1 = get_loss("f1")

    def oracle(self, y, s):
        self.calls += 1
        if self.calls > self.after:
            raise ArithmeticError("the user's oracle failed at this call")
        return self.f1.oracle(y, s)

    def _score(self, y, s):
        return self.f1._score(y, s)


class _Short(_Raising):
    """An oracle answering one coefficient short from its ``after``-th call (the first calls come from
    Python, before the loop)."""

    def oracle(self, y, s):
        self.calls += 1
        coef, delta = self.f1.oracle(y, s)
        return (coef[:-1], delta) if self.calls > self.after else (coef, delta)


def _data(seed=0, n=60, m=6):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, m))
    return X, np.where(X[:, 0] + 0.5 * rng.normal(size=n) > 0.5, 1, 0)


def test_an_error_raised_by_a_python_oracle_in_the_compiled_loop_reaches_the_caller():
    X, y = _data()
    loss = _Raising(after=5)
    with pytest.raises(ArithmeticError, match="failed at this call"):
        StructSVM(loss=loss, C=100).fit(X, y)
    assert loss.calls == 6                  # the loop stopped at the failure: no call after it
    assert not python_oracle._CALLS         # nothing of the failed fit stays registered
    model = StructSVM(loss=_Raising(after=10**9), C=100).fit(X, y)
    assert model.objective_ == pytest.approx(StructSVM(loss="f1", C=100).fit(X, y).objective_, rel=1e-9)


def test_an_oracle_answer_of_the_wrong_length_is_refused_before_compiled_code_reads_it():
    X, y = _data()
    with pytest.raises(ValueError, match="_Short.oracle returned coefficients of shape"):
        StructSVM(loss=_Short(), C=100).fit(X, y)
    assert not python_oracle._CALLS


def test_the_bridge_passes_the_loss_answer_through_unchanged():
    loss = get_loss("prbep")
    rng = np.random.default_rng(1)
    y, s = np.where(rng.random(30) < 0.3, 1.0, -1.0), rng.normal(size=30)
    with python_oracle.OracleCall(loss) as call:
        coef, delta = python_oracle._bridge(y, s, call.params)
    expected_coef, expected_delta = loss.oracle(y, s)
    np.testing.assert_array_equal(coef, expected_coef)
    assert delta == expected_delta and call.error is None and not call.failed[0]
