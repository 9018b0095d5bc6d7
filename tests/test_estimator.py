"""StructSVM as a scikit-learn estimator: API checks, composition, input handling, bad input."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.model_selection import GridSearchCV
from sklearn.multiclass import OneVsRestClassifier
from sklearn.pipeline import Pipeline
from sklearn.utils.estimator_checks import check_estimator

from structfs import OneVsRestStructSVM, StructSVM
from structfs.losses import ContingencyLoss, get_loss
from structfs.metrics import f1, get_scorer


def _data(n=80, m=6, seed=0, pos=0.3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, m))
    w = np.zeros(m)
    w[:2] = [2.0, -1.5]
    y = np.where(X @ w + 0.3 * rng.normal(size=n) > np.quantile(X @ w, 1 - pos), 1, 0)
    return X, y


@pytest.mark.slow
def test_check_estimator():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        check_estimator(StructSVM(C=10.0, max_iter=200))


def test_check_estimator_one_vs_rest():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        check_estimator(OneVsRestStructSVM(StructSVM(C=10.0, max_iter=200)))


def test_fitted_attributes_follow_the_contract():
    X, y = _data()
    clf = StructSVM(loss="f1", C=100.0, bias=2.0).fit(X, y)
    assert clf.coef_.shape == (1, X.shape[1]) and clf.intercept_.shape == (1,)
    assert list(clf.classes_) == [0, 1]
    assert np.array_equal(clf.selected_features_, np.flatnonzero(clf.coef_[0]))
    assert clf.n_iter_ == len(clf.history_) >= 1
    assert clf.gap_ == pytest.approx(clf.objective_ - clf.lower_bound_) and clf.gap_ <= 100.0 * 0.01 + 1e-9
    assert np.allclose(clf.decision_function(X), X @ clf.coef_[0] + clf.intercept_[0])
    assert set(clf.history_[0]) >= {"outer", "objective", "lower_bound", "gap", "planes", "features", "seconds"}
    assert f1(y, clf.decision_function(X)) > 80


def test_labels_of_any_two_classes_positive_is_classes_1():
    X, y = _data()
    names = np.where(y == 1, "spam", "ham")
    a = StructSVM(C=100.0).fit(X, y)
    b = StructSVM(C=100.0).fit(X, names)
    assert list(b.classes_) == ["ham", "spam"]
    assert np.allclose(a.coef_, b.coef_)
    assert set(b.predict(X)) <= {"ham", "spam"}


def test_budget_limits_features_and_budget_ge_m_is_unbudgeted():
    X, y = _data(m=30)
    small = StructSVM(C=100.0, budget=2).fit(X, y)
    assert 1 <= len(small.selected_features_) <= 30
    assert set(small.selected_features_[:2]) <= set(range(30))
    assert {0, 1} <= set(np.argsort(-np.abs(small.coef_[0]))[:3])     # informative features found
    full = StructSVM(C=100.0, budget=None).fit(X, y)
    same = StructSVM(C=100.0, budget=30).fit(X, y)
    assert np.allclose(full.coef_, same.coef_)


def test_sparse_formats_and_float32_are_accepted_without_densifying():
    X, y = _data(m=10)
    ref = StructSVM(C=100.0).fit(X, y)
    for fmt in ("csr", "csc", "coo", "lil"):
        Xs = sp.csr_matrix(X).asformat(fmt)
        clf = StructSVM(C=100.0).fit(Xs, y)
        # Same problem, another summation order. The objective is 1-strongly convex, so
        # 1/2 ||w - w*||^2 <= gap and two answers differ by at most sqrt(2 gap_a) + sqrt(2 gap_b).
        assert _close_within_gaps(clf, ref)
        assert abs(clf.objective_ - ref.objective_) <= max(clf.gap_, ref.gap_)
    clf = StructSVM(C=100.0).fit(X.astype(np.float32), y)
    assert _close_within_gaps(clf, ref)
    assert abs(clf.objective_ - ref.objective_) <= max(clf.gap_, ref.gap_) * 1.001


def _close_within_gaps(a, b):
    diff = np.linalg.norm(np.append(a.coef_[0] - b.coef_[0], a.intercept_ - b.intercept_))
    return diff <= np.sqrt(2 * a.gap_) + np.sqrt(2 * b.gap_) + 1e-9


@pytest.mark.parametrize("loss", ["error", "f1", "prbep", "auc", "rec@k", "ap", "pauc"])
def test_every_loss_trains(loss):
    X, y = _data(seed=2)
    clf = StructSVM(loss=loss, C=100.0).fit(X, y)
    assert clf.loss_.score(np.where(y == 1, 1, -1), clf.decision_function(X)) > 70


def test_loss_objects_and_params():
    X, y = _data(seed=3)
    a = StructSVM(loss="fbeta", loss_params={"beta": 2.0}, C=100.0).fit(X, y)
    b = StructSVM(loss=get_loss("fbeta", beta=2.0), C=100.0).fit(X, y)
    assert np.allclose(a.coef_, b.coef_)
    custom = ContingencyLoss(lambda a_, b_, c_, d_: 100.0 * (b_ + 2 * c_) / (a_ + b_ + c_ + d_))
    StructSVM(loss=custom, C=10.0).fit(X, y)


def test_pipeline_gridsearch_and_one_vs_rest():
    texts = ["cheap pills buy now", "meeting at noon", "buy cheap watches", "lunch at noon today",
             "win money now", "project meeting notes", "cheap money fast", "notes from lunch"] * 4
    labels = np.array([1, 0, 1, 0, 1, 0, 1, 0] * 4)
    pipe = Pipeline([("tfidf", TfidfVectorizer()), ("clf", StructSVM(C=100.0))]).fit(texts, labels)
    assert (pipe.predict(texts) == labels).mean() == 1.0
    X, y = _data(n=120, seed=4)
    search = GridSearchCV(StructSVM(), {"C": [1.0, 100.0]}, scoring=get_scorer("f1"), cv=3).fit(X, y)
    assert search.best_params_["C"] in (1.0, 100.0)
    rng = np.random.default_rng(0)
    X3 = rng.normal(size=(90, 4)) + np.repeat(np.eye(3, 4) * 3, 30, axis=0)
    y3 = np.repeat([0, 1, 2], 30)
    ovr = OneVsRestClassifier(StructSVM(C=100.0), n_jobs=2).fit(X3, y3)
    assert (ovr.predict(X3) == y3).mean() > 0.9


def _raises(match, **kw):
    X, y = _data()
    with pytest.raises(ValueError, match=match):
        StructSVM(**kw).fit(X, y)


def test_bad_parameters_raise_before_work():
    _raises("'C' parameter", C=0)
    _raises("'C' parameter", C=-1.0)
    _raises("budget", budget=0)
    _raises("budget", budget=2.5)
    _raises("tol", tol=0)
    _raises("Unknown loss", loss="f2")
    _raises("beta", loss="fbeta", loss_params={"beta": -1})


def test_bad_data_raise_before_work():
    X, y = _data()
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        StructSVM().fit(Xn, y)
    Xi = X.copy()
    Xi[1, 1] = np.inf
    with pytest.raises(ValueError, match="infinity|inf"):
        StructSVM().fit(Xi, y)
    with pytest.raises(ValueError, match="one class only"):
        StructSVM().fit(X, np.ones(len(y)))
    with pytest.raises(ValueError, match="OneVsRestClassifier"):
        StructSVM().fit(X, np.arange(len(y)) % 3)
    clf = StructSVM(C=10.0).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        clf.decision_function(X[:, :3])


def test_refit_keeps_the_selection_and_reports_the_budgeted_objective():
    from structfs.solvers import primal_objective

    X, y = _data(m=30, seed=5)
    base = StructSVM(C=100.0, budget=2).fit(X, y)
    refit = StructSVM(C=100.0, budget=2, refit=1000.0).fit(X, y)
    assert set(refit.selected_features_) <= set(base.selected_features_)
    assert refit.objective_ >= base.lower_bound_           # a primal value of the same problem
    y_pm = np.where(y == 1, 1.0, -1.0)
    s = refit.decision_function(X)
    coef, delta = refit.loss_.most_violated(y_pm, s)
    expected = primal_objective(refit.coef_[0], refit.intercept_[0], max(0.0, delta - coef @ s), 100.0, 2)
    assert refit.objective_ == pytest.approx(expected)
    with pytest.raises(ValueError, match="refit"):
        StructSVM(budget=2, refit=0).fit(X, y)


def test_master_solvers_agree_on_a_budgeted_problem():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(80, 30))
    y = np.where(X[:, :4].sum(axis=1) + 0.3 * rng.normal(size=80) > 0, 1, 0)
    fits = [StructSVM(C=50.0, budget=3, tol=1e-4, master_solver=m).fit(X, y) for m in ("ipm", "ecos")]
    assert fits[0].objective_ == pytest.approx(fits[1].objective_, rel=1e-3)
    with pytest.raises(ValueError, match="master_solver"):
        StructSVM(master_solver="gurobi").fit(X, y)


def test_max_features_is_a_hard_cap_reached_by_feature_generation():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(120, 40))
    y = np.where(X[:, :12] @ rng.uniform(0.5, 1.5, 12) + 0.3 * rng.normal(size=120) > 0, 1, 0)
    free = StructSVM(C=100.0, budget=5, max_outer=100).fit(X, y)
    assert len(free.selected_features_) > 7                 # the cap below binds
    for budget, cap in [(1, 4), (5, 7), (5, 10), (50, 6)]:
        clf = StructSVM(C=100.0, budget=budget, max_outer=100, max_features=cap).fit(X, y)
        assert len(clf.selected_features_) == cap           # filled, never exceeded (no truncation)
        if budget == 5:
            assert clf.objective_ >= free.lower_bound_ - 1e-9   # a primal value of the same problem
        assert clf.gap_ <= clf.objective_
    with pytest.raises(ValueError, match="max_features needs a budget"):
        StructSVM(max_features=3).fit(X, y)
    with pytest.raises(ValueError, match="max_features"):
        StructSVM(budget=2, max_features=0).fit(X, y)
    same = StructSVM(C=100.0, budget=5, max_outer=100, max_features=40).fit(X, y)   # cap >= m: no cap
    assert np.allclose(same.coef_, free.coef_)


def test_fit_cap_trims_the_last_group_to_its_most_violated_new_columns():
    from structfs.solvers.feature_generation import _fit_cap

    c = np.array([0.0, 5.0, -4.0, 3.0, 0.1, -2.0, 1.0])
    top = np.array([1, 2, 3, 5])
    assert _fit_cap(top, c[top], np.array([0, 4]), 10)[1] is False            # room for all four
    group, full = _fit_cap(top, c[top], np.array([2, 4]), 4)                   # room for 2 of {1, 3, 5}
    assert full and group.tolist() == [1, 2, 3]                           # 2 kept (cached), 1 and 3 new
    group, full = _fit_cap(top, c[top], np.array([0, 4]), 6)                   # exactly fills the cap
    assert full and group.tolist() == [1, 2, 3, 5]
    # with groups (columns 0-2, 3-4, 5-6) whole groups only: room for 2 new columns keeps the cached
    # group {3, 4} and the best new group that fits whole, {5, 6}, not two columns of the best, {0, 1, 2}
    groups = np.array([0, 0, 0, 1, 1, 2, 2])
    c = np.array([5.0, 4.0, 3.0, 1.0, 1.0, 0.5, 0.2])
    top = np.arange(7)
    group, full = _fit_cap(top, c[top], np.array([3, 4]), 4, groups)
    assert full and group.tolist() == [3, 4, 5, 6]
    assert _fit_cap(top, c[top], np.array([3, 4]), 4)[0].tolist() == [0, 1, 3, 4]     # by columns


def test_a_cap_with_groups_never_cuts_a_group_in_part():
    """StructSVM(groups=..., max_features=k): the selected columns are whole groups, at most k of them."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 30))
    y = (X[:, :6].sum(axis=1) + 0.5 * rng.normal(size=200) > 0).astype(int)
    groups = np.repeat(np.arange(10), 3)
    model = StructSVM(C=10.0, budget=2, groups=groups, max_outer=20, max_features=10).fit(X, y)
    chosen = np.unique(groups[model.selected_features_], return_counts=True)[1]
    assert model.selected_features_.shape[0] <= 10 and np.all(chosen == 3)


