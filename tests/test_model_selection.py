"""StructSVMCV: the path it scores is the solver's, its choice is refitted, bad input fails first."""
import warnings
from dataclasses import FrozenInstanceError, replace

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import StratifiedKFold
from sklearn.multiclass import OneVsRestClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import check_estimator

from structfs import OneVsRestStructSVM, StructSVM, StructSVMCV
from structfs.losses import get_loss
from structfs.metrics import StructScorer, f1
from structfs.model_selection._path import Fold, PathScoring, fold_path
from structfs.solvers import BSupport, Solver, SquaredL2, refit_path, solve


def _data(n=120, m=30, informative=4, seed=0, pos=0.3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, m))
    w = np.zeros(m)
    w[:informative] = rng.uniform(1.0, 2.0, informative)
    z = X @ w + 0.5 * rng.normal(size=n)
    return X, np.where(z > np.quantile(z, 1 - pos), 1, 0)


def test_path_points_are_models_with_growing_selections_and_end_at_the_fit():
    X, y = _data()
    y_pm = np.where(y == 1, 1.0, -1.0)
    res = solve(X, y_pm, get_loss("f1"), 100.0, budget=2, max_outer=6)
    assert len(res.path) == res.n_outer >= 2
    sizes = [len(cols) for cols, _, _ in res.path]
    assert sizes == sorted(sizes)
    cols, w, w_b = res.path[-1]
    full = np.zeros(X.shape[1])
    full[cols] = w
    assert np.allclose(full, res.w) and w_b == res.w_b          # the last point is the returned model


def test_refit_path_equals_independent_unbudgeted_fits():
    """Sharing planes along the path changes nothing but the cost: each refit reaches the optimum of
    the unbudgeted problem on its columns (within the stopping tolerance)."""
    X, y = _data(seed=1)
    y_pm = np.where(y == 1, 1.0, -1.0)
    loss, C, tol = get_loss("f1"), 50.0, 1e-4
    sets = [np.array([0, 1]), np.array([0, 1, 2, 7]), np.array([0, 1, 2, 7]), np.arange(10)]
    shared = refit_path(X, y_pm, loss, C, sets, 1.0, Solver.default(tol=tol))
    for cols, (got_cols, w, w_b) in zip(sets, shared):
        alone = solve(X[:, cols], y_pm, loss, C, budget=None, tol=tol)
        assert np.array_equal(got_cols, cols)
        assert abs(_objective(X[:, cols], y_pm, loss, C, w, w_b) - alone.objective) <= 2 * C * tol


def _objective(X, y, loss, C, w, w_b):
    s = X @ w + w_b
    coef, delta = loss.most_violated(y, s)
    return 0.5 * (w @ w + w_b * w_b) + C * max(0.0, delta - coef @ s)


def test_fold_path_scores_each_point_on_the_validation_part():
    X, y = _data(seed=2)
    classes = np.array([0, 1])
    train, test = np.arange(80), np.arange(80, 120)
    from structfs.model_selection._scoring import _LossScorer

    scorer = _LossScorer(get_loss("f1"))
    scoring = PathScoring(classes, get_loss("f1"), scorer, Solver.default(max_outer=5), debias=False)
    scores, n_features, _, certified, _ = fold_path(X, y, Fold(train, test), 100.0, 2, scoring)
    y_pm = np.where(y[train] == 1, 1.0, -1.0)
    points = list(Solver.default(max_outer=5).path(X[train], y_pm, get_loss("f1"), 100.0, BSupport(2), 1.0))
    assert certified and len(scores) == len(points)
    for score, (cols, w, w_b) in zip(scores, points):       # every point as generated, the last unpolished
        assert score == pytest.approx(f1(y[test], X[test][:, cols] @ w + w_b) / 100)


def test_a_path_points_scores_are_those_of_the_validated_decision_function():
    from structfs.estimators import LinearBinaryMixin, LinearModel

    rng = np.random.default_rng(0)
    w = rng.standard_normal(6) * (rng.random(6) < 0.5)
    model = LinearModel.from_weights(w, 0.3, np.array([0, 1]))
    X = rng.standard_normal((20, 6))
    validated = LinearBinaryMixin.decision_function
    for data in (X, sp.csr_matrix(X), sp.csc_matrix(X), X.astype(np.float32), X.tolist()):
        assert np.allclose(model.decision_function(data), validated(model, data))
    with pytest.raises(ValueError, match="features"):       # the wrong width still fails as scikit-learn's
        model.decision_function(X[:, :5])


def test_without_polish_the_path_is_the_same_but_its_last_point_and_costs_fewer_planes():
    X, y = _data(seed=2)
    y_pm = np.where(y == 1, 1.0, -1.0)
    path = Solver.default(max_outer=5, tol=1e-4).path(X, y_pm, get_loss("f1"), 100.0, BSupport(2), 1.0)
    coarse = [(c.copy(), w.copy(), b) for c, w, b in path]
    coarse_planes, coarse_objective = len(path.history), min(r["objective"] for r in path.history)
    assert path.certified()
    polished = path.result()
    assert len(polished.path) == len(coarse)
    for (c1, w1, b1), (c2, w2, b2) in zip(polished.path[:-1], coarse[:-1]):
        assert np.array_equal(c1, c2) and np.array_equal(w1, w2) and b1 == b2
    assert coarse_planes < polished.n_iter
    assert polished.objective < coarse_objective            # the polish solved the last restricted problem further


def test_cv_chooses_from_the_grid_refits_and_reports_results():
    X, y = _data(seed=3)
    cv = StructSVMCV(Cs=[10.0, 100.0], budgets=[1, 3], max_outer=4, cv=3).fit(X, y)
    res = cv.cv_results_
    n = len(res["params"])
    for key in ("mean_test_score", "std_test_score", "rank_test_score", "split0_test_score", "split2_test_score",
                "mean_n_features", "param_C", "param_budget", "param_n_groups"):
        assert len(res[key]) == n
    best = int(np.argmax(res["smoothed_test_score"]))
    assert res["rank_test_score"][best] == 1
    # a budgeted pick is the best score's under the one-standard-error rule too
    assert cv.best_index_ == best and res["within_one_se"][best]
    assert cv.best_score_ == pytest.approx(res["mean_test_score"][best])
    # the smoothed score is each path's 3-point moving average (ends repeated)
    C, B = res["param_C"][0], res["param_budget"][0]
    path = [i for i in range(n) if res["param_C"][i] == C and res["param_budget"][i] == B]
    m = res["mean_test_score"][path]
    padded = np.concatenate((m[:1], m, m[-1:]))
    assert np.allclose(res["smoothed_test_score"][path], (padded[:-2] + padded[1:-1] + padded[2:]) / 3)
    assert (cv.C_, cv.budget_) in {(10.0, 1), (10.0, 3), (100.0, 1), (100.0, 3)}
    assert 1 <= cv.n_groups_ <= 4
    ref = StructSVM(C=cv.C_, budget=cv.budget_, max_outer=cv.n_groups_, refit=cv.C_).fit(X, y)
    # the same model, its cut moved by the out-of-fold threshold (threshold="cv")
    assert np.allclose(cv.coef_, ref.coef_) and np.allclose(cv.intercept_, ref.intercept_ - cv.threshold_)
    assert np.array_equal(cv.decision_function(X) > 0, ref.decision_function(X) - cv.threshold_ > 0)
    assert set(cv.selected_features_) <= set(range(X.shape[1]))


@pytest.mark.slow
def test_default_grid_scales_C_with_the_number_of_examples_and_their_squared_norm():
    X, y = _data(seed=4)
    cv = StructSVMCV(budgets=[2], max_outer=3, scale_C=False).fit(X, y)
    assert sorted(set(cv.cv_results_["param_C"])) == pytest.approx([0.3 * 120, 120.0, 3.0 * 120, 10.0 * 120])
    unit = 120 / np.mean(np.sum(X ** 2, axis=1))
    cv = StructSVMCV(budgets=[2], max_outer=3).fit(X, y)
    assert sorted(set(cv.cv_results_["param_C"])) == pytest.approx([0.3 * unit, unit, 3.0 * unit, 10.0 * unit])
    assert set(StructSVMCV(max_outer=2).fit(X, y).cv_results_["param_budget"]) == {5, None}
    # a cap of 4 shrinks the default group to 1 (budget_under_cap): the path to the cap has 4 points
    assert set(StructSVMCV(max_outer=2, max_features=4).fit(X, y).cv_results_["param_budget"]) == {1}


