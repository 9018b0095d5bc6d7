"""Sample weights: example i with weight w_i is w_i copies of itself, in the oracle (exactly), in the fit
(within its certificate) and in ``score``; fractional weights only where the loss decomposes."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import StratifiedKFold
from sklearn.utils.estimator_checks import (
    check_sample_weight_equivalence_on_dense_data,
    check_sample_weight_equivalence_on_sparse_data,
)

from structfs import OneVsRestStructSVM, StructSVM, StructSVMCV
from structfs.losses import LOSSES, ContingencyLoss, SampleWeighted, get_loss


def mcc(a, b, c, d):
    den = np.sqrt(1.0 * (a + b) * (a + c) * (b + d) * (c + d))
    return 50.0 * (1.0 - np.where(den > 0, (a * d - b * c) / np.where(den > 0, den, 1.0), 0.0))


WEIGHTED_LOSSES = sorted(LOSSES) + ["mcc"]


def _loss(name):
    return ContingencyLoss(mcc) if name == "mcc" else get_loss(name)


@settings(max_examples=15, deadline=None)
@given(name=st.sampled_from(WEIGHTED_LOSSES), seed=st.integers(0, 10_000), n=st.integers(4, 12))
def test_the_weighted_oracle_is_the_oracle_of_the_repeated_examples(name, seed, n):
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < 0.4, 1.0, -1.0)
    y[:2] = [1.0, -1.0]
    s = np.round(rng.normal(size=n), 1)                 # ties, as the oracles must break them too
    w = rng.integers(0, 4, size=n)
    w[:2] = [1, 2]
    loss = _loss(name)
    coef, delta = SampleWeighted(loss, w).oracle(y, s)
    Y, S = np.repeat(y, w), np.repeat(s, w)
    coef_r, delta_r = loss.oracle(Y, S)
    # the maximum of H is unique (its maximiser need not be): the same value, and coef folds back per example
    assert coef.shape == (n,) and np.all(coef[w == 0] == 0)
    assert delta - coef @ s == pytest.approx(delta_r - coef_r @ S, abs=1e-9)
    assert SampleWeighted(loss, w)._score(y, s) == pytest.approx(loss._score(Y, S), abs=1e-9)


def test_fractional_weights_scale_out_of_the_error_loss():
    rng = np.random.default_rng(3)
    y, s = np.where(rng.random(30) < 0.3, 1.0, -1.0), rng.normal(size=30)
    w = rng.integers(0, 5, size=30).astype(float)
    loss = get_loss("error")
    for scale in (1.0, 0.37):
        coef, delta = SampleWeighted(loss, scale * w).oracle(y, s)
        coef_r, delta_r = loss.oracle(np.repeat(y, w.astype(int)), np.repeat(s, w.astype(int)))
        assert delta == pytest.approx(delta_r)
        assert delta - coef @ s == pytest.approx(delta_r - coef_r @ np.repeat(s, w.astype(int)))
        cut = SampleWeighted(loss, scale * w).best_cut(y, s)
        errors = w[(s > cut) != (y > 0)].sum()
        assert errors == min(w[(s > t) != (y > 0)].sum() for t in np.concatenate((s, [s.max() + 1])))


def _data(n=90, m=6, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, m))
    y = (X[:, 0] - 0.7 * X[:, 1] + 0.6 * rng.normal(size=n) > 0.9).astype(int)
    return X, y, rng.integers(0, 4, size=n)


@pytest.mark.parametrize("loss, budget", [("f1", None), ("error", None), ("auc", None), ("prec@rec", None),
                                          ("f1", 2), ("mcc", None)])
def test_a_weighted_fit_is_the_fit_of_the_repeated_rows(loss, budget):
    X, y, w = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        weighted = StructSVM(loss=_loss(loss), C=30.0, budget=budget).fit(X, y, sample_weight=w)
        repeated = StructSVM(loss=_loss(loss), C=30.0, budget=budget).fit(np.repeat(X, w, axis=0), np.repeat(y, w))
    # one problem, so one optimal objective: both certified within their gaps
    assert abs(weighted.objective_ - repeated.objective_) <= max(weighted.gap_, repeated.gap_) + 1e-9
    assert weighted.converged_ and repeated.converged_
    assert weighted.score(X, y, sample_weight=w) == pytest.approx(
        weighted.score(np.repeat(X, w, axis=0), np.repeat(y, w)))


def test_unit_weights_change_nothing():
    X, y, _ = _data(seed=1)
    plain = StructSVM(C=30.0).fit(X, y)
    ones = StructSVM(C=30.0).fit(X, y, sample_weight=np.ones(len(y)))
    assert np.array_equal(plain.coef_, ones.coef_) and plain.intercept_ == ones.intercept_
    assert plain.score(X, y) == ones.score(X, y, sample_weight=1.0)


@pytest.mark.parametrize("loss", ["error", "auc", "prec@k"])
def test_scikit_learn_finds_weights_equivalent_to_repetition(loss):
    check_sample_weight_equivalence_on_dense_data("StructSVM", StructSVM(loss=loss, C=10.0))
    check_sample_weight_equivalence_on_sparse_data("StructSVM", StructSVM(loss=loss, C=10.0))


def test_bad_weights_are_refused_naming_the_argument():
    X, y, w = _data()
    with pytest.raises(ValueError, match=r"sample_weight\[0\] = 0.5 is not a whole number.*'f1'"):
        StructSVM(loss="f1").fit(X, y, sample_weight=np.full(len(y), 0.5))
    with pytest.raises(ValueError, match=r"sample_weight must be non-negative; sample_weight\[3\]"):
        StructSVM().fit(X, y, sample_weight=np.where(np.arange(len(y)) == 3, -1.0, 1.0))
    with pytest.raises(ValueError, match=r"sample_weight must have shape \(90,\)"):
        StructSVM().fit(X, y, sample_weight=np.ones(89))
    with pytest.raises(ValueError, match="zero everywhere"):
        StructSVM().fit(X, y, sample_weight=np.zeros(len(y)))
    with pytest.raises(ValueError, match="sample_weight is 0 for every example of class 1"):
        StructSVM().fit(X, y, sample_weight=np.where(y == 1, 0, 1))
    with pytest.raises(ValueError, match="not a whole number"):
        StructSVM(loss="f1", C=10.0).fit(X, y).score(X, y, sample_weight=np.full(len(y), 0.5))
    with pytest.raises(ValueError, match="sample_weight sums to 9e"):
        StructSVM(loss="f1").fit(X, y, sample_weight=np.full(len(y), 1e10))
    StructSVM(loss="error").fit(X, y, sample_weight=np.full(len(y), 0.5))      # decomposes: any weights


def test_one_vs_rest_passes_the_weights_to_each_class():
    X, y, w = _data(seed=4)
    y3 = y + (X[:, 2] > 1.0).astype(int)
    model = OneVsRestStructSVM(StructSVM(C=10.0)).fit(sp.csr_matrix(X), y3, sample_weight=w)
    for est, c in zip(model.estimators_, model.classes_):
        alone = StructSVM(C=10.0).fit(X, (y3 == c).astype(int), sample_weight=w)
        # the same problem (sparse and dense input take different sums): the same optimum, each within
        # its certified gap
        assert abs(est.objective_ - alone.objective_) <= max(est.gap_, alone.gap_) + 1e-9 * alone.objective_
    assert 0.0 <= model.score(X, y3, sample_weight=w) <= 1.0
    cv = OneVsRestStructSVM(StructSVMCV(cv=2, Cs=[10.0], budgets=[None])).fit(X, y3, sample_weight=w)
    assert len(cv.estimators_) == 3


class _NoWeights(StructSVM):
    def fit(self, X, y):
        return super().fit(X, y)


def test_one_vs_rest_refuses_weights_its_estimator_cannot_take():
    X, y, w = _data(seed=5)
    with pytest.raises(ValueError, match="_NoWeights.fit takes no sample_weight"):
        OneVsRestStructSVM(_NoWeights()).fit(X, y + (X[:, 2] > 1.0), sample_weight=w)


@pytest.mark.parametrize("loss, budgets", [("f1", [None]), ("f1", [2, None]), ("auc", [None]), ("prec@rec", [None])])
def test_a_weighted_search_is_the_search_of_the_repeated_rows(loss, budgets):
    """The same folds (copies of an example stay together): the same choice, the refitted objectives
    within their certificates, the same validation scores to the fits' precision."""
    X, y, w = _data(n=120, seed=6)
    folds = [(train, test) for train, test in StratifiedKFold(3, shuffle=True, random_state=0).split(X, y)]
    copies = np.repeat(np.arange(len(y)), w)
    position = {i: np.flatnonzero(copies == i) for i in range(len(y))}
    repeated_folds = [(np.concatenate([position[i] for i in train]), np.concatenate([position[i] for i in test]))
                      for train, test in folds]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        weighted = StructSVMCV(loss=loss, budgets=budgets, cv=folds).fit(X, y, sample_weight=w)
        repeated = StructSVMCV(loss=loss, budgets=budgets, cv=repeated_folds).fit(X[copies], y[copies])
    assert weighted.C_ == pytest.approx(repeated.C_, rel=1e-9) and weighted.budget_ == repeated.budget_
    assert weighted.best_score_ == pytest.approx(repeated.best_score_, abs=2e-3)
    assert abs(weighted.objective_ - repeated.objective_) <= max(weighted.gap_, repeated.gap_) + 1e-9
    assert weighted.score(X, y, sample_weight=w) == pytest.approx(repeated.score(X[copies], y[copies]), abs=0.02)


def test_the_losses_guide_weighted_f1_example_holds():
    """The guide's worked example (weighted F1 against brute force over every labeling) runs as printed."""
    import pathlib
    import re

    guide = (pathlib.Path(__file__).parents[1] / "docs" / "losses.md").read_text(encoding="utf-8")
    start = guide.index("A worked example, weighted F1")
    code = re.search(r"```python\n(.*?)```", guide[start:], re.S).group(1)
    exec(compile(code, "docs/losses.md", "exec"), {})