@pytest.mark.parametrize("loss", ["error", "f1", "fbeta", "prec@k", "rec@k", "prbep", "auc", "ap", "pauc"])
def test_every_builtin_loss_and_its_models_pickle(loss):
    import pickle

    from structfs import OneVsRestStructSVM, StructSVMCV

    X, y = _data()
    for est in (StructSVM(loss=loss, C=10.0).fit(X, y),
                OneVsRestStructSVM(estimator=StructSVM(loss=loss, C=10.0)).fit(X, np.arange(len(y)) % 3),
                StructSVMCV(loss=loss, Cs=[10.0], budgets=[2], max_outer=2).fit(X, y)):
        back = pickle.loads(pickle.dumps(est))
        assert np.array_equal(back.predict(X), est.predict(X))


def test_unclear_situations_get_clear_errors():
    from sklearn.exceptions import NotFittedError

    from structfs import OneVsRestStructSVM, save_model

    X, y = _data()
    for unfitted in (StructSVM(), OneVsRestStructSVM()):
        with pytest.raises(NotFittedError):
            save_model(unfitted, "never-written.json")
    with pytest.raises(ValueError, match="verbose"):
        StructSVM(verbose="x").fit(X, y)
    with pytest.raises(ValueError, match="refit.*budget"):
        StructSVM(refit=100.0).fit(X, y)
    with pytest.raises(ValueError, match="infinite"):
        StructSVM(loss=ContingencyLoss(lambda a, b, c, d: np.where(a == 0, np.inf, 100.0 * b / (a + b)))).fit(X, y)


