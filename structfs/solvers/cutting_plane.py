"""Inner layer: the 1-slack cutting-plane method on the group-restricted (MKL) problem.

For fixed feature groups t = 1..T (index sets of size <= B) the problem is

    min_{d in conv(groups)} min_w  1/2 sum_j w_j^2/d_j + 1/2 w_b^2 + C xi   s.t.  w . Psi_k >= Delta_k - xi,

whose restricted master over the planes found so far (``working_set.py``) is the QCQP of ``qcqp.py``.
Everything here lives on the columns of the selected groups only (a column cache, ``data.py``), so an
iteration costs O(nnz of the cached columns + n log n for the oracle + K * cached columns) and never
touches the other features. This module is the iteration itself: the oracle at a point, the line
search between the best point and the master's, and the stopping rules.
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

if TYPE_CHECKING:
    from .data import ColumnCache
    from .feature_generation import BestIterate
    from .working_set import WorkingSet

# OCAS's step towards the master's solution for the next plane
MU = 0.1
STALL = 25   # iterations without any increase of the master value that count as a stall
MAX_AGE = 10  # master solves a plane (or a group) may go unused before it leaves the working set


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

    def coarser(self, tol: float) -> InnerSettings:
        """The same settings solving to ``tol`` (feature generation's coarse restricted solves)."""
        return replace(self, tol=tol)


class _Point:
    """A primal point of the restricted problem on the cache columns, with its oracle answer."""

    __slots__ = ("w", "d", "w_b", "s", "coef", "delta", "xi", "value")
    coef: np.ndarray        # the oracle's answer at the point (its most violated output), once evaluated
    delta: float
    xi: float
    value: float            # the objective at the point

    def __init__(self, w: np.ndarray, d: np.ndarray, w_b: float, s: np.ndarray) -> None:
        self.w, self.d, self.w_b, self.s = w, d, w_b, s

    def evaluate(self, y: np.ndarray, loss: LossOracle, C: float) -> _Point:
        self.coef, self.delta = loss.oracle(y, self.s)
        self.xi = max(0.0, self.delta - float(self.coef @ self.s))
        ratio = np.divide(self.w * self.w, self.d, out=np.zeros_like(self.w), where=self.d > 0)
        self.value = 0.5 * float(ratio.sum()) + 0.5 * self.w_b * self.w_b + C * self.xi
        return self

    def toward(self, other: _Point, t: float) -> _Point:
        """The point (1 - t) * self + t * other (w, d, w_b and the scores are all affine in t)."""
        return _Point(self.w + t * (other.w - self.w), self.d + t * (other.d - self.d),
                      self.w_b + t * (other.w_b - self.w_b), _affine(self.s, other.s - self.s, t))


def _affine(a: np.ndarray, b: np.ndarray, t: float) -> np.ndarray:
    """a + t * b, written into b (the same operations, so the same bits, as the expression): the
    scores are n-vectors, 160 MB each at n = 2e7, and each temporary counts in the peak."""
    b *= t
    b += a
    return b


@njit(cache=True)
def ratio_terms(u: np.ndarray, du: np.ndarray, v: np.ndarray, dv: np.ndarray, t: float) -> tuple[float, float]:
    """(1/2 sum u_t^2 / v_t, sum r_t du - 1/2 r_t^2 dv) with u_t = u + t du, v_t = v + t dv, r_t = u_t / v_t
    over the entries with v_t > 0: r(t) and r'(t) of the line search, compiled because the line search
    evaluates them for every trial point of every plane."""
    value, slope = 0.0, 0.0
    for i in range(u.shape[0]):
        v_t = v[i] + t * dv[i]
        if v_t > 0:
            u_t = u[i] + t * du[i]
            ratio = u_t / v_t
            value += u_t * ratio
            slope += ratio * du[i] - 0.5 * ratio * ratio * dv[i]
    return 0.5 * value, slope


class _Segment:
    """F(t) = r(t) + C xi(t) on the segment p0 + t (p1 - p0), with r(t) = 1/2 sum (u + t du)^2/(v + t dv).

    When d is the same at both ends (always without a budget) r is a quadratic with three
    precomputed coefficients; otherwise it is evaluated on the features with weight at either end.
    A trial costs one oracle call on interpolated scores and never materialises w.
    """

    def __init__(self, p0: _Point, p1: _Point, C: float) -> None:
        self.p0, self.C = p0, C
        self.ds = p1.s - p0.s
        self.b0, self.db = p0.w_b, p1.w_b - p0.w_b
        dv = p1.d - p0.d
        self.quadratic = not dv.any()
        live = (p0.d > 0) | (p1.d > 0)
        u, du, v = p0.w[live], p1.w[live] - p0.w[live], p0.d[live]
        if self.quadratic:
            self.coeffs = (0.5 * float(np.sum(u * u / v)), float(np.sum(u * du / v)), float(np.sum(du * du / v)))
        else:
            self.u, self.du, self.v, self.dv = u, du, v, dv[live]

    def reg(self, t: float) -> tuple[float, float]:
        """(r(t), r'(t))."""
        b = self.b0 + t * self.db
        if self.quadratic:
            a0, a1, a2 = self.coeffs
            return a0 + a1 * t + 0.5 * a2 * t * t + 0.5 * b * b, a1 + a2 * t + b * self.db
        value, slope = ratio_terms(self.u, self.du, self.v, self.dv, t)
        return value + 0.5 * b * b, slope + b * self.db

    def slope(self, t: float, coef: np.ndarray, xi: float) -> float:
        """F'(t) given the oracle's answer at t (a subgradient where F has a kink)."""
        dr = self.reg(t)[1]
        return dr - self.C * float(coef @ self.ds) if xi > 0 else dr

    def trial(self, t: float, y: np.ndarray, loss: LossOracle) -> tuple[float, float, tuple[np.ndarray, float, float]]:
        """(F(t), F'(t), (coef, delta, xi)) with one oracle call."""
        s = self.ds * t                # p0.s + t * ds, one n-vector allocated
        s += self.p0.s
        coef, delta = loss.oracle(y, s)
        xi = max(0.0, delta - float(coef @ s))
        return self.reg(t)[0] + self.C * xi, self.slope(t, coef, xi), (coef, delta, xi)


# Trial points of the line search beyond its end point.
LINE_SEARCH_EVALS = 3


@njit(cache=True)
def next_trial(lo: float, f_lo: float, g_lo: float, hi: float, f_hi: float, g_hi: float) -> float:
    """The line search's next trial: where the tangents at the bracket's ends meet, kept 5% of its width
    inside it (F is convex and piecewise smooth). Compiled: the compiled loop takes the same steps."""
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


def line_search(best: _Point, cand: _Point, y: np.ndarray, loss: LossOracle, C: float,
                max_evals: int = LINE_SEARCH_EVALS) -> _Point:
    """Approximately minimise the convex F on the segment [best, cand]; returns the best point seen.

    Tangent-intersection steps safeguarded to stay inside the bracket (F is convex and piecewise
    smooth); every trial costs one oracle call on interpolated scores, no pass over X. ``cand``
    leaves evaluated.
    """
    seg = _Segment(best, cand, C)
    g0 = seg.slope(0.0, best.coef, best.xi)
    f1, g1, answer = seg.trial(1.0, y, loss)
    cand.coef, cand.delta, cand.xi = answer
    cand.value = f1
    if g0 >= 0:
        return best
    lo, f_lo, hi, f_hi = 0.0, best.value, 1.0, f1
    top_t, top_f = (0.0, best.value) if best.value <= f1 else (1.0, f1)
    top: tuple[np.ndarray, float, float] | None = None
    if g1 > 0:
        for _ in range(max_evals):
            t = next_trial(lo, f_lo, g0, hi, f_hi, g1)
            f, g, answer = seg.trial(t, y, loss)
            if f < top_f:
                top_t, top_f, top = t, f, answer
            del answer                 # only the best trial's coefficients (an n-vector) are kept
            lo, f_lo, g0, hi, f_hi, g1 = narrowed(t, f, g, lo, f_lo, g0, hi, f_hi, g1)
            if hi - lo < 1e-3:
                break
    if top_t == 0.0:
        return best
    if top_t == 1.0:
        return cand
    point = best.toward(cand, top_t)
    assert top is not None         # 0 < top_t < 1: a trial was the best
    point.coef, point.delta, point.xi = top
    point.value = top_f
    return point


def inner_solve(ws: WorkingSet, cache: ColumnCache, y: np.ndarray, loss: LossOracle, state: BestIterate,
                settings: InnerSettings, outer: int) -> tuple[str, float]:
    """Add planes until the restricted problem's gap is <= C * tol (OCAS-stabilised).

    ``tol`` has the meaning of SVMperf's ``-e``: the precision of the slack xi in percent, so the gap
    in objective units is C * tol.

    Plain cutting planes generate each plane at the master's solution, which oscillates wildly on
    nearly separable problems (R8 "earn" needs ~2000 planes for a 1e-3 gap). Following OCAS (Franc &
    Sonnenburg 2008), the best point moves to the minimiser of F on the segment towards the master's
    solution and the next plane is generated at best + MU * (master - best). Any plane is a valid
    cut, the master value is a lower bound and the best point an upper bound of the restricted
    problem, so the stopping test is the usual one.

    ``settings``: the :class:`InnerSettings`; ``outer`` is the feature group's number, for the
    records. ``state`` carries the running best iterate and the iteration count across calls. Returns
    (status, value of the restricted problem's master), status
    "converged", "max_iter", or "stalled" when the master value stopped increasing for STALL
    iterations (the conic solver's accuracy is exhausted; the point is as good as it can certify).
    """
    C, bias = ws.C, ws.bias
    tol, max_iter, max_age, callback = settings.tol, settings.max_iter, settings.max_age, settings.callback
    best = None
    recent: list[float] = []  # master values of the last iterations, to detect a stalled master
    while True:
        check_interrupt()
        t0 = time.perf_counter()
        # The master needs to be accurate to a small fraction of the gap we stop at, no more.
        sol = ws.solve_master(qp_tol=1e-3 * C * tol)
        d = cache.weights(ws)
        direction, beta_sum = ws.direction_on(cache)
        w = d * direction
        w_b = bias * beta_sum
        scores = matvec(cache.X, w)
        scores += bias * w_b
        master_point = _Point(w, d, w_b, scores)
        if best is None:
            best = cut = master_point.evaluate(y, loss, C)
        else:
            best = line_search(best, master_point, y, loss, C)
            cut = best.toward(master_point, MU).evaluate(y, loss, C)
            if cut.value < best.value:
                best = cut
            # In-out safeguard: a stabilised plane that does not cut off the master's solution would
            # stall the lower bound; then take the plain cutting plane there (most violated at it).
            master_xi = (sol.value - (master_point.value - C * master_point.xi)) / C
            if cut.delta - float(cut.coef @ master_point.s) <= master_xi + 1e-9 * max(1.0, abs(master_xi)):
                cut = master_point
        gap = best.value - sol.value
        objective = state.record(best.w, best.w_b, best.xi, cache.cols)
        state.n_iter += 1
        converged = gap <= C * tol
        callback(dict(outer=outer, iteration=state.n_iter, objective=objective,
                      master=sol.value, inner_gap=gap, planes=ws.K, features=int(np.count_nonzero(best.w)),
                      solver=sol.solver, seconds=time.perf_counter() - t0))
        if converged:
            return "converged", sol.value
        if state.n_iter >= max_iter:
            return "max_iter", sol.value
        recent = (recent + [sol.value])[-STALL:]
        if len(recent) == STALL and recent[-1] - recent[0] <= 1e-12 * abs(recent[-1]) + 1e-300:
            state.stalled = True       # the master solver's accuracy is exhausted
            return "stalled", sol.value
        keep = ws.age <= max_age
        if not keep.all():
            ws.drop_planes(keep)
        ws.drop_groups(max_age)
        ws.add_plane(cut.coef, cut.delta)
        # the stored plane is all the next iteration needs of these points (two n-vectors each)
        del cut, master_point
