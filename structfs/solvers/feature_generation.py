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
from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from .. import _defaults
from .._interrupt import check_interrupt
from .compiled_loop import solve_restricted
from .cutting_plane import MAX_AGE, InnerSettings, LossOracle
from .data import (
    ColumnCache,
    SolverData,
    is_row_blocks,
    matvec,
    matvec_t,
    take_columns,
    weights_in,
)
from .penalties import Penalty, penalty_for
from .threads import blas_limited
from .working_set import WorkingSet


@dataclass
class SolverResult:
    w: np.ndarray             # feature weights (m,); a (1, m) CSR row above data.MAX_DENSE_WEIGHTS features
    w_b: float                # weight of the bias feature (its value is `bias`)
    objective: float          # primal objective (solvers.objective) at (w, w_b)
    lower_bound: float        # a proven lower bound on the optimal objective
    n_iter: int               # inner iterations (= planes generated)
    n_outer: int              # feature groups generated (1 without a budget)
    converged: bool
    history: list = field(default_factory=list)
    # Budgeted fits: the model after each generated group, (columns, weights on them, w_b), in order.
    path: list = field(default_factory=list)
    stop: str = ""            # why feature generation ended (see Solver)


class BestIterate:
    """Keeps the iterate with the lowest true primal objective, and the best lower bound."""

    def __init__(self, penalty: Penalty, C: float) -> None:
        self.penalty, self.C = penalty, C
        self.best = np.inf
        self.lower = -np.inf
        self.w_cache = np.zeros(0)           # the best iterate's weights on ``cols``
        self.w_b = 0.0
        self.cols = np.zeros(0, dtype=np.int64)
        self.n_iter = 0
        self.stalled = False

    def objective(self, w: np.ndarray, w_b: float, xi: float, cols: np.ndarray) -> float:
        """The primal objective at (w, w_b) with slack xi, ``w`` on the columns ``cols``."""
        return self.penalty.value(w, cols) + 0.5 * w_b * w_b + self.C * xi

    def record(self, w: np.ndarray, w_b: float, xi: float, cols: np.ndarray) -> float:
        """Note a point (weights on the cache columns ``cols``); returns its true primal objective."""
        obj = self.objective(w, w_b, xi, cols)
        if obj < self.best:
            self.best, self.w_cache, self.w_b, self.cols = obj, w.copy(), w_b, cols.copy()
        return obj


@dataclass(frozen=True)
class Solver:
    """The two-layer cutting-plane solver of the primal objective (:mod:`structfs.solvers.objective`),
    its settings held once.

    ``tol`` is SVMperf's ``-e``: stop once objective - lower bound <= C * tol (the slack is within tol
    percent of optimal). With a budget, feature generation stops for one of these reasons
    (``SolverResult.stop``):

    * ``"gap"``: the certified gap of the budgeted problem is <= C * tol;
    * ``"optimal"``: no group of unselected features violates the optimality condition by more than
      C * tol: the most violated group would raise the dual bound by at most that much (at the
      restricted problem's alpha, R(alpha) - D(alpha) = (||c_top||^2 - max_t ||c_t||^2) / 2);
    * ``"max_features"`` / ``"max_outer"``: the caps (``max_features``: the weights live on the union
      of the groups' columns, so generation stops once that union is full, the last group trimmed to
      its most violated new columns);
    * ``"stall"``: only with ``outer_tol`` set, FGM's rule: the restricted optimum changed by less
      than ``outer_tol`` (relative) for two groups in a row. It compares coarse solves (1% of the
      objective), so it can stop on solver noise; it is off by default;
    * ``"max_iter"``: the plane budget ran out (the only stop that warns, unless certified).

    ``master_solver`` picks the solver of the multi-group master problem: "ipm" (dense interior
    point, ECOS as its fallback) or "ecos". :meth:`path` yields the model after each generated group
    and the caller decides when to stop; :meth:`solve` runs the path to its end and polishes the last
    restricted problem to ``tol``.
    """

    tol: float
    max_iter: int
    max_outer: int
    max_features: int | None = None
    outer_tol: float | None = None
    master_solver: str = _defaults.MASTER_SOLVER
    verbose: int = 0
    blas_threads: int = _defaults.BLAS_THREADS

    @classmethod
    def default(cls, **settings: Any) -> Solver:
        """A solver with the package's defaults, ``settings`` overriding them."""
        return cls(**{"tol": _defaults.TOL, "max_iter": _defaults.MAX_ITER, "max_outer": _defaults.MAX_OUTER,
                      **settings})

    def inner_settings(self, callback: Callable[[dict[str, Any]], None] | None = None) -> InnerSettings:
        """The settings of the restricted solves this solver runs (``callback`` hears each iteration)."""
        settings = InnerSettings(self.tol, self.max_iter, MAX_AGE)
        return settings if callback is None else replace(settings, callback=callback)

    def path(self, X: Any, y: np.ndarray, loss: LossOracle, C: float, penalty: Penalty, bias: float,
             history: bool = True) -> SolverPath:
        """A :class:`SolverPath` over the problem (labels ``y`` in {-1,+1}, a validated loss object);
        ``history`` False: its budgeted iterations are not recorded (a search's fold paths, whose
        results are their points)."""
        return SolverPath(self, X, y, loss, C, penalty, bias, history)

    def solve(self, X: Any, y: np.ndarray, loss: LossOracle, C: float, penalty: Penalty, bias: float) -> SolverResult:
        """Minimise the primal objective; a :class:`SolverResult`."""
        path = self.path(X, y, loss, C, penalty, bias)
        for _ in path:
            pass
        return path.result()


