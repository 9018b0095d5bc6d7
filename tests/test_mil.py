"""MILES embedding against a brute-force loop, the MIL CSV loader, and MILESClassifier."""
import lzma
import os
from pathlib import Path

import numpy as np
import pytest

from structfs import StructSVM, StructSVMCV
from structfs.datasets import load_mil_csv
from structfs.metrics import f1
from structfs.mil import MILESClassifier, MILESEmbedding

DATA = os.environ.get("STRUCTFS_DATA")


def _bags(rng, n_bags=12, d=3, shift=2.0):
    bags, y = [], []
    for i in range(n_bags):
        inst = rng.normal(size=(int(rng.integers(1, 6)), d))
        if i % 2 == 0:                    # positive bags hold one instance near the "concept"
            inst[0] = shift + 0.1 * rng.normal(size=d)
        bags.append(inst)
        y.append(1 if i % 2 == 0 else 0)
    return bags, np.array(y)


@pytest.mark.parametrize("block_rows", [128, 4, 1])       # one block, several bags a block, one bag a block
def test_leave_own_out_matches_brute_force(monkeypatch, block_rows):
    import structfs.mil as mil

    monkeypatch.setattr(mil, "_OWN_BLOCK_ROWS", block_rows)
    rng = np.random.default_rng(4)
    bags = [rng.normal(size=(k, 3)) for k in (1, 3, 2, 5, 1, 4)]
    bags[3][2] = bags[3][0]                                  # a duplicate instance: distance 0 stays 0
    emb = MILESEmbedding(sigma=1.0).fit(bags)
    D = emb.min_sq_distances(bags)
    out = emb.leave_own_out(D)
    pool = np.vstack([(b - emb.mean_) / emb.scale_ for b in bags])
    for k in range(pool.shape[0]):
        i = emb.pool_bag_[k]
        others = [j for j in np.flatnonzero(emb.pool_bag_ == i) if j != k]
        expected = min((np.sum((pool[j] - pool[k]) ** 2) for j in others), default=np.inf)
        assert out[i, k] == pytest.approx(expected, abs=1e-9)
    own = emb.pool_bag_[None, :] == np.arange(len(bags))[:, None]
    assert np.array_equal(out[~own], D[~own]) and np.allclose(D[own], 0.0, atol=1e-9)
    assert out[3, np.flatnonzero(emb.pool_bag_ == 3)[2]] == pytest.approx(0.0, abs=1e-9)
    with pytest.raises(ValueError, match="training bags"):
        emb.leave_own_out(D[:2])


def test_embedding_matches_brute_force():
    rng = np.random.default_rng(0)
    bags, _ = _bags(rng)
    emb = MILESEmbedding(sigma=1.3).fit(bags)
    pool = np.vstack(bags)
    mean, std = pool.mean(0), pool.std(0)
    pool = (pool - mean) / std
    query = [(b - mean) / std for b in _bags(np.random.default_rng(1))[0]]
    expected = np.array([[max(np.exp(-np.sum((x - p) ** 2) / (2 * 1.3 ** 2)) for x in bag) for p in pool]
                         for bag in query])
    assert np.allclose(emb.transform(_bags(np.random.default_rng(1))[0]), expected, atol=1e-12)
    assert np.array_equal(emb.pool_bag_, np.repeat(np.arange(len(bags)), [len(b) for b in bags]))


def test_embedding_blocks_do_not_change_the_result(monkeypatch):
    import structfs.mil as mil

    rng = np.random.default_rng(2)
    bags, _ = _bags(rng, n_bags=30)
    full = MILESEmbedding().fit(bags).transform(bags)
    monkeypatch.setattr(mil, "_BLOCK", 7)          # one bag per block
    assert np.allclose(MILESEmbedding().fit(bags).transform(bags), full)


def test_default_sigma_is_about_the_dimension_for_standardised_data():
    rng = np.random.default_rng(3)
    bags = [rng.normal(size=(5, 40)) * rng.uniform(1, 9, 40) for _ in range(30)]
    emb = MILESEmbedding().fit(bags)
    assert 0.5 * 40 <= emb.sigma_ ** 2 <= 2 * 40


def test_classifier_finds_the_concept_and_reports_instances():
    rng = np.random.default_rng(4)
    bags, y = _bags(rng, n_bags=40)
    clf = MILESClassifier(estimator=StructSVM(C=100.0, budget=3)).fit(bags, y)
    assert (clf.predict(bags) == y).mean() >= 0.9
    inst = clf.selected_instances_
    assert inst.ndim == 2 and inst.shape[1] == 2 and len(inst) >= 1
    assert np.array_equal(inst[:, 1], clf.embedding_.pool_bag_[inst[:, 0]])
    assert clf.decision_function(bags).shape == (40,)


