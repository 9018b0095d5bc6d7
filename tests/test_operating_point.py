"""Operating-point losses (prec@rec, rec@prec, tpr@fpr): oracles and measures against brute force over
every labeling and every cut, the learned objective against the exact optimum, and the estimators and
command line that use them."""
import itertools
import math
import warnings

import cvxpy as cp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import precision_recall_curve, roc_curve

from structfs import StructSVM, StructSVMCV
from structfs.losses import get_loss
from structfs.metrics import get_scorer, precision_at_recall, recall_at_precision, tpr_at_fpr
from structfs.solvers import solve
from structfs.testing import check_loss

CASES = [("prec@rec", "recall", 0.5), ("prec@rec", "recall", 0.9), ("prec@rec", "recall", 1.0),
         ("rec@prec", "precision", 0.3), ("rec@prec", "precision", 0.75), ("rec@prec", "precision", 1.0),
         ("tpr@fpr", "fpr", 0.0), ("tpr@fpr", "fpr", 0.2), ("tpr@fpr", "fpr", 1.0)]


def admissible(name, value, a, b, P, N):
    """The constraint, written from its definition in exact rational arithmetic."""
    if name == "prec@rec":
        return a + b >= 1 and a >= math.ceil(round(value * P, 9))
    if name == "rec@prec":
        return a + b >= 1 and a >= round(value * (a + b), 9)
    return b <= math.floor(round(value * N, 9))


def measure_loss(name, a, b, P):
    return 100.0 * b / (a + b) if name == "prec@rec" else 100.0 * (1 - a / P)


def brute_force(name, value, y, s):
    """max over admissible labelings of Delta - coef . s, coef = (50/n)(y - ybar)."""
    n = y.shape[0]
    P, N = int(np.sum(y > 0)), int(np.sum(y < 0))
    best = -np.inf
    for bits in itertools.product((-1.0, 1.0), repeat=n):
        yb = np.array(bits)
        a, b = int(np.sum((y > 0) & (yb > 0))), int(np.sum((y < 0) & (yb > 0)))
        if admissible(name, value, a, b, P, N):
            best = max(best, measure_loss(name, a, b, P) - (50.0 / n) * (y - yb) @ s)
    return best


def problems(seed, count, n_max=8):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        n = int(rng.integers(1, n_max + 1))
        y = np.where(rng.random(n) < rng.uniform(0.2, 0.8), 1.0, -1.0)
        y[rng.integers(n)] = 1.0
        s = rng.normal(size=n) * 10 ** rng.uniform(-1, 2) if rng.random() < 0.5 else \
            rng.integers(-2, 3, size=n) * rng.choice([0.5, 10.0])                 # ties, some at the margin
        yield y, s


@pytest.mark.parametrize("name,option,value", CASES)
def test_oracle_attains_the_brute_force_maximum(name, option, value):
    loss = get_loss(name, **{option: value})
    for y, s in problems(hash((name, value)) % 1000, 60):
        coef, delta = loss.most_violated(y, s)
        P, N = int(np.sum(y > 0)), int(np.sum(y < 0))
        y_bar = y - coef * y.shape[0] / 50.0                       # the labeling the oracle returns
        a, b = int(np.sum((y > 0) & (y_bar > 0))), int(np.sum((y < 0) & (y_bar > 0)))
        assert admissible(name, value, a, b, P, N)
        assert delta == pytest.approx(measure_loss(name, a, b, P))
        assert delta - coef @ s == pytest.approx(brute_force(name, value, y, s), abs=1e-9)


@pytest.mark.parametrize("name,option,value", CASES[1::3] + CASES[2::3])
def test_oracle_equals_the_grid_search_on_larger_problems(name, option, value):
    loss = get_loss(name, **{option: value})
    for y, s in problems(7, 80, n_max=60):
        coef, delta = loss.oracle(y, s)
        grid_coef, grid_delta = loss._grid_oracle(y, s)
        assert delta - coef @ s == pytest.approx(grid_delta - grid_coef @ s, abs=1e-9)


@pytest.mark.parametrize("name,option,value", CASES)
def test_check_loss_verifies_them(name, option, value):
    assert check_loss(get_loss(name, **{option: value})) > 0


