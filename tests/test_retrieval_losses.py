"""The retrieval losses "ap" and "pauc": oracles against every ranking, measures against scikit-learn."""
import itertools
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import average_precision_score

from structfs import StructSVM
from structfs.losses import AveragePrecisionLoss, PartialAUCLoss, get_loss
from structfs.losses.retrieval import _ap_interleaving, _harmonic_numbers, top_negatives
from structfs.metrics import MEASURES, average_precision, get_scorer, partial_auc
from structfs.testing import check_loss


# --- an independent reference: every total order, its swapped pairs and Delta by plain loops ----------
def ref_outputs(name, y, beta=None):
    n = len(y)
    P = int(np.sum(y > 0))
    N = n - P
    k = None if beta is None else top_negatives(beta, N)
    for order in itertools.permutations(range(n)):
        rank = {e: r for r, e in enumerate(order)}
        negs_by_rank = [e for e in order if y[e] < 0]
        counted = set(negs_by_rank if k is None else negs_by_rank[:k])
        coef = np.zeros(n)
        swapped = 0
        for i in range(n):
            for j in counted if y[i] > 0 else ():
                if rank[j] < rank[i]:
                    coef[i] += 1
                    coef[j] -= 1
                    swapped += 1
        if name == "ap":
            hits, ap = 0, 0.0
            for r, e in enumerate(order):
                if y[e] > 0:
                    hits += 1
                    ap += hits / (r + 1)
            yield 100.0 / (P * N) * coef, 100.0 * (1 - ap / P)
        else:
            yield 100.0 / (P * k) * coef, 100.0 * swapped / (P * k)


LOSS_CASES = [("ap", {}), ("pauc", {"beta": 0.1}), ("pauc", {"beta": 0.34}), ("pauc", {"beta": 0.5}),
              ("pauc", {"beta": 1.0})]


@pytest.mark.parametrize("name,params", LOSS_CASES)
def test_oracle_attains_the_best_ranking_by_independent_enumeration(name, params):
    loss = get_loss(name, **params)
    rng = np.random.default_rng(0)
    ys = [np.array([1.0, -1, 1, -1, -1, 1]), np.array([1.0, -1, -1, -1, -1, -1]),
          np.array([-1.0, 1, 1, 1, 1, 1]), np.array([1.0, -1]), np.array([-1.0, -1, 1, -1, 1])]
    for y in ys:
        outputs = list(ref_outputs(name, y, params.get("beta")))
        for s in (rng.normal(size=len(y)), rng.integers(-2, 3, size=len(y)) * 0.5, np.zeros(len(y)),
                  rng.normal(size=len(y)) * 100):
            coef, delta = loss.most_violated(y, s)
            best = max(d - c @ s for c, d in outputs)
            assert delta - coef @ s == pytest.approx(best, abs=1e-9)
            # the returned pair is itself one of the rankings' (coef, delta)
            assert any(np.allclose(coef, c) and np.isclose(delta, d) for c, d in outputs)


@pytest.mark.parametrize("name,params", LOSS_CASES)
def test_check_loss_passes(name, params):
    assert check_loss(get_loss(name, **params), sizes=(1, 2, 3, 4, 5, 6, 7)) > 0


@pytest.mark.slow
@pytest.mark.parametrize("name,params", [("ap", {}), ("pauc", {"beta": 0.3})])
def test_check_loss_passes_at_n_8(name, params):
    assert check_loss(get_loss(name, **params), sizes=(8,)) > 0


def _scan_value(s_pos, s_neg, slot):
    P, N = len(s_pos), len(s_neg)
    return sum(sum(100 / P * (i / (i + j - 1) - i / (i + j)) - 100 / (P * N) * (s_pos[i - 1] - s_neg[j - 1])
                   for i in range(slot[j - 1] + 1, P + 1)) for j in range(1, N + 1))


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 12), st.integers(1, 30), st.integers(0, 2 ** 32 - 1), st.booleans())
def test_divide_and_conquer_equals_the_per_negative_scan(P, N, seed, ties):
    """The O(n log n) interleaving against the O(P N) maximisation of every negative's slot."""
    rng = np.random.default_rng(seed)
    draw = (lambda m: rng.integers(-3, 4, size=m) * 0.5) if ties else (lambda m: rng.normal(size=m) * 3)
    s_pos, s_neg = np.sort(draw(P))[::-1].copy(), np.sort(draw(N))[::-1].copy()
    slot = _ap_interleaving(s_pos, s_neg, _harmonic_numbers(P + N))
    assert np.all(np.diff(slot) >= 0) and slot.min() >= 0 and slot.max() <= P
    per_negative = 0.0
    for j in range(1, N + 1):
        per_negative += max(sum(100 / P * (i / (i + j - 1) - i / (i + j))
                                - 100 / (P * N) * (s_pos[i - 1] - s_neg[j - 1])
                                for i in range(k + 1, P + 1)) for k in range(P + 1))
    assert _scan_value(s_pos, s_neg, slot) == pytest.approx(per_negative, abs=1e-9)


