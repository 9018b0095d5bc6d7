"""Many labels under one measure and one budget: the joint loss against brute force, the joint objective
against cvxpy, the shared budget, the input forms and bad input."""
import itertools
import warnings

import cvxpy as cp
import numpy as np
import pytest
from sklearn.datasets import make_multilabel_classification

from structfs import MultiLabelStructSVM, MultiLabelStructSVMCV
from structfs.losses import get_loss
from structfs.multilabel import LabelwiseLoss, expand


def _labelings(n):
    for bits in itertools.product((-1.0, 1.0), repeat=n):
        yield np.array(bits)


def macro_delta(y, y_bar, n_labels, base="f1"):
    loss = get_loss(base)
    return np.mean([loss.delta(yl, bl) for yl, bl in zip(y.reshape(-1, n_labels).T, y_bar.reshape(-1, n_labels).T)])


@pytest.mark.parametrize("base", ["f1", "error", "prec@rec"])
def test_macro_oracle_attains_the_brute_force_maximum(base):
    """Delta = the labels' mean loss; Psi = the labels' joint features scaled by 1/L. The oracle's
    output attains max over all labelings of the n L decisions of Delta - coef . s."""
    rng = np.random.default_rng(0)
    for _ in range(30):
        n_labels, n = int(rng.integers(1, 4)), int(rng.integers(2, 5))
        y = np.where(rng.random(n * n_labels) < 0.5, 1.0, -1.0)
        y.reshape(n, n_labels)[0, :] = 1.0                       # every label has a positive
        s = rng.normal(size=n * n_labels) * 3
        loss = LabelwiseLoss(base, n_labels)
        coef, delta = loss.most_violated(y, s)
        best = -np.inf
        for y_bar in _labelings(n * n_labels):
            blocks = y_bar.reshape(-1, n_labels).T
            if base == "prec@rec" and any(
                    np.sum((yl > 0) & (bl > 0)) < np.ceil(0.9 * np.sum(yl > 0) - 1e-9)
                    for yl, bl in zip(y.reshape(-1, n_labels).T, blocks)):
                continue
            joint_coef = (50.0 / n) * (y - y_bar) / n_labels
            best = max(best, macro_delta(y, y_bar, n_labels, base) - joint_coef @ s)
        assert delta - coef @ s == pytest.approx(best, abs=1e-9)


@pytest.mark.parametrize("average", ["micro", "macro"])
def test_joint_objective_is_the_exact_optimum(average):
    rng = np.random.default_rng(1)
    n, n_labels = 4, 2
    X = rng.normal(size=(n, 2))
    Y = np.array([[1, 0], [0, 1], [1, 1], [0, 0]])
    model = MultiLabelStructSVM(C=10.0, average=average, tol=1e-6).fit(X, Y)
    rows = np.hstack([expand(X, n_labels).toarray(), np.ones((n * n_labels, 1))])   # the shared intercept
    y = np.where(np.ravel(Y) == 1, 1.0, -1.0)
    planes, deltas = [], []
    for y_bar in _labelings(n * n_labels):
        if average == "micro":
            coef, delta = (50.0 / (n * n_labels)) * (y - y_bar), get_loss("f1").delta(y, y_bar)
        else:
            coef, delta = (50.0 / n) * (y - y_bar) / n_labels, macro_delta(y, y_bar, n_labels)
        planes.append(coef @ rows)
        deltas.append(delta)
    w, xi = cp.Variable(rows.shape[1]), cp.Variable(nonneg=True)
    constraints = [np.array(planes) @ w >= np.array(deltas) - xi]
    problem = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(w) + 10.0 * xi), constraints)
    problem.solve(solver=cp.CLARABEL)
    assert model.lower_bound_ <= problem.value * (1 + 1e-6) + 1e-9
    assert problem.value <= model.objective_ * (1 + 1e-6)
    assert model.objective_ - problem.value <= model.gap_ + 1e-6 * problem.value


