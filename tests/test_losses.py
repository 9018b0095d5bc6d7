"""Every oracle against brute force (all outputs enumerated) and against the O(P*N) grid."""
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from structfs._jit import njit
from structfs.losses import LOSSES, ContingencyLoss, get_loss


# Independent reference formulas (not the library's) for Delta of a labeling, with its feasibility.
def _table(y, yb):
    a = np.sum((y > 0) & (yb > 0)); b = np.sum((y < 0) & (yb > 0))
    c = np.sum((y > 0) & (yb < 0)); d = np.sum((y < 0) & (yb < 0))
    return a, b, c, d


def ref_delta(name, params, y, yb):
    a, b, c, d = _table(y, yb)
    n, P = len(y), a + c
    if name == "error":
        return 100 * (b + c) / n
    if name in ("f1", "fbeta"):
        beta2 = params.get("beta", 1.0) ** 2
        f = 0.0 if a == 0 else (1 + beta2) * a / ((1 + beta2) * a + b + beta2 * c)
        return 100 * (1 - f)
    if name == "prec@k":             # svm_perf: at least k predicted positives
        k = params["k"]
        return None if a + b < k else 100 * (1 - a / (a + b))
    if name == "rec@k":              # svm_perf: at most k predicted positives
        k = params["k"]
        return None if a + b > k else 100 * (1 - a / P)
    if name == "prbep":
        return None if b != c else 100 * (1 - a / P)
    raise KeyError(name)


def brute_force_max(name, params, y, s):
    n = len(y)
    best = -np.inf
    for bits in itertools.product((-1.0, 1.0), repeat=n):
        yb = np.array(bits)
        delta = ref_delta(name, params, y, yb)
        if delta is None:
            continue
        best = max(best, delta - (50.0 / n) * (y - yb) @ s)
    return best


def brute_force_auc(y, s):
    pos, neg = s[y > 0], s[y < 0]
    P, N = len(pos), len(neg)
    best = -np.inf
    for bits in itertools.product((-1, 1), repeat=P * N):
        o = np.array(bits).reshape(P, N)
        swapped = o < 0
        h = 100 * swapped.sum() / (P * N) - (100 / (P * N)) * np.sum(swapped * (pos[:, None] - neg[None, :]))
        best = max(best, h)
    return best


def _score_sets(rng, n):
    yield rng.normal(size=n)                                  # random
    yield rng.integers(-2, 3, size=n).astype(float) * 0.5     # many ties, some at margin exactly
    yield np.zeros(n)                                         # all equal
    yield np.full(n, 0.7)
    yield rng.normal(size=n) * 1e3                            # extreme scales
    yield rng.normal(size=n) * 1e-4


def _label_sets(rng, n):
    yield np.where(rng.random(n) < 0.5, 1.0, -1.0)
    y = -np.ones(n); y[rng.integers(n)] = 1.0; yield y       # a single positive
    y = np.ones(n); y[rng.integers(n)] = -1.0; yield y       # a single negative


def _cases(seed, sizes=(1, 2, 3, 5, 8, 10)):
    rng = np.random.default_rng(seed)
    for n in sizes:
        for y in _label_sets(rng, n):
            for s in _score_sets(rng, n):
                yield y, s


def _check_output(loss, y, s, coef, delta, h_ref):
    n = len(y)
    h = delta - coef @ s
    assert h == pytest.approx(h_ref, rel=1e-9, abs=1e-9)
    if loss.is_contingency:
        y_bar = y - coef * n / 50.0
        assert np.allclose(np.abs(y_bar), 1.0), "coef must be (50/n)(y - ybar) for a labeling ybar"
        assert loss.delta(y, np.round(y_bar)) == pytest.approx(delta, abs=1e-9)


@pytest.mark.parametrize("name,params", [("error", {}), ("f1", {}), ("fbeta", {"beta": 0.5}),
                                         ("fbeta", {"beta": 2.0}), ("prbep", {})])
def test_unrestricted_and_prbep_oracles_match_brute_force(name, params):
    loss = get_loss(name, **params)
    for y, s in _cases(1):
        if name == "prbep" and not (y > 0).any():
            continue
        coef, delta = loss.most_violated(y, s)
        _check_output(loss, y, s, coef, delta, brute_force_max(name, params, y, s))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["prec@k", "rec@k"])