def test_max_features_caps_every_candidate_and_the_model():
    X, y = _data(seed=5)
    cv = StructSVMCV(Cs=[100.0], budgets=[2, 4], max_features=3, max_outer=10).fit(X, y)
    assert len(cv.selected_features_) <= 3
    assert cv.cv_results_["mean_n_features"].max() <= 3


def test_unbudgeted_candidate_is_a_single_point_and_can_win():
    X, y = _data(seed=6, informative=25)       # every feature useful: no budget should do as well
    cv = StructSVMCV(Cs=[100.0], budgets=[None, 1], max_outer=3, n_iter_no_change=None).fit(X, y)
    res = cv.cv_results_
    assert sum(b is None for b in res["param_budget"]) == 1
    assert sum(b == 1 for b in res["param_budget"]) == 3
    if cv.budget_ is None:
        assert cv.n_groups_ is None


def test_early_stopping_shortens_paths_without_changing_their_start():
    X, y = _data(seed=7)
    long = StructSVMCV(Cs=[100.0], budgets=[1], max_outer=10, n_iter_no_change=None).fit(X, y)
    short = StructSVMCV(Cs=[100.0], budgets=[1], max_outer=10, n_iter_no_change=2).fit(X, y)
    k = len(short.cv_results_["params"])
    assert k <= len(long.cv_results_["params"])
    # each fold's path is the same until it stops; only the carried-forward tails can differ
    stop = np.argmax(short.cv_results_["mean_test_score"])
    assert np.allclose(short.cv_results_["mean_test_score"][:stop + 1], long.cv_results_["mean_test_score"][:stop + 1])


def test_successive_halving_continues_the_best_paths_and_cuts_the_others_short():
    """Every candidate's path is the start of its path in the full grid; the best third run on to the
    end, the others are marked pruned and never chosen."""
    X, y = _data(n=200, m=40, informative=8, seed=3)
    grid = dict(Cs=[3.0, 30.0, 300.0], budgets=[1, 2], max_outer=12, n_iter_no_change=None)
    full = StructSVMCV(halving_factor=None, **grid).fit(X, y)
    halved = StructSVMCV(halving_factor=3, **grid).fit(X, y)

    def paths(search):
        res = search.cv_results_
        out = {}
        for params, score, pruned in zip(res["params"], res["mean_test_score"], res["pruned"]):
            out.setdefault((params["C"], params["budget"]), []).append((score, pruned))
        return out

    full_paths, halved_paths = paths(full), paths(halved)
    assert full_paths.keys() == halved_paths.keys()
    assert not full.cv_results_["pruned"].any()
    complete = [key for key, path in halved_paths.items() if len(path) == len(full_paths[key])]
    assert 1 <= len(complete) <= 2                            # ceil(6 / 3) candidates run on
    for key, path in halved_paths.items():
        scores = [score for score, _ in path]
        assert np.allclose(scores, [score for score, _ in full_paths[key][:len(path)]])
        assert all(pruned == (key not in complete) for _, pruned in path)
    assert (halved.C_, halved.budget_) in complete
    assert not halved.cv_results_["pruned"][halved.best_index_]


def test_race_keeps_a_budgeted_cell_within_one_folds_noise_of_the_best_unbudgeted_one():
    """race_budgeted on made-up paths: the bar is the best unbudgeted cell's (by its mean) first-fold score
    minus its standard deviation over the folds, and a budgeted cell is kept by its best first-fold point."""
    from structfs.model_selection._results import race_budgeted

    cells = [(1.0, None), (10.0, None), (1.0, 5), (10.0, 5), (100.0, 5)]
    unbudgeted = {0: [0.80, 0.70, 0.60], 1: [0.90, 0.80, 0.70]}          # cell 1 is the best; std 0.1
    first_fold = {2: [0.70, 0.805, 0.75], 3: [0.81, 0.60], 4: [0.50, 0.795]}

    outputs = [None] * (3 * len(cells))
    for c, scores in unbudgeted.items():
        for f, score in enumerate(scores):
            outputs[f * len(cells) + c] = (np.array([score]),)
    for c, path in first_fold.items():
        outputs[c] = (np.array(path),)
    assert race_budgeted(outputs, cells, 3) == [2, 3]                    # the bar: 0.9 - 0.1


def test_under_a_cap_the_race_measures_finer_budgets_against_the_one_that_reaches_the_cap():
    """The race's reference: the unbudgeted cells where the grid holds them; under a cap k the largest
    budget if five groups of it reach the cap (the default grid's k // 5), with a finer budget to race;
    else no race. race_budgeted then takes the reference cell's fold scores at its best path-smoothed
    point."""
    from structfs.model_selection._results import race_budgeted
    from structfs.model_selection._search import _NO_RACE

    reference = StructSVMCV._race_reference
    assert reference({5, None}, None) is None and reference({5, None}, 100) is None
    assert reference({5, 20}, 100) == 20 and reference({5, 6}, 30) == 6
    assert reference({5, 10}, 100) is _NO_RACE                # 5 groups of 10 do not reach 100
    assert reference({20}, 100) is _NO_RACE and reference({5, 20}, None) is _NO_RACE
    assert reference({5, 20}, 800, width=8.0) == 20            # groups of 8 columns: 5 x 20 x 8 columns
    assert reference({5, 20}, 800) is _NO_RACE

    cells = [(1.0, 20), (10.0, 20), (1.0, 5), (10.0, 5)]
    paths = {0: [[0.5, 0.6], [0.5, 0.6], [0.5, 0.6]],
             1: [[0.6, 0.9, 0.9], [0.6, 0.8, 0.8], [0.6, 0.7, 0.7]]}    # best at its 2nd point, std 0.1
    outputs = [None] * (3 * len(cells))
    for c, folds in paths.items():
        for f, path in enumerate(folds):
            outputs[f * len(cells) + c] = (np.array(path),)
    outputs[2], outputs[3] = (np.array([0.6, 0.79]),), (np.array([0.7, 0.81]),)
    assert race_budgeted(outputs, cells, 3, 20) == [3]                 # the bar: 0.9 - 0.1


def test_under_a_cap_the_finer_budget_races_on_the_first_fold():
    """Under max_features=20 with budgets (2, 4) five groups of 4 reach the cap, so the cells of budget 2
    first run on the first fold only; where every feature matters they fall short of the reference there,
    score NaN on the other folds and are pruned, and the reference cells run on every fold."""
    X, y = _data(n=300, m=40, informative=40, seed=5)                  # every feature matters
    results = StructSVMCV(Cs=[1.0, 10.0], budgets=[2, 4], max_features=20).fit(X, y).cv_results_
    budget = np.asarray(results["param_budget"])
    dropped = np.isnan(results["split1_test_score"])
    assert dropped.any() and np.all(budget[dropped] == 2) and np.all(results["pruned"][dropped])
    assert np.isfinite(np.asarray(results["split1_test_score"])[budget == 4]).all()