def test_shared_budget_caps_the_features_all_labels_use():
    X, Y = make_multilabel_classification(300, n_features=40, n_classes=5, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = MultiLabelStructSVM(C=100.0, budget=6).fit(X, Y)
        free = MultiLabelStructSVM(C=100.0).fit(X, Y)
    assert 1 <= len(model.selected_features_) <= 6
    assert np.all(model.coef_[:, np.setdiff1d(np.arange(40), model.selected_features_)] == 0)
    assert model.coef_.shape == (5, 40) and model.intercept_.shape == (5,)
    assert len(free.selected_features_) == 40
    P = model.predict(X)
    assert P.shape == (300, 5) and set(np.unique(P)) <= {0, 1}
    assert np.array_equal(P, (model.decision_function(X) > 0).astype(int))


def test_micro_f1_of_the_joint_model_is_its_score():
    from sklearn.metrics import f1_score

    X, Y = make_multilabel_classification(300, n_features=20, n_classes=4, random_state=2)
    model = MultiLabelStructSVM(C=100.0).fit(X[:200], Y[:200])
    assert model.score(X[200:], Y[200:]) == pytest.approx(f1_score(Y[200:], model.predict(X[200:]), average="micro"))
    macro = MultiLabelStructSVM(C=100.0, average="macro").fit(X[:200], Y[:200])
    assert macro.score(X[200:], Y[200:]) == pytest.approx(f1_score(Y[200:], macro.predict(X[200:]), average="macro"))


def test_a_class_vector_is_its_one_hot_form_and_gets_one_class_per_row():
    """Fitted on a class vector, the model marks each row's top-scoring label only (its class), and its
    score is the measure of those decisions (micro-F1 of one-hot rows: the accuracy); fitted on the
    same labels as an indicator matrix, it cuts every label at 0."""
    from sklearn.metrics import f1_score

    rng = np.random.default_rng(0)
    X = rng.normal(size=(90, 5))
    y = np.array(["a", "b", "c"])[np.argmax(X[:, :3] + rng.normal(scale=0.5, size=(90, 3)), axis=1)]
    model = MultiLabelStructSVM(C=100.0).fit(X, y)
    assert model.single_label_ and list(model.classes_) == ["a", "b", "c"]
    P = model.predict(X)
    assert P.shape == (90, 3) and np.all(P.sum(axis=1) == 1)
    assert np.array_equal(P.argmax(axis=1), model.decision_function(X).argmax(axis=1))
    accuracy = np.mean(model.classes_[P.argmax(axis=1)] == y)
    assert model.score(X, y) == pytest.approx(accuracy) and accuracy > 0.6
    one_hot = (y[:, None] == model.classes_[None, :]).astype(int)
    assert model.score(X, y) == pytest.approx(f1_score(one_hot, P, average="micro"))
    indicator = MultiLabelStructSVM(C=100.0).fit(X, one_hot)
    assert not indicator.single_label_
    assert np.array_equal(indicator.predict(X), (indicator.decision_function(X) > 0).astype(int))


def test_a_single_label_search_chooses_by_the_top_label():
    """MultiLabelStructSVMCV on a class vector scores its candidates by the decisions predict makes: its
    best_score_ is the mean over the folds of the top label's measure, which the cut at 0 does not give."""
    from structfs.multilabel import TopLabelScorer

    rng = np.random.default_rng(1)
    X = rng.normal(size=(150, 6))
    y = np.argmax(X[:, :3] + rng.normal(scale=0.7, size=(150, 3)), axis=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = MultiLabelStructSVMCV(cv=3).fit(X, y)
    assert model.single_label_ and isinstance(model.search_.scoring, TopLabelScorer)
    results = model.cv_results_
    folds = np.array([results[f"split{f}_test_score"][model.search_.best_index_] for f in range(3)])
    assert model.best_score_ == pytest.approx(folds.mean())
    assert np.all(model.predict(X).sum(axis=1) == 1)


def test_cross_validation_keeps_the_cap_on_distinct_features():
    X, Y = make_multilabel_classification(240, n_features=30, n_classes=3, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = MultiLabelStructSVMCV(max_features=8).fit(X, Y)
    assert len(model.selected_features_) <= 8 and model.C_ > 0
    assert model.budget_ is not None and model.budget_ <= 8


@pytest.mark.parametrize("params,Y,match", [
    ({"average": "weighted"}, None, "average"),
    ({"budget": 0}, None, "budget"),
    ({}, np.array([[0, 2], [1, 0], [1, 1]]), "0/1"),
    ({}, np.array([[0, 1], [1, 1], [0, 1]])[:, [1, 0]] * np.array([1, 0]), "no positive"),
])
def test_bad_input_names_the_argument(params, Y, match):
    X = np.eye(3)
    Y = np.array([[0, 1], [1, 0], [1, 1]]) if Y is None else Y
    with pytest.raises(ValueError, match=match):
        MultiLabelStructSVM(**params).fit(X, Y)


def test_model_files_round_trip_exactly(tmp_path):
    from structfs import load_model, save_model

    X, Y = make_multilabel_classification(200, n_features=20, n_classes=3, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fitted = [MultiLabelStructSVM(C=10.0, budget=5).fit(X, Y), MultiLabelStructSVMCV(max_features=6).fit(X, Y),
                  MultiLabelStructSVM(C=10.0).fit(X, np.array(list("abc"))[Y.argmax(axis=1)])]
    for model in fitted:
        save_model(model, tmp_path / "m.json")
        loaded = load_model(tmp_path / "m.json")
        assert isinstance(loaded, MultiLabelStructSVM)
        assert np.array_equal(loaded.decision_function(X), model.decision_function(X))
        assert np.array_equal(loaded.predict(X), model.predict(X))
        assert list(loaded.classes_) == list(model.classes_) and loaded.single_label_ == model.single_label_
    assert fitted[2].single_label_ and not fitted[0].single_label_


def test_a_file_that_would_predict_otherwise_is_refused(tmp_path):
    """single_label comes with format version 5 (a version-4 reader would cut at 0 instead), only as
    true, and only on multi-label models."""
    import json

    from structfs import load_model, save_model

    X, Y = make_multilabel_classification(120, n_features=10, n_classes=3, random_state=0)
    save_model(MultiLabelStructSVM(C=10.0).fit(X, Y.argmax(axis=1)), tmp_path / "m.json")
    doc = json.loads((tmp_path / "m.json").read_text())
    assert doc["format_version"] == 5 and doc["single_label"] is True
    for change, match in (({"format_version": 4}, "single_label"), ({"single_label": False}, "single_label"),
                          ({"single_label": 1}, "single_label"), ({"kind": "one-vs-rest"}, "single_label")):
        (tmp_path / "bad.json").write_text(json.dumps({**doc, **change}))
        with pytest.raises(ValueError, match=match):
            load_model(tmp_path / "bad.json")


def test_command_line_trains_a_shared_budget_on_comma_separated_labels(tmp_path, capsys):
    from sklearn.datasets import dump_svmlight_file

    from structfs import load_model
    from structfs.cli import main

    X, Y = make_multilabel_classification(300, n_features=20, n_classes=4, random_state=0)
    dump_svmlight_file(X[:200], Y[:200], str(tmp_path / "train"), multilabel=True, zero_based=False)
    dump_svmlight_file(X[200:], Y[200:], str(tmp_path / "test"), multilabel=True, zero_based=False)
    assert main(["train", "--multilabel", "-B", "5", "-c", "100", "-v", "0", str(tmp_path / "train"),
                 str(tmp_path / "model")]) == 0
    assert len(load_model(tmp_path / "model").selected_features_) <= 5
    assert main(["evaluate", str(tmp_path / "test"), str(tmp_path / "model")]) == 0
    assert "micro-F1" in capsys.readouterr().out
    assert main(["predict", "-v", "0", str(tmp_path / "test"), str(tmp_path / "model"), str(tmp_path / "out")]) == 0
    assert np.loadtxt(tmp_path / "out").shape == (100, 4)
    assert main(["train", "--multilabel", "--average", "macro", "--cv", "3", "--max-features", "6", "-v", "0",
                 str(tmp_path / "train"), str(tmp_path / "model2")]) == 0
    assert len(load_model(tmp_path / "model2").selected_features_) <= 6


def test_command_line_evaluates_a_class_vector_model_by_its_top_label(tmp_path, capsys):
    """A model fitted on a class vector (saved from Python) is evaluated on the command line by the
    decisions its predict makes: one class per example."""
    from sklearn.datasets import dump_svmlight_file
    from sklearn.metrics import f1_score

    from structfs import save_model
    from structfs.cli import main

    X, Y = make_multilabel_classification(300, n_features=20, n_classes=3, n_labels=1, allow_unlabeled=False,
                                          random_state=0)
    y = Y.argmax(axis=1)
    model = MultiLabelStructSVM(C=100.0).fit(X[:200], y[:200])
    save_model(model, tmp_path / "model")
    one_hot = (y[200:, None] == model.classes_[None, :]).astype(int)
    dump_svmlight_file(X[200:], one_hot, str(tmp_path / "test"), multilabel=True, zero_based=False)
    assert main(["evaluate", str(tmp_path / "test"), str(tmp_path / "model")]) == 0
    printed = capsys.readouterr().out
    micro = 100 * f1_score(one_hot, model.predict(X[200:]), average="micro")
    assert "top-scoring label" in printed and f"micro-F1: {micro:6.2f}" in printed


def test_the_searched_model_is_the_one_returned():
    """MultiLabelStructSVMCV's model is its search's refitted joint model read per label (one fit on all
    the data, one intercept): the model the search scored."""
    X, Y = make_multilabel_classification(150, n_features=12, n_classes=3, random_state=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = MultiLabelStructSVMCV(Cs=[1.0], max_features=None).fit(X, Y)
    joint = np.asarray(model.search_.coef_.toarray() if hasattr(model.search_.coef_, "toarray")
                       else model.search_.coef_).reshape(12, 3).T
    np.testing.assert_array_equal(model.coef_, joint)
    assert np.all(model.intercept_ == model.search_.intercept_[0])
    expanded = expand(X, 3)
    np.testing.assert_allclose(np.ravel(model.decision_function(X)), model.search_.decision_function(expanded))
