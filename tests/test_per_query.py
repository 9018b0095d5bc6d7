"""Query ids: the loss averaged over queries, its oracle each query's own (exact, as H splits per query);
the losses guide's NDCG@k example verified by check_loss and fitted per query."""
import importlib
import pathlib
import re
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from structfs import StructSVM
from structfs.losses import PerQuery, get_loss

GUIDE = pathlib.Path(__file__).parents[1] / "docs" / "losses.md"


def _queries(seed, n_queries=12, per_query=15):
    rng = np.random.default_rng(seed)
    qid = np.repeat(np.arange(n_queries) * 7 + 3, per_query)
    X = rng.normal(size=(qid.shape[0], 6))
    y = (X[:, 0] - 0.5 * X[:, 1] + 0.4 * (qid % 5) + 0.7 * rng.normal(size=qid.shape[0])
         > 1.0 + 0.4 * (qid % 5)).astype(int)
    y[::per_query], y[1::per_query] = 1, 0           # every query has both classes
    return X, y, qid


@settings(max_examples=20, deadline=None)
@given(name=st.sampled_from(["auc", "ap", "f1", "prec@k", "error"]), seed=st.integers(0, 10_000))
def test_the_oracle_is_each_querys_oracle_averaged(name, seed):
    X, y, qid = _queries(seed, n_queries=4, per_query=6)
    rng = np.random.default_rng(seed)
    y_pm, s = np.where(y > 0, 1.0, -1.0), np.round(rng.normal(size=y.shape[0]), 1)
    order = rng.permutation(y.shape[0])            # queries' rows need not be contiguous
    y_pm, s, qid = y_pm[order], s[order], qid[order]
    loss = get_loss(name)
    coef, delta = PerQuery(loss, qid).oracle(y_pm, s)
    parts = [loss.oracle(y_pm[qid == q], s[qid == q]) for q in np.unique(qid)]
    assert delta == pytest.approx(np.mean([d for _, d in parts]))
    assert delta - coef @ s == pytest.approx(np.mean([d - c @ s[qid == q] for (c, d), q in zip(parts, np.unique(qid))]))
    assert PerQuery(loss, qid).score(y_pm, s) == pytest.approx(
        np.mean([loss.score(y_pm[qid == q], s[qid == q]) for q in np.unique(qid)]))


def test_a_fit_with_query_ids_is_certified_and_scored_per_query():
    X, y, qid = _queries(1)
    model = StructSVM(loss="auc", C=30.0).fit(X, y, qid=qid)
    assert model.converged_
    per_query = [StructSVM.score(model, X[qid == q], y[qid == q]) for q in np.unique(qid)]
    assert model.score(X, y, qid=qid) == pytest.approx(np.mean(per_query))
    # the mean over queries is another problem than the pooled one
    assert model.objective_ != pytest.approx(StructSVM(loss="auc", C=30.0).fit(X, y).objective_)


def test_one_vs_rest_passes_the_query_ids_to_each_class():
    from structfs import OneVsRestStructSVM

    X, y, qid = _queries(6)
    y3 = y + (X[:, 2] > 1.0).astype(int)
    model = OneVsRestStructSVM(StructSVM(loss="error", C=10.0)).fit(X, y3, qid=qid)
    for est, c in zip(model.estimators_, model.classes_):
        alone = StructSVM(loss="error", C=10.0).fit(X, (y3 == c).astype(int), qid=qid)
        assert est.objective_ == pytest.approx(alone.objective_, rel=1e-9)
    assert model.score(X, y3, qid=qid) == pytest.approx(np.mean(
        [est.score(X, (y3 == c).astype(int), qid=qid) for est, c in zip(model.estimators_, model.classes_)]))


