"""Inner layer: the 1-slack cutting-plane method on the group-restricted (MKL) problem.

For fixed feature groups t = 1..T (index sets of size <= B) the problem is

    min_{d in conv(groups)} min_w  1/2 sum_j w_j^2/d_j + 1/2 w_b^2 + C xi   s.t.  w . Psi_k >= Delta_k - xi,

whose restricted master over the planes found so far is the QCQP of ``qcqp.py``. Everything here lives
on the columns of the selected groups only (a column cache), so an iteration costs O(nnz of the cached
columns + n log n for the oracle + K * cached columns) and never touches the other features.

A plane is stored by its per-example coefficients coef_k (Psi_k = X~' coef_k) so that it can be
restricted to a group added later; each group keeps its Gram matrix G_t, updated by one row per new
plane.
"""
import time

import numpy as np
import scipy.sparse as sp
from numba import njit

from .qcqp import gram_factor, normalise_weights, solve_master


_STALL = 25   # iterations without any increase of the master value that count as a stall


def _matvec_t(X, v):
    """X' v. For CSC X a compiled loop over its columns: scipy's ``X.T @ v`` first builds (and
    validates) a transposed matrix object, ~0.4 ms per call -- 11% of a cross-validated R8 fit,
    which makes ~20,000 such products on small group slices."""
    if sp.issparse(X) and X.format == "csc" and X.dtype == np.float64:
        return _csc_rmatvec(X.indptr, X.indices, X.data, np.ascontiguousarray(v, dtype=np.float64))
    return np.asarray(X.T @ v).ravel()


@njit(cache=True)
def _csc_rmatvec(indptr, indices, data, v):
    out = np.empty(indptr.shape[0] - 1)
    for j in range(out.shape[0]):
        acc = 0.0
        for p in range(indptr[j], indptr[j + 1]):
            acc += data[p] * v[indices[p]]
        out[j] = acc
    return out


def _matvec(X, v):
    return np.asarray(X @ v).ravel()


class FeatureGroup:
    """One group of columns with its cached slice and the planes restricted to it."""

    def __init__(self, cols, X_cols, n_samples):
        self.cols = cols                      # original feature indices, sorted
        self.X = X_cols                       # n x |t| slice (CSC or dense)
        # Keep the planes restricted to the group (K x |t|) when that is smaller than the planes
        # themselves (K x n); otherwise Gram rows go through the coefficient vectors.
        self.keep_values = cols.shape[0] <= n_samples
        self.values = None                    # K x |t| plane values on the group
        self.G = None                         # K x K Gram of the planes on the group (no bias part)
        self.age = 0                          # master solves since the group last had weight mu > 0


