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

from .qcqp import gram_factor, solve_master


def _matvec_t(X, v):
    return np.asarray(X.T @ v).ravel()


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


class WorkingSet:
    """Planes (coef, Delta), groups, their Gram matrices and the current master solution."""

    def __init__(self, n_samples, bias, C):
        self.n = n_samples
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
        """G_t including the bias coordinate, which every group shares."""
        bias_part = (self.bias ** 2) * np.outer(self.coef_sum, self.coef_sum)
        return [g.G + bias_part for g in self.groups]

    def factors(self, grams):
        """F_t with G_t = F_t F_t': the plane values themselves when that is thin, else eigen."""
        out = []
        for g, G in zip(self.groups, grams):
            if g.keep_values and g.values.shape[1] + 1 <= self.K:
                out.append(np.hstack([g.values, self.bias * self.coef_sum[:, None]]))
            else:
                out.append(gram_factor(G))
        return out

    def solve_master(self, qp_tol=None):
        grams = self.grams()
        factors = self.factors(grams) if len(grams) > 1 else None
        sol = solve_master(grams, self.delta, self.C, self.abar, factors, qp_tol)
        self.abar, self.mu = sol.abar, sol.mu
        active = self.abar > 1e-10 * max(self.abar.max(initial=0.0), 1e-300)
        self.age = np.where(active, 0, self.age + 1)
        return sol

    def beta(self):
        """beta = sum_k alpha_k coef_k (n,), alpha = C * abar: c = X~' beta is the dual direction."""
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


def _restricted_reg(w, d, w_b):
    """1/2 sum_j w_j^2 / d_j + 1/2 w_b^2 (0/0 = 0: a feature outside every weighted group has w_j = 0)."""
    ratio = np.divide(w * w, d, out=np.zeros_like(w), where=d > 0)
    return 0.5 * float(ratio.sum()) + 0.5 * w_b * w_b


def inner_solve(ws, cache, y, loss, state, *, tol, max_iter, max_age, outer, callback, stabilise=0.5):
    """Add most violated planes until the restricted problem's gap is <= tol * objective.

    In-out stabilisation (Ben-Ameur & Neto; the point choice of OCAS): the plane is generated at
    lam * (master's solution) + (1 - lam) * (best point so far) rather than at the master's solution,
    which oscillates wildly on nearly separable problems. Any plane is a valid cut, the master value is
    still a lower bound and the best point an upper bound, so the stopping test is unchanged.

    ``state`` carries the running best iterate and the iteration count across calls; ``callback`` is
    given each iteration's record. Returns (converged, value of the restricted problem's master);
    converged is False when ``max_iter`` was hit.
    """
    C, bias = ws.C, ws.bias
    best = None            # (F, w, d, w_b, s) on the current cache columns
    while True:
        t0 = time.perf_counter()
        # The master needs to be accurate to a small fraction of the gap we stop at, no more.
        sol = ws.solve_master(qp_tol=1e-3 * tol * state.best if np.isfinite(state.best) else None)
        beta = ws.beta()
        d = cache.weights(ws)
        w = d * _matvec_t(cache.X, beta)
        w_b = bias * beta.sum()
        s = _matvec(cache.X, w) + bias * w_b
        if best is not None:
            lam = stabilise
            w = lam * w + (1 - lam) * best[1]
            d = lam * d + (1 - lam) * best[2]
            w_b = lam * w_b + (1 - lam) * best[3]
            s = lam * s + (1 - lam) * best[4]
        coef, delta = loss._oracle(y, s)
        xi = max(0.0, delta - float(coef @ s))
        value = _restricted_reg(w, d, w_b) + C * xi
        if best is None or value < best[0]:
            best = (value, w, d, w_b, s)
        gap = best[0] - sol.value
        state.record(w, w_b, xi, cache.cols)
        state.n_iter += 1
        converged = gap <= tol * best[0]
        callback(dict(outer=outer, iteration=state.n_iter, objective=state.objective(w, w_b, xi),
                      master=sol.value, inner_gap=gap, planes=ws.K, features=int(np.count_nonzero(w)),
                      solver=sol.solver, seconds=time.perf_counter() - t0))
        if converged or state.n_iter >= max_iter:
            return converged, sol.value
        keep = ws.age <= max_age
        if not keep.all():
            ws.drop_planes(keep)
        ws.add_plane(coef, delta)
