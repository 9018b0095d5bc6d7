"""Outer layer: feature generation for the budget-constrained problem (Mao & Tsang, FS^Delta_multi).

    min_{d in D} min_{w, xi}  1/2 sum_j w_j^2/d_j + 1/2 w_b^2 + C xi,   D = {d in [0,1]^m : sum(d) <= B}

is a saddle problem in (alpha, d); for fixed alpha the worst d puts d_j = 1 on the B features with the
largest c_j^2, c = X~' beta, beta = sum_k alpha_k coef_k. The outer layer adds that d as a new group of
features (one sparse pass over X), the inner layer (cutting_plane.py) re-solves over the groups found
so far. Any alpha gives the lower bound

    D(alpha) = Delta' alpha - 1/2 c_b^2 - 1/2 (sum of the B largest c_j^2)

on the optimum, and any w the upper bound 1/2 ||w||_(B)^2 + 1/2 w_b^2 + C xi(w), so the reported gap
bounds the true suboptimality. Without a budget there is one group holding every feature and this is
SVMperf's 1-slack cutting-plane method.
"""
import time
import warnings
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from .cutting_plane import inner_solve
from .data import (
    ColumnCache,
    _as_solver_matrix,
    _matvec,
    _matvec_t,
    is_row_blocks,
    occurring_columns,
    select_columns,
    take_columns,
    weights_in,
)
from .objective import primal_objective
from .working_set import WorkingSet


@dataclass
class SolverResult:
    w: np.ndarray             # feature weights (m,); a (1, m) CSR row above data.MAX_DENSE_WEIGHTS features
    w_b: float                # weight of the bias feature (its value is `bias`)
    objective: float          # primal objective of CONTRACT section 1 at (w, w_b)
    lower_bound: float        # a proven lower bound on the optimal objective
    n_iter: int               # inner iterations (= planes generated)
    n_outer: int              # feature groups generated (1 without a budget)
    converged: bool
    history: list = field(default_factory=list)
    # Budgeted fits: the model after each generated group, (columns, weights on them, w_b), in order.
    # The iterates are a sparsity path at the cost of one fit (model selection picks a length on it).
    path: list = field(default_factory=list)
    stop: str = ""            # why feature generation ended (see _solve)


class _BestIterate:
    """Keeps the iterate with the lowest true primal objective, and the best lower bound."""

    def __init__(self, n_features, budget, C):
        self.m, self.budget, self.C = n_features, budget, C
        self.best = np.inf
        self.lower = -np.inf
        self.w_cache = None
        self.w_b = 0.0
        self.cols = np.zeros(0, dtype=np.int64)
        self.n_iter = 0
        self.stalled = False

    def record(self, w, w_b, xi, cols):
        """Note a point (weights on the cache columns ``cols``); returns its true primal objective."""
        obj = primal_objective(w, w_b, xi, self.C, self.budget)
        if obj < self.best:
            self.best, self.w_cache, self.w_b, self.cols = obj, w.copy(), w_b, cols.copy()
        return obj

    def full_w(self):
        w = np.zeros(self.m)
        if self.w_cache is not None:
            w[self.cols] = self.w_cache
        return w


def solve(X, y, loss, C, **kwargs):
    """Minimise CONTRACT section 1 (see :func:`_solve` for the parameters; ``budget`` and
    ``max_features`` are mapped by :func:`effective_budget` first; ``refit=C2`` with a budget re-solves
    without budget at C2 on the selected columns, StructSVM's debiasing).

    Budgeted fits run with single-threaded BLAS: the interior-point master's algebra is small (K x K)
    and OpenBLAS's threads only spin on it; when several processes share the cores (one-vs-rest with
    n_jobs, grid searches) they slowed a fit down by up to 6x (MIL elephant: 44.5 s -> 7.6 s; R8 B=5
    alone: 11.4 s -> 9.1 s). Unbudgeted fits keep the threads: their K x n plane products gain from
    them (R8 C=1e4: 6.2 s threaded, 7.0 s single-threaded).
    """
    columns = occurring_columns(X)
    if columns is not None:           # solve on the columns that occur; weights map back at the end
        return _on_columns(columns, X.shape[1], X, y, loss, C, kwargs)
    cap = kwargs.pop("max_features", None)
    refit = kwargs.pop("refit", None)
    asked = kwargs.pop("budget", None)
    budget = effective_budget(asked, cap, X.shape[1])
    if budget is None:                                  # one group of all features: SVMperf's problem
        if is_row_blocks(X):
            what = "budget=None" if asked is None else f"budget={asked} (covering all {X.shape[1]} features)"
            raise ValueError(f"{what} on {type(X).__name__} data (rows on disk or on a cluster): the "
                             "unbudgeted problem needs every column in memory at once; set a budget below the "
                             "number of features (feature generation reads X once per group).")
        return _solve(X, y, loss, C, budget=None, **kwargs)
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        res = _solve(X, y, loss, C, budget=budget, max_features=cap if cap is not None and cap < X.shape[1] else None,
                     **kwargs)
    if refit is not None:
        res = _refit(X, y, loss, C, budget, float(refit), res, kwargs)
    return res