def test_bad_query_ids_are_refused_naming_the_argument():
    X, y, qid = _queries(2)
    with pytest.raises(ValueError, match=r"qid must have shape \(180,\)"):
        StructSVM(loss="auc").fit(X, y, qid=qid[:-1])
    lonely = qid.copy()
    lonely[y == 1] = -1                 # query -1 holds every positive, the others none
    with pytest.raises(ValueError, match=r"query -1 \(qid\): y must contain both classes"):
        StructSVM(loss="auc").fit(X, y, qid=lonely)
    with pytest.raises(ValueError, match="qid must hold integer, string or finite float"):
        StructSVM(loss="auc").fit(X, y, qid=np.where(qid > 20, np.nan, qid))
    as_text = np.array([f"q{q}" for q in qid], dtype=object)        # a pandas column of strings
    assert StructSVM(loss="auc", C=10.0).fit(X, y, qid=as_text).objective_ == pytest.approx(
        StructSVM(loss="auc", C=10.0).fit(X, y, qid=qid).objective_)
    with pytest.raises(ValueError, match="operating point"):
        StructSVM(loss="prec@rec").fit(X, y, qid=qid)
    with pytest.raises(ValueError, match="sample_weight and qid together"):
        StructSVM(loss="auc").fit(X, y, qid=qid, sample_weight=np.arange(180) % 3)


@pytest.fixture()
def ndcg_example(tmp_path, monkeypatch):
    """The guide's NDCG@k loss as an importable module (numba caches by file; models pickle by name)."""
    guide = GUIDE.read_text(encoding="utf-8")
    start = guide.index("A worked example, a new ranking loss")
    code = re.search(r"```python\n(.*?)```", guide[start:], re.S).group(1)
    (tmp_path / "ndcg_example.py").write_text(code, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "numba"))
    module = importlib.import_module("ndcg_example")       # runs the guide's check_loss
    yield module
    sys.modules.pop("ndcg_example", None)


def test_the_guide_ndcg_loss_is_exact_and_fits_per_query(ndcg_example):
    loss = ndcg_example.NDCGAtK(k=3)
    rng = np.random.default_rng(0)
    for _ in range(20):                      # the oracle against every ranking, beyond check_loss's sizes
        y = np.where(rng.random(7) < 0.4, 1.0, -1.0)
        y[:2] = [1.0, -1.0]
        s = np.round(rng.normal(size=7), 1)
        coef, delta = loss.oracle(y, s)
        assert delta - coef @ s == pytest.approx(max(d - c @ s for c, d in loss.outputs(y)), abs=1e-9)
    X, y, qid = _queries(3)
    model = StructSVM(loss=ndcg_example.NDCGAtK(k=5), C=30.0).fit(X, y, qid=qid)
    assert model.converged_ and 0.5 < model.score(X, y, qid=qid) <= 1.0


def test_a_search_with_query_ids_splits_and_scores_by_query():
    from sklearn.model_selection import GroupKFold

    from structfs import StructSVMCV

    X, y, qid = _queries(4, n_queries=9, per_query=14)
    search = StructSVMCV(loss="auc", Cs=[10.0], budgets=[None], cv=3).fit(X, y, qid=qid)
    by_hand = []
    for train, test in GroupKFold(3).split(X, y, groups=qid):
        assert not set(qid[train]) & set(qid[test])
        fold = StructSVM(loss="auc", C=10.0, tol=0.1).fit(X[train], y[train], qid=qid[train])
        by_hand.append(fold.score(X[test], y[test], qid=qid[test]))
    assert search.best_score_ == pytest.approx(np.mean(by_hand), abs=1e-6)
    assert search.score(X, y, qid=qid) == pytest.approx(
        StructSVM(loss="auc", C=10.0).fit(X, y, qid=qid).score(X, y, qid=qid), abs=1e-3)
    with pytest.raises(ValueError, match="qid needs scoring=None"):
        StructSVMCV(loss="auc", scoring="roc_auc").fit(X, y, qid=qid)
    with pytest.raises(ValueError, match=r"cv=10 folds is more than the 9 queries"):
        StructSVMCV(loss="auc", cv=10).fit(X, y, qid=qid)