def cuts_brute_force(name, value, y, s):
    """The measure over every threshold between distinct scores (and above all of them)."""
    P, N = int(np.sum(y > 0)), int(np.sum(y < 0))
    best = 0.0
    for t in np.concatenate(([np.inf], np.unique(s))):
        pred = s >= t
        a, b = int(np.sum(pred & (y > 0))), int(np.sum(pred & (y < 0)))
        if admissible(name, value, a, b, P, N) and (a + b >= 1 or name == "tpr@fpr"):
            best = max(best, 100.0 - measure_loss(name, a, b, P))
    return best


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(-3, 3)), min_size=1, max_size=30),
       st.sampled_from(CASES), st.randoms(use_true_random=False))
def test_measures_are_the_best_admissible_cut_and_ignore_tie_order(pairs, case, rnd):
    name, option, value = case
    y = np.array([1.0 if p else -1.0 for p, _ in pairs])
    if not (y > 0).any():
        y[0] = 1.0
    s = np.array([float(v) for _, v in pairs])
    loss = get_loss(name, **{option: value})
    expected = cuts_brute_force(name, value, y, s)
    assert loss.score(y, s) == pytest.approx(expected)
    order = list(range(len(y)))
    rnd.shuffle(order)
    assert loss.score(y[order], s[order]) == pytest.approx(expected)
    # 100 - Delta at the best cut: the threshold StructSVMCV chooses reads the same operating point
    scorer_value = get_scorer(name, **{option: value}).params
    assert scorer_value == {option: value}


def test_measures_agree_with_scikit_learn_curves():
    rng = np.random.default_rng(3)
    y = (rng.random(500) < 0.1).astype(int)
    s = rng.normal(size=500) + 1.5 * y
    precision, recall, _ = precision_recall_curve(y, s)
    assert precision_at_recall(y, s, 0.8) == pytest.approx(100 * precision[recall >= 0.8].max())
    assert recall_at_precision(y, s, 0.5) == pytest.approx(100 * recall[precision >= 0.5].max())
    fpr, tpr, _ = roc_curve(y, s, drop_intermediate=False)
    assert tpr_at_fpr(y, s, 0.05) == pytest.approx(100 * tpr[fpr <= 0.05].max())


def exact_objective(X, y, name, value, C):
    n = X.shape[0]
    Xt = np.hstack([X, np.ones((n, 1))])
    P, N = int(np.sum(y > 0)), int(np.sum(y < 0))
    rows, deltas = [], []
    for bits in itertools.product((-1.0, 1.0), repeat=n):
        yb = np.array(bits)
        a, b = int(np.sum((y > 0) & (yb > 0))), int(np.sum((y < 0) & (yb > 0)))
        if admissible(name, value, a, b, P, N):
            rows.append((50.0 / n) * (y - yb) @ Xt)
            deltas.append(measure_loss(name, a, b, P))
    w, xi = cp.Variable(Xt.shape[1]), cp.Variable(nonneg=True)
    problem = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(w) + C * xi), [np.array(rows) @ w >= np.array(deltas) - xi])
    problem.solve(solver=cp.CLARABEL)
    return problem.value