def test_load_mil_csv_plain_and_xz(tmp_path):
    text = "1,7,0.5,1.0\n0,3,2.0,3.0\n1,7,1.5,2.5\n0,3,4.0,5.0\n1,9,0.0,0.0\n"
    for path, opener in ((tmp_path / "toy.csv", open), (tmp_path / "toy.csv.xz", lzma.open)):
        with opener(path, "wt") as fh:
            fh.write(text)
        bags, y, ids = load_mil_csv(path)
        assert list(ids) == [7, 3, 9] and list(y) == [1, 0, 1]
        assert np.array_equal(bags[0], [[0.5, 1.0], [1.5, 2.5]]) and bags[2].shape == (1, 2)


@pytest.mark.skipif(not DATA, reason="STRUCTFS_DATA is not set: the shared MIL benchmarks are absent")
def test_shared_mil_files_load_as_documented():
    bags, y, _ = load_mil_csv(Path(DATA) / "mil" / "musk1.csv.xz")
    assert len(bags) == 92 and y.sum() == 47 and sum(len(b) for b in bags) == 476
    assert bags[0].shape[1] == 166


def test_bad_bags_raise_before_work():
    rng = np.random.default_rng(5)
    bags, y = _bags(rng)
    with pytest.raises(ValueError, match="empty"):
        MILESEmbedding().fit(bags + [np.zeros((0, 3))])
    with pytest.raises(ValueError, match="features"):
        MILESEmbedding().fit(bags + [np.zeros((2, 4))])
    with pytest.raises(ValueError, match="NaN"):
        MILESEmbedding().fit(bags + [np.array([[np.nan, 0, 0]])])
    with pytest.raises(ValueError, match="2-D"):
        MILESEmbedding().fit(bags + [np.zeros(3)])
    with pytest.raises(ValueError, match="sigma"):
        MILESEmbedding(sigma=0).fit(bags)
    with pytest.raises(ValueError, match="sigma"):
        MILESClassifier(sigma=-1.0).fit(bags, y)
    with pytest.raises(ValueError, match="one class"):
        MILESClassifier().fit(bags, np.ones(len(bags)))
    with pytest.raises(ValueError, match="one label per bag"):
        MILESClassifier().fit(bags, y[:-1])
    emb = MILESEmbedding().fit(bags)
    with pytest.raises(ValueError, match="features"):
        emb.transform([np.zeros((2, 5))])


def test_max_instances_is_a_hard_cap():
    rng = np.random.default_rng(6)
    bags, y = _bags(rng, n_bags=40)
    clf = MILESClassifier(estimator=StructSVM(C=100.0, budget=3), max_instances=2).fit(bags, y)
    assert len(clf.selected_instances_) <= 2
    assert clf.decision_function(bags).shape == (40,)
    assert (clf.predict(bags) == y).mean() >= 0.8
    with pytest.raises(ValueError, match="max_instances"):
        MILESClassifier(max_instances=0).fit(bags, y)


def test_max_instances_with_a_budget_stops_feature_generation_without_truncating():
    rng = np.random.default_rng(6)
    bags, y = _bags(rng, n_bags=40)
    clf = MILESClassifier(estimator=StructSVM(C=100.0, budget=1, max_outer=100), max_instances=3).fit(bags, y)
    assert len(clf.selected_instances_) == 3 and np.array_equal(clf.columns_, np.arange(clf.embedding_.pool_.shape[0]))
    Z = clf.embedding_.transform(bags)            # the same fit as StructSVM's max_features on the embedding
    ref = StructSVM(C=100.0, budget=1, max_outer=100, max_features=3).fit(Z, y)
    assert np.array_equal(clf.selected_instances_[:, 0], ref.selected_features_)
    assert np.allclose(clf.decision_function(bags), ref.decision_function(Z))
    unbudgeted = MILESClassifier(estimator=StructSVM(C=100.0), max_instances=3).fit(bags, y)      # truncation and refit
    assert len(unbudgeted.selected_instances_) <= 3 and unbudgeted.columns_.shape == (3,)


def test_a_small_instance_cap_shrinks_the_default_groups_so_the_path_has_five_points():
    rng = np.random.default_rng(6)
    bags, y = _bags(rng, n_bags=40)
    clf = MILESClassifier(max_instances=10).fit(bags, y)
    assert set(clf.estimator_.cv_results_["param_budget"]) == {2} and len(clf.selected_instances_) <= 10
    assert MILESClassifier(max_instances=10).get_params()["estimator"] is None       # fit did not touch it


def test_default_classifier_selects_C_budget_instances_and_sigma_by_cv():
    rng = np.random.default_rng(7)
    bags, y = _bags(rng, n_bags=36)
    clf = MILESClassifier(max_instances=4).fit(bags, y)
    est = clf.estimator_
    assert isinstance(est, StructSVMCV)
    assert len(clf.selected_instances_) <= 4
    assert clf.embedding_.sigma_ in set(est.cv_results_["param_sigma"])
    default = MILESEmbedding().fit(bags).sigma_
    assert np.allclose(sorted(set(est.cv_results_["param_sigma"])), [0.5 * default, default, 2.0 * default])
    assert (clf.predict(bags) == y).mean() >= 0.8
    # a validation bag never scores against its own instances: fold columns come from training bags only
    fixed = MILESClassifier(sigma=[1.0, 2.0], estimator=StructSVMCV(Cs=[10.0], budgets=[1])).fit(bags, y)
    assert set(fixed.estimator_.cv_results_["param_sigma"]) == {1.0, 2.0}


