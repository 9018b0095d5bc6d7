"""Inner layer: the 1-slack cutting-plane method on the group-restricted (MKL) problem.

For fixed feature groups t = 1..T (index sets of size <= B) the problem is

    min_{d in conv(groups)} min_w  1/2 sum_j w_j^2/d_j + 1/2 w_b^2 + C xi   s.t.  w . Psi_k >= Delta_k - xi,

whose restricted master over the planes found so far (``working_set.py``) is the QCQP of ``qcqp.py``.
Everything here lives on the columns of the selected groups only (a column cache, ``data.py``), so an
iteration costs O(nnz of the cached columns + n log n for the oracle + K * cached columns) and never
touches the other features. This module is the iteration's steps, compiled: the oracle at a point, the
OCAS line search between the best point and the master's and the next plane (:func:`ocas_step`), and the
stopping rules (:func:`stop_status`); and :func:`inner_solve`, which drives them from Python.

Two drivers take these steps. Data in memory run the whole iteration as one compiled call
(``compiled_loop.py``, which keeps the working set in arrays); :func:`inner_solve` runs the solves that
loop does not take -- data on disk or on a cluster (row blocks, coded planes), the group budget, and a
multi-group master solved by ECOS (``master_solver="ecos"``, or where the compiled loop's interior-point
master did not converge and it hands the working set back) -- with the working set's own methods for the
master and the products with X, and the same compiled steps for the rest.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from .._interrupt import check_interrupt
from .._jit import njit
from .data import matvec
from .python_oracle import OracleCall

if TYPE_CHECKING:
    from .data import ColumnCache
    from .feature_generation import BestIterate
    from .working_set import WorkingSet

# OCAS's step towards the master's solution for the next plane
MU = 0.1
STALL = 25   # iterations without any increase of the master value that count as a stall
# Master solves a plane (or a group) may go unused before it leaves the working set. The masters' cost
# grows with the planes kept and the iterations' count with the planes dropped: on musk1's five searches
# 20 took 1.6x the time (iterations -4%); 5 and 3 took the same time (iterations +5% and +1%), with other
# picks (test F1 83.2 -> 81.6 and 80.9).
MAX_AGE = 10


class LossOracle(Protocol):
    """What the solvers ask of a loss (they never import one): the most violated output at scores
    ``s`` as (its per-example coefficients, its loss Delta), and optionally a compiled form of it
    with its parameters as a float64 vector."""

    jit_oracle: Callable[..., Any] | None

    @property
    def jit_params(self) -> Any: ...

    def oracle(self, y: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, float]: ...


def _ignore(record: dict[str, Any]) -> None:
    """A callback that keeps nothing."""


@dataclass(frozen=True)
class InnerSettings:
    """What one restricted solve is told: its tolerance (SVMperf's ``-e``), how many cutting planes the
    fit may still spend, how long an unused plane or group stays (``max_age`` master solves), and
    who hears of each iteration (``callback``, given its record)."""

    tol: float
    max_iter: int
    max_age: int = MAX_AGE
    callback: Callable[[dict[str, Any]], None] = _ignore

    @property
    def hears(self) -> bool:
        """Whether anyone hears of the iterations (no one does of a debiasing refit's or of a search's
        budgeted fold path's: the compiled loop's records are then not turned into dicts)."""
        return self.callback is not _ignore

    def coarser(self, tol: float) -> InnerSettings:
        """The same settings solving to ``tol`` (feature generation's coarse restricted solves)."""
        return replace(self, tol=tol)


@njit(cache=True)
def ratio_terms(u: np.ndarray, du: np.ndarray, v: np.ndarray, dv: np.ndarray, t: float) -> tuple[float, float]:
    """(1/2 sum u_t^2 / v_t, sum r_t du - 1/2 r_t^2 dv) with u_t = u + t du, v_t = v + t dv, r_t = u_t / v_t
    over the entries with v_t > 0: r(t) and r'(t) of the line search where d changes along the segment."""
    value, slope = 0.0, 0.0
    for i in range(u.shape[0]):
        v_t = v[i] + t * dv[i]
        if v_t > 0:
            u_t = u[i] + t * du[i]
            ratio = u_t / v_t
            value += u_t * ratio
            slope += ratio * du[i] - 0.5 * ratio * ratio * dv[i]
    return 0.5 * value, slope


@njit(cache=True)
def slack(coef: np.ndarray, delta: float, s: np.ndarray) -> float:
    """xi of the output (coef, delta) at scores s: max(0, Delta - coef . s)."""
    return max(0.0, delta - coef @ s)


@njit(cache=True)
def reg_value(w: np.ndarray, d: np.ndarray, single: bool) -> float:
    """1/2 sum_j w_j^2 / d_j over d_j > 0 (1/2 ||w||^2 with one group, where d is 1 wherever w is not 0)."""
    if single:
        return 0.5 * (w @ w)
    total = 0.0
    for j in range(w.shape[0]):
        if d[j] > 0:
            total += w[j] * w[j] / d[j]
    return 0.5 * total


@njit(cache=True)
def segment(w0: np.ndarray, d0: np.ndarray, w1: np.ndarray, d1: np.ndarray, single: bool) -> tuple[bool, float, float,
            float, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """r(t) = 1/2 sum (u + t du)^2 / (v + t dv) on the segment, over the features with weight at either
    end: (quadratic, its three coefficients, u, du, v, dv) -- a quadratic when d is the same at both
    ends (always with one group)."""
    if single:
        du = w1 - w0
        empty = np.zeros(0)
        return True, 0.5 * (w0 @ w0), w0 @ du, du @ du, empty, empty, empty, empty
    live = (d0 > 0) | (d1 > 0)
    u, du, v, dv = w0[live], w1[live] - w0[live], d0[live], d1[live] - d0[live]
    quadratic = not np.any(dv != 0.0)
    a0 = a1 = a2 = 0.0
    if quadratic:
        a0, a1, a2 = 0.5 * np.sum(u * u / v), np.sum(u * du / v), np.sum(du * du / v)
    return quadratic, a0, a1, a2, u, du, v, dv


@njit(cache=True)
def reg(seg: tuple[bool, float, float, float, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
        t: float) -> tuple[float, float]:
    """(r(t), r'(t)) of a :func:`segment`."""
    quadratic, a0, a1, a2, u, du, v, dv = seg
    if quadratic:
        return a0 + a1 * t + 0.5 * a2 * t * t, a1 + a2 * t
    return ratio_terms(u, du, v, dv, t)


# Trial points of the line search beyond its end point. Nine iterations of ten use all three. Fewer
# save oracle calls but cost iterations and moved the searches' picks down: two took 9% more
# iterations on musk1 (test F1 over five splits -0.3, elephant -1.4, R8 under a cap -0.5), one 19% more
# on R8 under a cap (F1 -1.1 on musk1, -3.5 on elephant).
LINE_SEARCH_EVALS = 3


@njit(cache=True)
def next_trial(lo: float, f_lo: float, g_lo: float, hi: float, f_hi: float, g_hi: float) -> float:
    """The line search's next trial: where the tangents at the bracket's ends meet, kept 5% of its width
    inside it (F is convex and piecewise smooth)."""
    width = hi - lo
    t = (f_hi - f_lo + g_lo * lo - g_hi * hi) / (g_lo - g_hi)
    return min(max(t, lo + 0.05 * width), hi - 0.05 * width)


# Over 8 parameters: a bracket is two ends of three numbers each, passed as scalars to stay allocation-free.
@njit(cache=True)
def narrowed(t: float, f: float, g: float, lo: float, f_lo: float, g_lo: float, hi: float, f_hi: float,
             g_hi: float) -> tuple[float, float, float, float, float, float]:
    """The bracket (lo, f_lo, g_lo, hi, f_hi, g_hi) after a trial at t with F(t) = f, F'(t) = g: t
    replaces the end whose slope has the sign of g."""
    if g < 0:
        return t, f, g, hi, f_hi, g_hi
    return lo, f_lo, g_lo, t, f, g


# A point of the restricted problem with its oracle answer: (w, d, w_b, s, coef, xi, F) -- the weights on
# the cache's columns, the group weights d, the bias weight, the scores, the most violated output's
# coefficients at s and its slack, and the objective F = r + 1/2 w_b^2 + C xi there.
Point = tuple[np.ndarray, np.ndarray, float, np.ndarray, np.ndarray, float, float]


# Over 8 parameters: the oracle and its inputs, C and the form of r, and the point (w, d, w_b, s).
@njit(cache=True)
def first_point(oracle: Any, params: np.ndarray, y: np.ndarray, C: float, single: bool, w: np.ndarray, d: np.ndarray,
                w_b: float, s: np.ndarray) -> tuple[Point, np.ndarray, float]:
    """(the point, the plane (coef, delta) at it) of the first iteration, at the master's solution."""
    coef, delta = oracle(y, s, params)
    xi = slack(coef, delta, s)
    return (w, d, w_b, s, coef, xi, reg_value(w, d, single) + 0.5 * w_b * w_b + C * xi), coef, delta


# Over 8 parameters: the oracle and its inputs, C and the form of r, the best point and the master's.
@njit(cache=True)
def ocas_step(oracle: Any, params: np.ndarray, y: np.ndarray, C: float, single: bool, best: Point,
              master: tuple[np.ndarray, np.ndarray, float, np.ndarray], master_value: float,
              ) -> tuple[Point, np.ndarray, float]:
    """One OCAS step after the master's solve: (the new best point, the next plane (coef, delta)).

    The best point moves to the approximate minimiser of the convex F on the segment towards the
    master's solution ``master`` = (w, d, w_b, s) -- tangent-intersection trials kept inside the bracket,
    each one oracle call on interpolated scores, no pass over X -- and the next plane is generated at
    best + MU (master - best). In-out safeguard: a stabilised plane that does not cut off the master's
    solution would stall the lower bound; then the plane is the most violated output at the master's
    solution. ``master_value`` is the restricted master's optimum (a lower bound of F)."""
    best_w, best_d, best_wb, best_s, best_coef, best_xi, best_value = best
    w, d, w_b, s = master
    seg = segment(best_w, best_d, w, d, single)
    db, ds = w_b - best_wb, s - best_s
    s1 = ds * 1.0 + best_s
    m_coef, m_delta = oracle(y, s1, params)
    m_xi = slack(m_coef, m_delta, s1)
    r1, dr1 = reg(seg, 1.0)
    b1 = best_wb + db
    f1 = r1 + 0.5 * b1 * b1 + C * m_xi
    g1 = dr1 + b1 * db - (C * (m_coef @ ds) if m_xi > 0 else 0.0)
    dr0 = reg(seg, 0.0)[1]
    g0 = dr0 + best_wb * db - (C * (best_coef @ ds) if best_xi > 0 else 0.0)
    top_t, top_f = (0.0, best_value) if best_value <= f1 else (1.0, f1)
    top_coef, top_xi = m_coef, m_xi
    descending = g0 < 0          # else the best point stays where it is
    if descending and g1 > 0:
        lo, f_lo, hi, f_hi = 0.0, best_value, 1.0, f1
        for _ in range(LINE_SEARCH_EVALS):
            trial = next_trial(lo, f_lo, g0, hi, f_hi, g1)
            st = ds * trial + best_s
            t_coef, t_delta = oracle(y, st, params)
            t_xi = slack(t_coef, t_delta, st)
            bt = best_wb + trial * db
            rt, drt = reg(seg, trial)
            f = rt + 0.5 * bt * bt + C * t_xi
            g = drt + bt * db - (C * (t_coef @ ds) if t_xi > 0 else 0.0)
            if f < top_f:
                top_t, top_f, top_coef, top_xi = trial, f, t_coef, t_xi
            lo, f_lo, g0, hi, f_hi, g1 = narrowed(trial, f, g, lo, f_lo, g0, hi, f_hi, g1)
            if hi - lo < 1e-3:
                break
    if descending:
        if top_t == 1.0:
            best_w, best_d, best_wb, best_s = w, d, w_b, s
            best_coef, best_xi, best_value = m_coef, m_xi, f1
        elif top_t != 0.0:
            best_w = best_w + top_t * (w - best_w)
            best_d = d if single else best_d + top_t * (d - best_d)
            best_wb, best_s = best_wb + top_t * db, ds * top_t + best_s
            best_coef, best_xi, best_value = top_coef, top_xi, top_f
    # the next plane at best + MU (master - best), or at the master if that cuts nothing. One plane an
    # iteration: adding the master's plane as well (computed above anyway) saved 12-22% of the iterations
    # on musk1 and elephant but each plane costs a pass over the columns, Gram rows and a larger master:
    # the searches took 1.2-1.5x the time (single-group solves only, or every solve).
    c_w, c_d = best_w + MU * (w - best_w), d if single else best_d + MU * (d - best_d)
    c_wb, c_s = best_wb + MU * (w_b - best_wb), (s - best_s) * MU + best_s
    cut_coef, cut_delta = oracle(y, c_s, params)
    c_xi = slack(cut_coef, cut_delta, c_s)
    c_value = reg_value(c_w, c_d, single) + 0.5 * c_wb * c_wb + C * c_xi
    if c_value < best_value:
        best_w, best_d, best_wb, best_s = c_w, c_d, c_wb, c_s
        best_coef, best_xi, best_value = cut_coef, c_xi, c_value
    master_xi = (master_value - (f1 - C * m_xi)) / C
    if cut_delta - cut_coef @ s <= master_xi + 1e-9 * max(1.0, abs(master_xi)):
        cut_coef, cut_delta = m_coef, m_delta
    return (best_w, best_d, best_wb, best_s, best_coef, best_xi, best_value), cut_coef, cut_delta


CONTINUE, CONVERGED, MAX_ITER, STALLED = -1, 0, 1, 2
STATUS = ("converged", "max_iter", "stalled")


@njit(cache=True)
def stop_status(gap: float, C: float, tol: float, it: int, max_iter: int, recent: np.ndarray, value: float) -> int:
    """After iteration ``it`` (from 1) of at most ``max_iter``: CONVERGED when the gap is <= C tol, MAX_ITER,
    STALLED when the master value ``value`` has not increased over the last STALL iterations (the master
    solver's accuracy is exhausted; ``recent``, of length STALL, keeps those values), else CONTINUE."""
    if gap <= C * tol:
        return CONVERGED
    if it >= max_iter:
        return MAX_ITER
    if it > STALL:
        recent[:-1] = recent[1:]
    recent[min(it, STALL) - 1] = value
    if it >= STALL and recent[STALL - 1] - recent[0] <= 1e-12 * abs(recent[STALL - 1]) + 1e-300:
        return STALLED
    return CONTINUE


def inner_solve(ws: WorkingSet, cache: ColumnCache, y: np.ndarray, loss: LossOracle, state: BestIterate,
                settings: InnerSettings, outer: int) -> tuple[str, float]:
    """Add planes until the restricted problem's gap is <= C * tol (OCAS-stabilised).

    ``tol`` has the meaning of SVMperf's ``-e``: the precision of the slack xi in percent, so the gap
    in objective units is C * tol.

    Plain cutting planes generate each plane at the master's solution, which oscillates wildly on
    nearly separable problems (R8 "earn" needs ~2000 planes for a 1e-3 gap). Following OCAS (Franc &
    Sonnenburg 2008), the best point moves to the minimiser of F on the segment towards the master's
    solution and the next plane is generated at best + MU * (master - best) (:func:`ocas_step`). Any
    plane is a valid cut, the master value is a lower bound and the best point an upper bound of the
    restricted problem, so the stopping test is the usual one.

    This driver keeps the working set in Python (its master, the products with X through the column
    cache, whatever holds the rows) and takes every other step compiled, the steps the compiled loop
    takes. ``settings``: the :class:`InnerSettings`; ``outer`` is the feature group's number, for the
    records. ``state`` carries the running best iterate and the iteration count across calls. Returns
    (status, value of the restricted problem's master), status "converged", "max_iter", or "stalled"
    (:func:`stop_status`).
    """
    C, bias = ws.C, ws.bias
    tol, max_age, callback = settings.tol, settings.max_age, settings.callback
    max_iter = settings.max_iter - state.n_iter
    call = OracleCall(loss)
    y = np.ascontiguousarray(y, dtype=np.float64)
    # as in the compiled loop: a solve that starts with one group keeps it (groups only leave)
    single = len(ws.groups) == 1
    best = None
    recent = np.empty(STALL)
    it = 0
    with call:
        while True:
            check_interrupt()
            t0 = time.perf_counter()
            # The master needs to be accurate to a small fraction of the gap we stop at, no more.
            sol = ws.solve_master(qp_tol=1e-3 * C * tol)
            d = np.ascontiguousarray(cache.weights(ws), dtype=np.float64)
            direction, beta_sum = ws.direction_on(cache)
            w = np.ascontiguousarray(d * direction, dtype=np.float64)
            w_b = float(bias * beta_sum)
            scores = np.ascontiguousarray(matvec(cache.X, w), dtype=np.float64)
            scores += bias * w_b
            if best is None:
                best, coef, delta = first_point(call.function, call.params, y, C, single, w, d, w_b, scores)
            else:
                best, coef, delta = ocas_step(call.function, call.params, y, C, single, best, (w, d, w_b, scores),
                                              sol.value)
            call.raise_failure()
            it += 1
            best_w, _, best_wb, _, _, best_xi, best_value = best
            gap = best_value - sol.value
            objective = state.record(best_w, best_wb, best_xi, cache.cols)
            state.n_iter += 1
            callback(dict(outer=outer, iteration=state.n_iter, objective=objective,
                          master=sol.value, inner_gap=gap, planes=ws.K, features=int(np.count_nonzero(best_w)),
                          solver=sol.solver, seconds=time.perf_counter() - t0))
            status = stop_status(gap, C, tol, it, max_iter, recent, sol.value)
            if status != CONTINUE:
                state.stalled = state.stalled or status == STALLED
                return STATUS[status], sol.value
            keep = ws.age <= max_age
            if not keep.all():
                ws.drop_planes(keep)
            ws.drop_groups(max_age)
            ws.add_plane(coef, delta)
            # the stored plane is all the next iteration needs of these (n-vectors)
            del coef, scores