def _ap_by_explicit_ranks(y, s):
    """The AP oracle with every example ranked by an argsort (what the by-score lookup avoids)."""
    pos = y > 0
    order_pos = np.flatnonzero(pos)[np.argsort(-s[pos], kind="stable")]
    order_neg = np.flatnonzero(~pos)[np.argsort(-s[~pos], kind="stable")]
    P, N = len(order_pos), len(order_neg)
    slot = _ap_interleaving(s[order_pos], s[order_neg], _harmonic_numbers(P + N))
    neg_above = np.searchsorted(slot, np.arange(P), side="right")
    coef = np.empty(len(y))
    coef[order_pos] = 100 / (P * N) * neg_above
    coef[order_neg] = -100 / (P * N) * (P - slot)
    ranks = np.arange(1, P + 1)
    return coef, 100 * (1 - np.mean(ranks / (ranks + neg_above)))


@settings(max_examples=80, deadline=None)
@given(st.integers(2, 400), st.floats(0.01, 0.99), st.integers(0, 2 ** 32 - 1),
       st.sampled_from(["normal", "ties", "outlier", "constant"]))
def test_ap_coefficients_by_score_equal_the_explicit_ranking(n, frac, seed, kind):
    """Negatives find their coefficient from their score (buckets, no argsort) unless tied scores
    straddle a slot change; either way the output is the explicitly ranked one, up to tied examples
    exchanging coefficients (equal H)."""
    rng = np.random.default_rng(seed)
    y = np.where(rng.random(n) < frac, 1.0, -1.0)
    y[:2] = [1.0, -1.0]
    s = {"normal": lambda: rng.normal(size=n),
         "ties": lambda: rng.integers(-3, 4, size=n) * 0.25,
         "outlier": lambda: np.r_[1e12, rng.normal(size=n - 1)],
         "constant": lambda: np.full(n, 0.5)}[kind]()
    coef, delta = get_loss("ap").most_violated(y, s)
    ref_coef, ref_delta = _ap_by_explicit_ranks(y, s)
    assert delta == pytest.approx(ref_delta, abs=1e-9)
    assert coef @ s == pytest.approx(ref_coef @ s, rel=1e-12, abs=1e-9)
    for cls in (y > 0, y < 0):                       # the same coefficients, given to the same scores
        assert np.allclose(np.sort(coef[cls]), np.sort(ref_coef[cls]))
        distinct = np.unique(s[cls], return_counts=True)[1] == 1
        untied = np.isin(s[cls], np.unique(s[cls])[distinct])
        assert np.allclose(coef[cls][untied], ref_coef[cls][untied])


def test_score_is_100_minus_delta_of_the_ranking_by_the_scores():
    rng = np.random.default_rng(3)
    y = np.where(rng.random(9) < 0.4, 1.0, -1.0)
    y[:2] = [1, -1]
    s = rng.normal(size=9)
    order = np.argsort(-s)
    for name, beta in (("ap", None), ("pauc", 0.4), ("pauc", 1.0)):
        loss = get_loss(name, **({} if beta is None else {"beta": beta}))
        ranked = y[order] > 0
        neg_above = np.cumsum(~ranked)
        if name == "ap":
            hits = np.cumsum(ranked)
            delta = 100 * (1 - np.mean((hits / np.arange(1, 10))[ranked]))
        else:
            k = top_negatives(beta, int(np.sum(y < 0)))
            delta = 100 * np.minimum(neg_above[ranked], k).sum() / (ranked.sum() * k)
        if name == "ap" or beta * np.sum(y < 0) == top_negatives(beta, int(np.sum(y < 0))):
            assert loss.score(y, s) == pytest.approx(100 - delta)