@pytest.mark.parametrize("name,option,value", [CASES[1], CASES[4], CASES[7]])
def test_objective_is_the_exact_optimum_within_the_certificate(name, option, value):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(8, 3))
    y = np.array([1.0, -1, 1, -1, -1, 1, -1, -1])
    optimum = exact_objective(X, y, name, value, 10.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = solve(X, y, get_loss(name, **{option: value}), 10.0, tol=1e-6)
    assert result.lower_bound <= optimum * (1 + 1e-6) + 1e-9
    assert optimum <= result.objective * (1 + 1e-6)
    assert result.objective - optimum <= result.objective - result.lower_bound + 1e-6 * optimum


@pytest.mark.parametrize("name,option,bad", [("prec@rec", "recall", 0.0), ("prec@rec", "recall", 1.5),
                                             ("rec@prec", "precision", -0.1), ("rec@prec", "precision", "high"),
                                             ("tpr@fpr", "fpr", 1.01), ("tpr@fpr", "fpr", float("nan"))])
def test_bad_constraints_are_refused_naming_them(name, option, bad):
    with pytest.raises(ValueError, match=option):
        get_loss(name, **{option: bad})
    with pytest.raises(ValueError, match=option):
        StructSVM(loss=name, loss_params={option: bad}).fit(np.eye(4), [0, 1, 0, 1])


def test_no_positive_is_refused():
    with pytest.raises(ValueError, match="positive"):
        get_loss("prec@rec").score(np.array([-1.0, -1.0]), np.array([0.1, 0.2]))


def test_cross_validated_model_meets_the_recall_it_was_asked_for():
    """StructSVMCV cuts at the best out-of-fold operating point: on held-out data the recall asked for is
    met up to the sampling noise of a few dozen positives."""
    from sklearn.datasets import make_classification

    X, y = make_classification(1500, n_features=20, n_informative=5, weights=[0.85], class_sep=0.8, random_state=0)
    model = StructSVMCV(loss="prec@rec", loss_params={"recall": 0.8}, cv=3).fit(X[:1000], y[:1000])
    predicted = model.predict(X[1000:])
    recall = np.sum(predicted[y[1000:] == 1] == 1) / np.sum(y[1000:] == 1)
    assert recall >= 0.7
    assert 0.0 <= model.score(X[1000:], y[1000:]) <= 1.0


def test_command_line_trains_and_reports_operating_points(tmp_path, capsys):
    from sklearn.datasets import dump_svmlight_file, load_breast_cancer
    from sklearn.preprocessing import StandardScaler

    from structfs.cli import main

    X, y = load_breast_cancer(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    dump_svmlight_file(X[:400], 2 * y[:400] - 1, str(tmp_path / "train"), zero_based=False)
    dump_svmlight_file(X[400:], 2 * y[400:] - 1, str(tmp_path / "test"), zero_based=False)
    assert main(["train", "-l", "tpr@fpr", "--fpr", "0.05", "-c", "10", "-v", "0",
                 str(tmp_path / "train"), str(tmp_path / "model")]) == 0
    assert main(["evaluate", str(tmp_path / "test"), str(tmp_path / "model"), "--recall", "0.8"]) == 0
    printed = capsys.readouterr().out
    assert "Prec@Rec" in printed and "at recall >= 0.8" in printed and "false-positive rate <= 0.01" in printed
    assert main(["train", "-l", "rec@prec", "--precision", "0", str(tmp_path / "train"), str(tmp_path / "m2")]) == 1
    assert "--precision must be in (0, 1]" in capsys.readouterr().err


def test_search_chooses_the_training_loss_by_the_operating_point():
    """StructSVMCV with an operating-point loss also searches with F1 as the training loss, both scored
    by the operating point's measure: the returned model is the better of the two searches."""
    from sklearn.datasets import make_classification

    X, y = make_classification(900, n_features=15, n_informative=4, weights=[0.8], random_state=1)
    model = StructSVMCV(loss="tpr@fpr", loss_params={"fpr": 0.1}, cv=3).fit(X, y)
    own = StructSVMCV(loss="tpr@fpr", loss_params={"fpr": 0.1}, cv=3, scoring=get_scorer("tpr@fpr", fpr=0.1)).fit(X, y)
    assert model.loss_.name in ("tpr@fpr", "f1")
    assert model.best_score_ >= own.best_score_ - 1e-12


def test_the_surrogate_losss_model_is_cut_at_the_operating_point_too():
    """Where the F1-trained search wins (its search is scored by the operating point through a custom
    scoring), the returned model is still cut at the out-of-fold operating point, which needs that
    search to keep its folds' decision values."""
    from sklearn.datasets import make_classification

    X, y = make_classification(1500, n_features=20, n_informative=5, weights=[0.85], class_sep=0.8, random_state=0)
    model = StructSVMCV(loss="prec@rec", loss_params={"recall": 0.9}, cv=3).fit(X[:1000], y[:1000])
    assert model.loss_.name == "f1" and model.threshold_ < 0        # the cut moved down, toward recall 0.9
    predicted = model.predict(X[1000:])
    assert np.sum(predicted[y[1000:] == 1] == 1) / np.sum(y[1000:] == 1) >= 0.8