def test_sparse_row_product_equals_the_dense_one_and_densify_sparsify_round_trip():
    import scipy.sparse as sp

    from structfs.estimators import _dot_sparse_row

    rng = np.random.default_rng(4)
    X = sp.random(30, 50, density=0.2, random_state=1, format="csr")
    w = rng.normal(size=50) * (rng.random(50) < 0.3)
    for Xf in (X, X.tocsc(), X.tocoo(), X.toarray()):
        assert np.allclose(_dot_sparse_row(Xf, sp.csr_matrix(w)), X @ w)
    assert np.array_equal(_dot_sparse_row(X, sp.csr_matrix((1, 50))), np.zeros(30))
    y = np.where(X @ w > 0, 1, -1)
    y[:2] = [1, -1]
    est = StructSVM(C=10.0).fit(X, y)
    dense = est.decision_function(X)
    assert sp.issparse(est.sparsify().coef_) and np.allclose(est.decision_function(X), dense)
    assert isinstance(est.densify().coef_, np.ndarray) and np.allclose(est.decision_function(X), dense)


def test_one_vs_rest_takes_its_estimator_and_deprecates_the_mirrored_parameters(tmp_path):

    from structfs import OneVsRestStructSVM, load_model, save_model

    X, y = _data()
    labels = np.arange(len(y)) % 3
    new = OneVsRestStructSVM(estimator=StructSVM(C=10.0, budget=2)).fit(X, labels)
    with pytest.warns(FutureWarning, match="estimator=StructSVM"):
        old = OneVsRestStructSVM(C=10.0, budget=2).fit(X, labels)
    assert np.array_equal(new.decision_function(X), old.decision_function(X))
    with pytest.raises(ValueError, match="set C on the estimator"):
        OneVsRestStructSVM(estimator=StructSVM(), C=10.0).fit(X, labels)
    # both forms round-trip exactly, the older one as written before (StructSVM's parameters on the
    # one-vs-rest model itself)
    for model in (new, old):
        save_model(model, tmp_path / "m.json")
        loaded = load_model(tmp_path / "m.json")
        assert repr(loaded.get_params(deep=True)) == repr(model.get_params(deep=True))
        assert np.array_equal(loaded.decision_function(X), model.decision_function(X))