def test_the_race_fits_no_larger_C_only_where_its_budgeted_cells_lose_for_good():
    """losing_and_not_closing on made-up paths: the budgeted cells run so far (increasing C, first fold)
    must all fall short of the race's bar (0.9 - 0.1 here), by more than the last C step gained; a
    budgeted cell above the bar, a last step that could close the gap, or too few steps keep the race
    going."""
    from structfs.model_selection._results import losing_and_not_closing

    cells = [(1.0, None), (10.0, None), (1.0, 5), (10.0, 5), (100.0, 5), (1000.0, 5)]

    def outputs(first_fold):
        out = [None] * (3 * len(cells))
        for c, scores in {0: [0.80, 0.70, 0.60], 1: [0.90, 0.80, 0.70]}.items():
            for f, score in enumerate(scores):
                out[f * len(cells) + c] = (np.array([score]),)
        for c, path in zip((2, 3, 4), first_fold):
            out[c] = (np.array(path),)
        return out

    assert losing_and_not_closing(outputs([[0.5, 0.7], [0.6], [0.55]]), cells, 3, [2, 3, 4])      # falling
    assert losing_and_not_closing(outputs([[0.5], [0.6], [0.65]]), cells, 3, [2, 3, 4])           # 0.65 + 0.05
    assert not losing_and_not_closing(outputs([[0.5, 0.85], [0.6], [0.55]]), cells, 3, [2, 3, 4])  # one wins
    assert not losing_and_not_closing(outputs([[0.5], [0.6], [0.72]]), cells, 3, [2, 3, 4])       # 0.72 + 0.12
    assert not losing_and_not_closing(outputs([[0.7], [0.6]]), cells, 3, [2, 3])                  # too few


def test_the_race_runs_on_only_the_budgeted_cells_within_the_noise_and_the_full_grid_runs_all():
    """Where the dense model is far better, the budgeted cells run on the first fold only (NaN on the
    others, marked pruned, never chosen); where irrelevant features abound and sparse models win, they run
    on every fold and are chosen; halving_factor=None runs every cell on every fold."""
    X, y = _data(n=300, m=10, informative=10, seed=4)                  # every feature matters
    grid = dict(Cs=[1.0, 10.0], budgets=[1, None], max_outer=6)
    raced = StructSVMCV(**grid).fit(X, y).cv_results_
    full = StructSVMCV(halving_factor=None, **grid).fit(X, y).cv_results_
    dropped = np.isnan(raced["split1_test_score"])
    assert dropped.any() and np.all(raced["pruned"][dropped])
    assert np.isfinite(raced["split0_test_score"]).all()
    assert np.all(np.asarray(raced["param_budget"])[dropped] == 1)
    assert np.isfinite(full["mean_test_score"]).all()
    Xn, yn = _data(n=200, m=400, informative=3, seed=5)                # 397 irrelevant features
    sparse = StructSVMCV(**grid).fit(Xn, yn)
    assert sparse.budget_ == 1
    assert np.isfinite(sparse.cv_results_["split2_test_score"][np.asarray(sparse.cv_results_["param_budget"]) == 1]
                       ).any()


def test_survivors_continue_their_paths_as_a_restarted_path_would():
    """A serial search keeps its fold paths between rungs and continues them; a parallel one starts
    them over in its workers. The table is the same, and a path paused at a rung and continued
    scores the points of one run to the end."""
    from structfs.model_selection._path import FoldPath

    X, y = _data(n=200, m=40, informative=8, seed=3)
    grid = dict(Cs=[3.0, 30.0, 300.0], budgets=[1, 2], max_outer=12, n_iter_no_change=None)
    serial = StructSVMCV(halving_factor=3, **grid).fit(X, y).cv_results_
    parallel = StructSVMCV(halving_factor=3, n_jobs=2, **grid).fit(X, y).cv_results_
    for key in ("mean_test_score", "mean_n_features", "pruned"):
        np.testing.assert_array_equal(serial[key], parallel[key])
    cv = StructSVMCV(max_outer=9, n_iter_no_change=None)
    train, test = cv._folds(y)[0]
    scoring = cv._path_scoring(cv._problem(), np.array([0, 1]))
    fold = Fold(train, test, None, 1.0)
    paused = FoldPath(X, y, fold, 30.0, 2, scoring)
    first = paused.advance(3)
    resumed = paused.advance(9)
    whole = fold_path(X, y, fold, 30.0, 2, scoring)
    assert first[0].shape[0] == 3 and np.array_equal(first[0], resumed[0][:3])
    np.testing.assert_array_equal(resumed[0], whole[0])
    np.testing.assert_array_equal(resumed[1], whole[1])
    assert resumed[3] == whole[3]


def test_warm_started_unbudgeted_fits_reach_the_same_certified_optimum():
    """A fold's unbudgeted fits run as one chain over C, each from the planes of the fit at the next
    smaller C: the same problem, each solve certified to its tolerance, in any order of the Cs given."""
    from structfs.model_selection._path import unbudgeted_chain

    X, y = _data(n=200, m=30, seed=5)
    cv = StructSVMCV()
    train, test = cv._folds(y)[0]
    scoring = cv._path_scoring(cv._problem(), np.array([0, 1]))
    fold = Fold(train, test, None, 1.0)
    Cs = [300.0, 3.0, 30.0]
    cold = [fold_path(X, y, fold, C, None, scoring) for C in Cs]
    warm = unbudgeted_chain(X, y, fold, Cs, scoring)
    for a, b in zip(cold, warm):
        assert a[3] and b[3]                                   # both certified
        assert abs(a[0][0] - b[0][0]) <= 0.05                 # validation F1 of two certified solutions
    y_pm = np.where(y[train] == 1, 1.0, -1.0)
    loss = scoring.loss
    path = Solver.default(tol=0.1).path(X[train], y_pm, loss, 30.0, SquaredL2(), 1.0)
    first = solve(X[train], y_pm, loss, 3.0, tol=0.1)
    start = Solver.default(tol=0.1).path(X[train], y_pm, loss, 3.0, SquaredL2(), 1.0)
    for _ in start:
        pass
    path.add_planes(start.planes())
    for _ in path:
        pass
    warm_result = path.result()
    cold_result = solve(X[train], y_pm, loss, 30.0, tol=0.1)
    assert first.converged and warm_result.converged
    assert abs(warm_result.objective - cold_result.objective) <= 30.0 * 0.1 * 1.01


@pytest.mark.parametrize("bad", [1, 0, 2.5, "3"])
def test_halving_factor_must_be_an_integer_of_at_least_two(bad):
    X, y = _data()
    with pytest.raises(ValueError, match="halving_factor"):
        StructSVMCV(halving_factor=bad).fit(X, y)


def test_works_in_pipelines_one_vs_rest_and_with_sparse_input():
    X, y = _data(seed=8)
    pipe = make_pipeline(StandardScaler(), StructSVMCV(Cs=[100.0], budgets=[2], max_outer=2)).fit(X, y)
    assert pipe.score(X, y) > 0.7
    Xs = sp.csr_matrix(np.where(np.abs(X) > 1.0, X, 0.0))
    assert StructSVMCV(Cs=[100.0], budgets=[2], max_outer=2).fit(Xs, y).coef_.shape == (1, X.shape[1])
    y3 = np.digitize(X[:, 0] + X[:, 1], [-0.5, 0.5])
    ovr = OneVsRestClassifier(StructSVMCV(Cs=[100.0], budgets=[2], max_outer=2)).fit(X, y3)
    assert ovr.predict(X).shape == (120,)
    ours = OneVsRestStructSVM(estimator=StructSVMCV(Cs=[100.0], budgets=[2], max_outer=2), n_jobs=2).fit(X, y3)
    assert ours.predict(X).shape == (120,) and ours.decision_function(X).shape == (120, 3)
    assert all(isinstance(e, StructSVMCV) and e.budget_ == 2 for e in ours.estimators_)
    with pytest.raises(ValueError, match="C"):
        OneVsRestStructSVM(estimator=StructSVMCV(), C=5.0).fit(X, y3)
    # a class smaller than the folds fails before any class is fitted, naming cv and the class
    y_rare = np.where(np.arange(120) < 2, 7, y3)
    with pytest.raises(ValueError, match=r"cv=3 folds is more than the 2 examples of class 7"):
        OneVsRestStructSVM(estimator=StructSVMCV(Cs=[100.0], budgets=[2], max_outer=2)).fit(X, y_rare)
    from structfs import save_model
    with pytest.raises(TypeError, match="estimator_"):
        save_model(ours.estimators_[0], "unused.json")


