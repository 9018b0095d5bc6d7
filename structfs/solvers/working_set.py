"""The working set of the inner layer: the planes found so far, the feature groups, their Gram matrices
and the restricted master problem over them.

A plane is stored by its per-example coefficients coef_k (Psi_k = X~' coef_k) so that it can be
restricted to a group added later (``plane_store.py``: float64 rows, or codes of two bits or one byte
per example for data on disk or on a cluster); each group keeps its Gram matrix G_t, updated by one row
per new plane.

Everything else the working set holds is arrays with room to grow (:class:`PlaneArrays`,
:class:`GroupArrays`): the form the compiled loop works on, in place. Their bookkeeping -- the ages
after a master solve, the planes and groups that leave, a new plane's place -- is the compiled functions
below, which both drivers of the inner method call: :class:`WorkingSet`'s methods for the Python driver,
``compiled_loop._loop`` for data in memory. What the drivers do their own way is the arithmetic around
them: the products with X (the Python driver's go through whatever holds the rows) and the master.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from .._jit import njit
from .data import ColumnCache, matvec, matvec_t
from .plane_store import CodedPlanes, DensePlanes, combination
from .qcqp import MasterSolution, gram_factor, simplex_weights, solve_master
from .simplex_qp import NO_FACE, Face, face_without

# A group keeps its planes' values (K x |t|) while |t| is at most this many times n.
VALUES_PER_EXAMPLE = 2
# Interior-point masters never return exact zeros: an idle plane keeps abar_k ~ mu / slack_k, mostly
# 1e-8..1e-6 of the largest weight at the master's tolerance. A 1e-10 cut-off kept every plane alive
# (MIL elephant, budget=1: 469 planes, 18 ms per master, 22 s per fit); 1e-8 left 107 (1.5 s), 1e-6
# leaves 58 (1.2 s, same objective to 0.2%).
IDLE_PLANE = 1e-6        # a plane whose weight is at most this fraction of the largest is idle
IDLE_GROUP = 1e-8        # a group whose weight mu_t is at most this is idle


class PlaneArrays(NamedTuple):
    """The planes' bookkeeping, plane k at position k < K, with room to grow."""
    delta: np.ndarray         # Delta_k
    age: np.ndarray           # int64: master solves since the plane last had weight
    coef_sum: np.ndarray      # sum_i coef_ki: the plane's bias coordinate / bias
    abar: np.ndarray          # the master's weights alpha_k / C


class GroupArrays(NamedTuple):
    """The groups' bookkeeping, group t at position t < T, for the planes of :class:`PlaneArrays` (the
    arrays may have room for more groups: only the first T are read)."""
    lengths: np.ndarray       # int64: |t|, the group's columns
    keeps: np.ndarray         # bool: the group keeps its planes' values
    values: np.ndarray        # plane k on group t at values[t, k, :lengths[t]] (where kept), zeros after
    grams: np.ndarray         # G_t (no bias part) at grams[t, :K, :K]
    mu: np.ndarray            # the master's group weights
    age: np.ndarray           # int64: master solves since the group last had weight


def empty_arrays(capacity: int = 16) -> tuple[PlaneArrays, GroupArrays]:
    """Arrays for no plane and no group, with room for ``capacity`` planes."""
    planes = PlaneArrays(np.zeros(capacity), np.zeros(capacity, dtype=np.int64), np.zeros(capacity),
                         np.zeros(capacity))
    groups = GroupArrays(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.bool_), np.zeros((0, capacity, 0)),
                         np.zeros((0, capacity, capacity)), np.zeros(0), np.zeros(0, dtype=np.int64))
    return planes, groups


def _with_group_room(groups: GroupArrays, T: int, size: int, width: int) -> GroupArrays:
    """The first ``T`` groups' arrays with room for twice as many groups (a feature-generation path adds
    one per point: copying every group's Gram matrix at each was a path's largest Python cost on small
    problems), ``size`` planes and values ``width`` wide."""
    room = max(2 * T, 1)
    values = np.zeros((room, size, width))
    values[:T, :, :groups.values.shape[2]] = groups.values[:T]
    grams = np.zeros((room, size, size))
    grams[:T] = groups.grams[:T]
    lengths, keeps = np.zeros(room, dtype=np.int64), np.zeros(room, dtype=np.bool_)
    mu, age = np.zeros(room), np.zeros(room, dtype=np.int64)
    lengths[:T], keeps[:T], mu[:T], age[:T] = groups.lengths[:T], groups.keeps[:T], groups.mu[:T], groups.age[:T]
    return GroupArrays(lengths, keeps, values, grams, mu, age)


