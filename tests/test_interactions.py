"""Second-order features (StructSVM(interactions=True)): the products of feature pairs are candidates
that are never all formed; what is selected, predicted, saved and trained from disk."""
import json
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from structfs import StructSVM, StructSVMCV
from structfs.cli import main
from structfs.model_io import load_model, save_model
from structfs.shards import write_shards

PLANTED = [(3, 17), (10, 11), (20, 27)]


def _planted(n=800, m=30, seed=0, density=0.2):
    """Binary features; the label is positive where one of the PLANTED pairs is on."""
    rng = np.random.default_rng(seed)
    X = (rng.random((n, m)) < density).astype(float)
    y = np.where(sum(X[:, j] * X[:, k] for j, k in PLANTED) > 0, 1, 0)
    return sp.csr_matrix(X), y


def _by_hand(model, X):
    X = sp.csr_matrix(X).toarray()
    pairs = sum(w * X[:, j] * X[:, k] for (j, k), w in zip(model.interactions_, model.interaction_coef_))
    return X @ model.coef_[0] + pairs + model.intercept_[0]


def test_planted_pairs_are_selected_and_predict():
    X, y = _planted()
    model = StructSVM(C=100.0, budget=3, interactions=True, max_outer=5).fit(X, y)
    found = {tuple(p) for p in model.interactions_.tolist()}
    assert set(PLANTED) <= found
    assert model.interactions_.shape == (model.interaction_coef_.shape[0], 2)
    assert np.all(model.interactions_[:, 0] < model.interactions_[:, 1])
    assert np.allclose(model.decision_function(X), _by_hand(model, X))
    assert np.mean(model.predict(X) == y) > 0.99
    linear = StructSVM(C=100.0, budget=3, max_outer=5).fit(X, y)
    assert not hasattr(linear, "interactions_")
    assert np.mean(linear.predict(X) == y) < np.mean(model.predict(X) == y)


def test_dense_and_sparse_input_give_the_same_model():
    X, y = _planted(n=300)
    a = StructSVM(C=100.0, budget=2, interactions=True, max_outer=3).fit(X, y)
    b = StructSVM(C=100.0, budget=2, interactions=True, max_outer=3).fit(X.toarray(), y)
    assert np.array_equal(a.interactions_, b.interactions_)
    assert a.objective_ == pytest.approx(b.objective_, rel=1e-4)     # BLAS's sums against compiled ones


def test_max_features_counts_features_and_pairs():
    X, y = _planted()
    model = StructSVM(C=100.0, budget=3, interactions=True, max_outer=20, max_features=4).fit(X, y)
    assert model.selected_features_.size + model.interaction_coef_.size <= 4
    assert model.stop_ == "max_features"


def test_columns_that_never_occur_keep_the_original_numbering():
    X, y = _planted(m=30)
    wide = sp.hstack([sp.csr_matrix((X.shape[0], 5)), X, sp.csr_matrix((X.shape[0], 4))]).tocsr()
    a = StructSVM(C=100.0, budget=3, interactions=True, max_outer=4).fit(X, y)
    b = StructSVM(C=100.0, budget=3, interactions=True, max_outer=4).fit(wide, y)
    assert np.array_equal(a.interactions_ + 5, b.interactions_)
    assert np.allclose(a.decision_function(X), b.decision_function(wide))


@pytest.mark.parametrize("bad", ["yes", 1, None, [True]])
def test_interactions_must_be_a_bool(bad):
    X, y = _planted(n=100)
    with pytest.raises(ValueError, match="interactions"):
        StructSVM(budget=2, interactions=bad).fit(X, y)


def test_interactions_need_a_budget_and_no_groups():
    X, y = _planted(n=100)
    with pytest.raises(ValueError, match="interactions=True needs a budget"):
        StructSVM(interactions=True).fit(X, y)
    with pytest.raises(ValueError, match="does not combine with groups"):
        StructSVM(budget=2, interactions=True, groups=np.arange(30)).fit(X, y)