def test_at_k_oracles_match_brute_force_for_every_k(name):
    for y, s in _cases(2, sizes=(1, 3, 6, 9)):
        n = len(y)
        if name == "rec@k" and not (y > 0).any():
            continue
        top = n + 2 if name == "rec@k" else n      # k at its limits: 1, n and (Rec@k) beyond n
        for k in range(1, top + 1):
            loss = get_loss(name, k=k)
            coef, delta = loss.most_violated(y, s)
            _check_output(loss, y, s, coef, delta, brute_force_max(name, {"k": k}, y, s))
            predicted = np.count_nonzero(y - coef * n / 50.0 > 0)
            assert predicted >= k if name == "prec@k" else predicted <= k


def test_auc_oracle_matches_brute_force_over_orderings():
    loss = get_loss("auc")
    rng = np.random.default_rng(3)
    for n in (2, 3, 5, 7, 8):
        for y in _label_sets(rng, n):
            if not 1 <= (y > 0).sum() * (y < 0).sum() <= 16:
                continue
            for s in _score_sets(rng, n):
                coef, delta = loss.most_violated(y, s)
                assert delta - coef @ s == pytest.approx(brute_force_auc(y, s), rel=1e-9, abs=1e-9)
                assert abs(coef.sum()) < 1e-9          # bias feature cancels in pairwise Psi


def test_auc_counts_pairs_consistently():
    y = np.array([1, 1, -1, -1, -1.0]); s = np.array([2.0, 0.5, 1.0, -0.4, 0.0])
    coef, delta = get_loss("auc").most_violated(y, s)
    # swapped pairs (s_i - 1 < s_j): (2.0,1.0)? 1.0<1.0 no; (0.5,1.0) (0.5,-0.4) (0.5,0.0) yes
    assert delta == pytest.approx(100 * 3 / 6)
    assert coef == pytest.approx(100 / 6 * np.array([0, 3, -1, -1, -1]))


@pytest.mark.parametrize("n,pos_frac", [(10_000, 0.01), (10_000, 0.2), (3_000, 0.5)])
@pytest.mark.parametrize("name,params", [("error", {}), ("f1", {}), ("fbeta", {"beta": 3.0}),
                                         ("prec@k", {"k": 50}), ("rec@k", {"k_frac": 1.5}), ("prbep", {})])
def test_fast_oracles_match_grid_search(n, pos_frac, name, params):
    rng = np.random.default_rng(n + int(100 * pos_frac))
    y = np.where(rng.random(n) < pos_frac, 1.0, -1.0)
    loss = get_loss(name, **params)
    for s in (rng.normal(size=n), np.round(rng.normal(size=n), 1)):
        coef, delta = loss.most_violated(y, s)
        coef_g, delta_g = loss._grid_oracle(y, s)
        assert delta - coef @ s == pytest.approx(delta_g - coef_g @ s, rel=1e-10, abs=1e-9)


def test_contingency_loss_equals_builtin_f1():
    custom = ContingencyLoss(lambda a, b, c, d: np.where(a > 0, 100 * (1 - 2 * a / np.maximum(2 * a + b + c, 1)),
                                                        100.0))
    f1 = get_loss("f1")
    rng = np.random.default_rng(5)
    for _ in range(20):
        y = np.where(rng.random(50) < 0.2, 1.0, -1.0)
        s = rng.normal(size=50)
        c1, d1 = custom.most_violated(y, s)
        c2, d2 = f1.most_violated(y, s)
        assert d1 - c1 @ s == pytest.approx(d2 - c2 @ s, rel=1e-12)


def test_contingency_loss_accepts_scalar_only_function():
    def youden(a, b, c, d):   # uses `if`, so it cannot take arrays
        if a + c == 0 or b + d == 0:
            return 0.0
        return 100.0 * (1.0 - (a / (a + c) - b / (b + d))) / 2.0
    loss = ContingencyLoss(youden)
    y = np.array([1, -1, 1, -1, -1, 1.0]); s = np.array([0.3, 0.2, -1, 0.9, -0.2, 0.1])
    coef, delta = loss.most_violated(y, s)
    assert delta - coef @ s == pytest.approx(brute_force_custom(youden, y, s))


def brute_force_custom(fn, y, s):
    n = len(y)
    return max(fn(*_table(y, np.array(b))) - (50 / n) * (y - np.array(b)) @ s
               for b in itertools.product((-1.0, 1.0), repeat=n))