def test_scoring_options_and_splitters():
    X, y = _data(seed=9)
    for scoring in ("auc", "roc_auc", "accuracy", lambda est, X, y: -abs(est.decision_function(X)).mean()):
        StructSVMCV(Cs=[100.0], budgets=[2], max_outer=2, scoring=scoring).fit(X, y)
    cv = StructSVMCV(Cs=[100.0], budgets=[2], max_outer=2, cv=StratifiedKFold(4, shuffle=True, random_state=0))
    assert "split3_test_score" in cv.fit(X, y).cv_results_


@pytest.mark.slow
def test_deterministic():
    X, y = _data(seed=10)
    a = StructSVMCV(Cs=[30.0, 300.0], budgets=[2], max_outer=5).fit(X, y)
    b = StructSVMCV(Cs=[30.0, 300.0], budgets=[2], max_outer=5).fit(X, y)
    assert np.array_equal(a.coef_, b.coef_) and a.C_ == b.C_ and a.n_groups_ == b.n_groups_


def test_default_grid_is_blind_to_the_features_scale():
    """scale_C: rescaling X by a moves every default C by 1 / a^2 and the bias feature by a, and leaves
    the search and the models' predictions (and intercepts) as they were; without it the same grid
    regularises a^2 times less and the bias feature stays ``bias``."""
    X, y = _data(seed=12)
    a = StructSVMCV(budgets=[2], max_outer=4).fit(X, y)
    b = StructSVMCV(budgets=[2], max_outer=4).fit(10.0 * X, y)
    assert a.bias_ == pytest.approx(np.sqrt(np.mean(np.sum(X ** 2, axis=1))))
    assert b.bias_ == pytest.approx(10.0 * a.bias_) and b.estimator_.bias == b.bias_
    assert b.C_ == pytest.approx(a.C_ / 100.0) and (a.budget_, a.n_groups_) == (b.budget_, b.n_groups_)
    assert np.array_equal(a.selected_features_, b.selected_features_)
    assert np.array_equal(a.predict(X), b.predict(10.0 * X))
    assert np.allclose(a.decision_function(X), b.decision_function(10.0 * X))
    assert np.allclose(a.intercept_, b.intercept_)
    assert np.allclose(a.cv_results_["mean_test_score"], b.cv_results_["mean_test_score"])
    assert StructSVMCV(budgets=[2], max_outer=2, scale_C=False).fit(X, y).bias_ == 1.0
    assert StructSVMCV(Cs=[10.0], budgets=[2], max_outer=2, bias=0.5).fit(X, y).bias_ == 0.5   # explicit Cs
    c = StructSVMCV(budgets=[2], max_outer=4, scale_C=False).fit(10.0 * X, y)
    scaled = a.cv_results_["param_C"] * np.mean(np.sum(X ** 2, axis=1))
    assert sorted(set(c.cv_results_["param_C"])) == pytest.approx(sorted(set(scaled)))


@pytest.mark.parametrize("params,match", [
    (dict(Cs=[]), "Cs"), (dict(Cs=[1.0, -2.0]), "Cs"), (dict(Cs=[np.inf]), "Cs"), (dict(Cs=3.0), "Cs"),
    (dict(budgets=[]), "budgets"), (dict(budgets=[0]), "budgets"), (dict(budgets=[2.5]), "budgets"),
    (dict(max_features=0), "max_features"), (dict(budgets=[None], max_features=5), "budgets"),
    (dict(scoring="no-such-measure"), "scoring"), (dict(cv=50), "cv"), (dict(cv=1), "cv"),
    (dict(n_iter_no_change=0), "n_iter_no_change"), (dict(debias="yes"), "debias"), (dict(tol=-1.0), "tol"),
    (dict(scale_C=1), "scale_C"),
])
def test_bad_parameters_raise_before_any_fit(params, match, monkeypatch):
    X, y = _data(seed=11)

    monkeypatch.setattr(Solver, "path", lambda *a, **k: pytest.fail("a fit started before the check"))
    with pytest.raises(ValueError, match=match):
        StructSVMCV(**params).fit(X, y)


def test_budgeted_fit_stops_for_a_reason_and_warns_only_without_a_certificate():
    X, y = _data(seed=12)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        capped = StructSVM(C=100.0, budget=1, max_outer=3).fit(X, y)          # the user's cap: no warning
        assert capped.stop_ == "max_outer" and capped.n_outer_ == 3
        free = StructSVM(C=100.0, budget=2, max_outer=200).fit(X, y)
        assert free.stop_ in ("gap", "optimal")
        assert StructSVM(C=100.0, budget=2, outer_tol=1e-3).fit(X, y).stop_ in ("stall", "gap", "optimal", "max_outer")
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        StructSVM(C=1e4, budget=2, max_iter=3).fit(X, y)


def test_search_warns_once_for_uncertified_fold_fits_and_marks_their_candidates():
    """Fold fits that run out of planes do not warn each (a search of 3 folds x 2 C x 2 budgets would
    warn up to 12 times): the search warns once, naming the C values, and cv_results_ says which
    candidates rest on uncertified fits."""
    X, y = _data(seed=13)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cv = StructSVMCV(Cs=[1.0, 1e5], budgets=[2, None], max_outer=3, max_iter=60).fit(X, y)
    search = [w for w in caught if issubclass(w.category, ConvergenceWarning) and "candidates" in str(w.message)]
    assert len(search) == 1 and "C = 1e+05)" in str(search[0].message)   # the unbudgeted C = 1e5 fits
    certified, res = cv.cv_results_["certified"], cv.cv_results_
    assert certified.dtype == bool and certified[res["param_C"] == 1.0].all()
    assert not certified[(res["param_C"] == 1e5) & (res["param_budget"] == None)].any()  # noqa: E711
    others = [w for w in caught if issubclass(w.category, ConvergenceWarning) and w not in search]
    assert len(others) <= 1                     # at most the final refit's own warning
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        quiet = StructSVMCV(Cs=[1.0, 10.0], budgets=[2], max_outer=3).fit(X, y)
    assert quiet.cv_results_["certified"].all()


@pytest.mark.slow
def test_check_estimator():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        # The weighted and the repeated search make the same choices (C, budget, groups, cut, every
        # validation score), and their refitted models, debiased and stopped at max_outer=3 far from
        # their certificate (gap 10.9 of 12.7), agree to 2e-6, not to the 1e-7 these checks ask;
        # test_sample_weight compares searches by their choices and certificates.
        why = "equal within the fits' certificates, not to rtol 1e-7"
        check_estimator(StructSVMCV(Cs=[10.0], budgets=[2], max_outer=3, max_iter=200), expected_failed_checks={
            "check_sample_weight_equivalence_on_dense_data": why,
            "check_sample_weight_equivalence_on_sparse_data": why})


def test_cross_validates_in_a_hashed_index_space_without_dense_weights():
    """Every path point is scored with the solver's sparse weights above 2^24 features (a dense
    vector per point would be 800 MB here, 17 GB in 2^31)."""
    X, y = _data(n=60, m=6, seed=11)
    columns = np.array([3, 999, 70_000, 5_000_000, 40_000_000, 99_999_999])
    Xh = sp.csr_matrix((X.ravel(), np.tile(columns, 60), np.arange(0, 361, 6)), shape=(60, 10 ** 8))
    cv = StructSVMCV(Cs=[10.0], budgets=[1, None], max_outer=2, cv=2).fit(Xh, y)
    assert sp.issparse(cv.coef_) and cv.coef_.shape == (1, 10 ** 8)
    assert set(cv.selected_features_) <= set(columns)
    dense = StructSVMCV(Cs=[10.0], budgets=[1, None], max_outer=2, cv=2).fit(X, y)
    assert np.allclose(cv.cv_results_["mean_test_score"], dense.cv_results_["mean_test_score"], equal_nan=True)
    assert np.array_equal(cv.predict(Xh), dense.predict(X))