class SolverPath:
    """The models after each generated feature group, (columns, weights on them, w_b) in X's
    numbering: a sparsity path at the cost of one fit. Iterate it (and stop where you like), then
    :meth:`result` polishes the last point to the solver's ``tol`` and certifies it.

    Without a budget there is one group of every feature and the path is the one solution. Paths run
    with ``Solver.blas_threads`` BLAS threads, one by default: the interior-point master's algebra is
    small (K x K) and OpenBLAS's threads only spin on it, and the unbudgeted fits' K x n plane
    products gain little from a second thread. When another process holds a core (one-vs-rest with
    n_jobs, grid searches, a shared machine) threads slowed fits by 2-6x (``python -m
    benchmarks.threads``: the 8 unbudgeted R8 topics, 1 thread against 2).
    """

    def __init__(self, solver: Solver, X: Any, y: np.ndarray, loss: LossOracle, C: float, penalty: Penalty,
                 bias: float, history: bool = True) -> None:
        self.solver, self.y, self.loss, self.C, self.bias = solver, y, loss, C, bias
        data = SolverData.of(X)                     # solve on the columns that occur; map back at the end
        self.n_features, self.columns, X = data.n_features, data.columns, data.X
        penalty = penalty if self.columns is None else penalty.on_columns(self.columns)
        self.penalty = penalty.restricted(X.shape[1], solver.max_features)
        if self.penalty.budget is None and is_row_blocks(X):
            asked = penalty.budget
            what = "budget=None" if asked is None else f"budget={asked} (covering all {X.shape[1]} features)"
            raise ValueError(f"{what} on {type(X).__name__} data (rows on disk or on a cluster): the "
                             "unbudgeted problem needs every column in memory at once; set a budget below the "
                             "number of features (feature generation reads X once per group).")
        cap = solver.max_features
        self.max_features = cap if cap is not None and cap < X.shape[1] else None
        self.X = X
        n = self.X.shape[0]
        self.ws = WorkingSet(n, bias, C, solver.master_solver, coded=is_row_blocks(self.X))
        self.cache = ColumnCache(self.X)
        self.state = BestIterate(self.penalty, C)
        self.history: list[dict[str, Any]] = []
        self.points: list[tuple[np.ndarray, np.ndarray, float]] = []
        self.stop, self.n_outer = "", 0
        self.status: str | None = None               # the last inner solve's
        self._t_start = time.perf_counter()
        # Each iteration is recorded for the result's history (and printed, verbose); an unbudgeted path's
        # master values are also its lower bound. A search's budgeted fold paths need neither: turning the
        # compiled loop's records into dicts was 1-2% of a MIL search.
        heard = history or self.penalty.budget is None or solver.verbose
        self._inner = solver.inner_settings(callback=self._record if heard else None)
        coef, delta = loss.oracle(y, np.zeros(n))      # most violated output at w = 0
        self.state.record(np.zeros(0), 0.0, delta, self.cache.cols)
        self.ws.add_plane(coef, delta)

    def add_planes(self, planes: list[tuple[np.ndarray, float]]) -> None:
        """Start from cutting planes ``planes`` [(coef, delta)] of another solve on the same examples and
        loss (at any C, on any columns: a plane is a valid cut for all of them); before iterating."""
        for coef, delta in planes:
            self.ws.add_plane(coef, delta)

    def planes(self) -> list[tuple[np.ndarray, float]]:
        """The working set's live cutting planes [(coef, delta)]; none for coded stores (data on disk)."""
        ws = self.ws
        if not hasattr(ws.planes, "coef"):
            return []
        return [(ws.planes.coef[k].copy(), float(ws.delta[k])) for k in range(ws.K)]

    def _record(self, rec: dict[str, Any]) -> None:
        state = self.state
        if self.penalty.budget is None:   # one group of every feature: the master value is a global bound
            state.lower = max(state.lower, rec["master"])
        rec["lower_bound"] = state.lower
        rec["gap"] = state.best - state.lower
        rec["seconds"] = time.perf_counter() - self._t_start
        self.history.append(rec)
        verbose = self.solver.verbose
        if verbose >= 2 or (verbose and rec["iteration"] % 10 == 0):
            print(f"[structfs] outer {rec['outer']:3d} iter {rec['iteration']:4d}  objective {rec['objective']:.6g}"
                  f"  bound {rec['lower_bound']:.6g}  inner gap {rec['inner_gap']:.3g}  planes {rec['planes']:3d}"
                  f"  features {rec['features']}")

    def _in_X(self, cols: np.ndarray, values: Any) -> tuple[np.ndarray, np.ndarray]:
        """Weights ``values`` on the solver's (sorted) columns ``cols``: (columns in X's numbering, values)."""
        cols = np.asarray(cols, dtype=np.int64)
        return (cols if self.columns is None else self.columns[cols]), np.asarray(values, dtype=float)

    def _point(self) -> tuple[np.ndarray, np.ndarray, float]:
        """The current model in X's numbering."""
        state = self.state
        cols, w = self._in_X(state.cols, state.w_cache)
        return cols, w.copy(), state.w_b

    def __iter__(self) -> Iterator[tuple[np.ndarray, np.ndarray, float]]:
        with blas_limited(self.solver.blas_threads):
            yield from self._unbudgeted() if self.penalty.budget is None else self._generate_groups()
            if not self.points:           # certified at the start (no group worth adding): the zero model
                self.points.append(self._point())
                yield self.points[-1]

    def _unbudgeted(self) -> Iterator[tuple[np.ndarray, np.ndarray, float]]:
        cols = np.arange(self.X.shape[1])
        self.ws.add_group(cols, self.X)
        self.cache.extend(cols)
        self.n_outer = 1
        self.status, _ = solve_restricted(self.ws, self.cache, self.y, self.loss, self.state, self._inner, outer=1)
        self.points.append(self._point())
        yield self.points[-1]

    def _generate_groups(self) -> Iterator[tuple[np.ndarray, np.ndarray, float]]:
        """The outer layer (FGM): add the most violated group, re-solve the restricted problem coarsely,
        until one of the stops of :class:`Solver`."""
        ws, cache, state, solver = self.ws, self.cache, self.state, self.solver
        C, tol, penalty = self.C, solver.tol, self.penalty
        ws.abar[:] = 1.0          # alpha = C on the first plane: the subgradient direction at w = 0
        previous, stalled, self.stop = np.inf, 0, "max_outer"
        polished = True                # the restricted problem is solved to tol (nothing to solve yet)
        for n_outer in range(1, solver.max_outer + 1):
            self.n_outer = n_outer
            while True:
                check_interrupt()
                top, c_top, c_on = self._most_violated()
                state.lower = max(state.lower, penalty.lower_bound(ws, c_top))
                if state.best - state.lower <= C * tol:
                    self.stop = "gap"
                    return
                if penalty.violation(ws, c_top, c_on) > C * tol:
                    break
                if polished:
                    self.stop = "optimal"    # no unselected group is worth more than the precision asked for
                    return
                # The test holds at a coarse dual point; it proves optimality only at the restricted
                # problem's optimum (a coarse one stopped AUC at budget 1 with a gap of 10%): polish, re-test.
                self.status, _ = solve_restricted(ws, cache, self.y, self.loss, state, self._inner, outer=n_outer)
                polished = True
                if self.status == "max_iter":
                    self.stop = "max_iter"
                    return
            full = False
            if self.max_features is not None:
                top, full = _fit_cap(top, c_top, cache.cols, self.max_features, getattr(penalty, "groups", None))
            del c_on                   # may hold one value per column (3e7 for kddb): not kept while the cache grows
            cache.extend(top)
            # sparse columns: the group reads them from the cache (compiled per-column sums, the same
            # whichever slice); dense ones keep their BLAS products on the group's own slice
            ws.add_group(top, cache.columns(top), cache if sp.issparse(cache.X) else None)
            # While groups are being generated each restricted problem is solved to 1% (its answer only
            # has to point at the next group); the last one is polished to tol by result().
            coarse = max(tol, 1e-2 * abs(previous if np.isfinite(previous) else state.best) / C)
            inner = self._inner.coarser(coarse)
            self.status, restricted = solve_restricted(ws, cache, self.y, self.loss, state, inner, outer=n_outer)
            polished = coarse <= tol
            self.points.append(self._point())
            # the stop is known before the point is handed out: a caller that pauses the path here
            # (successive halving) sees the state it would see at the end of the path
            if self.status == "max_iter":
                self.stop = "max_iter"
            elif full:                 # the cap is reached: the selection is final (a deliberate stop)
                self.stop = "max_features"
            yield self.points[-1]
            if self.stop in ("max_iter", "max_features"):
                return
            # FGM's rule (opt-in). The restricted problem's optimum decreases as groups are added; a
            # degenerate master can leave it unchanged once while a later group still helps, so
            # the stall must hold for two groups in a row.
            if solver.outer_tol is not None:
                stalled = stalled + 1 if abs(previous - restricted) <= solver.outer_tol * abs(restricted) else 0
                if stalled >= 2:
                    self.stop = "stall"
                    return
            previous = restricted

    def _most_violated(self) -> tuple[np.ndarray, np.ndarray, Callable[[np.ndarray], np.ndarray]]:
        """(top, c_top, c_on): the columns of the most violated group (sorted), their scores c = X~' beta
        at the current dual point, and c on any cached columns. Data offering ``candidate_scores``
        (:class:`~structfs.solvers.interactions.PairExpansion`, whose columns are too many for X' beta)
        give the scores of the columns that can make the group; c on a cached group is then read
        through the cache."""
        beta = self.ws.beta()
        if not hasattr(self.X, "candidate_scores"):
            c = matvec_t(self.X, beta)
            top = self.penalty.select(c)
            return top, c[top], lambda cols: c[cols]
        cols, scores = self.X.candidate_scores(beta, self.penalty.budget)
        chosen = self.penalty.select(scores)
        cache = self.cache

        def c_on(group_cols: np.ndarray) -> np.ndarray:
            return matvec_t(cache.columns(group_cols), beta)

        return cols[chosen], scores[chosen], c_on

    @property
    def converged(self) -> bool:
        """Whether the path so far ended where asked: every stop but running out of planes (or, without
        a budget, the inner solve's certificate), or a certified gap."""
        state = self.state
        if self.penalty.budget is None:
            done = self.status == "converged"
        else:
            done = self.stop != "max_iter"
        return done or state.best - state.lower <= self.C * self.solver.tol

    def _final_bound(self, polish: bool) -> None:
        """(Budget only) polish the last restricted problem to ``tol``, then the lower bound at its
        dual point."""
        state, tol = self.state, self.solver.tol
        with blas_limited(self.solver.blas_threads):
            # no group generated (every column zero, or squares below the smallest double): nothing to polish
            if (polish and self.ws.groups and state.n_iter < self.solver.max_iter
                    and not state.best - state.lower <= self.C * tol):
                solve_restricted(self.ws, self.cache, self.y, self.loss, state, self._inner, outer=self.n_outer)
            state.lower = max(state.lower, self.penalty.lower_bound(self.ws, self._most_violated()[1]))

    def certified(self) -> bool:
        """Whether the path as far as it was iterated ended with its certificate (as :meth:`result`
        would say, without polishing): for a path that ran out of planes the bound at its last dual
        point decides."""
        if self.penalty.budget is not None and self.stop == "max_iter":
            self._final_bound(polish=False)
        return self.converged

    def result(self) -> SolverResult:
        """Polish the last restricted problem to ``tol`` (budget only), certify, and return the
        :class:`SolverResult` in X's numbering."""
        state, C, tol = self.state, self.C, self.solver.tol
        budgeted = self.penalty.budget is not None
        if budgeted:
            self._final_bound(polish=True)
            if self.points:           # the last point of the path is the polished final model
                self.points[-1] = self._point()
        converged = self.converged
        gap = state.best - state.lower
        if not converged:
            why = (f"after max_iter={self.solver.max_iter} cutting planes" if state.n_iter >= self.solver.max_iter
                   else "when the master solver's accuracy ran out")
            warnings.warn(f"structfs stopped {why} with gap {gap:.4g} > C*tol={C * tol:.4g} (objective "
                          f"{state.best:.6g}): scale the features, lower C (or let StructSVMCV choose it), or raise "
                          "max_iter or tol.", ConvergenceWarning, stacklevel=5)
        if self.solver.verbose:
            print(f"[structfs] done: objective {state.best:.6g}, lower bound {state.lower:.6g}, "
                  f"{state.n_iter} planes, {self.n_outer} groups, {time.perf_counter() - self._t_start:.2f} s")
        w = weights_in(*self._in_X(state.cols, state.w_cache), self.n_features)
        return SolverResult(w, state.w_b, state.best, state.lower, state.n_iter,
                            len(self.points) if budgeted else 1, converged, self.history,
                            self.points if budgeted else [], self.stop)

    def debiased(self, result: SolverResult, refit_C: float) -> SolverResult:
        """``result`` (of this path, budgeted) with the weights of the unbudgeted problem at C =
        ``refit_C`` on its selected features -- the budget selects, the unbudgeted problem weighs them --
        and the budgeted objective at those weights. Unbudgeted results are returned as they are."""
        if self.penalty.budget is None:
            return result
        selected = self.state.cols[self.state.w_cache != 0]
        if selected.size == 0:
            return result
        X_selected = take_columns(self.X, selected)     # in memory, whether X is or not
        refit_solver = replace(self.solver, max_features=None, outer_tol=None)     # unbudgeted: no cap, no stall
        sub = refit_solver.solve(X_selected, self.y, self.loss, refit_C, penalty_for(None), self.bias)
        scores = matvec(X_selected, sub.w) + self.bias * sub.w_b
        coef, delta = self.loss.oracle(self.y, scores)
        xi = max(0.0, delta - float(coef @ scores))
        result.w = weights_in(*self._in_X(selected, sub.w), self.n_features)
        result.w_b = sub.w_b
        # the budgeted objective at the refitted weights (zeros leave the norm as is)
        result.objective = self.state.objective(sub.w, sub.w_b, xi, selected)
        result.history = result.history + sub.history
        return result