def test_scores_are_100_minus_delta_of_the_measured_labeling():
    y = np.array([1, 1, -1, -1, -1, 1.0]); s = np.array([0.9, -0.2, 0.5, -1.0, -0.3, 0.1])
    # sign labeling: TP=2 (0.9, 0.1), FP=1 (0.5), FN=1 (-0.2)
    assert get_loss("f1").score(y, s) == pytest.approx(100 * 4 / 6)
    assert get_loss("error").score(y, s) == pytest.approx(100 * 4 / 6)
    assert get_loss("prec@k", k=2).score(y, s) == pytest.approx(50.0)      # top2: 0.9 (+), 0.5 (-)
    assert get_loss("rec@k", k=3).score(y, s) == pytest.approx(100 * 2 / 3)  # top3: 0.9, 0.5, 0.1
    assert get_loss("rec@k", k=4).score(y, s) == pytest.approx(100.0)
    assert get_loss("prbep").score(y, s) == pytest.approx(100 * 2 / 3)
    assert get_loss("auc").score(y, s) == pytest.approx(100 * 7 / 9)
    assert get_loss("prec@k", k_frac=1.0).score(y, s) == get_loss("prbep").score(y, s)


# -- hypothesis properties -------------------------------------------------------------------------
labels_scores = st.integers(1, 40).flatmap(lambda n: st.tuples(
    st.lists(st.sampled_from([-1.0, 1.0]), min_size=n, max_size=n),
    st.lists(st.one_of(st.sampled_from([0.0, 1.0, -1.0, 0.5]),
                       st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)), min_size=n, max_size=n)))


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(labels_scores, st.sampled_from(sorted(LOSSES)), st.integers(1, 40), st.floats(0.1, 5.0))
def test_returned_delta_is_delta_of_returned_output(ys, name, k, beta):
    y, s = map(np.array, ys)
    n = len(y)
    params = {"k": min(k, n)} if name in ("prec@k", "rec@k") else {"beta": beta} if name == "fbeta" else {}
    loss = get_loss(name, **params)
    needs_positive = ("prbep", "rec@k", "prec@rec", "rec@prec", "tpr@fpr")
    if name in needs_positive and not (y > 0).any() or name in ("auc", "ap", "pauc") and len(set(y)) < 2:
        with pytest.raises(ValueError):
            loss.most_violated(y, s)
        return
    coef, delta = loss.most_violated(y, s)
    assert 0.0 <= delta <= 100.0 + 1e-9
    h = delta - coef @ s
    if loss.is_contingency:
        y_bar = y - coef * n / 50.0
        assert np.allclose(np.abs(y_bar), 1.0)
        assert loss.delta(y, np.sign(y_bar)) == pytest.approx(delta, abs=1e-9)
        P = int((y > 0).sum())
        true_allowed = (name != "prec@k" or P >= params["k"]) and (name != "rec@k" or P <= params["k"])
    else:
        true_allowed = True
    if true_allowed:   # ybar = y is an output with H = 0, so the maximum is >= 0
        assert h >= -1e-9 * max(1.0, np.abs(s).max())


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(labels_scores)
def test_fbeta_fast_oracle_matches_grid(ys):
    y, s = map(np.array, ys)
    for loss in (get_loss("f1"), get_loss("fbeta", beta=2.5)):
        coef, delta = loss.most_violated(y, s)
        cg, dg = loss._grid_oracle(y, s)
        assert delta - coef @ s == pytest.approx(dg - cg @ s, rel=1e-9, abs=1e-9)


# -- bad input ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(LOSSES))
def test_bad_labels_and_scores_raise_before_work(name):
    loss = get_loss(name, **({"k": 1} if name.endswith("@k") else {}))
    y = np.array([1.0, -1.0, 1.0])
    with pytest.raises(ValueError, match="y"):
        loss.most_violated(np.array([0.0, 1.0, 1.0]), np.zeros(3))
    with pytest.raises(ValueError, match="length"):
        loss.most_violated(y, np.zeros(4))
    with pytest.raises(ValueError, match="NaN or infinite"):
        loss.most_violated(y, np.array([0.0, np.nan, 1.0]))
    with pytest.raises(ValueError, match="NaN or infinite"):
        loss.score(y, np.array([0.0, np.inf, 1.0]))