def _degenerate(n=200, m=5, seed=0):
    """10% positives barely shifted on one feature: every w leaves a labeling without true positives
    whose F1 slack is 100%, so the F1 structural SVM's optimum is w = 0 at every C."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, m))
    y = (rng.random(n) < 0.1).astype(int)
    X[y == 1, 0] += 0.3
    return X, y


def test_a_fit_whose_optimum_is_the_zero_model_warns():
    X, y = _degenerate()
    with pytest.warns(UserWarning, match="no features"):
        est = StructSVM(loss="f1", C=1000.0).fit(X, y)
    assert est.selected_features_.size == 0
    assert est.gap_ <= 1000.0 * est.tol                # certified: w = 0 is the optimum, not a failure


def test_cv_falls_back_to_a_ranking_loss_when_every_candidate_is_the_zero_model():
    X, y = _degenerate()
    with pytest.warns(UserWarning, match="zero model"):
        cv = StructSVMCV(loss="f1").fit(X, y)
    assert cv.loss_.name == "auc" and cv.estimator_.loss == "auc"
    assert cv.selected_features_.size > 0 and np.unique(cv.predict(X)).size == 2
    ran = ~cv.cv_results_["pruned"]         # a budgeted cell the race dropped after one fold scores NaN
    assert np.isfinite(cv.cv_results_["mean_test_score"][ran]).all()
    # the ranking loss learns no threshold: the intercept is the best cut of F1 on the training scores
    s = cv.decision_function(X)
    y_pm = np.where(y == 1, 1.0, -1.0)
    cuts = np.unique(s)
    best = max(f1(y_pm, s - t) for t in np.concatenate(((cuts[1:] + cuts[:-1]) / 2, [cuts[0] - 1])))
    assert f1(y_pm, s) == pytest.approx(best)
    assert cv.intercept_[0] != 0.0                  # the AUC refit's own intercept is 0: it was moved
    # its candidates are the AUC search's, each cut at its fold's best training cut and scored by F1
    ref = StructSVMCV(loss="auc", scoring="f1")
    table = ref._search(ref._problem(), [X], y, np.unique(y), ref._folds(y), threshold_loss=get_loss("f1"))
    assert np.allclose(cv.cv_results_["mean_test_score"], np.mean(table["scores"], axis=1), equal_nan=True)
    X2, y2 = _data(seed=3)                           # data with a real F1 optimum: no fallback, no warning
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        assert StructSVMCV(Cs=[100.0], budgets=[3], max_outer=3).fit(X2, y2).loss_.name == "f1"


def test_fold_path_cuts_on_the_scores_of_cut_X():
    # The fallback's cut is chosen on the training rows of cut_X (MIL: each bag without its own
    # instances); by default, and with cut_X = X, on X's.
    X, y = _degenerate()
    train, test = next(StratifiedKFold(3).split(X, y))
    scoring = PathScoring(np.array([0, 1]), get_loss("auc"), StructScorer("f1"), Solver.default(max_outer=3),
                          threshold_loss=get_loss("f1"))

    def scores(cut_X):
        return fold_path(X, y, Fold(train, test), 50.0, 3, replace(scoring, cut_X=cut_X))[0]
    default = scores(None)
    assert np.array_equal(scores(X), default)
    shifted = X.copy()
    shifted[:, 0] += 1.0                              # another cut on the training rows, other predictions
    assert not np.array_equal(scores(shifted), default)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(-4, 4)), min_size=2, max_size=14),
       st.sampled_from([("f1", {}), ("fbeta", {"beta": 2.0}), ("error", {}), ("prbep", {})]))
def test_best_threshold_is_the_best_cut_between_distinct_scores(examples, loss_spec):
    from structfs.model_selection import best_threshold

    y = np.array([1.0 if p else -1.0 for p, _ in examples])
    s = np.array([v / 2.0 for _, v in examples])          # ties on purpose: a cut never splits them
    assume((y > 0).any() and (y < 0).any())
    loss = get_loss(loss_spec[0], **loss_spec[1])
    cuts = np.unique(s)
    measures = []
    for t in np.concatenate(([cuts[-1] + 1.0], (cuts[1:] + cuts[:-1]) / 2.0, [cuts[0] - 1.0])):
        labels = np.where(s > t, 1.0, -1.0)
        a, b = np.count_nonzero((labels > 0) & (y > 0)), np.count_nonzero((labels > 0) & (y < 0))
        mask = loss._feasible_mask(np.int64(a), np.int64(b), np.count_nonzero(y > 0), np.count_nonzero(y < 0))
        if mask is None or bool(mask):
            measures.append(100.0 - loss.delta(y, labels))
    t = best_threshold(loss, y, s)
    if not measures:                                     # PRBEP: no cut between distinct scores has P above it
        assert t == 0.0
        return
    assert 100.0 - loss.delta(y, np.where(s > t, 1.0, -1.0)) == pytest.approx(max(measures))


def test_under_a_small_cap_the_default_budget_leaves_a_path_of_five_points():
    from structfs.model_selection._grid import budget_under_cap

    assert [budget_under_cap(5, k) for k in (1, 4, 5, 10, 14, 15, 24, 25, 100)] == [1, 1, 1, 2, 2, 3, 4, 5, 5]
    assert budget_under_cap(5, None) == 5 and budget_under_cap(None, 3) is None
    X, y = _data(seed=3)
    cv = StructSVMCV(Cs=[100.0], max_features=10, max_outer=6).fit(X, y)
    assert set(cv.cv_results_["param_budget"]) == {2} and cv.selected_features_.size <= 10
    assert set(StructSVMCV(Cs=[100.0], budgets=[5], max_features=10, max_outer=2).fit(X, y)
               .cv_results_["param_budget"]) == {5}                     # an explicit grid is kept


def test_under_a_cap_the_unbudgeted_candidate_becomes_the_group_that_reaches_the_cap_in_five():
    from structfs.model_selection._grid import default_budgets

    assert default_budgets(None) == [5, None]
    assert [default_budgets(k) for k in (4, 10, 25, 49, 50, 100)] == [[1], [2], [5], [5, 9], [5, 10], [5, 20]]
    X, y = _data(seed=3)
    cv = StructSVMCV(Cs=[100.0], max_features=50, max_outer=3).fit(X, y)
    assert set(cv.cv_results_["param_budget"]) == {5, 10} and cv.selected_features_.size <= 50


def _one_percent_positives():
    """21 training positives in 2,100 (make_classification, no flipped labels): the F1 objective is flat
    near w = 0, and the first groups' restricted optimum is the zero model."""
    from sklearn.datasets import make_classification
    from sklearn.model_selection import train_test_split

    X, y = make_classification(3000, 50, n_informative=5, weights=[0.99], flip_y=0, random_state=2)
    return train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)[::2]


def test_a_refitted_zero_model_falls_back_to_the_ranking_loss():
    # the folds' paths have features by the chosen number of groups; on all the data that restricted
    # problem's optimum is still w = 0: rather than a constant classifier, the ranking loss with its cut
    # (over the full grid, which scores that budgeted cell; the default's race does not run it here)
    X, y = _one_percent_positives()
    with pytest.warns(UserWarning, match="refitted on all the data was the zero model"):
        cv = StructSVMCV(loss="f1", halving_factor=None).fit(X, y)
    assert cv.loss_.name == "auc" and cv.selected_features_.size > 0
    s, y_pm = cv.decision_function(X), np.where(y == 1, 1.0, -1.0)
    cuts = np.unique(s)
    assert f1(y_pm, s) == pytest.approx(max(f1(y_pm, s - t) for t in (cuts[1:] + cuts[:-1]) / 2))


def test_score_uses_the_search_measure_on_the_0_1_scale():
    X, y = _data(seed=3)
    cv = StructSVMCV(Cs=[100.0], budgets=[3], max_outer=3).fit(X, y)
    assert cv.score(X, y) == pytest.approx(f1(y, cv.decision_function(X)) / 100)
    by_accuracy = StructSVMCV(Cs=[100.0], budgets=[3], max_outer=3, scoring="accuracy").fit(X, y)
    assert by_accuracy.score(X, y) == pytest.approx(np.mean(by_accuracy.predict(X) == y))