class WorkingSet:
    """Planes (coef, Delta), groups, their Gram matrices and the current master solution."""

    def __init__(self, n_samples, bias, C, master_solver="ipm"):
        self.n = n_samples
        self.master_solver = master_solver    # multi-group master solver: "ipm" or "ecos"
        self.bias = bias
        self.C = C
        self._coef = np.zeros((16, n_samples))  # capacity grows by doubling; rows [:K] are live
        self.delta = np.zeros(0)
        self.age = np.zeros(0, dtype=np.int64)
        self.coef_sum = np.zeros(0)           # sum_i coef_ki: the plane's bias coordinate / bias
        self.groups = []
        self.abar = np.zeros(0)
        self.mu = np.zeros(0)

    @property
    def K(self):
        return self.delta.shape[0]

    @property
    def coef(self):
        return self._coef[:self.K]

    # -- planes ------------------------------------------------------------------------------------
    def add_plane(self, coef, delta):
        K = self.K
        if K == self._coef.shape[0]:
            self._coef = np.vstack([self._coef, np.zeros_like(self._coef)])
        self._coef[K] = coef
        self.delta = np.append(self.delta, delta)
        self.age = np.append(self.age, 0)
        self.coef_sum = np.append(self.coef_sum, coef.sum())
        self.abar = np.append(self.abar, 0.0)
        for g in self.groups:
            v = _matvec_t(g.X, coef)
            if g.keep_values:
                row = g.values @ v
                g.values = np.vstack([g.values, v[None, :]])
            else:
                row = self._coef[:K] @ _matvec(g.X, v)
            g.G = _grow_gram(g.G, row, float(v @ v))

    def drop_planes(self, keep):
        """Forget planes with ``keep`` False (long inactive): their rows and columns everywhere."""
        kept = self.coef[keep]
        self._coef[:kept.shape[0]] = kept
        self.delta, self.age = self.delta[keep], self.age[keep]
        self.coef_sum, self.abar = self.coef_sum[keep], self.abar[keep]
        total = self.abar.sum()
        if total > 1.0:
            self.abar /= total
        for g in self.groups:
            g.G = g.G[np.ix_(keep, keep)]
            if g.keep_values:
                g.values = g.values[keep]

    # -- groups ------------------------------------------------------------------------------------
    def add_group(self, cols, X_cols):
        g = FeatureGroup(cols, X_cols, self.n)
        V = np.asarray(X_cols.T @ self.coef.T).T if self.K else np.zeros((0, cols.shape[0]))  # K x |t|
        g.G = V @ V.T
        if g.keep_values:
            g.values = V
        self.groups.append(g)
        self.mu = np.append(self.mu, 0.0)
        return g

    def grams(self):
        """G_t including the bias coordinate, which every group shares: a T x K x K array."""
        bias_part = (self.bias ** 2) * np.outer(self.coef_sum, self.coef_sum)
        out = np.empty((len(self.groups), self.K, self.K))
        for t, g in enumerate(self.groups):
            np.add(g.G, bias_part, out=out[t])
        return out

    def factors(self, grams):
        """F_t with G_t = F_t F_t': the plane values themselves when that is thin, else eigen."""
        out = []
        for g, G in zip(self.groups, grams):
            if g.keep_values and g.values.shape[1] + 1 <= self.K:
                out.append(np.hstack([g.values, self.bias * self.coef_sum[:, None]]))
            else:
                out.append(gram_factor(G))
        return out

    def shared_values(self):
        """(F_union, members): plane values on the union of the groups' columns plus the bias column,
        and each group's positions in it; None when a group does not keep its values."""
        if not all(g.keep_values for g in self.groups):
            return None
        union = np.unique(np.concatenate([g.cols for g in self.groups]))
        F = np.empty((self.K, union.shape[0] + 1))
        members = []
        for g in self.groups:
            pos = np.searchsorted(union, g.cols)
            F[:, pos] = g.values
            members.append(np.append(pos, union.shape[0]))
        F[:, -1] = self.bias * self.coef_sum
        return F, members

    def solve_master(self, qp_tol=None):
        grams = self.grams()
        # ECOS's inputs (plane values or Gram factors) are built only when ECOS is the first choice;
        # as the interior-point method's fallback it factors the Gram matrices itself.
        shared = self.shared_values() if len(grams) > 1 and self.master_solver == "ecos" else None
        factors = self.factors(grams) if len(grams) > 1 and self.master_solver == "ecos" and shared is None else None
        sol = solve_master(grams, self.delta, self.C, self.abar, factors, qp_tol, shared,
                           master_solver=self.master_solver)
        self.abar, self.mu = sol.abar, sol.mu
        # Interior-point masters never return exact zeros: an idle plane keeps abar_k ~ mu / slack_k,
        # mostly 1e-8..1e-6 of the largest weight at the master's tolerance. A 1e-10 cut-off kept every
        # plane alive (MIL elephant, budget=1: 469 planes, 18 ms per master, 22 s per fit); 1e-8 left
        # 107 (1.5 s), 1e-6 leaves 58 (1.2 s, same objective to 0.2%).
        active = self.abar > 1e-6 * max(self.abar.max(initial=0.0), 1e-300)
        self.age = np.where(active, 0, self.age + 1)
        for g, mu in zip(self.groups, self.mu):
            g.age = 0 if mu > 1e-8 else g.age + 1
        return sol

    def drop_groups(self, max_age):
        """Forget groups without weight for ``max_age`` solves (the outer layer re-adds a group that
        becomes most violated again), which keeps the QCQP small."""
        keep = [g.age <= max_age for g in self.groups]
        if all(keep) or not any(keep):
            return
        self.groups = [g for g, k in zip(self.groups, keep) if k]
        self.mu = normalise_weights(self.mu[np.array(keep)])

    def beta(self):
        """beta = sum_k alpha_k coef_k (n,), alpha = C * abar: c = X~' beta is the dual direction."""
        # The dense K x n product is memory-bound: when most planes are idle (budgeted fits, many
        # groups) gather the weighted rows; otherwise the gather's copy costs more than it saves.
        active = np.flatnonzero(self.abar)
        if 4 * active.shape[0] < self.K:
            return self.C * (self.abar[active] @ self._coef[active])
        return self.C * (self.abar @ self.coef)