def test_bad_loss_parameters():
    with pytest.raises(ValueError, match="known losses: error, f1"):
        get_loss("f2")
    with pytest.raises(ValueError, match="beta"):
        get_loss("fbeta", beta=0.0)
    with pytest.raises(ValueError, match="beta"):
        get_loss("fbeta", beta=-1)
    with pytest.raises(ValueError, match="k"):
        get_loss("prec@k", k=0)
    with pytest.raises(ValueError, match=r"k=4 is outside 1..n"):
        get_loss("prec@k", k=4).most_violated(np.array([1.0, -1, 1]), np.zeros(3))
    get_loss("rec@k", k=4).most_violated(np.array([1.0, -1, 1]), np.zeros(3))     # k > n: every labeling
    for bad in (0, -1, 2.5, np.nan, "3", True):
        with pytest.raises(ValueError, match=r"\bk\b"):
            get_loss("rec@k", k=bad)
    for bad in (0.0, -0.5, np.inf, np.nan):
        with pytest.raises(ValueError, match="k_frac"):
            get_loss("prec@k", k_frac=bad)
    from structfs.metrics import precision_at_k, recall_at_k
    with pytest.raises(ValueError, match="k_frac"):
        precision_at_k([1, 0, 1], [0.1, 0.2, 0.3], k_frac=0.0)
    with pytest.raises(ValueError, match=r"\bk\b"):
        recall_at_k([1, 0, 1], [0.1, 0.2, 0.3], k=1.5)
    with pytest.raises(ValueError, match="both classes"):
        get_loss("auc").most_violated(np.ones(3), np.zeros(3))
    with pytest.raises(ValueError, match="positive"):
        get_loss("prbep").most_violated(-np.ones(3), np.zeros(3))


def test_contingency_loss_rejects_nan_and_negative_delta():
    y = np.array([1.0, -1.0, 1.0]); s = np.zeros(3)
    with pytest.raises(ValueError, match="NaN"):
        ContingencyLoss(lambda a, b, c, d: a / (a - a)).most_violated(y, s)
    with pytest.raises(ValueError, match="negative"):
        ContingencyLoss(lambda a, b, c, d: b - 1.0 * a).most_violated(y, s)
    with pytest.raises(TypeError, match="fn"):
        ContingencyLoss(3)


# -- the loss-writer's verifier ------------------------------------------------------------------------
@pytest.mark.parametrize("name,params", [("error", {}), ("f1", {}), ("fbeta", {"beta": 2.0}), ("prec@k", {"k": 2}),
                                         ("prec@k", {}), ("rec@k", {"k": 3}), ("rec@k", {}), ("prbep", {}),
                                         ("auc", {})])
def test_check_loss_passes_every_builtin(name, params):
    from structfs.testing import check_loss

    sizes = (1, 2, 3, 4) if name == "auc" else (1, 2, 3, 4, 6, 8)      # 2^(P*N) orderings for auc
    assert check_loss(get_loss(name, **params), sizes=sizes) > 0


from structfs.losses import F1Loss  # noqa: E402


class Greedy(F1Loss):          # labels the positive-scored examples +: not the most violated output
    def oracle(self, y, s):
        y_bar = np.where(s > 0, 1.0, -1.0)
        return (50.0 / len(y)) * (y - y_bar), self.delta(y, y_bar)


class Lying(F1Loss):           # the right labeling with a wrong loss
    def oracle(self, y, s):
        coef, delta = super().oracle(y, s)
        return coef, delta + 1.0


def test_check_loss_finds_a_wrong_oracle_a_wrong_delta_and_an_unpicklable_loss():
    from structfs.testing import check_loss

    with pytest.raises(AssertionError, match="best output"):
        check_loss(Greedy())
    with pytest.raises(AssertionError, match="not the loss"):
        check_loss(Lying())
    with pytest.raises(AssertionError, match="pickle"):
        check_loss(ContingencyLoss(lambda a, b, c, d: 100.0 * (b + c) / (a + b + c + d)))


def test_losses_written_for_the_private_hook_still_work():
    from structfs.losses import Loss

    class Old(Loss):
        def _oracle(self, y, s):
            return get_loss("error").oracle(y, s)

    y, s = np.array([1.0, -1.0, 1.0]), np.array([0.3, 0.1, -2.0])
    assert np.allclose(Old().most_violated(y, s)[0], get_loss("error").most_violated(y, s)[0])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(-3, 3)), min_size=1, max_size=30),
       st.sampled_from([0.5, 1.0, 2.0]), st.sampled_from([1e-3, 0.5, 1e3]))
def test_compiled_fbeta_oracle_is_the_numpy_one_exactly(pairs, beta, scale):
    """The compiled F_beta oracle returns bit for bit what the SortedClasses version returns (same
    labeling, same tie-breaking), which the brute-force tests above check independently."""
    y = np.array([1.0 if p else -1.0 for p, _ in pairs])
    s = np.array([v * scale for _, v in pairs])
    loss = get_loss("fbeta", beta=beta)
    coef, delta = loss.oracle(y, s)
    ref_coef, ref_delta = loss._oracle_reference(y, s)
    assert np.array_equal(coef, ref_coef) and delta == ref_delta


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(-3, 3)), min_size=1, max_size=30),
       st.sampled_from([0.37, 0.5, 1.0, 2.0]), st.floats(-2.0, 2.0))
