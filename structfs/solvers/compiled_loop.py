"""The inner layer's loop as one compiled function, for the solves small problems are made of.

Unbudgeted fits and debiasing refits solve the restricted problem on a single group with weight 1 on
every column: the master is the simplex QP, the line search's regulariser a quadratic. For these,
when the data are in memory and the loss offers a compiled oracle (``Loss.jit_oracle``), the whole
iteration of :func:`cutting_plane.inner_solve` -- master, dual direction, scores, oracle calls, line
search, plane bookkeeping -- runs here without returning to Python. A plane of a MIL fold (a few dozen
bags) cost about 2 ms of Python dispatch there and costs tens of microseconds here; on large data
the sparse products dominate either way and nothing changes.

It is the same method step for step (OCAS line search, the in-out safeguard, plane ages, the stall
rule), so both give the same models up to the order of floating-point sums (tests/test_solvers.py).
"""
import functools

import numpy as np
import scipy.sparse as sp
from numba import types
from numba.core.types.function_type import CompileResultWAP

from .._jit import njit
from .cutting_plane import _STALL, MU, inner_solve
from .penalties import SquaredL2
from .plane_store import DensePlanes
from .simplex_qp import feasible_start, simplex_qp

_VECTOR, _INDEX, _MATRIX = types.float64[::1], types.int64[::1], types.float64[:, ::1]
# What ``Loss.jit_oracle`` must be: (y, s, params) -> (coef, delta), float64 C-contiguous vectors. The loop
# takes the oracle as a function of this type, not as the numba dispatcher it is: numba compiles (and
# caches on disk) one loop for every such oracle, where a dispatcher argument made each process compile
# the loop again for each loss (16 s each).
ORACLE_SIGNATURE = types.Tuple((_VECTOR, types.float64))(_VECTOR, _VECTOR, _VECTOR)
ORACLE_TYPE = types.FunctionType(ORACLE_SIGNATURE)
_LOOP_ARGS = (ORACLE_TYPE, _VECTOR, _VECTOR, _INDEX, _INDEX, _VECTOR, _MATRIX, types.int64, types.float64,
              types.float64, types.float64, types.int64, types.int64, types.boolean, _MATRIX, _MATRIX, types.int64,
              _VECTOR, _INDEX, _VECTOR, _VECTOR, _MATRIX)

CONVERGED, MAX_ITER, STALLED = 0, 1, 2
STATUS = ("converged", "max_iter", "stalled")
_LINE_SEARCH_EVALS = 3       # trial points of the line search beyond its end point (as line_search's default)


def solve_single_group(ws, cache, y, loss, state, settings, outer):
    """:func:`cutting_plane.inner_solve` for a working set of one group with weight 1 (unbudgeted fits,
    debiasing refits): by the compiled loop where it applies, else by the Python one."""
    done = compiled_inner_solve(ws, cache, y, loss, state, settings, outer)
    return inner_solve(ws, cache, y, loss, state, settings, outer) if done is None else done