def _refit(X, y, loss, C, budget, refit, res, kwargs):
    """Debias: re-solve without budget at C = ``refit`` on the selected columns (the budget selects,
    the unbudgeted problem weighs them); the reported objective is the budgeted one of that model."""
    selected = np.flatnonzero(res.w)
    if selected.size == 0:
        return res
    # the settings the fit was given, _solve's own defaults for the rest (one source of truth)
    sub_params = {k: kwargs[k] for k in ("bias", "tol", "max_iter", "verbose") if k in kwargs}
    bias = sub_params.get("bias", _solve.__kwdefaults__["bias"])
    X_selected = take_columns(X, selected)         # in memory, whether X is or not
    sub = solve(X_selected, y, loss, refit, budget=None, **sub_params)
    w = np.zeros(X.shape[1])
    w[selected] = sub.w
    scores = _matvec(X_selected, sub.w) + bias * sub.w_b
    coef, delta = loss.oracle(y, scores)
    xi = max(0.0, delta - float(coef @ scores))
    res.w, res.w_b = w, sub.w_b
    res.objective = primal_objective(sub.w, sub.w_b, xi, C, budget)   # zeros leave the norm as is
    res.history = res.history + sub.history
    return res


def _on_columns(columns, n_features, X, y, loss, C, kwargs):
    """solve() on the occurring columns; the result, the path and the callback in X's numbering."""
    on_group = kwargs.get("on_group")
    if on_group is not None:
        kwargs = dict(kwargs, on_group=lambda cols, w, w_b: on_group(columns[cols], w, w_b))
    res = solve(select_columns(X, columns), y, loss, C, **kwargs)
    res.w = weights_in(columns, res.w, n_features)
    res.path = [(columns[cols], ws, w_b) for cols, ws, w_b in res.path]
    return res


def effective_budget(budget, max_features, n_features):
    """The budget actually solved for: no group larger than the cap ``max_features``, and None (one
    group of every feature, SVMperf's problem) when it covers all ``n_features``."""
    if budget is not None and max_features is not None:
        budget = min(budget, max_features)
    return budget if budget is None or budget < n_features else None


