"""The learner against exact solutions: every output enumerated, the problem of structfs.solvers.objective
solved by cvxpy, and the master-problem solvers against each other."""
import itertools
import warnings

import cvxpy as cp
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.exceptions import ConvergenceWarning

from structfs import StructSVM
from structfs.losses import get_loss
from structfs.solvers import Solver, ksupport_sq, refit_path, solve
from structfs.solvers.qcqp import master_value, solve_master, solve_master_cvxpy, solve_master_ecos
from structfs.solvers.simplex_qp import solve_simplex_qp


def all_outputs(y, loss_name, k=None):
    """(coef, Delta) of every output: labelings (restricted as the loss says) or pairwise orderings."""
    n = len(y)
    loss = get_loss(loss_name, **({"k": k} if k else {}))
    if loss_name in ("ap", "pauc"):      # rankings, enumerated by the loss itself (checked independently
        yield from loss.outputs(y)       # in test_retrieval_losses)
        return
    if loss_name == "auc":
        pos, neg = np.flatnonzero(y > 0), np.flatnonzero(y < 0)
        P, N = len(pos), len(neg)
        for bits in itertools.product((0, 1), repeat=P * N):
            swapped = np.array(bits).reshape(P, N)
            coef = np.zeros(n)
            coef[pos] = swapped.sum(1)
            coef[neg] = -swapped.sum(0)
            yield 100.0 / (P * N) * coef, 100.0 * swapped.sum() / (P * N)
        return
    for bits in itertools.product((-1.0, 1.0), repeat=n):
        yb = np.array(bits)
        a, b = np.sum((y > 0) & (yb > 0)), np.sum((y < 0) & (yb > 0))
        c = np.sum((y > 0) & (yb < 0))
        # svm_perf's restrictions: PRBEP b = c, Prec@k at least k, Rec@k at most k predicted positives
        if (loss_name == "prbep" and b != c or loss_name == "prec@k" and a + b < k
                or loss_name == "rec@k" and a + b > k):
            continue
        yield (50.0 / n) * (y - yb), loss.delta(y, yb)


def exact_objective(X, y, loss_name, C, budget, bias, k=None, groups=None):
    n, m = X.shape
    Xt = np.hstack([X, np.full((n, 1), bias)]) if bias else X
    planes = list(all_outputs(y, loss_name, k))
    psi = np.array([coef @ Xt for coef, _ in planes])
    delta = np.array([d for _, d in planes])
    w = cp.Variable(Xt.shape[1])
    xi = cp.Variable(nonneg=True)
    cons = [psi @ w >= delta - xi]
    if groups is not None and budget < len(set(groups)):       # the budget counts groups
        labels = sorted(set(groups))
        d = cp.Variable(len(labels))
        cons += [d >= 0, d <= 1, cp.sum(d) <= budget]
        reg = 0.5 * cp.sum([cp.quad_over_lin(w[np.flatnonzero(np.asarray(groups) == g)], d[i])
                            for i, g in enumerate(labels)])
    elif budget is None or budget >= m or groups is not None:
        reg = 0.5 * cp.sum_squares(w[:m])
    else:
        d = cp.Variable(m)
        cons += [d >= 0, d <= 1, cp.sum(d) <= budget]
        reg = 0.5 * cp.sum([cp.quad_over_lin(w[j], d[j]) for j in range(m)])
    if bias:
        reg = reg + 0.5 * cp.square(w[m])
    prob = cp.Problem(cp.Minimize(reg + C * xi), cons)
    prob.solve(solver=cp.CLARABEL)
    assert prob.status == cp.OPTIMAL
    return prob.value


def _problem(seed, n=7, m=5, loss_name="f1"):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, m))
    y = np.where(rng.random(n) < 0.4, 1.0, -1.0)
    y[:2] = [1.0, -1.0]
    if loss_name in ("auc", "ap", "pauc"):   # keep P * N small enough to enumerate orderings
        X, y = X[:6], np.array([1.0, -1, 1, -1, -1, 1])
    return X, y


@pytest.mark.slow
@pytest.mark.parametrize("loss_name,k", [("error", None), ("f1", None), ("prbep", None), ("prec@k", 2), ("rec@k", 3),
                                         ("auc", None), ("ap", None), ("pauc", None)])
@pytest.mark.parametrize("budget", [None, 1, 2, 5])
@pytest.mark.parametrize("bias", [0.0, 1.0])
def test_objective_matches_exact_optimum(loss_name, k, budget, bias):
    for seed in range(2):
        X, y = _problem(seed, loss_name=loss_name)
        C = 10.0
        loss = get_loss(loss_name, **({"k": k} if k else {}))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = solve(X, y, loss, C, budget=budget, bias=bias, tol=1e-5)
        opt = exact_objective(X, y, loss_name, C, budget, bias, k)
        assert res.objective == pytest.approx(opt, rel=1e-3)
        assert res.objective >= opt * (1 - 1e-6)            # it is a primal value
        # the reported gap bounds the true suboptimality
        assert res.lower_bound <= opt * (1 + 1e-6) + 1e-6
        assert res.objective - opt <= res.objective - res.lower_bound + 1e-6 * opt
        if budget is None or budget >= X.shape[1]:
            assert res.objective - res.lower_bound <= C * 1e-5 * 1.01


@pytest.mark.parametrize("loss_name,k", [("error", None), ("f1", None), ("prbep", None), ("prec@k", 2), ("rec@k", 3),
                                         ("auc", None), ("ap", None), ("pauc", None)])
@pytest.mark.parametrize("budget", [1, 2])
def test_group_budget_matches_exact_optimum(loss_name, k, budget):
    """The budget counted in groups (FGM's group selection): the objective is the exact optimum of the
    group problem within the certified tolerance, and the reported gap bounds the suboptimality."""
    groups = [7, 3, 7, 5, 3, 9]                # four groups of unequal sizes, labels in any order
    for seed in range(2):
        X, y = _problem(seed, m=6, loss_name=loss_name)
        C = 10.0
        loss = get_loss(loss_name, **({"k": k} if k else {}))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = solve(X, y, loss, C, budget=budget, groups=groups, bias=1.0, tol=1e-5)
        opt = exact_objective(X, y, loss_name, C, budget, 1.0, k, groups=groups)
        assert res.objective == pytest.approx(opt, rel=1e-3)
        assert res.objective >= opt * (1 - 1e-6)
        assert res.lower_bound <= opt * (1 + 1e-6) + 1e-6


def test_group_budget_selects_whole_groups_along_the_path():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 12))
    y = np.where(X[:, 4] + X[:, 5] + 0.3 * rng.normal(size=60) > 0, 1.0, -1.0)
    groups = np.repeat([0, 1, 2, 3], 3)          # columns 4 and 5 are group 1
    res = solve(X, y, get_loss("f1"), 10.0, budget=1, groups=groups, max_outer=1)
    assert np.array_equal(np.flatnonzero(res.w), [3, 4, 5])     # the first group is the informative one
    res = solve(X, y, get_loss("f1"), 10.0, budget=1, groups=groups, max_outer=3)
    used = set(groups[np.flatnonzero(res.w)].tolist())
    assert len(used) <= 3 and all(np.all(res.w[groups == g] != 0) for g in used)   # whole groups