def compiled_inner_solve(ws, cache, y, loss, state, settings, outer):
    """:func:`cutting_plane.inner_solve` by the compiled loop, or None when the solve is not one it
    covers (several groups, a penalty other than the squared L2 norm, data on disk, a loss without a
    compiled oracle)."""
    if (loss.jit_oracle is None or len(ws.groups) != 1 or not isinstance(state.penalty, SquaredL2)
            or not isinstance(ws.planes, DensePlanes)):
        return None
    group = ws.groups[0]
    if group.cols.shape[0] != cache.cols.shape[0] or not np.array_equal(group.cols, cache.cols):
        return None
    X = cache.X
    if sp.issparse(X):
        X = sp.csc_matrix(X)
        indptr, indices = X.indptr.astype(np.int64), X.indices.astype(np.int64)
        data, dense = np.asarray(X.data, dtype=np.float64), np.zeros((0, 0))
    elif isinstance(X, np.ndarray):
        indptr, indices, data = np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0)
        dense = np.ascontiguousarray(X, dtype=np.float64)
    else:
        return None
    K, m = ws.K, group.cols.shape[0]
    values = group.values._coef if group.keep_values else np.zeros((0, m))
    x0 = feasible_start(ws.abar, K)[:K]
    params, y = np.asarray(loss.jit_params, dtype=np.float64), np.ascontiguousarray(y, dtype=np.float64)
    out = _compiled_loop()(_as_function(loss.jit_oracle), params, y, indptr, indices, data, dense, m,
                           float(ws.bias), float(ws.C), float(settings.tol), int(settings.max_iter - state.n_iter),
                           int(settings.max_age), group.keep_values, ws.planes._coef, values, K, ws.delta.copy(),
                           ws.age.copy(), ws.coef_sum.copy(), x0, group.G.copy())
    status, master, coef_buf, values_buf, K, delta, age, coef_sum, abar, G, best, records = out
    ws.planes = DensePlanes.wrap(coef_buf, K)
    if group.keep_values:
        group.values = DensePlanes.wrap(values_buf, K)
    ws.delta, ws.age, ws.coef_sum, ws.abar = delta[:K].copy(), age[:K].copy(), coef_sum[:K].copy(), abar[:K].copy()
    group.G, group.age, ws.mu = G[:K, :K].copy(), 0, np.ones(1)
    w, w_b, xi = best
    state.record(w, w_b, xi, cache.cols)
    first = state.n_iter
    state.n_iter += records.shape[0]
    for i, (objective, value, gap, planes, features) in enumerate(records):
        settings.callback(dict(outer=outer, iteration=first + i + 1, objective=objective, master=value,
                               inner_gap=gap, planes=int(planes), features=int(features), solver="smo",
                               seconds=np.nan))
    if status == STALLED:
        state.stalled = True
    return STATUS[status], master


@njit(cache=True)
def _times(indptr, indices, data, dense, w, n):
    """X w (n,) for CSC (indptr, indices, data) or a dense (n, m) ``dense`` (empty when sparse)."""
    if dense.shape[0] > 0:
        return dense @ w
    out = np.zeros(n)
    for j in range(w.shape[0]):
        wj = w[j]
        if wj != 0.0:
            for p in range(indptr[j], indptr[j + 1]):
                out[indices[p]] += data[p] * wj
    return out


@njit(cache=True)
def _times_t(indptr, indices, data, dense, v, m):
    """X' v (m,)."""
    if dense.shape[0] > 0:
        return v @ dense
    out = np.empty(m)
    for j in range(m):
        acc = 0.0
        for p in range(indptr[j], indptr[j + 1]):
            acc += data[p] * v[indices[p]]
        out[j] = acc
    return out


@njit(cache=True)
def _grown(buf, rows):
    """``buf`` with room for ``rows`` rows, its rows kept."""
    out = np.empty((rows,) + buf.shape[1:], dtype=buf.dtype)
    out[:buf.shape[0]] = buf
    return out


@njit(cache=True)
def _combination(rows, weights):
    """sum_k weights_k rows_k over the first len(weights) rows, skipping zero weights."""
    out = np.zeros(rows.shape[1])
    for k in range(weights.shape[0]):
        a = weights[k]
        if a != 0.0:
            row = rows[k]
            for j in range(out.shape[0]):
                out[j] += a * row[j]
    return out


@njit(cache=True)
def _slack(coef, delta, s):
    return max(0.0, delta - coef @ s)


@functools.cache
def _as_function(oracle):
    """The compiled ``oracle`` as a first-class function of ORACLE_TYPE, its address looked up once:
    numba otherwise looks it up at every call (about 1 ms, as much as a small refit's whole loop)."""
    oracle.compile(ORACLE_SIGNATURE)
    return CompileResultWAP(oracle.overloads[ORACLE_SIGNATURE.args])


@functools.cache
def _compiled_loop():
    """The loop compiled for ``_LOOP_ARGS`` (loaded from numba's disk cache after the first time), on
    first use rather than when structfs is imported."""
    return njit(_LOOP_ARGS, cache=True)(_loop)