def _solve(X, y, loss, C, *, budget=None, bias=1.0, tol=0.01, outer_tol=None, max_iter=2000, max_outer=30,
           max_features=None, max_age=10, master_solver="ipm", on_group=None, polish=True, verbose=0, log=print):
    """Minimise CONTRACT section 1 for labels ``y`` in {-1,+1} with a validated loss object.

    ``budget=None``: all features in one group (:func:`solve` maps a budget >= n_features to None). ``tol`` is
    SVMperf's ``-e``: stop
    once objective - lower bound <= C * tol (the slack is within tol percent of optimal). With a budget
    feature generation stops for one of these reasons (``SolverResult.stop``):

    * ``"gap"``: the certified gap of the budgeted problem is <= C * tol;
    * ``"optimal"``: no group of unselected features violates the optimality condition by more than
      C * tol: the most violated group would raise the dual bound by at most that much (at the
      restricted problem's alpha, R(alpha) - D(alpha) = (||c_top||^2 - max_t ||c_t||^2) / 2);
    * ``"max_features"`` / ``"max_outer"``: the user's caps;
    * ``"stall"``: only with ``outer_tol`` set, FGM's rule: the restricted optimum changed by less
      than ``outer_tol`` (relative) for two groups in a row. It compares coarse solves (1% of the
      objective), so it can stop on solver noise; it is off by default;
    * ``"callback"``: ``on_group(columns, weights, w_b)``, called with the model after each group
      (a point of the path), returned True (model selection stopping a path early);
    * ``"max_iter"``: the plane budget ran out (the only stop that warns, unless certified).

    After generation the last restricted problem is polished from the path's coarse precision to
    ``tol``; ``polish=False`` skips that (model selection scores the path's points as ``on_group``
    sees them, so the polished last point would go unused: ~6% of an R8 search).

    The reported lower bound says how far from optimal the answer may be. ``max_features`` (budget only) is a
    hard cap on the selection: the weights live on the union of the groups' columns, so generation
    stops once that union is full, the last group trimmed to its most violated new columns. ``master_solver`` picks
    the solver of the
    multi-group master problem: "ipm" (dense interior point, ECOS as its fallback) or "ecos".
    Returns a :class:`SolverResult`.
    """
    X = _as_solver_matrix(X)
    n, m = X.shape
    ws = WorkingSet(n, bias, C, master_solver, coded=is_row_blocks(X))   # large n: planes in 1 byte/example
    cache = ColumnCache(X)
    state = _BestIterate(m, budget, C)
    history = []
    t_start = time.perf_counter()

    coef, delta = loss.oracle(y, np.zeros(n))     # most violated output at w = 0
    state.record(np.zeros(0), 0.0, delta, cache.cols)
    ws.add_plane(coef, delta)
    del coef                                      # stored in the working set; an n-vector

    def callback(rec):
        if budget is None:   # one group of every feature: the master value is a global bound
            state.lower = max(state.lower, rec["master"])
        rec["lower_bound"] = state.lower
        rec["gap"] = state.best - state.lower
        rec["seconds"] = time.perf_counter() - t_start
        history.append(rec)
        if verbose >= 2 or (verbose and rec["iteration"] % 10 == 0):
            log(f"[structfs] outer {rec['outer']:3d} iter {rec['iteration']:4d}  objective {rec['objective']:.6g}"
                f"  bound {rec['lower_bound']:.6g}  inner gap {rec['inner_gap']:.3g}  planes {rec['planes']:3d}"
                f"  features {rec['features']}")

    inner_kw = dict(tol=tol, max_iter=max_iter, max_age=max_age, callback=callback)
    converged = False
    n_outer = 0
    if budget is None:
        cols = np.arange(m)
        ws.add_group(cols, X)
        cache.extend(cols)
        n_outer = 1
        status, _ = inner_solve(ws, cache, y, loss, state, outer=1, **inner_kw)
        converged = status == "converged"
    else:
        n_outer, stop, path = _generate_groups(X, y, loss, C, ws, cache, state, inner_kw, budget=budget,
                                               tol=tol, outer_tol=outer_tol, max_iter=max_iter,
                                               max_outer=max_outer, max_features=max_features,
                                               on_group=on_group, polish=polish)
        # Stopping where the user asked (caps, FGM's rule) or at a certificate is convergence; only
        # running out of planes is not.
        converged = stop != "max_iter"
    gap = state.best - state.lower
    converged = converged or gap <= C * tol
    if not converged:
        why = (f"after max_iter={max_iter} cutting planes" if state.n_iter >= max_iter else
               "when the master solver's accuracy ran out")
        warnings.warn(f"structfs stopped {why} with gap {gap:.4g} > C*tol={C * tol:.4g} (objective "
                      f"{state.best:.6g}); increase max_iter or tol.", ConvergenceWarning, stacklevel=3)
    if verbose:
        log(f"[structfs] done: objective {state.best:.6g}, lower bound {state.lower:.6g}, "
            f"{state.n_iter} planes, {n_outer} groups, {time.perf_counter() - t_start:.2f} s")
    if budget is None:
        return SolverResult(state.full_w(), state.w_b, state.best, state.lower, state.n_iter, 1, converged, history)
    return SolverResult(state.full_w(), state.w_b, state.best, state.lower, state.n_iter, len(path), converged,
                        history, path, stop)