def _grow_gram(G, row, diag):
    K = row.shape[0]
    out = np.empty((K + 1, K + 1))
    out[:K, :K] = G
    out[K, :K] = row
    out[:K, K] = row
    out[K, K] = diag
    return out


class ColumnCache:
    """The union U of the groups' columns: its slice of X and each group's positions within it."""

    def __init__(self, X):
        self.X_full = X
        self.cols = np.zeros(0, dtype=np.int64)
        self.X = X[:, self.cols]

    def extend(self, new_cols):
        cols = np.union1d(self.cols, new_cols)
        if cols.shape[0] != self.cols.shape[0]:
            self.cols = cols
            self.X = self.X_full[:, cols]

    def weights(self, ws):
        """d on the cache: d_j = sum of mu_t over the groups t holding column j."""
        d = np.zeros(self.cols.shape[0])
        for g, mu in zip(ws.groups, ws.mu):
            if mu > 0:
                d[np.searchsorted(self.cols, g.cols)] += mu
        return np.minimum(d, 1.0)


class _Point:
    """A primal point of the restricted problem on the cache columns, with its oracle answer."""

    __slots__ = ("w", "d", "w_b", "s", "coef", "delta", "xi", "value")

    def __init__(self, w, d, w_b, s):
        self.w, self.d, self.w_b, self.s = w, d, w_b, s
        self.coef = None

    def evaluate(self, y, loss, C):
        self.coef, self.delta = loss.oracle(y, self.s)
        self.xi = max(0.0, self.delta - float(self.coef @ self.s))
        ratio = np.divide(self.w * self.w, self.d, out=np.zeros_like(self.w), where=self.d > 0)
        self.value = 0.5 * float(ratio.sum()) + 0.5 * self.w_b * self.w_b + C * self.xi
        return self

    def toward(self, other, t):
        """The point (1 - t) * self + t * other (w, d, w_b and the scores are all affine in t)."""
        return _Point(self.w + t * (other.w - self.w), self.d + t * (other.d - self.d),
                      self.w_b + t * (other.w_b - self.w_b), self.s + t * (other.s - self.s))


class _Segment:
    """F(t) = r(t) + C xi(t) on the segment p0 + t (p1 - p0), with r(t) = 1/2 sum (u + t du)^2/(v + t dv).

    When d is the same at both ends (always without a budget) r is a quadratic with three
    precomputed coefficients; otherwise it is evaluated on the features with weight at either end.
    A trial costs one oracle call on interpolated scores and never materialises w.
    """

    def __init__(self, p0, p1, C):
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

    def reg(self, t):
        """(r(t), r'(t))."""
        b = self.b0 + t * self.db
        if self.quadratic:
            a0, a1, a2 = self.coeffs
            return a0 + a1 * t + 0.5 * a2 * t * t + 0.5 * b * b, a1 + a2 * t + b * self.db
        u = self.u + t * self.du
        v = self.v + t * self.dv
        ratio = np.divide(u, v, out=np.zeros_like(u), where=v > 0)
        return (0.5 * float(np.sum(u * ratio)) + 0.5 * b * b,
                float(np.sum(ratio * self.du - 0.5 * ratio * ratio * self.dv)) + b * self.db)

    def slope(self, t, coef, xi):
        """F'(t) given the oracle's answer at t (a subgradient where F has a kink)."""
        dr = self.reg(t)[1]
        return dr - self.C * float(coef @ self.ds) if xi > 0 else dr

    def trial(self, t, y, loss):
        """(F(t), F'(t), (coef, delta, xi)) with one oracle call."""
        s = self.p0.s + t * self.ds
        coef, delta = loss.oracle(y, s)
        xi = max(0.0, delta - float(coef @ s))
        return self.reg(t)[0] + self.C * xi, self.slope(t, coef, xi), (coef, delta, xi)