def test_loss_shortcut_and_its_conflict_with_an_estimator():
    rng = np.random.default_rng(8)
    bags, y = _bags(rng, n_bags=24)
    clf = MILESClassifier(loss="auc", estimator=None)
    assert clf.get_params()["loss"] == "auc"
    with pytest.raises(ValueError, match="loss"):
        MILESClassifier(loss="auc", estimator=StructSVM()).fit(bags, y)
    with pytest.raises(ValueError, match="sigma"):
        MILESClassifier(sigma=[]).fit(bags, y)


def test_the_search_falls_back_to_a_ranking_loss_when_every_candidate_is_the_zero_model(monkeypatch):
    # A MILES embedding has about as many features as training bags, so no small MIL problem has its
    # F1 optimum at w = 0; the F1 search's tables are made featureless to stand in for one.
    rng = np.random.default_rng(9)
    bags, y = _bags(rng, n_bags=24)
    search = StructSVMCV._search

    def f1_featureless(self, *args, **kwargs):
        table = search(self, *args, **kwargs)
        if self.loss == "f1":
            table["n_features"] = [0.0] * len(table["n_features"])
        return table

    monkeypatch.setattr(StructSVMCV, "_search", f1_featureless)
    est = StructSVMCV(Cs=[10.0], budgets=[1], max_outer=3)
    with pytest.warns(UserWarning, match="zero model"):
        clf = MILESClassifier(estimator=est, sigma=[1.0, 2.0]).fit(bags, y)
    assert clf.estimator_.loss_.name == "auc" and est.loss == "f1"          # the user's estimator untouched
    # the ranking model's threshold is the best cut of F1 on the training bags' scores, each bag without
    # its own instances (their similarity 1 would inflate its score above any new bag's)
    emb = clf.embedding_
    Z = np.exp(-emb.leave_own_out(emb.min_sq_distances(bags)) / (2.0 * emb.sigma_ ** 2))[:, clf.columns_]
    s, y_pm = clf.estimator_.decision_function(Z), np.where(y == 1, 1.0, -1.0)
    assert not np.allclose(s, clf.decision_function(bags))
    cuts = np.unique(s)
    best = max(f1(y_pm, s - t) for t in np.concatenate(((cuts[1:] + cuts[:-1]) / 2, [cuts[0] - 1])))
    assert f1(y_pm, s) == pytest.approx(best)


def test_the_kernel_width_used_is_sigma_():
    rng = np.random.default_rng(7)
    bags, y = _bags(rng)
    clf = MILESClassifier(sigma=1.5, estimator=StructSVM(C=10.0)).fit(bags, y)
    assert clf.sigma_ == clf.embedding_.sigma_ == 1.5


def test_n_jobs_runs_the_default_search_in_parallel_with_the_same_model():
    rng = np.random.default_rng(8)
    bags, y = _bags(rng, n_bags=24)
    serial = MILESClassifier(max_instances=6).fit(bags, y)
    parallel = MILESClassifier(max_instances=6, n_jobs=2).fit(bags, y)
    assert parallel.estimator_.n_jobs == 2
    assert np.array_equal(serial.selected_instances_, parallel.selected_instances_)
    assert np.allclose(serial.decision_function(bags), parallel.decision_function(bags))
    with pytest.raises(ValueError, match="n_jobs"):
        MILESClassifier(n_jobs=2, estimator=StructSVM()).fit(bags, y)


def test_instance_scores_add_up_to_the_decision_and_point_at_the_witness():
    """Each bag's instance scores sum to its decision value less the intercept, and in positive bags
    the instance that carries the concept (the shifted one) has the largest score."""
    rng = np.random.default_rng(0)
    bags = [rng.normal(size=(int(rng.integers(2, 7)), 3)) for _ in range(90)]
    y = np.array([int(i % 3 == 0) for i in range(90)])
    witness = {}
    for i in np.flatnonzero(y):
        witness[i] = int(rng.integers(len(bags[i])))
        bags[i][witness[i]] += 3.0
    clf = MILESClassifier().fit(bags[:60], y[:60])
    scores = clf.instance_scores(bags[60:])
    assert [s.shape for s in scores] == [(len(b),) for b in bags[60:]]
    totals = np.array([s.sum() for s in scores]) + clf.estimator_.intercept_[0]
    assert np.allclose(totals, clf.decision_function(bags[60:]), atol=1e-10)
    hits = [int(np.argmax(scores[i - 60])) == witness[i] for i in witness if i >= 60]
    assert np.mean(hits) >= 0.9