def test_budget_at_least_n_features_is_the_unbudgeted_problem():
    X, y = _problem(3)
    a = solve(X, y, get_loss("f1"), 10.0, budget=None, tol=1e-6)
    b = solve(X, y, get_loss("f1"), 10.0, budget=X.shape[1], tol=1e-6)
    assert np.allclose(a.w, b.w) and a.objective == b.objective


def test_error_loss_is_linearsvc_with_scaled_C():
    """xi for the error loss is (100/n) sum of hinge losses -> LinearSVC(C=100 C / n)."""
    from sklearn.svm import LinearSVC

    rng = np.random.default_rng(0)
    n, m = 60, 4
    X = rng.normal(size=(n, m))
    y = np.where(X @ rng.normal(size=m) + 0.5 * rng.normal(size=n) > 0, 1.0, -1.0)
    C = 0.3
    res = solve(X, y, get_loss("error"), C, bias=0.0, tol=1e-7, max_iter=5000)
    svc = LinearSVC(loss="hinge", C=100 * C / n, fit_intercept=False, tol=1e-10, max_iter=200000,
                    dual=True).fit(X, y)
    assert np.allclose(res.w, svc.coef_[0], atol=2e-3 * np.abs(svc.coef_).max())


@pytest.mark.parametrize("seed", range(5))
def test_ecos_master_equals_cvxpy_master(seed):
    rng = np.random.default_rng(seed)
    K, T = rng.integers(2, 30), rng.integers(2, 6)
    factors = [rng.normal(size=(K, rng.integers(1, 8))) * 10 ** rng.uniform(-3, 0) for _ in range(T)]
    grams = [F @ F.T for F in factors]
    delta = rng.uniform(0, 100, K)
    C = 10 ** rng.uniform(0, 4)
    e, flag = solve_master_ecos(factors, delta, C)
    c, status = solve_master_cvxpy(factors, delta, C, solver=cp.ECOS, abstol=1e-9, reltol=1e-9, feastol=1e-9)
    assert flag == 0 and status in ("optimal", "optimal_inaccurate")
    ve, vc = master_value(e.abar, grams, delta, C), master_value(c.abar, grams, delta, C)
    # A maximisation: the direct cone program must never be worse than the modelling layer's, and
    # both agree up to the reference's accuracy (cvxpy's own canonicalisation is less well scaled).
    assert ve >= vc * (1 - 1e-7)
    assert ve == pytest.approx(vc, rel=1e-4)
    assert e.mu.sum() == pytest.approx(1.0) and (e.mu >= 0).all()


