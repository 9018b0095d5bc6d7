"""A user's ContingencyLoss: compiled once, searched by branch and bound where Delta is monotone, and
exact either way (against the search over every table, itself checked by brute force in test_losses)."""
import fractions
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from structfs.losses import ContingencyLoss
from structfs.losses._table_search import check_monotone
from structfs.testing import check_loss


def mcc(a, b, c, d):
    den = np.sqrt(1.0 * (a + b) * (a + c) * (b + d) * (c + d))
    return 50.0 * (1.0 - np.where(den > 0, (a * d - b * c) / np.where(den > 0, den, 1.0), 0.0))


def mcc_if(a, b, c, d):                     # scalars only: numba compiles it, NumPy arrays would not pass `if`
    den = (1.0 * (a + b) * (a + c) * (b + d) * (c + d)) ** 0.5
    if den == 0:
        return 50.0
    return 50.0 * (1.0 - (a * d - b * c) / den)


def gmean(a, b, c, d):
    return 100.0 * (1.0 - np.sqrt(a / np.maximum(a + c, 1) * d / np.maximum(b + d, 1)))


def missed_costs_three(a, b, c, d):
    return np.clip(100.0 * (b + 3 * c) / (3 * (a + c) + (b + d)), 0.0, 100.0)


def rate_off_target(a, b, c, d):           # not monotone: predicting 30% positive is the goal
    return 100.0 * np.abs((a + b) / (a + b + c + d) - 0.3)


def spike(a, b, c, d):                     # monotone except on one table, where a greedy bound would miss it
    return np.where((a == 1) & (b == 1), 100.0, 50.0 * (b + c) / (a + b + c + d))


MONOTONE = [mcc, mcc_if, gmean, missed_costs_three]
NOT_MONOTONE = [rate_off_target, spike]


def h_value(loss, y, s, answer):
    coef, delta = answer
    return delta - coef @ s


problems = st.integers(1, 40).flatmap(lambda n: st.tuples(
    st.lists(st.sampled_from([-1.0, 1.0]), min_size=n, max_size=n),
    st.lists(st.one_of(st.sampled_from([0.0, 1.0, -1.0, 0.5]),
                       st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)), min_size=n, max_size=n),
    st.sampled_from([1e-4, 1.0, 30.0])))