def line_search(best, cand, y, loss, C, max_evals=3):
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
    top_t, top_f, top = (0.0, best.value, None) if best.value <= f1 else (1.0, f1, None)
    if g1 > 0:
        for _ in range(max_evals):
            width = hi - lo
            t = (f_hi - f_lo + g0 * lo - g1 * hi) / (g0 - g1)
            t = min(max(t, lo + 0.05 * width), hi - 0.05 * width)
            f, g, answer = seg.trial(t, y, loss)
            if f < top_f:
                top_t, top_f, top = t, f, answer
            if g < 0:
                lo, f_lo, g0 = t, f, g
            else:
                hi, f_hi, g1 = t, f, g
            if hi - lo < 1e-3:
                break
    if top_t == 0.0:
        return best
    if top_t == 1.0:
        return cand
    point = best.toward(cand, top_t)
    point.coef, point.delta, point.xi = top
    point.value = top_f
    return point


def inner_solve(ws, cache, y, loss, state, *, tol, max_iter, max_age, outer, callback, mu=0.1):
    """Add planes until the restricted problem's gap is <= C * tol (OCAS-stabilised).

    ``tol`` has the meaning of SVMperf's ``-e``: the precision of the slack xi in percent, so the gap
    in objective units is C * tol.

    Plain cutting planes generate each plane at the master's solution, which oscillates wildly on
    nearly separable problems (R8 "earn" needs ~2000 planes for a 1e-3 gap). Following OCAS (Franc &
    Sonnenburg 2008), the best point moves to the minimiser of F on the segment towards the master's
    solution and the next plane is generated at best + mu * (master - best). Any plane is a valid
    cut, the master value is a lower bound and the best point an upper bound of the restricted
    problem, so the stopping test is the usual one.

    ``state`` carries the running best iterate and the iteration count across calls; ``callback`` is
    given each iteration's record. Returns (status, value of the restricted problem's master), status
    "converged", "max_iter", or "stalled" when the master value stopped increasing for _STALL
    iterations (the conic solver's accuracy is exhausted; the point is as good as it can certify).
    """
    C, bias = ws.C, ws.bias
    best = None
    recent = []            # master values of the last iterations, to detect a stalled master
    while True:
        t0 = time.perf_counter()
        # The master needs to be accurate to a small fraction of the gap we stop at, no more.
        sol = ws.solve_master(qp_tol=1e-3 * C * tol)
        beta = ws.beta()
        d = cache.weights(ws)
        w = d * _matvec_t(cache.X, beta)
        w_b = bias * beta.sum()
        master_point = _Point(w, d, w_b, _matvec(cache.X, w) + bias * w_b)
        if best is None:
            best = cut = master_point.evaluate(y, loss, C)
        else:
            best = line_search(best, master_point, y, loss, C)
            cut = best.toward(master_point, mu).evaluate(y, loss, C)
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
        recent = (recent + [sol.value])[-_STALL:]
        if len(recent) == _STALL and recent[-1] - recent[0] <= 1e-12 * abs(recent[-1]) + 1e-300:
            state.stalled = True       # the master solver's accuracy is exhausted
            return "stalled", sol.value
        keep = ws.age <= max_age
        if not keep.all():
            ws.drop_planes(keep)
        ws.drop_groups(max_age)
        ws.add_plane(cut.coef, cut.delta)