def test_fbeta_score_of_one_labeling_is_the_array_paths_exactly(pairs, beta, shift):
    """F_beta's measure of one labeling by float arithmetic (the search's per-point scoring) is bit for
    bit the value of the contingency losses' array path, whose checks it skips."""
    from structfs.losses.base import ContingencyLoss

    y = np.array([1.0 if p else -1.0 for p, _ in pairs])
    s = np.array([v + shift for _, v in pairs], dtype=float)
    loss = get_loss("fbeta", beta=beta)
    assert loss._score(y, s) == ContingencyLoss._score(loss, y, s)


def test_fbeta_oracle_skips_only_negatives_that_cannot_be_labelled_positive():
    """Balanced classes, a trained-looking margin: most negatives fall below the cut-off and are not
    sorted, and the answer is still the reference's (which sorts them all)."""
    from structfs.losses.fmeasure import _class_scores

    rng = np.random.default_rng(0)
    y = np.where(rng.random(2000) < 0.4, 1.0, -1.0)
    s = rng.normal(size=2000) + 4.0 * y
    for beta in (0.5, 1.0, 2.0):
        loss = get_loss("fbeta", beta=beta)
        kept = _class_scores(y, s, beta ** 2)[1].shape[0]
        assert kept < 0.5 * np.count_nonzero(y < 0)     # the cut-off is -(1+b^2) n / (4 b^2 P): -1.9 .. -3.9
        coef, delta = loss.oracle(y, s)
        ref_coef, ref_delta = loss._oracle_reference(y, s)
        assert np.array_equal(coef, ref_coef) and delta == ref_delta


def _constant_five(a, b, c, d):
    return 5.0 + 0 * a


def _undefined_at_one_true_positive(a, b, c, d):
    return np.where(a == 1, np.nan, 0.0) + 100.0 * (b + c) / np.maximum(a + b + c + d, 1)


def test_check_loss_refuses_a_loss_that_charges_the_true_labeling():
    from structfs.testing import check_loss

    with pytest.raises(AssertionError, match=r"Delta\(y, y\) = 5 for the true labeling"):
        check_loss(ContingencyLoss(_constant_five))


def test_an_undefined_delta_names_its_contingency_table():
    from structfs.testing import check_loss

    loss = ContingencyLoss(_undefined_at_one_true_positive)
    with pytest.raises(ValueError, match=r"fn\(1, 0, 0, 1\) .* returned NaN"):
        loss.delta(np.array([1.0, -1.0]), np.array([1.0, -1.0]))
    with pytest.raises(AssertionError, match=r"fn\(1, "):
        check_loss(loss)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(-3, 3)), min_size=2, max_size=30),
       st.sampled_from(["f1", "error", "auc", ("fbeta", 2.0)]), st.sampled_from([1e-3, 0.5, 1e3]))
def test_compiled_oracles_return_what_the_oracles_return(pairs, name, scale):
    """``jit_oracle`` (the compiled inner loop's) is the loss's oracle bit for bit, ties included."""
    y = np.array([1.0 if p else -1.0 for p, _ in pairs])
    y[:2] = [1.0, -1.0]
    s = np.array([v * scale for _, v in pairs])
    loss = get_loss(name) if isinstance(name, str) else get_loss(name[0], beta=name[1])
    coef, delta = loss.oracle(y, s)
    jit_coef, jit_delta = loss.jit_oracle(y, s, loss.jit_params)
    assert np.array_equal(coef, jit_coef) and delta == jit_delta


def test_only_losses_with_a_compiled_oracle_offer_one():
    assert all(get_loss(name).jit_oracle is not None for name in ("f1", "fbeta", "error", "auc"))
    assert all(get_loss(name).jit_oracle is None for name in ("prbep", "ap", "pauc"))


@njit(cache=False)
def _answers_nothing(y, s, params):
    return y * 0.0, 0.0


class _WrongJitF1(F1Loss):
    """F1 whose compiled oracle disagrees with its oracle (module level, so that it pickles)."""

    jit_oracle = staticmethod(_answers_nothing)


def test_check_loss_finds_a_compiled_oracle_that_disagrees():
    from structfs.testing import check_loss

    with pytest.raises(AssertionError, match="jit_oracle"):
        check_loss(_WrongJitF1())