def test_the_search_shows_its_progress_and_checks_verbose_and_n_jobs(capsys):
    X, y = _data(seed=3)
    StructSVMCV(Cs=[100.0], budgets=[3], max_outer=3, verbose=2).fit(X, y)
    err = capsys.readouterr().err
    assert "StructSVMCV fold paths" in err and "3/3" in err and err.count("[structfs] fold ") == 3
    StructSVMCV(Cs=[100.0], budgets=[3], max_outer=3).fit(X, y)
    assert "fold paths" not in capsys.readouterr().err                    # silent at verbose=0
    for bad, name in ((dict(verbose=-1), "verbose"), (dict(verbose=1.5), "verbose"), (dict(n_jobs=0), "n_jobs"),
                      (dict(n_jobs=2.0), "n_jobs")):
        with pytest.raises(ValueError, match=name):
            StructSVMCV(**bad).fit(X, y)


def test_a_search_validates_its_parameters_and_data_once(monkeypatch):
    """Parameters are checked once per fit (the refitted StructSVM's are the search's own), and so is X's
    magnitude (an O(nnz) pass), however many folds and candidates the search runs."""
    from sklearn.base import BaseEstimator

    import structfs.estimators
    import structfs.model_selection._search as search_module

    calls = {"params": 0, "magnitude": 0}
    validate, magnitude = BaseEstimator._validate_params, search_module.check_magnitude

    def counted_validate(self):
        calls["params"] += 1
        return validate(self)

    def counted_magnitude(X, name="X"):
        from sklearn import get_config

        calls["magnitude"] += not get_config()["assume_finite"]        # a pass over X, not a skipped call
        return magnitude(X, name)

    monkeypatch.setattr(BaseEstimator, "_validate_params", counted_validate)
    monkeypatch.setattr(search_module, "check_magnitude", counted_magnitude)
    monkeypatch.setattr(structfs.estimators, "check_magnitude", counted_magnitude)
    X, y = _data(seed=13)
    StructSVMCV(Cs=[1.0, 10.0], budgets=[2], max_outer=3).fit(X, y)
    assert calls == {"params": 1, "magnitude": 1}


def test_a_search_builds_its_problem_once(monkeypatch):
    """The search's problem (loss, grids, scorer, the fold fits' solver) is built once per fit and handed
    down; the refitted StructSVM builds its own once, from the search's choice."""
    import structfs.estimators
    import structfs.model_selection._search as search_module

    built = {"search": 0, "refit": 0}
    search_problem, problem_of = search_module.search_problem, structfs.estimators.problem_of

    def counted_search(params):
        built["search"] += 1
        return search_problem(params)

    def counted_refit(params):
        built["refit"] += 1
        return problem_of(params)

    monkeypatch.setattr(search_module, "search_problem", counted_search)
    monkeypatch.setattr(structfs.estimators, "problem_of", counted_refit)
    X, y = _data(seed=13)
    cv = StructSVMCV(Cs=[1.0, 10.0], budgets=[2, None], max_outer=3, tol=0.05).fit(X, y)
    assert built == {"search": 1, "refit": 1}
    problem = cv._problem()
    assert (problem.solver.tol, problem.solver.max_outer, problem.Cs, problem.budgets) == (0.05, 3, [1.0, 10.0],
                                                                                          [2, None])
    with pytest.raises(FrozenInstanceError):
        problem.Cs = [1.0]


def test_the_final_model_is_solved_as_its_candidate_was_in_the_folds_unless_tol_is_given():
    from structfs import _defaults
    from structfs.model_selection._path import RANKING_TOL

    X, y = _data(seed=13)
    for budgets, expected in (([None], RANKING_TOL), ([2], _defaults.TOL)):
        default = StructSVMCV(Cs=[1.0, 10.0], budgets=budgets, max_outer=3).fit(X, y)
        given = StructSVMCV(Cs=[1.0, 10.0], budgets=budgets, max_outer=3, tol=_defaults.TOL).fit(X, y)
        assert default.estimator_.tol == expected and given.estimator_.tol == _defaults.TOL
        # the folds are solved as at tol=0.01 either way: the same scores, the same choice
        assert np.array_equal(default.cv_results_["mean_test_score"], given.cv_results_["mean_test_score"])
        assert (default.C_, default.budget_) == (given.C_, given.budget_)
    # the unbudgeted final model carries its certificate at that precision, and no finer one is asked of it
    unbudgeted = StructSVMCV(Cs=[10.0], budgets=[None]).fit(X, y).estimator_
    assert unbudgeted.converged_ and unbudgeted.gap_ <= unbudgeted.C * RANKING_TOL
    assert StructSVMCV(Cs=[1.0], budgets=[None], tol=0.001).fit(X, y).estimator_.tol == 0.001


@pytest.mark.parametrize("cls", ["StructSVM", "StructSVMCV", "OneVsRestStructSVM", "MILESClassifier",
                                 "MILESEmbedding"])
def test_every_parameter_is_declared_with_its_constraint(cls):
    import inspect

    import structfs
    import structfs.mil

    estimator = getattr(structfs, cls, None) or getattr(structfs.mil, cls)
    params = set(inspect.signature(estimator.__init__).parameters) - {"self"}
    assert set(estimator._parameter_constraints) == params


def test_a_search_with_groups_counts_its_budgets_in_groups(tmp_path):
    from structfs import load_model, save_model

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 24))
    y = (X[:, 4] + X[:, 5] + X[:, 13] + 0.5 * rng.normal(size=300) > 1).astype(int)
    groups = np.repeat(np.arange(8), 3)
    search = StructSVMCV(groups=groups, max_features=9).fit(X, y)
    used = np.unique(groups[search.selected_features_])
    assert np.array_equal(search.selected_groups_, used) and {1, 4} <= set(used.tolist())
    assert all(np.isin(np.flatnonzero(groups == g), search.selected_features_).all() for g in used)   # whole
    assert search.estimator_.groups is groups or np.array_equal(search.estimator_.groups, groups)
    save_model(search.estimator_, tmp_path / "m.json")
    assert np.array_equal(load_model(tmp_path / "m.json").selected_groups_, search.selected_groups_)
    with pytest.raises(ValueError, match="each of the 24"):
        StructSVMCV(groups=groups[:5]).fit(X, y)


def test_the_searchs_warnings_point_at_the_callers_line():
    X, y = _data(seed=12)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        StructSVMCV(Cs=[1.0], budgets=[2], max_outer=3, max_iter=3).fit(X, y)     # uncertified candidates
    searched = [w for w in caught if "candidates were scored" in str(w.message)]
    assert searched and searched[0].filename == __file__


def test_a_bad_selection_rule_is_refused_before_any_work():
    X, y = _data(seed=3)
    with pytest.raises(ValueError, match="selection"):
        StructSVMCV(selection="1se").fit(X, y)


def test_verbose_1_shows_the_bar_and_one_summary_line_not_the_solver_log(capsys):
    X, y = _data(seed=3)
    StructSVMCV(Cs=[100.0], budgets=[3, None], max_outer=3, verbose=1).fit(X, y)
    captured = capsys.readouterr()
    text = captured.out + captured.err
    assert "StructSVMCV chose" in text and "[structfs] done" not in text and "best validation score" not in text


def test_a_candidate_moves_to_its_cross_validated_cut_only_where_that_beats_the_noise():
    from structfs.losses import get_loss
    from structfs.model_selection._path import rescore_at_cv_cuts

    loss = get_loss("f1")
    y_pm = np.tile([1.0, -1.0, -1.0, -1.0], 6)                      # 24 rows, 3 folds of 8
    test_rows = [np.arange(f * 8, f * 8 + 8) for f in range(3)]
    # candidate 0: every score below 0, positives above negatives (its own cut predicts nothing);
    # candidate 1: its own cut already separates the classes
    shifted = [np.where(y_pm[rows] > 0, -1.0, -3.0) for rows in test_rows]
    good = [np.where(y_pm[rows] > 0, 1.0, -1.0) for rows in test_rows]
    table = {"decisions": [shifted, good], "scores": [[0.0] * 3, [1.0] * 3]}
    rescore_at_cv_cuts(table, y_pm, test_rows, loss)
    assert -3.0 < table["cuts"][0] < -1.0 and table["scores"][0] == [1.0, 1.0, 1.0]
    assert table["cuts"][1] == 0.0 and table["scores"][1] == [1.0] * 3