@pytest.mark.parametrize("seed", range(5))
def test_simplex_qp_equals_cvxpy(seed):
    rng = np.random.default_rng(seed)
    K = int(rng.integers(1, 120))
    A = rng.normal(size=(K, max(1, K // 3))) * 10 ** rng.uniform(-2, 1)
    Q, b = A @ A.T * 1000, rng.uniform(0, 100, K)
    x, gap, _ = solve_simplex_qp(Q, b, tol=1e-10)
    assert (x >= 0).all() and x.sum() <= 1 + 1e-12
    v = cp.Variable(K, nonneg=True)
    prob = cp.Problem(cp.Minimize(0.5 * 1000 * cp.sum_squares(A.T @ v) - b @ v), [cp.sum(v) <= 1])
    prob.solve(solver=cp.CLARABEL)
    assert 0.5 * x @ Q @ x - b @ x == pytest.approx(prob.value, rel=1e-7, abs=1e-7)
    # single-group masters go through it
    sol = solve_master([A @ A.T], b, 1000.0)
    assert sol.value == pytest.approx(-1000 * prob.value, rel=1e-6, abs=1e-6)


@pytest.mark.parametrize("k", [1, 2, 3, 7])
def test_ksupport_norm_is_the_variational_minimum(k):
    rng = np.random.default_rng(k)
    for _ in range(5):
        w = rng.normal(size=7) * (rng.random(7) < 0.8)
        w[0] = w[1] = 2.0     # ties
        d = cp.Variable(7)
        prob = cp.Problem(cp.Minimize(cp.sum([cp.quad_over_lin(w[j], d[j]) for j in range(7)])),
                          [d >= 0, d <= 1, cp.sum(d) <= k])
        prob.solve(solver=cp.CLARABEL)
        assert ksupport_sq(w, k) == pytest.approx(prob.value, rel=1e-6)
    assert ksupport_sq(np.array([3.0, 0, 0, 4.0]), 2) == pytest.approx(25.0)     # <= k nonzeros: Euclidean
    assert ksupport_sq(np.array([1.0, 1.0, 1.0]), 1) == pytest.approx(9.0)       # k = 1: l1 squared


def test_group_weights_are_put_on_the_simplex():
    from structfs.solvers.qcqp import normalise_weights
    np.testing.assert_allclose(normalise_weights([2.0, -1.0, np.nan, 2.0]), [0.5, 0, 0, 0.5])
    np.testing.assert_allclose(normalise_weights([0.0, -3.0]), [0.5, 0.5])          # no weight: uniform
    np.testing.assert_allclose(normalise_weights([np.inf, 1.0, np.inf]), [0.5, 0, 0.5])
    np.testing.assert_allclose(normalise_weights([1e308, 1e308, 1.0]), [0.5, 0.5, 0])  # the sum overflows


@pytest.mark.parametrize("seed", range(4))
def test_smo_fallback_agrees_with_active_set(seed):
    from structfs.solvers.simplex_qp import _smo, active_set

    rng = np.random.default_rng(seed)
    K = int(rng.integers(1, 12))
    A = rng.normal(size=(K, max(1, K // 2)))
    Q, b = A @ A.T * 10, rng.uniform(0, 10, K)
    x_smo = np.zeros(K + 1)
    x_smo[K] = 1.0
    _, gap = _smo(Q, b, x_smo, 1e-12, 10**6)
    x_as = x_smo * 0
    x_as[K] = 1.0
    active_set(Q, b, x_as, 1e-12, 100)
    def f(x):
        return 0.5 * x[:K] @ Q @ x[:K] - b @ x[:K]
    assert gap <= 1e-12 and f(x_smo) == pytest.approx(f(x_as), abs=1e-9)


def _exact_simplex_qp(Q, b):
    """min 1/2 x'Qx - b'x over x >= 0, sum(x) <= 1 by an interior-point cone solver (Q through a square
    root, as its eigenvalues may be round-off below 0)."""
    w, V = np.linalg.eigh(Q)
    v = cp.Variable(b.shape[0], nonneg=True)
    prob = cp.Problem(cp.Minimize(0.5 * cp.sum_squares((V * np.sqrt(np.clip(w, 0, None))).T @ v) - b @ v),
                      [cp.sum(v) <= 1])
    prob.solve(solver=cp.CLARABEL)
    return prob.value


def test_active_set_does_not_cycle_on_a_singular_face():
    """Five planes spanned by two (a master of affinely dependent planes, Q of rank 2). A least-squares
    step on the singular face let a coordinate enter and leave at a step of length 0, over and over, until
    the active set's steps ran out (and SMO then took thousands); the proximal step of a singular face
    descends, so the method reaches the optimum within its steps."""
    from structfs.solvers.simplex_qp import active_set_from

    Q = np.array([[30709.374719551575, 70798.01683209938, 61377.21570015982, 13522.651117225552, 86976.696437641],
                  [70798.01683209938, 215227.4460573719, 181286.63742357312, 8878.516711153341, 273515.21381180896],
                  [61377.21570015982, 181286.63742357312, 153108.01234740543, 9969.884848461996, 229678.80072764418],
                  [13522.651117225552, 8878.516711153341, 9969.884848461996, 15513.67526279602, 7004.27107344947],
                  [86976.696437641, 273515.21381180896, 229678.80072764418, 7004.27107344947, 348797.05793655163]])
    b = np.array([62.41132667028003, 53.10977076672653, 55.298237277154904, 66.39771212807129, 49.35888315918098])
    x = np.array([0.09072763751443061, 0.5934366044138176, 0.0, 0.3158357580717518, 0.0, 0.0])
    steps, gap, *_ = active_set_from(Q, b, x, 1e-4, 4 * 5 + 20, np.zeros(0, np.int64), np.zeros((0, 0)), False)
    assert np.isfinite(gap) and gap <= 1e-4 and steps < 4 * 5 + 20
    assert 0.5 * x[:5] @ Q @ x[:5] - b @ x[:5] == pytest.approx(_exact_simplex_qp(Q, b), rel=1e-8)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), K=st.integers(2, 14), rank=st.integers(1, 13), spread=st.floats(0.0, 4.0))
def test_active_set_solves_masters_of_affinely_dependent_planes(seed, K, rank, spread):
    """Planes that are convex combinations of fewer others (a cutting-plane working set often holds
    such), built from rows scaled over up to ``spread`` orders of magnitude, from a random face: the
    active set reaches its tolerance within its step budget (no fallback needed), or where the planes'
    scale puts that below what it solves a face to (its KKT residual within 1e-9 of the larger of max
    |b| and Q's diagonal), a gap within that (3.6e-4 at a diagonal of 8.6e5, seen over 3,000 draws);
    its objective no worse than the exact optimum's beyond 1e-6 relative."""
    from structfs.solvers.simplex_qp import active_set_from

    rng = np.random.default_rng(seed)
    rank = min(rank, K)
    base = rng.normal(size=(rank, 3)) * 10.0 ** rng.uniform(0, spread, size=(rank, 1))
    mix = rng.random((K, rank))
    mix /= mix.sum(axis=1, keepdims=True)
    Q, b = (mix @ base) @ (mix @ base).T, mix @ rng.uniform(0, 100, size=rank)
    x = np.append(rng.random(K) * (rng.random(K) < 0.6), 0.0)
    x = x / x.sum() if x.sum() > 0 else np.append(np.zeros(K), 1.0)
    steps, gap, *_ = active_set_from(Q, b, x, 1e-6, 4 * K + 20, np.zeros(0, np.int64), np.zeros((0, 0)), False)
    scale = max(1.0, np.abs(b).max(), np.abs(np.diag(Q)).max())
    assert np.isfinite(gap) and gap <= max(1e-6, 1e-9 * scale)
    assert (x >= 0).all() and x.sum() == pytest.approx(1.0)
    exact = _exact_simplex_qp(Q, b)
    assert 0.5 * x[:K] @ Q @ x[:K] - b @ x[:K] <= exact + 1e-6 * max(1.0, abs(exact))


@pytest.mark.parametrize("seed", range(6))
def test_a_master_from_the_carried_face_equals_a_fresh_one(seed):
    """The compiled loop carries the factorised face of one master to the next, which has one plane more
    (and, where planes aged out, fewer): the answer is the fresh solve's, singular faces included
    (rank-deficient Gram matrices, as affinely dependent planes give)."""
    from structfs.solvers.simplex_qp import active_set_from, face_without

    rng = np.random.default_rng(seed)
    K = int(rng.integers(3, 60))
    A = rng.normal(size=(K + 1, max(1, K // int(rng.integers(1, 4)))))
    Q_all, b_all = A @ A.T * 100, rng.uniform(0, 10, K + 1)

    def f(Q, b, x):
        return 0.5 * x[:-1] @ Q @ x[:-1] - b @ x[:-1]

    x = np.zeros(K + 1)
    x[K] = 1.0
    _, _, face, H, have = active_set_from(Q_all[:K, :K], b_all[:K], x, 1e-12, 4 * K + 20, np.zeros(0, np.int64),
                                          np.zeros((0, 0)), False)
    assert have                      # a nonsingular final face
    # the next master: one plane more (the slack's index moves from K to K + 1)
    face = np.where(face == K, K + 1, face)
    x_next = np.append(np.append(x[:K], 0.0), x[K])
    fresh = x_next.copy()
    active_set_from(Q_all, b_all, fresh, 1e-12, 4 * K + 24, np.zeros(0, np.int64), np.zeros((0, 0)), False)
    carried = x_next.copy()
    steps, gap, face, H, have = active_set_from(Q_all, b_all, carried, 1e-12, 4 * K + 24, face, H, have)
    assert np.isfinite(gap) and carried.min() >= 0 and carried.sum() == pytest.approx(1.0)
    assert f(Q_all, b_all, carried) == pytest.approx(f(Q_all, b_all, fresh), rel=1e-9, abs=1e-9)
    # a plane of the face leaves (the working set's renumbering, the slack as -1): still the fresh answer
    planes = [k for k in face if k < K + 1]
    if have and planes:
        gone = planes[0]
        keep = np.arange(K + 1) != gone
        face, H, have = face_without(np.where(face == K + 1, -1, face), H, have, keep)
        face = np.where(face < 0, K + 1 - 1, face)
        Q, b = Q_all[np.ix_(keep, keep)], b_all[keep]
        x_drop = np.append(carried[:-1][keep], carried[-1])
        x_drop /= x_drop.sum()
        fresh = x_drop.copy()
        active_set_from(Q, b, fresh, 1e-12, 4 * K + 24, np.zeros(0, np.int64), np.zeros((0, 0)), False)
        active_set_from(Q, b, x_drop, 1e-12, 4 * K + 24, face, H, have)
        assert f(Q, b, x_drop) == pytest.approx(f(Q, b, fresh), rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("seed", range(12))
def test_a_badly_scaled_master_keeps_the_better_of_the_active_set_and_smo(seed):
    # Planes of raw features: Gram entries up to 1e10 against Delta ~ 100. The active set stops short of
    # a tight tolerance and SMO continues; SMO used to restart from the start point and return a master
    # 25x further from the optimum than the active set's, and the fits' lower bounds stalled. The answer
    # is never worse, by its Frank-Wolfe gap, than the active set's alone.
    from structfs.solvers.simplex_qp import active_set_from, simplex_qp_from

    rng = np.random.default_rng(seed)
    K, m = int(rng.integers(8, 30)), int(rng.integers(2, 30))
    A = rng.normal(size=(K, m)) * rng.lognormal(0, 2, size=m) * 1e4
    Q, b = A @ A.T, rng.uniform(0, 100, K)
    no_face = (np.zeros(0, np.int64), np.zeros((0, 0)), False)
    x_active = np.append(np.zeros(K), 1.0)
    _, gap_active, *_ = active_set_from(Q, b, x_active, 1e-12, 4 * K + 20, *no_face)
    x = np.append(np.zeros(K), 1.0)
    gap, *_ = simplex_qp_from(Q, b, x, 1e-12, 200_000, *no_face)
    assert (x >= 0).all() and x.sum() == pytest.approx(1.0)
    if np.isfinite(gap_active):
        assert gap <= gap_active


def test_unscaled_features_converge_with_their_certificate():
    # Raw breast-cancer features (squared row norms ~1.7e6), where the master above is badly scaled:
    # the fit ran out of planes (1,121 and 6 minutes for C = 1023 on 341 examples) before SMO kept the
    # better master. How many planes it takes is round-off: 119-352 over six orders of these rows (OpenBLAS's
    # SkylakeX kernel), about 80 on another machine; the guarantee is the certificate.
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    X, y = X[1::2], y[1::2]
    with warnings.catch_warnings():
        warnings.simplefilter("error")            # no ConvergenceWarning: it converges
        est = StructSVM(C=3.0 * X.shape[0], max_iter=1000).fit(X, y)
    assert est.gap_ <= est.C * est.tol


@pytest.mark.parametrize("seed", range(4))
def test_shared_variable_cone_program_equals_per_group_one(seed):
    from structfs.solvers.qcqp import solve_master_ecos_shared

    rng = np.random.default_rng(seed)
    K, T, U = int(rng.integers(2, 40)), int(rng.integers(2, 8)), int(rng.integers(3, 25))
    F_union = rng.normal(size=(K, U + 1)) * 10 ** rng.uniform(-2, 0)
    members = [np.append(np.sort(rng.choice(U, int(rng.integers(1, U)), replace=False)), U) for _ in range(T)]
    factors = [F_union[:, m] for m in members]
    grams = [F @ F.T for F in factors]
    delta, C = rng.uniform(0, 100, K), 10 ** rng.uniform(0, 4)
    a, flag_a = solve_master_ecos(factors, delta, C)
    b, flag_b = solve_master_ecos_shared(F_union, members, delta, C)
    assert flag_a == 0 and flag_b == 0
    assert master_value(b.abar, grams, delta, C) == pytest.approx(master_value(a.abar, grams, delta, C), rel=1e-6)


@pytest.mark.parametrize("seed", range(8))
def test_interior_point_master_equals_cvxpy_master(seed):
    """The dense interior-point master against the cvxpy reference, across the scales of real runs
    (Gram entries 1e-6..1, C up to 1e5, low-rank groups sharing a bias column)."""
    from structfs.solvers.qcqp import solve_master_ipm

    rng = np.random.default_rng(100 + seed)
    K, T, U = int(rng.integers(2, 60)), int(rng.integers(2, 12)), int(rng.integers(3, 40))
    F_union = rng.normal(size=(K, U + 1)) * 10 ** rng.uniform(-3, 0)
    members = [np.append(np.sort(rng.choice(U, int(rng.integers(1, U)), replace=False)), U) for _ in range(T)]
    factors = [F_union[:, m] for m in members]
    grams = np.stack([F @ F.T for F in factors])
    delta, C = rng.uniform(0, 100, K), 10 ** rng.uniform(0, 5)
    ipm, reason = solve_master_ipm(grams, delta, C, gap_tol=1e-10)
    ref, status = solve_master_cvxpy(factors, delta, C)
    assert reason == "optimal" and status in ("optimal", "optimal_inaccurate")
    vi, vr = master_value(ipm.abar, grams, delta, C), master_value(ref.abar, grams, delta, C)
    assert vi >= vr - 1e-6 * abs(vr)
    assert vi == pytest.approx(vr, rel=1e-6)
    assert ipm.mu.sum() == pytest.approx(1.0) and (ipm.mu >= 0).all()
    # mu certifies the value: the QP with the mu-weighted Gram matrix has the same optimum
    qp = solve_master([np.tensordot(ipm.mu, grams, axes=1)], delta, C)
    assert qp.value == pytest.approx(vi, rel=1e-5)


def test_interior_point_master_returns_its_best_iterate_where_round_off_breaks_its_residuals():
    """A master of a MIL search (tests/golden/ipm_breakdown.json) on which the dual residual jumps from
    1e-10 to 1e-6 of its scale in the step that brings the primal one under 1e-9: the method returns its
    best iterate within the gap tolerance, converged in a few iterations, instead of running out of
    them (and handing the master to ECOS); its value is ECOS's within the tolerance."""
    import json
    import pathlib

    from structfs.solvers.qcqp import solve_master_ipm
    from structfs.solvers.qcqp_ipm import ipm_master

    case = json.loads((pathlib.Path(__file__).parent / "golden" / "ipm_breakdown.json").read_text())
    factors = [np.array(F) for F in case["factors"]]
    grams = np.ascontiguousarray([F @ F.T for F in factors])
    delta, C, gap_tol = np.array(case["delta"]), case["C"], case["gap_tol"]
    _, _, iterations, converged = ipm_master(grams, delta.copy(), C, gap_tol, 100)
    assert converged and iterations <= 30
    ipm, reason = solve_master_ipm(grams, delta, C, gap_tol)
    ref, flag = solve_master_ecos(factors, delta, C)
    assert reason == "optimal" and flag == 0
    vi, vr = master_value(ipm.abar, grams, delta, C), master_value(ref.abar, grams, delta, C)
    assert abs(vi - vr) <= C * gap_tol
    assert ipm.mu.sum() == pytest.approx(1.0) and (ipm.mu >= 0).all()


def test_interior_point_failure_falls_back_to_ecos(monkeypatch):
    import structfs.solvers.qcqp as qcqp

    def broken(Gs, delta, C, gap_tol, max_iter):      # a Newton matrix no shift repairs: x is NaN
        return np.full(delta.shape[0], np.nan), np.zeros(Gs.shape[0]), 1, False

    rng = np.random.default_rng(7)
    factors = [rng.normal(size=(12, 3)) * 0.1 for _ in range(3)]
    grams = np.stack([F @ F.T for F in factors])
    delta = rng.uniform(0, 100, 12)
    good = solve_master(grams, delta, 100.0)
    monkeypatch.setattr(qcqp, "ipm_master", broken)
    fallback = solve_master(grams, delta, 100.0)
    assert good.solver == "ipm" and fallback.solver == "ecos"
    assert fallback.value == pytest.approx(good.value, rel=1e-6)


def test_every_master_solver_failing_warns_and_keeps_the_previous_point(monkeypatch):
    """A solver that raises (cvxpy's SolverError, seen with features of scale 1e-6 and a bias of 1)
    is one more failure of the chain, not a crash: ConvergenceWarning, and the previous point."""
    import structfs.solvers.qcqp as qcqp

    def raises(*args, **kwargs):
        raise cp.error.SolverError("Solver 'CLARABEL' failed.")

    rng = np.random.default_rng(7)
    factors = [rng.normal(size=(12, 3)) * 0.1 for _ in range(3)]
    grams = np.stack([F @ F.T for F in factors])
    delta = rng.uniform(0, 100, 12)
    monkeypatch.setattr(qcqp, "ipm_master", lambda *a: (np.full(12, np.nan), np.ones(3), 1, False))
    monkeypatch.setattr(qcqp, "solve_master_ecos", lambda *a, **k: (None, -1))
    monkeypatch.setattr(cp.Problem, "solve", raises)
    abar0 = np.full(12, 1.0 / 24)
    with pytest.warns(ConvergenceWarning, match="not solved"):
        result = solve_master(grams, delta, 100.0, abar0=abar0)
    assert result.solver == "failed" and np.array_equal(result.abar, abar0)


def test_outer_lower_bound_rescales_alpha_along_its_ray():
    """D(t alpha) = t A - t^2 Q / 2 is maximised over t in [0, 1/sum(abar)]: never below D(alpha)."""
    from types import SimpleNamespace

    from structfs.solvers import BSupport

    _lower_bound = BSupport.lower_bound

    ws = SimpleNamespace(C=10.0, bias=0.0, abar=np.array([0.05, 0.05]), coef_sum=np.zeros(2),
                         delta=np.array([1.0, 1.0]))                  # A = C * delta'abar = 1
    c = np.array([2.0, 0.0, 0.0])                                     # Q = 4: D(alpha) = 1 - 2 = -1
    assert _lower_bound(ws, c[[0]]) == pytest.approx(1.0 / 8.0)   # t = A/Q = 1/4
    c_small = np.array([0.1, 0.0, 0.0])                               # A/Q = 100 > t_max = 10
    assert _lower_bound(ws, c_small[[0]]) == pytest.approx(10 * 1.0 - 0.5 * 100 * 0.01)


def test_planes_idle_at_interior_point_noise_level_age_and_retire(monkeypatch):
    # An interior-point master leaves idle planes at ~1e-7..1e-5 of the largest weight, never at 0;
    # they must still count as idle, or no plane is ever retired (a fit then drags hundreds of them).
    import types

    import structfs.solvers.working_set as cpl

    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 4))
    ws = cpl.WorkingSet(20, 1.0, 10.0, "ipm")
    for _ in range(4):
        ws.add_plane(rng.normal(size=20), 1.0)
    ws.add_group(np.arange(2), X[:, :2])
    weights = np.array([0.6, 0.4, 3e-7, 4e-7])       # planes 2 and 3 idle at noise level
    monkeypatch.setattr(cpl, "solve_master", lambda *a, **k: types.SimpleNamespace(
        abar=weights.copy(), mu=np.array([1.0]), value=1.0, solver="ipm", face=None))
    for _ in range(3):
        ws.solve_master()
    assert ws.age.tolist() == [0, 0, 3, 3]
    ws.drop_planes(ws.age <= 2)
    assert ws.K == 2 and ws.gram(0).shape == (2, 2)


def test_memory_follows_the_data_not_the_index_space(tmp_path):
    """A sparse X whose features are scattered over a huge index space (hashing) is solved on the
    columns that occur: the same model as on the compressed matrix, in X's numbering, with coef_ a
    sparse row (no vector of 10^8 weights), predictions and model files that never build one."""
    import scipy.sparse as sp

    from structfs import StructSVM
    from structfs.model_io import load_model, save_model
    from structfs.solvers import PathRefitter, Solver, occurring_columns, select_columns

    rng = np.random.default_rng(0)
    n, k, m = 60, 12, 10 ** 8
    dense = rng.normal(size=(n, k)) * (rng.random((n, k)) < 0.5)
    columns = np.sort(rng.choice(m, size=k, replace=False))
    X = sp.csr_matrix((dense[dense != 0], np.broadcast_to(columns, (n, k))[dense != 0],
                       np.concatenate(([0], np.cumsum((dense != 0).sum(axis=1))))), shape=(n, m))
    y = np.where(dense[:, 0] + dense[:, 1] + 0.2 * rng.normal(size=n) > 0, 1, 0)
    assert np.array_equal(occurring_columns(X), columns[(dense != 0).any(axis=0)])
    assert np.array_equal(select_columns(X, columns).toarray(), dense)
    for params in ({}, {"budget": 3, "refit": 30.0}):
        big = StructSVM(C=10.0, **params).fit(X, y)
        small = StructSVM(C=10.0, **params).fit(sp.csr_matrix(dense), y)
        assert sp.issparse(big.coef_) and big.coef_.shape == (1, m) and not sp.issparse(small.coef_)
        assert np.array_equal(big.selected_features_, columns[small.selected_features_])
        assert np.array_equal(big.coef_.indices, big.selected_features_)
        assert np.allclose(big.coef_.data, small.coef_[0, small.selected_features_])
        assert big.objective_ == pytest.approx(small.objective_)
        assert np.allclose(big.decision_function(X), small.decision_function(dense))
        back = load_model(save_model(big, tmp_path / "big.json"))
        assert sp.issparse(back.coef_) and np.array_equal(back.coef_.indices, big.coef_.indices)
        assert np.array_equal(back.decision_function(X), big.decision_function(X))
    y_pm = np.where(y == 1, 1.0, -1.0)
    solver = Solver.default()
    cols, w, _ = PathRefitter(X, y_pm, get_loss("f1"), 10.0, 1.0, solver).refit(columns[[0, 1, 2]])
    cols_s, w_s, _ = PathRefitter(dense, y_pm, get_loss("f1"), 10.0, 1.0, solver).refit(np.array([0, 1, 2]))
    assert np.array_equal(cols, columns[cols_s]) and np.allclose(w, w_s)


@pytest.mark.parametrize("loss_name", ["error", "f1", "prec@k", "auc"])
def test_coded_planes_hold_the_oracles_planes_as_the_dense_store(loss_name):
    """The coded plane store (2 bits or 1 byte per example; data on disk or on a cluster) gives the dense store's
    products up to the order of sums, keeps the right planes when some are dropped, and turns dense when a plane has
    more than 255 distinct values (ROC area)."""
    import scipy.sparse as sp

    from structfs.solvers.plane_store import CodedPlanes, DensePlanes

    rng = np.random.default_rng(0)
    n = 5001                                            # not a multiple of 4: a partly filled last byte
    y = np.where(rng.random(n) < 0.3, 1.0, -1.0)
    loss = get_loss(loss_name)
    planes = [loss.oracle(y, rng.normal(size=n) + y * rng.random())[0] for _ in range(20)]
    planes[3] = rng.integers(0, 9, size=n) * 0.5        # 9 values: one byte per example, beside 2-bit rows
    dense, coded = DensePlanes(n), CodedPlanes(n)
    went_dense = False
    for coef in planes:
        assert dense.append(coef)
        if not coded.append(coef):
            coded, went_dense = coded.to_dense(), True
            assert coded.append(coef)
    assert went_dense == (loss_name == "auc")
    if not went_dense:                     # the oracles' planes (<= 4 values) pack four examples to a byte
        assert coded.bits[3] == 8 and all(coded.bits[k] == 2 for k in range(20) if k != 3)
        assert coded.codes[0].nbytes == (n + 3) // 4
    keep = np.flatnonzero(rng.random(20) < 0.6)
    dense.keep(keep)
    coded.keep(keep)
    assert coded.K == dense.K == keep.shape[0]
    weights = np.where(rng.random(coded.K) < 0.5, rng.random(coded.K), 0.0)
    X = sp.random(n, 7, density=0.05, format="csc", random_state=1)
    u = rng.normal(size=n)
    assert np.allclose(coded.combination(weights), dense.combination(weights), rtol=1e-12, atol=1e-15)
    assert np.allclose(coded.dots(u, 3), dense.dots(u, 3), rtol=1e-12, atol=1e-15)
    assert np.allclose(coded.column_products(X), dense.column_products(X), rtol=1e-12, atol=1e-15)
    stored = coded if went_dense else coded.to_dense()          # the codes hold the coefficients exactly
    assert np.array_equal(stored.coef, np.array(planes)[keep])


def test_column_cache_grows_to_the_sorted_slice_exactly():
    """Columns added in steps (new ones before, between and after the cached ones) are merged into the
    cache's own buffers: the result is X[:, sorted columns] array for array, so products over the
    cache keep their order of sums."""
    import scipy.sparse as sp

    from structfs.solvers.data import ColumnCache

    rng = np.random.default_rng(0)
    for trial in range(100):
        n, m = int(rng.integers(1, 40)), int(rng.integers(2, 60))
        X = sp.random(n, m, density=rng.uniform(0, 0.5), format="csc", random_state=trial)
        cache, seen = ColumnCache(X), set()
        for _ in range(5):
            new = np.sort(rng.choice(m, size=int(rng.integers(1, min(m, 8) + 1)), replace=False))
            cache.extend(new)
            seen |= set(new.tolist())
            cols = np.array(sorted(seen))
            expected = X[:, cols]
            assert np.array_equal(cache.cols, cols)
            assert np.array_equal(cache.X.indptr, expected.indptr)
            assert np.array_equal(cache.X.indices, expected.indices)
            assert np.array_equal(cache.X.data, expected.data)


def test_label_stride_finds_b_kron_identity_and_nothing_else():
    """label_stride is L exactly for B (x) I_L (empty rows and columns of B included) and 1 once any entry
    breaks the copies; the strided product is the full one, sum for sum, on the CSC and the CSR arrays."""
    from structfs.solvers.data import compressed_dot, compressed_dot_blocks, label_stride

    rng = np.random.default_rng(0)
    for trial in range(60):
        L, n, m = int(rng.integers(2, 6)), int(rng.integers(1, 30)), int(rng.integers(1, 40))
        B = sp.random(n, m, density=rng.uniform(0.05, 0.6), format="csr", random_state=trial)
        K = sp.kron(B, sp.identity(L), format="csc")
        if B.nnz == 0:
            assert label_stride(K.indptr, K.indices, K.data, K.shape[0]) == 1
            continue
        assert label_stride(K.indptr, K.indices, K.data, K.shape[0]) == L
        for arrays, size in ((K, K.shape[0]), (K.tocsr(), K.shape[1])):
            v = rng.normal(size=size)
            assert np.array_equal(compressed_dot_blocks(arrays.indptr, arrays.indices, arrays.data, v, L),
                                  compressed_dot(arrays.indptr, arrays.indices, arrays.data, v))
        broken = K.copy()
        broken.data[rng.integers(broken.nnz)] += 1.0
        assert label_stride(broken.indptr, broken.indices, broken.data, K.shape[0]) == 1
        plain = sp.random(n * L, m * L, density=0.3, format="csc", random_state=trial)
        assert label_stride(plain.indptr, plain.indices, plain.data, plain.shape[0]) == 1


def test_a_joint_fit_reads_one_copy_of_x_to_the_same_model(monkeypatch):
    """The multi-label joint problem's compiled passes over B (x) I_L give the model of the passes over
    all L copies, bit for bit."""
    from sklearn.datasets import make_multilabel_classification

    from structfs import MultiLabelStructSVM
    from structfs.solvers.data import ColumnCache

    X, Y = make_multilabel_classification(120, n_features=15, n_classes=3, sparse=True, random_state=0)
    strided = MultiLabelStructSVM(C=100.0).fit(X, Y)
    monkeypatch.setattr(ColumnCache, "label_stride", lambda self: 1)
    full = MultiLabelStructSVM(C=100.0).fit(X, Y)
    assert np.array_equal(strided.coef_, full.coef_) and strided.objective_ == full.objective_


def _with_all_pairs(X):
    """X and every product of two of its columns, j < k, in the expansion's order (materialised: tiny X)."""
    m = X.shape[1]
    pairs = [(j, k) for j in range(m) for k in range(j + 1, m)]
    return np.hstack([X] + [X[:, [j]] * X[:, [k]] for j, k in pairs]), pairs


@pytest.mark.parametrize("loss_name,k", [("error", None), ("f1", None), ("prbep", None), ("prec@k", 2), ("rec@k", 3),
                                         ("auc", None), ("ap", None), ("pauc", None)])
@pytest.mark.parametrize("budget", [1, 3])
def test_interactions_match_exact_optimum_over_materialised_pairs(loss_name, k, budget):
    """Interactions never form the products of all pairs; the objective is nonetheless the exact optimum
    of the budgeted problem over X and all its products (cvxpy on the materialised columns)."""
    for seed in range(2):
        X, y = _problem(seed, m=4, loss_name=loss_name)
        C = 10.0
        loss = get_loss(loss_name, **({"k": k} if k else {}))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = solve(X, y, loss, C, budget=budget, bias=1.0, tol=1e-5, interactions=True)
        full, _ = _with_all_pairs(X)
        opt = exact_objective(full, y, loss_name, C, budget, 1.0, k)
        assert res.objective == pytest.approx(opt, rel=1e-3)
        assert res.objective >= opt * (1 - 1e-6)
        assert res.lower_bound <= opt * (1 + 1e-6) + 1e-6


def test_top_pairs_equal_brute_force_on_sparse_and_dense_data():
    """The row-by-row pair scoring (sparse) and the Gram scoring (dense) find the k best pairs of the
    brute-force scores, ties to the smaller index, pairs scoring 0 left out."""
    import scipy.sparse as sp

    from structfs.solvers.interactions import PairExpansion

    rng = np.random.default_rng(0)
    for trial in range(30):
        n, m, k = int(rng.integers(5, 40)), int(rng.integers(2, 15)), int(rng.integers(1, 20))
        X = sp.random(n, m, density=0.4, random_state=trial, format="csc")
        if trial % 3 == 0:
            X.data = np.round(X.data * 3)                 # ties and exact zeros
        v = rng.normal(size=n) if trial % 2 else np.round(rng.normal(size=n))
        dense = X.toarray()
        G = dense.T @ (dense * v[:, None])
        j, k2 = np.triu_indices(m, 1)
        scores, keys = G[j, k2], j * m + k2
        nonzero = np.flatnonzero(scores)
        expected = np.sort(keys[nonzero][np.lexsort((keys[nonzero], -(scores[nonzero] ** 2)))[:k]])
        for data in (X, dense):
            got, values = PairExpansion(data)._top_pairs(v, k)
            order = np.argsort(got)
            assert np.array_equal(got[order], expected), (trial, type(data))
            assert np.allclose(values[order], G[expected // m, expected % m])
        cols, values = PairExpansion(X).candidate_scores(v, k)
        assert np.allclose(PairExpansion(X).take_columns(cols).T @ v, values)
        assert np.allclose(PairExpansion(dense).take_columns(cols).T @ v, values)


# f1, error, auc: compiled oracles; prbep, ap, prec@rec: Python oracles, called from the loop (python_oracle.py)
@pytest.mark.parametrize("loss_name", ["f1", "error", "auc", "prbep", "ap", "prec@rec"])
@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("n,m", [(40, 12), (30, 90)])       # 90 > 2n: planes not kept on the group
def test_compiled_loop_takes_the_python_loops_steps(monkeypatch, loss_name, sparse, n, m):
    """Unbudgeted fits (and the debiasing refits sharing planes) through the compiled inner loop give
    the Python driver's model, for losses with and without a compiled oracle: the same objective and
    bound, the same weights, both certified, in about as many steps -- the same steps in exact
    arithmetic, but the order of floating-point sums differs between the two and with the BLAS build,
    and where it moves a plane near the end the two take a few iterations more or fewer (56 against 58
    on OpenBLAS's Haswell kernel, at most one apart on others) to close the last of the gap."""
    from structfs.solvers import compiled_loop

    rng = np.random.default_rng(n + m)
    X = rng.normal(size=(n, m)) * (rng.random((n, m)) < 0.5)
    y = np.where(X @ rng.normal(size=m) + rng.normal(size=n) > 0.3, 1.0, -1.0)
    y[:2] = [1.0, -1.0]
    data = sp.csr_matrix(X) if sparse else X
    loss = get_loss(loss_name, **({"recall": 0.8} if loss_name == "prec@rec" else {}))
    ran = []
    compiled = compiled_loop.compiled_inner_solve

    def counted(*args):
        out = compiled(*args)
        ran.append(out is not None)
        return out

    monkeypatch.setattr(compiled_loop, "compiled_inner_solve", counted)
    fast = solve(data, y, loss, 50.0, tol=1e-3)
    refits = refit_path(data, y, loss, 50.0, [np.arange(m // 2), np.arange(m)], 1.0, Solver.default(tol=1e-3))
    assert ran == [True, True, True]
    monkeypatch.setattr(compiled_loop, "compiled_inner_solve", lambda *args: None)
    slow = solve(data, y, loss, 50.0, tol=1e-3)
    slow_refits = refit_path(data, y, loss, 50.0, [np.arange(m // 2), np.arange(m)], 1.0, Solver.default(tol=1e-3))
    assert fast.converged and slow.converged
    assert abs(fast.n_iter - slow.n_iter) <= max(1, 0.1 * slow.n_iter)
    assert fast.objective == pytest.approx(slow.objective, rel=1e-6)
    assert fast.lower_bound == pytest.approx(slow.lower_bound, rel=1e-6)
    np.testing.assert_allclose(fast.w, slow.w, rtol=1e-5, atol=1e-7)
    for (cols, w, w_b), (slow_cols, slow_w, slow_w_b) in zip(refits, slow_refits):
        assert np.array_equal(cols, slow_cols)
        np.testing.assert_allclose(w, slow_w, rtol=1e-5, atol=1e-7)
        assert w_b == pytest.approx(slow_w_b, rel=1e-5, abs=1e-7)


def test_compiled_loop_refuses_arrays_its_entry_point_would_misread():
    from numba import types

    from structfs.solvers.compiled_loop import _LOOP_ARGS, _check_arrays

    def example(t):              # a value of numba type t: arrays of its dtype and dimension, scalars, tuples
        if isinstance(t, types.Array):
            return np.zeros((2,) * t.ndim, dtype=np.dtype(str(t.dtype)))
        if isinstance(t, types.BaseTuple):
            return tuple(example(item) for item in t)
        return None

    args = [example(t) for t in _LOOP_ARGS]
    _check_arrays(args)
    ws = list(args[6])                      # the working set: (coef rows, planes, groups, positions, K, T)
    groups = list(ws[2])
    for wrong in (np.zeros((2, 2, 2), dtype=np.float32), np.zeros((4, 2, 2))[::2], [0.0, 0.0]):
        groups[3] = wrong                   # the Gram matrices
        ws[2] = tuple(groups)
        with pytest.raises(TypeError, match=r"argument 6\.2\.3"):
            _check_arrays([*args[:6], tuple(ws), args[7]])
    with pytest.raises(TypeError, match="argument 1:"):
        _check_arrays([args[0], np.zeros(2, dtype=np.int64), *args[2:]])


def test_compiled_loop_stops_at_max_iter_as_the_python_loop(monkeypatch):
    from structfs.solvers import compiled_loop

    X, y = _problem(3, n=60, m=8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fast = solve(X, y, get_loss("f1"), 1e4, tol=1e-9, max_iter=7)
        monkeypatch.setattr(compiled_loop, "compiled_inner_solve", lambda *args: None)
        slow = solve(X, y, get_loss("f1"), 1e4, tol=1e-9, max_iter=7)
    assert fast.n_iter == slow.n_iter == 7 and not fast.converged and not slow.converged
    assert fast.objective == pytest.approx(slow.objective, rel=1e-9)


@pytest.mark.parametrize("loss_name", ["f1", "error", "auc"])
@pytest.mark.parametrize("sparse", [False, True])
def test_compiled_loop_runs_feature_generation_to_the_python_loops_answer(monkeypatch, loss_name, sparse):
    """Budgeted fits: the restricted solves over several groups run compiled (interior-point master)
    and reach the Python driver's optimum -- both certified, so the objectives agree within the gaps."""
    from structfs.solvers import compiled_loop

    rng = np.random.default_rng(7)
    n, m = 60, 40
    X = rng.normal(size=(n, m)) * (rng.random((n, m)) < 0.5)
    y = np.where(X[:, :5].sum(axis=1) + 0.3 * rng.normal(size=n) > 0, 1.0, -1.0)
    data = sp.csr_matrix(X) if sparse else X
    groups_seen = []
    compiled = compiled_loop.compiled_inner_solve

    def counted(ws, *args):
        groups_seen.append(len(ws.groups))
        return compiled(ws, *args)

    monkeypatch.setattr(compiled_loop, "compiled_inner_solve", counted)
    fast = solve(data, y, get_loss(loss_name), 20.0, budget=3, tol=1e-4, max_outer=40)
    assert max(groups_seen) > 1
    monkeypatch.setattr(compiled_loop, "compiled_inner_solve", lambda *args: None)
    slow = solve(data, y, get_loss(loss_name), 20.0, budget=3, tol=1e-4, max_outer=40)
    assert fast.converged and slow.converged
    gaps = (fast.objective - fast.lower_bound) + (slow.objective - slow.lower_bound)
    assert abs(fast.objective - slow.objective) <= gaps + 1e-9 * slow.objective
    assert fast.lower_bound <= slow.objective + 1e-9 and slow.lower_bound <= fast.objective + 1e-9


def test_interior_point_factors_a_matrix_round_off_made_indefinite():
    """The Newton matrix near the optimum can be indefinite by round-off; its factor is then that of
    the matrix shifted by a small multiple of its largest diagonal entry. A matrix no shift within
    1e-2 of that entry repairs is refused. Positive definite matrices of every size around the rows the
    factor takes four at a time get LAPACK's factor."""
    from structfs.solvers.qcqp_ipm import _cholesky

    def factor(H):
        L = np.zeros_like(H)
        return L, _cholesky(H, L)

    rng = np.random.default_rng(3)
    A = rng.normal(size=(6, 3))
    H = A @ A.T                                  # rank 3: singular
    H[0, 0] -= 1e-9 * H[0, 0]                    # and a hair below it
    L, factored = factor(H.copy())
    assert factored and np.allclose(L @ L.T, H, atol=1e-6 * np.abs(H).max())
    assert not factor(-np.eye(4))[1]
    for n in (1, 2, 3, 4, 5, 7, 8, 9, 13):
        B = rng.normal(size=(n, n))
        S = B @ B.T + np.eye(n)
        L, factored = factor(S.copy())
        assert factored and np.allclose(L, np.linalg.cholesky(S), rtol=1e-12, atol=1e-12)


def test_kkt_lu_solve_is_lapack_where_regular_and_refuses_a_zero_pivot():
    from structfs.solvers.simplex_qp import _lu_solve

    rng = np.random.default_rng(4)
    for n in (1, 2, 5, 12):
        A, b = rng.normal(size=(n, n)), rng.normal(size=n)
        x, solved = _lu_solve(A, b)
        assert solved and np.allclose(x, np.linalg.solve(A, b), rtol=1e-9, atol=1e-12)
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    assert not _lu_solve(singular, np.ones(2))[1]


def test_a_path_without_history_records_no_budgeted_iteration_and_finds_the_same_points():
    """A search's budgeted fold paths (``history=False``) keep no per-iteration records, which no one reads
    there, and reach the same points; an unbudgeted path still hears every iteration, whose master values
    are its lower bound, and a fit's result keeps them all."""
    from structfs.solvers import penalty_for

    X, y = _problem(5, n=80, m=30)
    loss, solver = get_loss("f1"), Solver.default(max_outer=4)
    quiet = solver.path(X, y, loss, 30.0, penalty_for(3), 1.0, history=False)
    heard = solver.path(X, y, loss, 30.0, penalty_for(3), 1.0)
    quiet_points, heard_points = list(quiet), list(heard)
    assert quiet.history == [] and len(heard.history) == heard.state.n_iter > 0
    for (c1, w1, b1), (c2, w2, b2) in zip(quiet_points, heard_points, strict=True):
        assert np.array_equal(c1, c2) and np.array_equal(w1, w2) and b1 == b2
    unbudgeted = solver.path(X, y, loss, 30.0, penalty_for(None), 1.0, history=False)
    list(unbudgeted)
    assert len(unbudgeted.history) == unbudgeted.state.n_iter and unbudgeted.state.lower > -np.inf
    assert len(solver.solve(X, y, loss, 30.0, penalty_for(3), 1.0).history) > 0


@pytest.mark.parametrize("kind", ["dense", "fortran", "sparse", "float32"])
def test_column_cache_extensions_hold_the_columns_of_x_in_order(kind):
    """However a cache is extended -- repeated, unsorted, already cached columns -- it holds X[:, union] with
    the union sorted, int64 columns, X's dtype, and for dense data one column-major array (the layout
    its products with the planes were written for)."""
    from structfs.solvers.data import ColumnCache

    rng = np.random.default_rng(3)
    X = rng.random((30, 60))
    data = {"dense": X, "fortran": np.asfortranarray(X), "sparse": sp.csc_matrix(X * (X > 0.7)),
            "float32": X.astype(np.float32)}[kind]
    for _ in range(40):
        cache, union = ColumnCache(data), np.zeros(0, dtype=np.int64)
        for _ in range(rng.integers(1, 6)):
            new = rng.integers(0, 60, size=rng.integers(1, 8))         # duplicates and cached ones included
            if rng.random() < 0.5:
                new = np.unique(new)                                   # sorted and distinct, as selections come
            cache.extend(new)
            union = np.union1d(union, new)
            if not sp.issparse(cache.X):       # the loop's C-ordered copy follows the cache as it grows
                rows = cache.dense_rows()
                assert rows.flags.c_contiguous and rows.dtype == np.float64 and np.array_equal(rows, data[:, union])
        expected = data[:, union]
        got = cache.X.toarray() if sp.issparse(cache.X) else cache.X
        assert np.array_equal(cache.cols, union) and cache.cols.dtype == np.int64
        assert np.array_equal(got, expected.toarray() if sp.issparse(expected) else expected)
        assert got.dtype == data.dtype and (sp.issparse(cache.X) or cache.X.flags.f_contiguous)