@njit(cache=True)
def grown(buf: np.ndarray, rows: int) -> np.ndarray:
    """``buf`` with room for ``rows`` rows, its rows kept (the rest unwritten: pages never touched stay
    out of memory)."""
    out = np.empty((rows,) + buf.shape[1:], dtype=buf.dtype)
    out[:buf.shape[0]] = buf
    return out


@njit(cache=True)
def with_room(planes: PlaneArrays, groups: GroupArrays, K: int) -> tuple[PlaneArrays, GroupArrays]:
    """The arrays with room for plane K: twice the room when they are full, else themselves."""
    size = planes.delta.shape[0]
    if K < size:
        return planes, groups
    size = max(2 * size, K + 1)
    planes = PlaneArrays(grown(planes.delta, size), grown(planes.age, size), grown(planes.coef_sum, size),
                         grown(planes.abar, size))
    T, width = groups.values.shape[0], groups.values.shape[2]
    values = np.zeros((T, size, width))
    values[:, :groups.values.shape[1], :] = groups.values
    grams = np.zeros((T, size, size))
    k = groups.grams.shape[1]
    grams[:, :k, :k] = groups.grams
    return planes, GroupArrays(groups.lengths, groups.keeps, values, grams, groups.mu, groups.age)


@njit(cache=True)
def store_plane(planes: PlaneArrays, groups: GroupArrays, K: int, T: int, delta: float, coef_sum: float,
                v: np.ndarray, rows: np.ndarray) -> None:
    """Plane K's place (room made by :func:`with_room`): its loss ``delta`` and coefficient sum, age 0,
    weight 0; on each group t its values ``v[t, :lengths[t]]`` (where kept) and its Gram row
    ``rows[t, :K]`` with its diagonal ``rows[t, K]``."""
    planes.delta[K], planes.age[K], planes.coef_sum[K], planes.abar[K] = delta, 0, coef_sum, 0.0
    for t in range(T):
        if groups.keeps[t]:
            length = groups.lengths[t]
            groups.values[t, K, :length] = v[t, :length]
            groups.values[t, K, length:] = 0.0
        groups.grams[t, K, :K] = rows[t, :K]
        groups.grams[t, :K, K] = rows[t, :K]
        groups.grams[t, K, K] = rows[t, K]


@njit(cache=True)
def age_after_master(planes: PlaneArrays, groups: GroupArrays, K: int, T: int) -> None:
    """After a master solve: a plane or group with weight starts its age over, an idle one ages by one."""
    top = max(planes.abar[:K].max(), 1e-300) if K else 1e-300
    for k in range(K):
        planes.age[k] = 0 if planes.abar[k] > IDLE_PLANE * top else planes.age[k] + 1
    for t in range(T):
        groups.age[t] = 0 if groups.mu[t] > IDLE_GROUP else groups.age[t] + 1


@njit(cache=True)
def keep_planes(planes: PlaneArrays, groups: GroupArrays, K: int, T: int, live: np.ndarray) -> int:
    """Keep the planes at the increasing positions ``live``, renumbered 0.. in order, in place (every read
    is at or after its write); their number. The weights are not renormalised (each driver sums them its
    own way, see :meth:`WorkingSet.drop_planes`)."""
    for a in range(live.shape[0]):
        k = live[a]
        planes.delta[a], planes.age[a] = planes.delta[k], planes.age[k]
        planes.coef_sum[a], planes.abar[a] = planes.coef_sum[k], planes.abar[k]
        for t in range(T):
            if groups.keeps[t]:
                groups.values[t, a] = groups.values[t, k]
            for b in range(live.shape[0]):
                groups.grams[t, a, b] = groups.grams[t, k, live[b]]
    return live.shape[0]