def _generate_groups(X, y, loss, C, ws, cache, state, inner_kw, *, budget, tol, outer_tol, max_iter, max_outer,
                     max_features, on_group, polish=True):
    """The outer layer (FGM): add the most violated group of ``budget`` features, re-solve the
    restricted problem coarsely, until one of the stops of :func:`_solve`; then (``polish``) solve the
    last restricted problem to ``tol``. Returns (groups generated, stop reason, path)."""
    ws.abar[:] = 1.0          # alpha = C on the first plane: the subgradient direction at w = 0
    previous, stalled, stop = np.inf, 0, "max_outer"
    path = []
    n_outer = 0
    for n_outer in range(1, max_outer + 1):
        c = _matvec_t(X, ws.beta())
        top = _top_features(c, budget)
        state.lower = max(state.lower, _lower_bound(ws, c, top))
        if state.best - state.lower <= C * tol:
            stop = "gap"
            break
        if _violation(ws, c, top) <= C * tol:
            stop = "optimal"       # no unselected group is worth more than the precision asked for
            break
        full = False
        if max_features is not None:
            top, full = _fit_cap(top, cache.cols, c, max_features)
        del c                      # one value per column (3e7 for kddb): not kept while the cache grows
        cache.extend(top)
        # sparse columns: the group reads them from the cache (compiled per-column sums, the same
        # whichever slice); dense ones keep their BLAS products on the group's own slice
        ws.add_group(top, cache.columns(top), cache if sp.issparse(cache.X) else None)
        # While groups are being generated each restricted problem is solved to 1% (its answer only
        # has to point at the next group); the last one is polished to tol below.
        coarse = max(tol, 1e-2 * abs(previous if np.isfinite(previous) else state.best) / C)
        status, restricted = inner_solve(ws, cache, y, loss, state, outer=n_outer, **dict(inner_kw, tol=coarse))
        path.append((state.cols.copy(), state.w_cache.copy(), state.w_b))
        if on_group is not None and on_group(*path[-1]):
            stop = "callback"
            break
        if status == "max_iter":
            stop = "max_iter"
            break
        if full:                   # the cap is reached: the selection is final (a deliberate stop)
            stop = "max_features"
            break
        # FGM's rule (opt-in). The restricted problem's optimum decreases as groups are added; a
        # degenerate master can leave it unchanged once while a later group still helps, so
        # the stall must hold for two groups in a row.
        if outer_tol is not None:
            stalled = stalled + 1 if abs(previous - restricted) <= outer_tol * abs(restricted) else 0
            if stalled >= 2:
                stop = "stall"
                break
        previous = restricted
    if polish and state.n_iter < max_iter and not state.best - state.lower <= C * tol:
        inner_solve(ws, cache, y, loss, state, outer=n_outer, **inner_kw)
    c = _matvec_t(X, ws.beta())
    state.lower = max(state.lower, _lower_bound(ws, c, _top_features(c, budget)))
    if path:                       # the last point of the path is the polished final model
        path[-1] = (state.cols.copy(), state.w_cache.copy(), state.w_b)
    return n_outer, stop, path


def _top_features(c, budget):
    """Sorted indices of the ``budget`` largest c_j^2 (introselect: ties broken deterministically)."""
    if budget >= c.shape[0]:
        return np.arange(c.shape[0])
    minus_sq = c * c
    np.negative(minus_sq, out=minus_sq)  # -c^2 in one vector over the columns (3e7 of them for kddb)
    top = np.argpartition(minus_sq, budget - 1, kind="introselect")[:budget]
    return np.sort(top)


def _fit_cap(top, cached, c, max_features):
    """(group, full): ``top`` trimmed so that the cached columns plus its new ones stay within
    ``max_features`` (the new columns with the largest c_j^2 are kept); full when the cap is reached."""
    new = np.setdiff1d(top, cached, assume_unique=True)
    room = max_features - cached.shape[0]
    if new.shape[0] < room:
        return top, False
    keep = new[np.argsort(-(c[new] ** 2), kind="stable")[:room]]
    return np.sort(np.concatenate([np.intersect1d(top, cached, assume_unique=True), keep])), True


def _violation(ws, c, top):
    """(||c_top||^2 - max_t ||c_t||^2) / 2: how much the most violated group would raise the dual
    bound at the current alpha above the restricted problem's (FGM's optimality condition)."""
    active = max((float(c[g.cols] @ c[g.cols]) for g in ws.groups), default=0.0)
    return 0.5 * (float(c[top] @ c[top]) - active)


def _lower_bound(ws, c, top):
    """max over t in [0, 1/sum(abar)] of D(t alpha): the dual function on the ray through alpha.

    D(t alpha) = t A - t^2 Q / 2 with A = Delta'alpha and Q = c_b^2 + (sum of the B largest c_j^2)
    (c scales with t, its top-B set does not), so the best scaling is closed-form. alpha comes from
    the restricted problem, whose planes ignore the features outside the groups: at t = 1 the bound is
    often far below zero (Q >> A), while the rescaled alpha stays a feasible dual point and gives
    A^2 / (2 Q) instead.
    """
    beta_sum = ws.C * float(ws.abar @ ws.coef_sum)
    c_b = ws.bias * beta_sum
    A = ws.C * float(ws.delta @ ws.abar)
    Q = c_b * c_b + float(c[top] @ c[top])
    t_max = 1.0 / max(float(ws.abar.sum()), 1e-300)      # keeps sum(t alpha) <= C
    t = t_max if Q <= 0 else min(max(A / Q, 0.0), t_max)
    return t * A - 0.5 * t * t * Q