def test_the_cut_by_cv_shifts_the_refitted_model_and_a_bad_threshold_is_refused():
    X, y = _data(seed=3)
    cv = StructSVMCV(Cs=[10.0], budgets=[None]).fit(X, y)
    learned = StructSVMCV(Cs=[10.0], budgets=[None], threshold="learned").fit(X, y)
    assert learned.threshold_ == 0.0
    assert np.allclose(cv.decision_function(X), learned.decision_function(X) - cv.threshold_)
    with pytest.raises(ValueError, match="threshold"):
        StructSVMCV(threshold="tuned").fit(X, y)


def test_the_cut_by_cv_is_carried_to_the_training_scores_of_cut_X():
    """The out-of-fold cut reaches the refitted model by rank on the training rows of the data's cut_X
    (MIL: each bag without its own instances), not of X: the same fraction of them is predicted
    positive whatever cut_X's scale, and cut_X = X is the plain search."""
    from structfs.model_selection import SearchData

    X, y = _data(n=200, seed=5, pos=0.1)

    class Data(SearchData):
        def __init__(self, cut):
            self.cut = cut

        def X(self, setting):
            return X

        def cut_X(self, setting):
            return self.cut

    plain = StructSVMCV(Cs=[10.0], budgets=[None]).fit(X, y)
    assert plain.threshold_ != 0.0
    rate = np.mean(plain.decision_function(X) > 0)
    assert StructSVMCV(Cs=[10.0], budgets=[None]).fit_data(Data(X), y).threshold_ == plain.threshold_
    for cut_X in (2.0 * X, 0.5 * X):
        search = StructSVMCV(Cs=[10.0], budgets=[None]).fit_data(Data(cut_X), y)
        assert search.threshold_ != plain.threshold_
        assert np.mean(search.decision_function(cut_X) > 0) == rate