@njit(cache=True)
def drop_idle_groups(groups: GroupArrays, T: int, max_age: int, kept: np.ndarray) -> int:
    """Groups idle for more than ``max_age`` master solves leave (unless all would), the others renumbered
    0.. in place with their indices ``kept`` alike and their weights back on the simplex; their number."""
    stay = np.flatnonzero(groups.age[:T] <= max_age)
    if stay.shape[0] == T or stay.shape[0] == 0:
        return T
    for a in range(stay.shape[0]):
        t = stay[a]
        groups.lengths[a], groups.keeps[a], groups.age[a] = groups.lengths[t], groups.keeps[t], groups.age[t]
        groups.mu[a], kept[a] = groups.mu[t], kept[t]
        groups.grams[a] = groups.grams[t]
        groups.values[a] = groups.values[t]
    T = stay.shape[0]
    groups.mu[:T] = simplex_weights(groups.mu[:T])
    return T


class FeatureGroup:
    """One group of columns with its slice (or the column cache it reads it from); its planes' values
    and Gram matrix are in the working set's :class:`GroupArrays`."""

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
        self.K = 0
        self.arrays, self.group_arrays = empty_arrays()
        self.groups: list[FeatureGroup] = []
        # the single-group master's factorised face, valid for the planes of the group it was solved on
        self.face: Face = NO_FACE
        self.face_group: FeatureGroup | None = None

    # views of the live part of the arrays
    @property
    def delta(self) -> np.ndarray:
        return self.arrays.delta[:self.K]

    @property
    def age(self) -> np.ndarray:
        return self.arrays.age[:self.K]

    @property
    def coef_sum(self) -> np.ndarray:
        return self.arrays.coef_sum[:self.K]

    @property
    def abar(self) -> np.ndarray:
        return self.arrays.abar[:self.K]

    @property
    def mu(self) -> np.ndarray:
        return self.group_arrays.mu[:len(self.groups)]

    def gram(self, t: int) -> np.ndarray:
        """G_t (no bias part), K x K."""
        return self.group_arrays.grams[t, :self.K, :self.K]

    def values(self, t: int) -> np.ndarray:
        """The planes' values on group t (one that keeps them), K x |t|."""
        return self.group_arrays.values[t, :self.K, :self.groups[t].cols.shape[0]]

    def adopt(self, planes: PlaneArrays, groups: GroupArrays, K: int, kept: np.ndarray) -> None:
        """Take the arrays of a solve that worked on them (and may have grown them): ``K`` planes and the
        groups at the positions ``kept`` of those before it, in order."""
        self.arrays, self.group_arrays, self.K = planes, groups, K
        self.groups = [self.groups[i] for i in kept]

    # -- planes ------------------------------------------------------------------------------------
    def add_plane(self, coef: np.ndarray, delta: float) -> None:
        K, T = self.K, len(self.groups)
        if not self.planes.append(coef):      # more distinct values than the codes hold: go dense
            self.planes = self.planes.to_dense()
            self.planes.append(coef)
        self.arrays, self.group_arrays = with_room(self.arrays, self.group_arrays, K)
        v_all = np.zeros((T, self.group_arrays.values.shape[2]))
        rows = np.empty((T, K + 1))
        on_cache = {}                         # X_cache' coef, once per cache (its columns in order)
        for t, g in enumerate(self.groups):
            if g.cache is None:
                v = matvec_t(g.X, coef)
            else:
                if id(g.cache) not in on_cache:
                    on_cache[id(g.cache)] = matvec_t(g.cache.X, coef)
                # the same sums as on the group's slice: each column's entries in the same order
                v = on_cache[id(g.cache)][g.cache.positions(g.cols)]
            if g.keep_values:
                rows[t, :K] = self.values(t) @ v
                v_all[t, :v.shape[0]] = v
            else:
                rows[t, :K] = self.planes.dots(matvec(g.X, v), K)
            rows[t, K] = float(v @ v)
        store_plane(self.arrays, self.group_arrays, K, T, float(delta), float(coef.sum()), v_all, rows)
        self.K = K + 1

    def drop_planes(self, keep: np.ndarray) -> None:
        """Forget planes with ``keep`` False (long inactive): their rows and columns everywhere."""
        live = np.flatnonzero(keep)
        self.planes.keep(live)
        self.face = face_without(*self.face, keep)
        self.K = keep_planes(self.arrays, self.group_arrays, self.K, len(self.groups), live)
        total = self.abar.sum()
        if total > 1.0:
            self.abar[:] /= total

    # -- groups ------------------------------------------------------------------------------------
    def add_group(self, cols: np.ndarray, X_cols: Any, cache: ColumnCache | None = None) -> FeatureGroup:
        """A group of columns ``cols`` with their slice ``X_cols``; ``cache`` (a ColumnCache holding
        them, optional): later planes are restricted through it and the group keeps no slice."""
        g = FeatureGroup(cols, X_cols, self.n, cache)
        V = self.planes.column_products(X_cols) if self.K else np.zeros((0, cols.shape[0]))  # K x |t|
        arrays, T, K = self.group_arrays, len(self.groups), self.K
        width = max(arrays.values.shape[2], cols.shape[0] if g.keep_values else 0)
        if T == arrays.grams.shape[0] or width > arrays.values.shape[2]:
            arrays = _with_group_room(arrays, T, self.arrays.delta.shape[0], width)
        # group T's place, which a group dropped before may have held (only groups < T are read)
        arrays.values[T] = 0.0
        if g.keep_values:
            arrays.values[T, :K, :cols.shape[0]] = V
        arrays.grams[T] = 0.0
        arrays.grams[T, :K, :K] = V @ V.T
        arrays.lengths[T], arrays.keeps[T], arrays.mu[T], arrays.age[T] = cols.shape[0], g.keep_values, 0.0, 0
        self.group_arrays = arrays
        self.groups.append(g)
        return g

    def clear_groups(self) -> None:
        """Forget every group (the planes stay: they are valid cuts on any columns)."""
        self.groups = []
        self.group_arrays = empty_arrays(self.arrays.delta.shape[0])[1]

    def grams(self) -> np.ndarray:
        """G_t including the bias coordinate, which every group shares: a T x K x K array."""
        bias_part = (self.bias ** 2) * np.outer(self.coef_sum, self.coef_sum)
        out = np.empty((len(self.groups), self.K, self.K))
        for t in range(len(self.groups)):
            np.add(self.gram(t), bias_part, out=out[t])
        return out

    def factors(self, grams: np.ndarray) -> list[np.ndarray]:
        """F_t with G_t = F_t F_t': the plane values themselves when that is thin, else eigen."""
        out = []
        for t, (g, G) in enumerate(zip(self.groups, grams)):
            if g.keep_values and g.cols.shape[0] + 1 <= self.K:
                out.append(np.hstack([self.values(t), self.bias * self.coef_sum[:, None]]))
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
        for t, g in enumerate(self.groups):
            pos = np.searchsorted(union, g.cols)
            F[:, pos] = self.values(t)
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
        self.abar[:] = sol.abar
        self.mu[:] = sol.mu
        self.face, self.face_group = (sol.face, self.groups[0]) if single and sol.face is not None else (NO_FACE, None)
        age_after_master(self.arrays, self.group_arrays, self.K, len(self.groups))
        return sol

    def drop_groups(self, max_age: int) -> None:
        """Forget groups without weight for ``max_age`` solves (the outer layer re-adds a group that
        becomes most violated again), which keeps the QCQP small."""
        kept = np.arange(len(self.groups))
        T = drop_idle_groups(self.group_arrays, len(self.groups), max_age, kept)
        self.groups = [self.groups[i] for i in kept[:T]]

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
            for t, g in enumerate(self.groups):
                out[cache.positions(g.cols)] = combination(self.values(t), alpha)
            return out, float(alpha @ self.coef_sum)
        beta = self.beta()
        return matvec_t(cache.X, beta), beta.sum()

    def beta(self) -> np.ndarray:
        """beta = sum_k alpha_k coef_k (n,), alpha = C * abar: c = X~' beta is the dual direction."""
        beta = self.planes.combination(self.abar)
        beta *= self.C                        # in place: an n-vector at large n
        return beta