@settings(max_examples=150, deadline=None)
@given(problems, st.sampled_from(MONOTONE + NOT_MONOTONE))
def test_the_oracle_finds_the_maximum_over_every_table(problem, fn):
    y, s, scale = problem
    y, s = np.array(y), np.array(s) * scale
    loss = ContingencyLoss(fn)
    fast = h_value(loss, y, s, loss.oracle(y, s))
    exhaustive = h_value(loss, y, s, loss._grid_oracle(y, s))
    assert fast == pytest.approx(exhaustive, rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("fn", MONOTONE)
def test_monotone_losses_are_recognised(fn):
    loss = ContingencyLoss(fn)
    assert loss.is_monotone(7, 40) and loss.is_monotone(300, 200)


@pytest.mark.parametrize("fn", NOT_MONOTONE)
def test_a_loss_that_is_not_monotone_is_searched_over_every_table(fn):
    loss = ContingencyLoss(fn)
    assert not loss.is_monotone(5, 9)
    rng = np.random.default_rng(0)
    for _ in range(20):
        y = np.where(rng.random(30) < 0.3, 1.0, -1.0)
        s = rng.normal(size=30)
        assert h_value(loss, y, s, loss.oracle(y, s)) == pytest.approx(
            h_value(loss, y, s, loss._grid_oracle(y, s)), abs=1e-9)


def test_the_spike_would_be_missed_by_a_false_monotone_claim_and_check_loss_says_so():
    with pytest.raises(AssertionError, match="monotone=True"):
        check_loss(ContingencyLoss(spike, monotone=True), sizes=(4,))
    check_loss(ContingencyLoss(spike), sizes=(4, 6))          # verified per class size: exact


@pytest.mark.parametrize("fn", MONOTONE)
def test_check_loss_passes_the_user_losses(fn):
    assert check_loss(ContingencyLoss(fn, monotone=True), sizes=(2, 5, 9)) > 0


def test_large_grids_are_verified_by_blocks():
    """check_monotone reads a grid of 2e7 tables in blocks of rows, as the oracle does at n = 10^4+."""
    loss = ContingencyLoss(mcc)
    bs = np.arange(20_001, dtype=np.int64)[None, :]
    assert check_monotone(lambda a: loss._delta_table(a, bs, 999 - a, 20_000 - bs), 999, 20_000,
                          block_cells=1 << 20)[0]


def test_numpy_style_and_if_style_functions_run_compiled():
    for fn in (mcc, mcc_if, missed_costs_three):
        loss = ContingencyLoss(fn)
        assert loss._evaluator() is not fn           # numba's ufunc, not NumPy's temporaries per operation
    y = np.array([1.0, -1.0, 1.0, -1.0, -1.0])
    assert ContingencyLoss(mcc).delta(y, y) == ContingencyLoss(mcc_if).delta(y, y) == 0.0


def uses_fractions(a, b, c, d):
    return float(100 * fractions.Fraction(int(b + c), int(a + b + c + d)))


def test_a_function_neither_numpy_nor_numba_can_run_is_refused_with_how_to_fix():
    loss = ContingencyLoss(uses_fractions)
    with pytest.raises(TypeError, match=r"np\.where"):
        loss.oracle(np.array([1.0, -1.0, 1.0]), np.array([0.2, 0.1, -0.3]))


def test_a_used_loss_pickles_without_its_compiled_function():
    loss = ContingencyLoss(mcc)
    y = np.where(np.arange(50) % 4 == 0, 1.0, -1.0)
    s = np.sin(np.arange(50.0))
    coef, delta = loss.oracle(y, s)
    clone = pickle.loads(pickle.dumps(loss))
    coef2, delta2 = clone.oracle(y, s)
    assert delta2 == delta and np.array_equal(coef2, coef)


def test_monotone_must_be_none_true_or_false():
    with pytest.raises(TypeError, match="monotone"):
        ContingencyLoss(mcc, monotone="yes")


@pytest.mark.parametrize("positives", [0.05, 0.5])
def test_the_bound_from_verified_steps_is_exact_on_thousands_of_examples(positives):
    """At n = 3,000 the grid's steps are kept per block of 16 x 16 tables: rectangles near the maximum
    are dropped by the bound from those steps, and the answer is still the maximum over every table."""
    rng = np.random.default_rng(1)
    for fn in (mcc, gmean, missed_costs_three):
        loss = ContingencyLoss(fn)
        for _ in range(4):
            y = np.where(rng.random(3000) < positives, 1.0, -1.0)
            s = np.where(y > 0, 1.0, -1.0) * rng.choice([0.0, 0.3, 1.0]) + rng.normal(size=3000)
            assert h_value(loss, y, s, loss.oracle(y, s)) == pytest.approx(
                h_value(loss, y, s, loss._grid_oracle(y, s)), rel=1e-12, abs=1e-9)


@pytest.mark.slow
def test_the_bound_from_steps_is_exact_where_blocks_are_wider_than_16_tables():
    """n = 20,000 at 50% positives: the grid has 10^8 tables, so the steps are kept per block of 20 x 20."""
    rng = np.random.default_rng(2)
    y = np.where(rng.random(20_000) < 0.5, 1.0, -1.0)
    for fn in (mcc, gmean):
        loss = ContingencyLoss(fn)
        P, N = int((y > 0).sum()), int((y < 0).sum())
        assert loss._grid_facts(P, N)[1].block > 16
        for shift in (0.0, 0.5, 1.0):
            s = np.where(y > 0, shift, -shift) + rng.normal(size=y.shape[0])
            assert h_value(loss, y, s, loss.oracle(y, s)) == pytest.approx(
                h_value(loss, y, s, loss._grid_oracle(y, s)), rel=1e-12, abs=1e-9)