def test_top_negatives_rounds_like_arithmetic_not_floating_point():
    assert top_negatives(0.1, 30) == 3 and top_negatives(0.1, 31) == 4 and top_negatives(0.01, 5) == 1


@pytest.mark.parametrize("beta", [0, -0.1, 1.5, float("nan"), float("inf"), "0.1", True, None])
def test_bad_beta_is_a_value_error_naming_it(beta):
    with pytest.raises(ValueError, match="beta"):
        get_loss("pauc", beta=beta)
    with pytest.raises(ValueError, match="beta"):
        partial_auc([1, -1], [0.2, 0.1], beta=beta)


@pytest.mark.parametrize("name", ["ap", "pauc"])
def test_single_class_is_a_value_error(name):
    with pytest.raises(ValueError, match="both classes"):
        get_loss(name).most_violated(np.ones(4), np.zeros(4))
    with pytest.raises(ValueError, match="single class"):
        StructSVM(loss=name).fit(np.eye(4), np.ones(4))


def test_losses_pickle_and_rebuild_from_name_and_params():
    for loss in (AveragePrecisionLoss(), PartialAUCLoss(beta=0.25)):
        clone = pickle.loads(pickle.dumps(loss))
        assert clone.params == loss.params
        assert get_loss(loss.name, **loss.params).params == loss.params


def test_scorers_and_measures():
    assert MEASURES["ap"] is average_precision and MEASURES["pauc"] is partial_auc
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 6))
    y = (X[:, 0] + 0.3 * rng.normal(size=80) > 0.8).astype(int)
    est = StructSVM(loss="ap", C=10.0).fit(X, y)
    s = est.decision_function(X)
    assert get_scorer("ap")(est, X, y) == pytest.approx(average_precision_score(y, s))
    assert get_scorer("pauc", beta=0.2)(est, X, y) == pytest.approx(partial_auc(y, s, 0.2) / 100)


@pytest.mark.parametrize("name,params", [("ap", {}), ("pauc", {"beta": 0.2})])
def test_trains_with_a_budget_and_beats_a_random_ranking(name, params):
    rng = np.random.default_rng(1)
    n, m = 300, 40
    X = rng.normal(size=(n, m))
    y = (X[:, :3].sum(axis=1) + 0.5 * rng.normal(size=n) > 2.0).astype(int)
    est = StructSVM(loss=name, loss_params=params or None, C=100.0, budget=3, max_outer=3).fit(X, y)
    assert 1 <= len(est.selected_features_) <= 9
    loss = get_loss(name, **params)
    y_pm = np.where(y == 1, 1.0, -1.0)
    assert loss.score(y_pm, est.decision_function(X)) > 80.0


def test_one_vs_rest_mil_and_model_selection_take_the_retrieval_losses():
    from structfs import OneVsRestStructSVM, StructSVMCV
    from structfs.mil import MILESClassifier

    rng = np.random.default_rng(4)
    X = rng.normal(size=(150, 8))
    y3 = np.argmax(X[:, :3] + 0.3 * rng.normal(size=(150, 3)), axis=1)
    ovr = OneVsRestStructSVM(estimator=StructSVM(loss="pauc", loss_params={"beta": 0.3}, C=100.0, budget=2)).fit(X, y3)
    assert ovr.decision_function(X).shape == (150, 3)
    y = (y3 == 0).astype(int)
    cv = StructSVMCV(loss="ap", Cs=[30.0, 300.0], budgets=[2], max_outer=3).fit(X, y)
    assert cv.best_score_ == pytest.approx(cv.cv_results_["mean_test_score"][cv.best_index_])
    assert 0 < cv.best_score_ <= 1                          # scored by AP, the loss's own measure, 0-1
    bags = [rng.normal(size=(3, 2)) + (2.0 if i % 3 == 0 else 0.0) for i in range(30)]
    labels = np.array([1 if i % 3 == 0 else 0 for i in range(30)])
    mil = MILESClassifier(estimator=StructSVM(loss="ap", C=30.0, budget=2, max_outer=2)).fit(bags, labels)
    assert average_precision(np.where(labels == 1, 1, -1), mil.decision_function(bags)) > 90