# Over 8 parameters: the functional form of one fit, the problem's settings as keywords.
def solve(X: Any, y: np.ndarray, loss: LossOracle, C: float, *, budget: int | None = None, groups: Any = None,
          bias: float = _defaults.BIAS, refit: float | None = None, interactions: bool = False,
          **settings: Any) -> SolverResult:
    """One fit with the package's default settings (``settings`` override them; see :class:`Solver`),
    ``refit=C2`` debiasing a budgeted model (:meth:`SolverPath.debiased`); ``interactions``: over the
    columns of :func:`~structfs.solvers.interactions.expand` (X's occurring columns and their products),
    in which the result's weights are numbered. A convenience for tests and scripts; the estimators
    build their :class:`Solver` from their own parameters."""
    if interactions:
        from .interactions import expand

        X = expand(X)[0]
    path = Solver.default(**settings).path(X, y, loss, C, penalty_for(budget, groups), bias)
    for _ in path:
        pass
    result = path.result()
    return result if refit is None else path.debiased(result, float(refit))


def _fit_cap(top: np.ndarray, c_top: np.ndarray, cached: np.ndarray, max_features: int,
             groups: np.ndarray | None = None) -> tuple[np.ndarray, bool]:
    """(group, full): ``top`` (scores ``c_top``) trimmed so that the cached columns plus its new ones stay
    within ``max_features`` (the new columns with the largest c_j^2 are kept; with ``groups``, every
    column's group index, whole groups by their ||c_G||^2, so that no group is cut in part); full when
    the cap is reached."""
    is_new = ~np.isin(top, cached, assume_unique=True)
    room = max_features - cached.shape[0]
    if int(is_new.sum()) < room:
        return top, False
    if groups is None:
        new, c_new = top[is_new], c_top[is_new]
        keep = new[np.argsort(-(c_new ** 2), kind="stable")[:room]]
        return np.sort(np.concatenate([top[~is_new], keep])), True
    _, of_group = np.unique(groups[top], return_inverse=True)
    new_columns = np.bincount(of_group, weights=is_new).astype(np.int64)
    kept = np.zeros(new_columns.shape[0], dtype=bool)
    for g in np.argsort(-np.bincount(of_group, weights=c_top * c_top), kind="stable"):   # at most B groups
        if new_columns[g] <= room:
            kept[g], room = True, room - int(new_columns[g])
    return top[kept[of_group]], True