@pytest.mark.parametrize("params", [{}, {"budgets": [5]}])
def test_constant_features_fit_a_model_instead_of_a_traceback(params):
    """Every column the same constant: the budgeted paths have no group worth adding and end at the zero
    model (they raised KeyError in successive halving, or an AxisError with budgets=[5])."""
    y = np.array([0, 1] * 10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search = StructSVMCV(**params).fit(np.ones((20, 40)), y)
    assert set(search.predict(np.ones((3, 40)))) <= {0, 1}


def test_an_unbudgeted_pick_is_the_smallest_C_within_one_standard_error():
    X, y = _data(n=150, seed=4)
    Cs = [0.3, 1.0, 3.0, 10.0, 30.0]
    rule = StructSVMCV(Cs=Cs, budgets=[None]).fit(X, y)
    best = StructSVMCV(Cs=Cs, budgets=[None], selection="best").fit(X, y)
    res = rule.cv_results_
    assert best.best_index_ == int(np.nanargmax(best.cv_results_["smoothed_test_score"]))   # larger C unfitted: NaN
    within = res["within_one_se"]
    assert within[rule.best_index_] and rule.C_ == res["param_C"][within].min() and rule.C_ <= best.C_


def test_the_progress_bar_total_is_known_before_halving_starts(capsys):
    """The bar's total is the plan of successive halving, set before the first path: it never grows (it
    grew from 96% back to 73%), and where paths end before the plan it closes at what was run."""
    import re

    X, y = _data(n=200, m=40, informative=8, seed=3)
    StructSVMCV(Cs=[3.0, 30.0, 300.0], budgets=[1, 2], max_outer=12, n_iter_no_change=None, halving_factor=3,
                verbose=1).fit(X, y)
    totals = [int(t) for t in re.findall(r"(\d+)/(\d+)", capsys.readouterr().err) for t in [t[1]]]
    assert totals and all(later <= first for first, later in zip(totals, totals[1:]))


def test_pos_label_reaches_the_search_its_cut_and_its_score():
    from sklearn.metrics import f1_score

    X, y01 = _data(n=240, seed=6)
    y = np.where(y01 == 1, "alert", "normal")                   # the positives sort first
    search = StructSVMCV(Cs=[10.0, 100.0], budgets=[None], pos_label="alert").fit(X, y)
    mirror = StructSVMCV(Cs=[10.0, 100.0], budgets=[None]).fit(X, np.where(y01 == 1, "zz", "normal"))
    assert search.C_ == mirror.C_ and search.threshold_ == pytest.approx(mirror.threshold_)
    assert np.allclose(search.decision_function(X), -mirror.decision_function(X))
    assert search.score(X, y) == pytest.approx(f1_score(y, search.predict(X), pos_label="alert"))


def test_an_out_of_fold_cut_is_carried_to_the_refitted_model_by_rank():
    from structfs.model_selection._path import same_rate_cut

    rng = np.random.default_rng(0)
    folds = rng.normal(size=300)
    refit = 3.0 * rng.normal(size=200) + 1.0            # another scale and offset
    cut = same_rate_cut(folds, 0.8, refit)
    assert np.mean(refit > cut) == pytest.approx(np.mean(folds > 0.8), abs=1 / 200)
    tied = np.repeat([3.0, 2.0, 1.0], [5, 5, 5])
    cut = same_rate_cut(np.arange(10.0), 6.5, tied)     # 3 of 10 above: the nearest cut outside a tie
    assert np.isclose(cut, 2.5) or np.isclose(cut, 1.5)
    weights = np.where(refit > np.median(refit), 3.0, 1.0)
    cut = same_rate_cut(folds, 0.8, refit, score_weight=weights)
    assert np.average(refit > cut, weights=weights) == pytest.approx(np.mean(folds > 0.8), abs=3 / 400)


def test_past_the_peak_stops_where_a_step_like_the_last_would_not_reach_the_best():
    from structfs.model_selection._results import C_PATIENCE, past_the_peak

    cells = [(C, None) for C in (1.0, 10.0, 100.0, 1000.0)]

    def outputs(means):                   # two folds, each cell's one score around its mean; the rest unrun
        means = list(means) + [None] * (len(cells) - len(means))
        return [None if m is None else (np.array([m + d]),) for d in (-0.01, 0.01) for m in means]

    assert C_PATIENCE == 2
    assert past_the_peak(outputs([0.9, 0.8, 0.7]), cells, 2, [0, 1, 2])        # falling
    assert past_the_peak(outputs([0.8, 0.9, 0.85]), cells, 2, [0, 1, 2])       # past the peak
    assert past_the_peak(outputs([0.9, 0.8, 0.84]), cells, 2, [0, 1, 2])       # closing by 0.04 on a gap of 0.06
    assert not past_the_peak(outputs([0.9, 0.8, 0.86]), cells, 2, [0, 1, 2])   # closing faster than the gap
    assert not past_the_peak(outputs([0.8, 0.85, 0.9]), cells, 2, [0, 1, 2])   # still rising
    assert past_the_peak(outputs([0.9, 0.9, 0.9]), cells, 2, [0, 1, 2])        # level
    assert not past_the_peak(outputs([0.9, 0.8]), cells, 2, [0, 1])            # too few steps to tell


def test_a_search_fits_no_larger_C_past_the_peak():
    """Where the cross-validated score has passed its peak, the larger C are not fitted: they are
    marked pruned with NaN scores and never chosen; the full grid (halving_factor=None) fits them all
    and makes the same choice here."""
    from sklearn.datasets import make_classification

    X, y = make_classification(300, 40, n_informative=3, flip_y=0.2, random_state=1)
    params = dict(Cs=[0.01, 0.1, 1, 10, 100, 1000], budgets=[None], scale_C=False)
    search = StructSVMCV(**params).fit(X, y)
    results = search.cv_results_
    pruned = np.asarray(results["pruned"])
    assert pruned.any() and not pruned[:3].any()
    fitted_C = np.asarray(results["param_C"], dtype=float)[~pruned]
    assert np.all(np.asarray(results["param_C"], dtype=float)[pruned] > fitted_C.max())
    assert np.isnan(np.asarray(results["mean_test_score"])[pruned]).all()
    assert not pruned[search.best_index_]
    full = StructSVMCV(halving_factor=None, **params).fit(X, y)
    assert not np.asarray(full.cv_results_["pruned"]).any()
    assert full.C_ == search.C_
    # Where the score still rises at the third C the fourth is fitted, a step later, each fold's chain going
    # on from its last planes; a parallel search carries them to its workers: the same table.
    params["Cs"] = [1e-4, 1e-3, 1e-2, 0.03, 0.1, 0.3]
    serial = StructSVMCV(**params).fit(X, y).cv_results_
    parallel = StructSVMCV(n_jobs=2, **params).fit(X, y).cv_results_
    assert not np.asarray(serial["pruned"])[:4].any()
    np.testing.assert_array_equal(parallel["mean_test_score"], serial["mean_test_score"])


def test_budgeted_paths_step_through_C_like_the_unbudgeted_chain():
    """Without a race (every cell budgeted), each budget's cells step through C as the unbudgeted chain
    does: past the peak of their best path-smoothed score at the first rung the larger C are not
    fitted (pruned, NaN). Halving then keeps a third of the cells the rung would have had, the cells
    not fitted counted as lost: here 2 of 6, not 1 of the 3 fitted."""
    from sklearn.datasets import make_classification

    from structfs.model_selection._results import cell_best

    X, y = make_classification(300, 40, n_informative=3, flip_y=0.2, random_state=1)
    params = dict(Cs=[1, 10, 100, 1000, 1e4, 1e5], budgets=[2], scale_C=False)
    results = StructSVMCV(**params).fit(X, y).cv_results_
    C = np.asarray(results["param_C"], dtype=float)
    skipped = np.isnan(np.asarray(results["mean_test_score"]))
    assert skipped.any() and not skipped[C <= 100].any()
    assert np.asarray(results["pruned"])[skipped].all() and C[skipped].min() > C[~skipped].max()
    rung = 5                                              # HALVING_FIRST_RUNG
    continued = {c for c, k in zip(C, results["param_n_groups"]) if k is not None and k > rung}
    assert len(continued) == 2
    full = StructSVMCV(halving_factor=None, **params).fit(X, y).cv_results_
    assert not np.isnan(np.asarray(full["mean_test_score"])).any()
    # a cell's score for the steps: its best path-smoothed mean over the folds, a shorter fold path
    # keeping its last point
    outputs = [(np.array([0.5, 0.7, 0.6]),), (np.array([0.7, 0.9]),)]
    assert cell_best(outputs, 1, 2, 0) == pytest.approx(max((0.6 + 0.6 + 0.8) / 3, (0.6 + 0.8 + 0.75) / 3,
                                                            (0.8 + 0.75 + 0.75) / 3))
    assert cell_best([(np.array([0.3]),), (np.array([0.5]),)], 1, 2, 0) == 0.4


def test_rescoring_at_cv_cuts_with_a_memo_gives_the_answers_without():
    from structfs.model_selection._path import rescore_at_cv_cuts

    rng = np.random.default_rng(3)
    y_pm = np.where(rng.random(90) < 0.2, 1.0, -1.0)
    test_rows = [np.arange(f, 90, 3) for f in range(3)]
    decisions = [[rng.normal(size=30) + (k - 2) * y_pm[rows] for rows in test_rows] for k in range(4)]
    scores = [[rng.random() * 0.3 for _ in range(3)] for _ in range(4)]

    def table():
        return {"decisions": decisions, "scores": [list(s) for s in scores]}

    loss, memo = get_loss("f1"), {}
    plain = rescore_at_cv_cuts(table(), y_pm, test_rows, loss)
    first = rescore_at_cv_cuts(table(), y_pm, test_rows, loss, memo=memo)
    again = rescore_at_cv_cuts(table(), y_pm, test_rows, loss, memo=memo)      # every answer from the memo
    assert len(memo) == 4
    for other in (first, again):
        assert other["cuts"] == plain["cuts"] and other["scores"] == plain["scores"]
    assert any(cut != 0.0 for cut in plain["cuts"])


def test_halving_keeps_the_best_cell_of_every_version_of_the_data():
    """_survivors on made-up one-point paths: the best third of all cells, and the best cell of a version
    with none among them; a version already among them adds nothing."""
    cells = [(C, 5, v) for v in range(3) for C in (1.0, 10.0, 100.0)]
    best = [0.70, 0.80, 0.75, 0.60, 0.62, 0.61, 0.90, 0.85, 0.50]       # version 2 leads, version 1 trails
    table = {"C": [c[0] for c in cells], "budget": [5] * 9, "setting": [c[2] for c in cells],
             "scores": [[score] * 3 for score in best]}
    search = StructSVMCV(halving_factor=3)
    # ceil(9 / 3) = 3: cells 6, 7 (version 2) and 1 (version 0); version 1's best (cell 4) with them
    assert search._survivors(table, cells, list(range(9)), 9) == [1, 4, 6, 7]
    # cells 6 and 1 are the best third of a rung of six, one of each version left: nothing is added
    assert search._survivors(table, cells, [1, 2, 6, 8], 6) == [1, 6]


def test_a_search_over_versions_of_the_data_chooses_among_them_like_C():
    """fit_data on a SearchData source: over the full grid its versions' candidates are each version's
    own candidates on the same folds, reported as param_<name>, and the refit is the chosen version's;
    successive halving keeps a third of the cells of all versions together, not a third of each's, and
    the best cell of a version that has none among them."""
    from structfs.model_selection import SearchData

    X, y = _data(n=200, m=20, seed=2)
    noise = np.random.default_rng(9).normal(size=X.shape)

    class Noisy(SearchData):
        settings = ({"noise": 2.0}, {"noise": 0.0})

        def X(self, setting):
            return X + setting["noise"] * noise

    grid = dict(Cs=[10.0, 100.0], budgets=[None, 3], max_outer=4, halving_factor=None)
    search = StructSVMCV(**grid).fit_data(Noisy(), y)
    alone = [StructSVMCV(**grid).fit(Noisy().X(setting), y) for setting in Noisy.settings]
    results = search.cv_results_
    np.testing.assert_array_equal(results["mean_test_score"],
                                  np.concatenate([a.cv_results_["mean_test_score"] for a in alone]))
    n = len(alone[0].cv_results_["param_C"])
    assert results["param_noise"].tolist() == [2.0] * n + [0.0] * n
    assert results["params"][0]["noise"] == 2.0
    version = float(results["param_noise"][search.best_index_])
    chosen, X_chosen = alone[[2.0, 0.0].index(version)], Noisy().X({"noise": version})
    assert search.C_ == chosen.C_ and search.budget_ == chosen.budget_
    np.testing.assert_allclose(search.decision_function(X_chosen), chosen.decision_function(X_chosen))
    # 2 versions x 2 C x 2 budgets = 8 cells at the first rung (5 groups): ceil(8 / 3) = 3 run on, here all
    # of the clean version, and the noisy version's best with them (each version's own halving would keep
    # ceil(4 / 3) = 2 of its 4, 4 in all, but the noisy version's second too)
    halving = StructSVMCV(Cs=[10.0, 100.0], budgets=[2, 3], max_outer=10, n_iter_no_change=None).fit_data(Noisy(), y)
    cells = {(C, B, v) for C, B, v in zip(halving.cv_results_["param_C"], halving.cv_results_["param_budget"],
                                          halving.cv_results_["param_noise"])}
    pruned = {(C, B, v) for C, B, v, p in zip(halving.cv_results_["param_C"], halving.cv_results_["param_budget"],
                                              halving.cv_results_["param_noise"], halving.cv_results_["pruned"]) if p}
    assert len(cells) == 8 and len(pruned) == 4
    unpruned = cells - pruned
    assert sum(v == 0.0 for _, _, v in unpruned) == 3 and sum(v == 2.0 for _, _, v in unpruned) == 1
    with pytest.raises(ValueError, match="two classes"):
        StructSVMCV(**grid).fit_data(Noisy(), np.zeros(200))