def test_groups_count_the_budget_and_round_trip_through_model_files(tmp_path):
    from structfs import load_model, save_model

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 12))
    y = (X[:, 4] + X[:, 5] + 0.3 * rng.normal(size=200) > 0).astype(int)
    groups = np.repeat([10, 20, 30, 40], 3)
    model = StructSVM(C=100.0, budget=1, groups=groups, max_outer=2).fit(X, y)
    assert model.selected_groups_.tolist() == [10, 20]                 # two groups of one, whole
    assert model.selected_features_.tolist() == [0, 1, 2, 3, 4, 5]
    save_model(model, tmp_path / "m.json")
    loaded = load_model(tmp_path / "m.json")
    assert repr(loaded.get_params()) == repr(model.get_params())       # the array comes back as it was
    assert np.array_equal(loaded.selected_groups_, model.selected_groups_)
    assert np.allclose(loaded.decision_function(X), model.decision_function(X))
    assert not hasattr(StructSVM(C=100.0, budget=1).fit(X, y), "selected_groups_")


@pytest.mark.parametrize("groups,match", [(np.arange(5), "each of the 12"), ([0.5] * 12, "integer"),
                                          ([-1] * 12, "non-negative"), (["a"] * 12, "integer"),
                                          ([np.nan] * 12, "integer"), ([], "each of the 12")])
def test_bad_groups_raise_before_work(groups, match, monkeypatch):
    from structfs.solvers import Solver

    monkeypatch.setattr(Solver, "path", lambda *a, **k: pytest.fail("a fit started before the check"))
    X, y = np.random.default_rng(0).normal(size=(20, 12)), np.arange(20) % 2
    with pytest.raises(ValueError, match=match):
        StructSVM(budget=1, groups=groups).fit(X, y)
    with pytest.raises(ValueError, match="groups needs a budget"):
        StructSVM(groups=np.zeros(12, dtype=int)).fit(X, y)


