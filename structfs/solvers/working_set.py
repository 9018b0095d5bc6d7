"""The working set of the inner layer: the planes found so far, the feature groups, their Gram matrices
and the restricted master problem over them.

A plane is stored by its per-example coefficients coef_k (Psi_k = X~' coef_k) so that it can be
restricted to a group added later (``plane_store.py``: float64 rows, or codes of two bits or one byte
per example for data on disk or on a cluster); each group keeps its Gram matrix G_t, updated by one row per new plane.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .data import ColumnCache, matvec, matvec_t
from .plane_store import CodedPlanes, DensePlanes
from .qcqp import MasterSolution, gram_factor, normalise_weights, solve_master
from .simplex_qp import NO_FACE, Face, face_without

# A group keeps its planes' values (K x |t|) while |t| is at most this many times n.
VALUES_PER_EXAMPLE = 2


class FeatureGroup:
    """One group of columns with its slice (or the column cache it reads it from) and the planes
    restricted to it."""

    values: DensePlanes     # the K x |t| plane values on the group, kept when ``keep_values``

    def __init__(self, cols: np.ndarray, X_cols: Any, n_samples: int, cache: ColumnCache | None = None) -> None:
        self.cols = cols                      # original feature indices, sorted
        # Keep the planes restricted to the group (K x |t|) when that is at most twice the planes
        # themselves (K x n): Gram rows and the dual direction are then dense K x |t| products instead
        # of sparse passes over the group's columns; otherwise Gram rows go through the coefficients.
        self.keep_values = cols.shape[0] <= VALUES_PER_EXAMPLE * n_samples
        # With a column cache holding its columns the group keeps no copy of them (at 2e7 rows the
        # copies of 100 selected columns were 1.2 GB): new planes are restricted through the cache.
        self.cache = cache if self.keep_values else None
        self.X = None if self.cache is not None else X_cols     # n x |t| slice (CSC or dense)
        self.G = np.zeros((0, 0))             # K x K Gram of the planes on the group (no bias part)
        self.age = 0                          # master solves since the group last had weight mu > 0


class WorkingSet:
    """Planes (coef, Delta), groups, their Gram matrices and the current master solution."""

    def __init__(self, n_samples: int, bias: float, C: float, master_solver: str, coded: bool = False) -> None:
        self.n = n_samples
        self.master_solver = master_solver    # multi-group master solver: "ipm" or "ecos"
        self.bias = bias
        self.C = C
        # coef_k of the live planes; coded (2 bits or 1 byte per example) for data on disk or on a cluster
        self.coded = coded
        self.planes: CodedPlanes | DensePlanes = CodedPlanes(n_samples) if coded else DensePlanes(n_samples)
        self.delta = np.zeros(0)
        self.age = np.zeros(0, dtype=np.int64)
        self.coef_sum = np.zeros(0)           # sum_i coef_ki: the plane's bias coordinate / bias
        self.groups: list[FeatureGroup] = []
        self.abar = np.zeros(0)
        # the single-group master's factorised face, valid for the planes of the group it was solved on
        self.face: Face = NO_FACE
        self.face_group: FeatureGroup | None = None
        self.mu = np.zeros(0)

    @property
    def K(self) -> int:
        return self.delta.shape[0]

    # -- planes ------------------------------------------------------------------------------------
    def add_plane(self, coef: np.ndarray, delta: float) -> None:
        K = self.K
        if not self.planes.append(coef):      # more distinct values than the codes hold: go dense
            self.planes = self.planes.to_dense()
            self.planes.append(coef)
        self.delta = np.append(self.delta, delta)
        self.age = np.append(self.age, 0)
        self.coef_sum = np.append(self.coef_sum, coef.sum())
        self.abar = np.append(self.abar, 0.0)
        on_cache = {}                         # X_cache' coef, once per cache (its columns in order)
        for g in self.groups:
            if g.cache is None:
                v = matvec_t(g.X, coef)
            else:
                if id(g.cache) not in on_cache:
                    on_cache[id(g.cache)] = matvec_t(g.cache.X, coef)
                # the same sums as on the group's slice: each column's entries in the same order
                v = on_cache[id(g.cache)][g.cache.positions(g.cols)]
            if g.keep_values:
                row = g.values.dots(v, K)
                g.values.append(v)
            else:
                row = self.planes.dots(matvec(g.X, v), K)
            g.G = _grow_gram(g.G, row, float(v @ v))

    def drop_planes(self, keep: np.ndarray) -> None:
        """Forget planes with ``keep`` False (long inactive): their rows and columns everywhere."""
        self.planes.keep(np.flatnonzero(keep))
        self.face = face_without(*self.face, keep)
        self.delta, self.age = self.delta[keep], self.age[keep]
        self.coef_sum, self.abar = self.coef_sum[keep], self.abar[keep]
        total = self.abar.sum()
        if total > 1.0:
            self.abar /= total
        for g in self.groups:
            g.G = g.G[np.ix_(keep, keep)]
            if g.keep_values:
                g.values.keep(np.flatnonzero(keep))

    # -- groups ------------------------------------------------------------------------------------
    def add_group(self, cols: np.ndarray, X_cols: Any, cache: ColumnCache | None = None) -> FeatureGroup:
        """A group of columns ``cols`` with their slice ``X_cols``; ``cache`` (a ColumnCache holding
        them, optional): later planes are restricted through it and the group keeps no slice."""
        g = FeatureGroup(cols, X_cols, self.n, cache)
        V = self.planes.column_products(X_cols) if self.K else np.zeros((0, cols.shape[0]))  # K x |t|
        g.G = V @ V.T
        if g.keep_values:
            g.values = DensePlanes(cols.shape[0])
            for row in V:
                g.values.append(row)
        self.groups.append(g)
        self.mu = np.append(self.mu, 0.0)
        return g

    def grams(self) -> np.ndarray:
        """G_t including the bias coordinate, which every group shares: a T x K x K array."""
        bias_part = (self.bias ** 2) * np.outer(self.coef_sum, self.coef_sum)
        out = np.empty((len(self.groups), self.K, self.K))
        for t, g in enumerate(self.groups):
            np.add(g.G, bias_part, out=out[t])
        return out

    def factors(self, grams: np.ndarray) -> list[np.ndarray]:
        """F_t with G_t = F_t F_t': the plane values themselves when that is thin, else eigen."""
        out = []
        for g, G in zip(self.groups, grams):
            if g.keep_values and g.values.n + 1 <= self.K:
                out.append(np.hstack([g.values.coef, self.bias * self.coef_sum[:, None]]))
            else:
                out.append(gram_factor(G))
        return out

    def shared_values(self) -> tuple[np.ndarray, list[np.ndarray]] | None:
        """(F_union, members): plane values on the union of the groups' columns plus the bias column,
        and each group's positions in it; None when a group does not keep its values."""
        if not all(g.keep_values for g in self.groups):
            return None
        union = np.unique(np.concatenate([g.cols for g in self.groups]))
        F = np.empty((self.K, union.shape[0] + 1))
        members = []
        for g in self.groups:
            pos = np.searchsorted(union, g.cols)
            F[:, pos] = g.values.coef
            members.append(np.append(pos, union.shape[0]))
        F[:, -1] = self.bias * self.coef_sum
        return F, members

    def solve_master(self, qp_tol: float | None = None) -> MasterSolution:
        grams = self.grams()
        # ECOS's inputs (plane values or Gram factors) are built only when ECOS is the first choice;
        # as the interior-point method's fallback it factors the Gram matrices itself.
        shared = self.shared_values() if len(grams) > 1 and self.master_solver == "ecos" else None
        factors = self.factors(grams) if len(grams) > 1 and self.master_solver == "ecos" and shared is None else None
        single = len(self.groups) == 1
        face = self.face if single and self.groups[0] is self.face_group else NO_FACE
        sol = solve_master(grams, self.delta, self.C, self.abar, factors, qp_tol, shared,
                           master_solver=self.master_solver, face=face)
        self.abar, self.mu = sol.abar, sol.mu
        self.face, self.face_group = (sol.face, self.groups[0]) if single and sol.face is not None else (NO_FACE, None)
        # Interior-point masters never return exact zeros: an idle plane keeps abar_k ~ mu / slack_k,
        # mostly 1e-8..1e-6 of the largest weight at the master's tolerance. A 1e-10 cut-off kept every
        # plane alive (MIL elephant, budget=1: 469 planes, 18 ms per master, 22 s per fit); 1e-8 left
        # 107 (1.5 s), 1e-6 leaves 58 (1.2 s, same objective to 0.2%).
        active = self.abar > 1e-6 * max(self.abar.max(initial=0.0), 1e-300)
        self.age = np.where(active, 0, self.age + 1)
        for g, mu in zip(self.groups, self.mu):
            g.age = 0 if mu > 1e-8 else g.age + 1
        return sol

    def drop_groups(self, max_age: int) -> None:
        """Forget groups without weight for ``max_age`` solves (the outer layer re-adds a group that
        becomes most violated again), which keeps the QCQP small."""
        keep = [g.age <= max_age for g in self.groups]
        if all(keep) or not any(keep):
            return
        self.groups = [g for g, k in zip(self.groups, keep) if k]
        self.mu = normalise_weights(self.mu[np.array(keep)])

    def direction_on(self, cache: ColumnCache) -> tuple[np.ndarray, float]:
        """(X_U' beta, sum_i beta_i) on the cache's columns U, beta as in :meth:`beta`.

        When every group keeps its planes' values, from them: X_t' beta = sum_k alpha_k X_t' coef_k, one
        dense K x |t| product per group instead of forming beta (K x n) and a sparse pass over the
        cache's columns -- a third of the time of a plane at 2e6 rows out of core, and of an unbudgeted
        R8 fit's planes in memory. Columns outside every group get 0: they have no weight (d = 0) in
        the restricted problem."""
        if self.groups and all(g.keep_values for g in self.groups):
            alpha = self.C * self.abar
            out = np.zeros(cache.cols.shape[0])
            for g in self.groups:
                out[cache.positions(g.cols)] = g.values.combination(alpha)
            return out, float(alpha @ self.coef_sum)
        beta = self.beta()
        return matvec_t(cache.X, beta), beta.sum()

    def beta(self) -> np.ndarray:
        """beta = sum_k alpha_k coef_k (n,), alpha = C * abar: c = X~' beta is the dual direction."""
        beta = self.planes.combination(self.abar)
        beta *= self.C                        # in place: an n-vector at large n
        return beta


def _grow_gram(G: np.ndarray | None, row: np.ndarray, diag: float) -> np.ndarray:
    K = row.shape[0]
    out = np.empty((K + 1, K + 1))
    out[:K, :K] = G
    out[K, :K] = row
    out[:K, K] = row
    out[K, K] = diag
    return out
