"""The measures of structfs.metrics against scikit-learn's, and the scorers."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import accuracy_score, average_precision_score, f1_score, fbeta_score, roc_auc_score

from structfs import StructSVM
from structfs.metrics import (
    MEASURES,
    accuracy,
    average_precision,
    error_rate,
    f1,
    fbeta,
    get_scorer,
    partial_auc,
    prbep,
    precision_at_k,
    recall_at_k,
    roc_auc,
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(-4, 4)), min_size=2, max_size=40))
def test_label_measures_threshold_at_zero_as_scikit_learn(pairs):
    y = np.array([1 if p else -1 for p, _ in pairs])
    s = np.array([v * 0.5 for _, v in pairs])
    pred = np.where(s > 0, 1, -1)
    assert f1(y, s) == pytest.approx(100 * f1_score(y, pred, zero_division=0))
    assert fbeta(y, s, beta=2.0) == pytest.approx(100 * fbeta_score(y, pred, beta=2.0, zero_division=0))
    assert accuracy(y, s) == pytest.approx(100 * accuracy_score(y, pred))
    assert error_rate(y, s) == pytest.approx(100 - accuracy(y, s))
    if len(set(y)) == 2:
        assert roc_auc(y, s) == pytest.approx(100 * roc_auc_score(y, s))          # ties count one half


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(-4, 4)), min_size=2, max_size=40),
       st.sampled_from([0.05, 0.1, 0.25, 0.5, 0.77, 1.0]))
def test_measures_are_scikit_learns(pairs, beta):
    y = np.array([1 if p else -1 for p, _ in pairs])
    s = np.array([v * 0.5 for _, v in pairs])
    if len(set(y)) < 2:
        return
    assert average_precision(y, s) == pytest.approx(100 * average_precision_score(y, s))
    area = partial_auc(y, s, beta) / 100 * beta            # documented: sklearn standardises by McClish
    mcclish = 0.5 * (1 + (area - beta ** 2 / 2) / (beta - beta ** 2 / 2))
    assert mcclish == pytest.approx(roc_auc_score(y, s, max_fpr=beta) if beta < 1 else roc_auc_score(y, s))


def test_ranking_measures_on_a_small_case():
    y = np.array([1, -1, 1, -1, -1, 1])
    s = np.array([0.9, 0.8, 0.7, 0.1, 0.0, -0.5])
    assert prbep(y, s) == pytest.approx(100 * 2 / 3)             # top 3: two positives
    assert precision_at_k(y, s, k=2) == pytest.approx(50.0)
    assert recall_at_k(y, s, k=4) == pytest.approx(100 * 2 / 3)
    assert average_precision(y, s) == pytest.approx(100 * (1 + 2 / 3 + 3 / 6) / 3)


def test_scorers_follow_the_estimators_positive_class_and_negate_the_error():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = np.where(X[:, 0] > 0, "spam", "ham")
    est = StructSVM(C=10.0).fit(X, y)
    s = est.decision_function(X)
    y_pm = np.where(y == est.classes_[1], 1, -1)
    assert get_scorer("f1")(est, X, y) == pytest.approx(f1(y_pm, s) / 100)          # scikit-learn's 0-1 scale
    assert get_scorer("error")(est, X, y) == pytest.approx(-error_rate(y_pm, s) / 100)
    assert set(MEASURES) >= {"f1", "fbeta", "accuracy", "error", "prec@k", "rec@k", "prbep", "auc", "ap", "pauc"}


def test_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="y_true"):
        f1([0, 1, 2], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="scores"):
        f1([1, -1], [0.1])
    with pytest.raises(ValueError, match="positive"):
        average_precision([-1, -1], [0.1, 0.2])
    with pytest.raises(ValueError, match="Unknown measure"):
        get_scorer("nope")


@pytest.mark.parametrize("k", [4, 5, 6, 8, 100])
def test_recall_at_k_beyond_n_finds_every_positive(k):
    """k >= n puts every example among the top k: Rec@k is 100 %, never above (it returned 200 % at
    k = 6 and 0 % or an error elsewhere)."""
    y, s = np.array([1, 1, 1, -1]), np.array([3.0, 2.0, 1.0, 0.0])
    assert recall_at_k(y, s, k=k) == 100.0


def test_scorers_measure_the_class_pos_label():
    from sklearn.metrics import f1_score

    from structfs import StructSVM
    from structfs.metrics import get_scorer

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 4))
    names = np.where(X[:, 0] + 0.5 * rng.normal(size=200) > 0.8, "spam", "ham")    # classes_: ham, spam
    model = StructSVM(C=10.0).fit(X, names)
    predicted = model.predict(X)
    assert get_scorer("f1")(model, X, names) == pytest.approx(f1_score(names, predicted, pos_label="spam"))
    assert get_scorer("f1", pos_label="ham")(model, X, names) == pytest.approx(
        f1_score(names, predicted, pos_label="ham"))
    with pytest.raises(ValueError, match="pos_label='eggs' is not a class"):
        get_scorer("f1", pos_label="eggs")(model, X, names)