def test_expansion_groups_find_each_columns_input_feature():
    from sklearn.kernel_approximation import AdditiveChi2Sampler
    from sklearn.preprocessing import OneHotEncoder, PolynomialFeatures, SplineTransformer

    from structfs.preprocessing import expansion_groups

    X = np.random.default_rng(0).random((30, 3))
    assert expansion_groups(AdditiveChi2Sampler(sample_steps=2).fit(X), X).tolist() == [0, 1, 2] * 3
    assert expansion_groups(SplineTransformer(n_knots=5).fit(X), X).tolist() == [0] * 7 + [1] * 7 + [2] * 7
    codes = np.random.default_rng(0).integers(0, 3, (30, 2))
    assert expansion_groups(OneHotEncoder().fit(codes), codes).tolist() == [0, 0, 0, 1, 1, 1]
    with pytest.raises(ValueError, match="not additive"):
        expansion_groups(PolynomialFeatures(2).fit(X), X)


def test_warnings_point_at_the_callers_line():
    """A fit's warnings name the line that called fit (through the validation and state-keeping
    wrappers), as Python's warnings should."""
    from structfs import OneVsRestStructSVM

    X, y = _data()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        StructSVM(C=1000.0, max_iter=2).fit(X, y)                        # runs out of planes
        StructSVM(C=1e-9).fit(X, y)                                       # the zero model
        OneVsRestStructSVM(C=10.0).fit(X, y)                               # deprecated form
    kinds = {type(w.message).__name__: w.filename for w in caught}
    assert {"ConvergenceWarning", "NoFeaturesWarning", "FutureWarning"} <= set(kinds)
    assert all(filename == __file__ for filename in kinds.values()), kinds


def test_pos_label_chooses_the_class_the_loss_measures():
    """With string labels where the rare class sorts first, loss="f1" measures the class pos_label names;
    the fitted model keeps scikit-learn's orientation (decision_function > 0 predicts classes_[1])."""
    from sklearn.metrics import f1_score

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 5))
    rare = X[:, 0] + 0.3 * rng.normal(size=300) > 1.2
    y = np.where(rare, "alert", "normal")                       # "alert" sorts first: classes_[0]
    model = StructSVM(loss="f1", C=10.0, pos_label="alert").fit(X, y)
    assert model.classes_.tolist() == ["alert", "normal"]
    flipped = StructSVM(loss="f1", C=10.0).fit(X, np.where(rare, "zz-alert", "normal"))   # positive sorts last
    assert np.allclose(model.coef_, -flipped.coef_) and np.allclose(model.intercept_, -flipped.intercept_)
    assert f1_score(y, model.predict(X), pos_label="alert") > 0.5
    with pytest.raises(ValueError, match="pos_label='spam' is not a class of y.*alert"):
        StructSVM(pos_label="spam").fit(X, y)


def test_score_is_the_loss_measure_for_the_positive_class():
    from sklearn.metrics import f1_score, roc_auc_score

    from structfs import OneVsRestStructSVM
    X, y = make_classification(300, 10, weights=[0.8], random_state=0)
    model = StructSVM(loss="f1", C=10.0).fit(X, y)
    assert model.score(X, y) == pytest.approx(f1_score(y, model.predict(X)))
    flipped = StructSVM(loss="f1", C=10.0, pos_label=0).fit(X, y)
    assert flipped.score(X, y) == pytest.approx(f1_score(y, flipped.predict(X), pos_label=0))
    names = np.array(["spam", "ham"])[y]
    ranking = StructSVM(loss="auc", C=10.0, pos_label="spam").fit(X, names)
    sign = 1.0 if ranking.classes_[1] == "spam" else -1.0
    assert ranking.score(X, names) == pytest.approx(roc_auc_score(names == "spam", sign * ranking.decision_function(X)))
    weights = np.arange(300) % 3                    # weighted F1, as scikit-learn weighs it
    assert model.score(X, y, sample_weight=weights) == pytest.approx(
        f1_score(y, model.predict(X), sample_weight=weights))
    three = np.digitize(X[:, 0], [-0.5, 0.5])
    ovr = OneVsRestStructSVM(StructSVM(loss="f1", C=10.0)).fit(X, three)
    assert ovr.score(X, three) == pytest.approx(np.mean(
        [f1_score(three == c, est.predict(X) == 1) for est, c in zip(ovr.estimators_, ovr.classes_)]))
    assert OneVsRestStructSVM(StructSVM(loss="f1", C=10.0)).fit(X, y).score(X, y) == pytest.approx(model.score(X, y))