def _loop(oracle, params, y, indptr, indices, data, dense, m, bias, C, tol, max_iter, max_age, keep_values,
          coef_buf, values_buf, K, delta, age, coef_sum, abar, G):
    n = y.shape[0]
    bias2 = bias * bias
    # The direction and the Gram rows from the planes' values on the group (K x m) when the group keeps
    # them, else through the data (K x n plus a sparse pass; the group's rule: VALUES_PER_EXAMPLE)
    by_values = keep_values
    qp_tol = 1e-3 * tol            # the master only needs a small fraction of the gap we stop at
    records = np.empty((max(max_iter, 1), 5))
    recent = np.empty(_STALL)
    best_w, best_s = np.zeros(m), np.zeros(n)
    best_coef = np.zeros(n)
    best_wb, best_xi, best_value = 0.0, 0.0, np.inf
    have_best = False
    it = 0
    status, value = MAX_ITER, -np.inf
    while True:
        # -- the master QP over the capped simplex (alpha = C abar) and its value --
        Q = np.empty((K, K))
        for i in range(K):
            for j in range(K):
                Q[i, j] = C * (G[i, j] + bias2 * coef_sum[i] * coef_sum[j])
        x = np.zeros(K + 1)
        x[:K] = np.maximum(abar[:K], 0.0)
        total = x[:K].sum()
        if total > 1.0:
            x[:K] /= total
        x[K] = max(0.0, 1.0 - x[:K].sum())
        simplex_qp(Q, delta[:K], x, qp_tol, 200_000)
        abar[:K] = x[:K]
        quad = abar[:K] @ (Q @ abar[:K]) / C
        value = C * (delta[:K] @ abar[:K] - 0.5 * C * quad)
        top = max(abar[:K].max(), 1e-300)
        for k in range(K):
            age[k] = 0 if abar[k] > 1e-6 * top else age[k] + 1
        # -- the master's primal point: w = X' beta on the group, w_b = bias sum(beta) --
        alpha = C * abar[:K]
        if by_values:
            w = _combination(values_buf, alpha)
        else:
            w = _times_t(indptr, indices, data, dense, _combination(coef_buf, alpha), m)
        w_b = bias * (alpha @ coef_sum[:K])
        s = _times(indptr, indices, data, dense, w, n)
        s += bias * w_b
        if not have_best:
            coef, d = oracle(y, s, params)
            xi = _slack(coef, d, s)
            best_w, best_wb, best_s, best_coef, best_xi = w, w_b, s, coef, xi
            best_value = 0.5 * (w @ w) + 0.5 * w_b * w_b + C * xi
            have_best = True
            cut_coef, cut_delta = coef, d
        else:
            # -- OCAS: the best point moves to the minimiser of F on the segment towards the master's --
            dw, db, ds = w - best_w, w_b - best_wb, s - best_s
            a0, a1, a2 = 0.5 * (best_w @ best_w), best_w @ dw, dw @ dw
            s1 = ds * 1.0 + best_s
            m_coef, m_delta = oracle(y, s1, params)
            m_xi = _slack(m_coef, m_delta, s1)
            b1 = best_wb + db
            f1 = a0 + a1 + 0.5 * a2 + 0.5 * b1 * b1 + C * m_xi
            g1 = a1 + a2 + b1 * db - (C * (m_coef @ ds) if m_xi > 0 else 0.0)
            g0 = a1 + best_wb * db - (C * (best_coef @ ds) if best_xi > 0 else 0.0)
            top_t, top_f = (0.0, best_value) if best_value <= f1 else (1.0, f1)
            top_coef, top_xi = m_coef, m_xi
            descending = g0 < 0          # else the best point stays where it is
            if descending and g1 > 0:
                lo, f_lo, hi, f_hi = 0.0, best_value, 1.0, f1
                for _ in range(_LINE_SEARCH_EVALS):
                    width = hi - lo
                    t = (f_hi - f_lo + g0 * lo - g1 * hi) / (g0 - g1)
                    t = min(max(t, lo + 0.05 * width), hi - 0.05 * width)
                    st = ds * t + best_s
                    t_coef, t_delta = oracle(y, st, params)
                    t_xi = _slack(t_coef, t_delta, st)
                    bt = best_wb + t * db
                    f = a0 + a1 * t + 0.5 * a2 * t * t + 0.5 * bt * bt + C * t_xi
                    g = a1 + a2 * t + bt * db - (C * (t_coef @ ds) if t_xi > 0 else 0.0)
                    if f < top_f:
                        top_t, top_f, top_coef, top_xi = t, f, t_coef, t_xi
                    if g < 0:
                        lo, f_lo, g0 = t, f, g
                    else:
                        hi, f_hi, g1 = t, f, g
                    if hi - lo < 1e-3:
                        break
            if descending:
                if top_t == 1.0:
                    best_w, best_wb, best_s = w, w_b, s
                    best_coef, best_xi, best_value = m_coef, m_xi, f1
                elif top_t != 0.0:
                    best_w, best_wb, best_s = best_w + top_t * dw, best_wb + top_t * db, ds * top_t + best_s
                    best_coef, best_xi, best_value = top_coef, top_xi, top_f
            # -- the next plane at best + MU (master - best), or at the master if that cuts nothing --
            c_w, c_wb = best_w + MU * (w - best_w), best_wb + MU * (w_b - best_wb)
            c_s = (s - best_s) * MU + best_s
            cut_coef, cut_delta = oracle(y, c_s, params)
            c_xi = _slack(cut_coef, cut_delta, c_s)
            c_value = 0.5 * (c_w @ c_w) + 0.5 * c_wb * c_wb + C * c_xi
            if c_value < best_value:
                best_w, best_wb, best_s = c_w, c_wb, c_s
                best_coef, best_xi, best_value = cut_coef, c_xi, c_value
            master_xi = (value - (f1 - C * m_xi)) / C
            if cut_delta - cut_coef @ s <= master_xi + 1e-9 * max(1.0, abs(master_xi)):
                cut_coef, cut_delta = m_coef, m_delta
        gap = best_value - value
        records[it, 0] = 0.5 * (best_w @ best_w) + 0.5 * best_wb * best_wb + C * best_xi
        records[it, 1], records[it, 2], records[it, 3] = value, gap, K
        records[it, 4] = np.count_nonzero(best_w)
        it += 1
        if gap <= C * tol:
            status = CONVERGED
            break
        if it >= max_iter:
            status = MAX_ITER
            break
        if it > _STALL:
            recent[:-1] = recent[1:]
        recent[min(it, _STALL) - 1] = value
        if it >= _STALL and recent[_STALL - 1] - recent[0] <= 1e-12 * abs(recent[_STALL - 1]) + 1e-300:
            status = STALLED
            break
        # -- planes unused for max_age solves leave (rows and columns everywhere, in order) --
        kept = np.flatnonzero(age[:K] <= max_age)
        if kept.shape[0] < K:
            for a in range(kept.shape[0]):      # in place: every read is at or after its write
                k = kept[a]
                coef_buf[a] = coef_buf[k]
                if keep_values:
                    values_buf[a] = values_buf[k]
                delta[a], age[a], coef_sum[a], abar[a] = delta[k], age[k], coef_sum[k], abar[k]
                for b in range(kept.shape[0]):
                    G[a, b] = G[k, kept[b]]
            K = kept.shape[0]
            total = abar[:K].sum()
            if total > 1.0:
                abar[:K] /= total
        # -- the new plane: its values on the group, its Gram row --
        if K == coef_buf.shape[0]:
            coef_buf = _grown(coef_buf, 2 * K)
        if keep_values and K == values_buf.shape[0]:
            values_buf = _grown(values_buf, 2 * K)
        if K == delta.shape[0]:
            delta, age, coef_sum, abar = (_grown(delta, 2 * K), _grown(age, 2 * K), _grown(coef_sum, 2 * K),
                                          _grown(abar, 2 * K))
            G2 = np.empty((2 * K, 2 * K))
            G2[:K, :K] = G[:K, :K]
            G = G2
        v = _times_t(indptr, indices, data, dense, cut_coef, m)
        if by_values:
            row = values_buf[:K] @ v
        else:
            row = coef_buf[:K] @ _times(indptr, indices, data, dense, v, n)
        if keep_values:
            values_buf[K] = v
        coef_buf[K] = cut_coef
        G[K, :K] = row
        G[:K, K] = row
        G[K, K] = v @ v
        delta[K], age[K], coef_sum[K], abar[K] = cut_delta, 0, cut_coef.sum(), 0.0
        K += 1
    return (status, value, coef_buf, values_buf, K, delta, age, coef_sum, abar, G,
            (best_w, best_wb, best_xi), records[:it].copy())