def test_dense_data_too_wide_for_the_pair_scores_is_refused_before_any_work(monkeypatch):
    from structfs.solvers import interactions

    X, y = _planted(n=100)
    monkeypatch.setattr(interactions, "MAX_DENSE_SCORE_BYTES", 8 * 29 * 29)
    monkeypatch.setattr(interactions.PairExpansion, "candidate_scores", None)   # any work would fail
    with pytest.raises(ValueError, match=r"interactions=True on dense X with 30 features .* 30 x 30 matrix"):
        StructSVM(budget=2, interactions=True).fit(X.toarray(), y)
    with pytest.raises(ValueError, match="interactions=True on dense X"):
        StructSVMCV(interactions=True).fit(X.toarray(), y)
    with pytest.raises(TypeError):     # sparse input is accepted: it reaches the (disabled) scoring
        StructSVM(budget=2, interactions=True).fit(X, y)


def test_model_file_round_trips_the_pairs_and_an_older_reader_refuses_it(tmp_path):
    X, y = _planted()
    model = StructSVM(C=100.0, budget=3, interactions=True, max_outer=4).fit(X, y)
    path = tmp_path / "m.json"
    save_model(model, path)
    back = load_model(path)
    assert np.array_equal(back.interactions_, model.interactions_)
    assert np.array_equal(back.interaction_coef_, model.interaction_coef_)
    assert np.array_equal(back.decision_function(X), model.decision_function(X))
    doc = json.loads(path.read_text())
    assert doc["format_version"] == 4           # readers of versions <= 3 refuse it by its version
    doc["format_version"] = 3                   # and a version-3 record does not know the pairs
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="pair(s|_values) is not part of a model record"):
        load_model(path)
    doc["format_version"] = 4
    doc["models"][0]["pairs"][0] = [5, 5]
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="0 <= j < k"):
        load_model(path)


def test_training_from_shards_equals_the_in_memory_fit(tmp_path):
    X, y = _planted()
    disk = write_shards(X, y, tmp_path / "s", rows_per_shard=150)
    a = StructSVM(C=100.0, budget=3, interactions=True, max_outer=4).fit(X, y)
    b = StructSVM(C=100.0, budget=3, interactions=True, max_outer=4).fit(disk, disk.y)
    assert np.array_equal(a.interactions_, b.interactions_)
    assert a.objective_ == pytest.approx(b.objective_, rel=1e-6)
    assert np.allclose(b.decision_function(disk), a.decision_function(X))


def test_search_selects_pairs_and_counts_them_as_features():
    X, y = _planted()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search = StructSVMCV(interactions=True, Cs=[3.0], budgets=[3], max_outer=4).fit(X, y)
    assert set(PLANTED) <= {tuple(p) for p in search.interactions_.tolist()}
    assert search.cv_results_["mean_n_features"][search.best_index_] >= len(PLANTED)
    assert np.allclose(search.decision_function(X), _by_hand(search, X))


def test_cli_trains_and_evaluates_interactions_in_memory_and_from_shards(tmp_path, capsys):
    from sklearn.datasets import dump_svmlight_file

    X, y = _planted()
    data = tmp_path / "train.svm"
    dump_svmlight_file(X, np.where(y > 0, 1, -1), str(data), zero_based=False)
    model = tmp_path / "m.json"
    assert main(["train", "-c", "100", "-B", "3", "--interactions", "-v", "1", str(data), str(model)]) == 0
    assert "pairs per model" in capsys.readouterr().out
    assert load_model(model).interactions_.shape[0] >= len(PLANTED)
    shards = tmp_path / "shards"
    assert main(["shard", "-v", "0", str(data), str(shards)]) == 0
    for test in (data, shards):
        assert main(["evaluate", str(test), str(model)]) == 0
        assert "Zero/one-error on test set: 0.00%" in capsys.readouterr().out


def test_debiasing_refits_the_selected_features_and_pairs():
    X, y = _planted()
    model = StructSVM(C=100.0, budget=3, interactions=True, max_outer=4, refit=100.0).fit(X, y)
    # the planted pairs carry the weight; a pair the path also generated keeps at most round-off
    # (which pairs those are depends on the masters' round-off: 1e-14 against weights of about 14)
    weights = {tuple(p): w for p, w in zip(model.interactions_.tolist(), model.interaction_coef_)}
    assert set(PLANTED) <= set(weights)
    top = max(abs(w) for w in weights.values())
    assert all(abs(w) <= 1e-9 * top for pair, w in weights.items() if pair not in PLANTED)
    assert np.allclose(model.decision_function(X), _by_hand(model, X))
