"""The inner layer's iteration as one compiled call, for data in memory.

:func:`cutting_plane.inner_solve` drives the iteration from Python: per plane a master solve, the dual
direction on the groups, the scores, then the compiled steps (:func:`cutting_plane.ocas_step`, the
stopping rules) -- a few dozen calls out of Python, about a millisecond, where a MIL fold's arithmetic
(a few dozen bags) takes microseconds. When the data are in memory the whole iteration runs here
instead, the working set kept in arrays: unbudgeted fits, debiasing refits and the feature-generation
solves with the B-support penalty, their master the simplex QP (one group) or the dense interior-point
method (several), for every loss -- its compiled oracle (``Loss.jit_oracle``) or its Python one, called
back from the loop (``python_oracle.py``). On large data the sparse products dominate either way.

Both drivers take the same compiled steps (the OCAS line search and the in-out safeguard, the stopping
rules); what this one adds is the working set's bookkeeping on arrays (planes, ages, groups, Gram rows),
which :class:`working_set.WorkingSet` does for the Python driver, so both give the same models up to the
order of floating-point sums (tests/test_solvers.py). Where the multi-group master's interior-point
method does not converge (no factorisation, a non-finite answer, or its iterations spent) the loop hands
the working set back at the start of the iteration and the Python driver continues, solving that master
with ECOS.
"""
from __future__ import annotations

import functools
import os
from typing import TYPE_CHECKING, Any

import numba
import numpy as np
import scipy.sparse as sp
from numba import types

from .._interrupt import PENDING, check_interrupt
from .._jit import njit
from .cutting_plane import CONTINUE, MAX_ITER, STALL, STALLED, STATUS, first_point, inner_solve, ocas_step, stop_status
from .data import compressed_dot_blocks
from .penalties import PENALTY_TYPE
from .plane_store import DensePlanes
from .python_oracle import ORACLE_TYPE, OracleCall
from .qcqp import simplex_weights
from .qcqp_ipm import ipm_master, plane_weights
from .simplex_qp import NO_FACE, face_without, feasible_start, simplex_point, simplex_qp_from

if TYPE_CHECKING:
    from .cutting_plane import InnerSettings, LossOracle
    from .data import ColumnCache
    from .feature_generation import BestIterate
    from .working_set import WorkingSet

_VECTOR, _INDEX, _MATRIX = types.float64[::1], types.int64[::1], types.float64[:, ::1]
_LOOP_ARGS = (ORACLE_TYPE, _VECTOR, _VECTOR, _INDEX, _INDEX, _VECTOR, types.Tuple((_INDEX, _INDEX, _VECTOR)),
              _MATRIX, types.int64, types.int64, types.float64,
              types.float64, types.float64, types.int64, types.int64, PENALTY_TYPE, _VECTOR, types.boolean, _MATRIX,
              types.int64, _VECTOR, _INDEX, _VECTOR, _VECTOR, types.int64[:, ::1], _INDEX, types.float64[:, :, ::1],
              types.float64[:, :, ::1], _VECTOR, _INDEX, _INDEX, _INDEX)

HANDED_BACK, INTERRUPTED = 3, 4        # besides cutting_plane's CONVERGED, MAX_ITER and STALLED


def solve_restricted(ws: WorkingSet, cache: ColumnCache, y: np.ndarray, loss: LossOracle, state: BestIterate,
                     settings: InnerSettings, outer: int) -> tuple[str, float]:
    """:func:`cutting_plane.inner_solve` by the compiled loop where it applies, else (and from where it
    hands back) by the Python one."""
    done = compiled_inner_solve(ws, cache, y, loss, state, settings, outer)
    return inner_solve(ws, cache, y, loss, state, settings, outer) if done is None else done


def compiled_inner_solve(ws: WorkingSet, cache: ColumnCache, y: np.ndarray, loss: LossOracle, state: BestIterate,
                         settings: InnerSettings, outer: int) -> tuple[str, float] | None:
    """:func:`cutting_plane.inner_solve` by the compiled loop; None when the solve is not one it covers
    (data on disk, a penalty without a compiled value, ECOS as the master solver) or when its master
    failed and the Python driver is to continue. A loss without a compiled oracle is called through
    :mod:`.python_oracle`; what its oracle raises is raised here."""
    groups = ws.groups
    if not groups or not isinstance(ws.planes, DensePlanes) or (len(groups) > 1 and ws.master_solver != "ipm"):
        return None
    penalty = state.penalty.compiled_value(cache.cols)
    if penalty is None:
        return None
    by_values = all(g.keep_values for g in groups)
    if not by_values and (len(groups) > 1 or not np.array_equal(groups[0].cols, cache.cols)):
        return None
    X = cache.X
    if sp.issparse(X):
        (indptr, indices, data), rows, dense = cache.csc_arrays(), cache.csr_arrays(), np.zeros((0, 0))
    elif isinstance(X, np.ndarray):
        indptr, indices, data = np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0)
        rows, dense = (indptr, indices, data), np.ascontiguousarray(X, dtype=np.float64)
    else:
        return None
    K, m, T = ws.K, cache.cols.shape[0], len(groups)
    width = max(g.cols.shape[0] for g in groups)
    capacity = max(16, 2 * K)
    positions = np.full((T, width), -1, dtype=np.int64)
    lengths = np.array([g.cols.shape[0] for g in groups], dtype=np.int64)
    values = np.zeros((T, capacity, width) if by_values else (T, 0, 0))
    grams = np.zeros((T, capacity, capacity))
    for t, g in enumerate(groups):
        positions[t, :lengths[t]] = cache.positions(g.cols)
        if by_values:
            values[t, :K, :lengths[t]] = g.values.coef
        grams[t, :K, :K] = g.G
    call = OracleCall(loss)
    y = np.ascontiguousarray(y, dtype=np.float64)
    args = (call.function, call.params, y, indptr, indices, data, rows, dense, cache.label_stride(), m,
            float(ws.bias),
            float(ws.C), float(settings.tol), int(settings.max_iter - state.n_iter), int(settings.max_age), *penalty,
            bool(by_values), ws.planes.buffer, int(K), ws.delta.copy(), ws.age.copy(), ws.coef_sum.copy(),
            feasible_start(ws.abar, K)[:K], positions, lengths, values, grams,
            np.asarray(ws.mu, dtype=np.float64).copy(), np.array([g.age for g in groups], dtype=np.int64), PENDING,
            call.failed)
    _check_arrays(args)
    with call:
        out = _compiled_loop()(*args)
    call.raise_failure()           # a Python oracle raised (INTERRUPTED): nothing of the loop's state is kept
    check_interrupt()              # Ctrl-C stopped the loop (INTERRUPTED): likewise
    (status, master, coef_buf, K, delta, age, coef_sum, abar, kept, values, grams, mu, group_age, best,
     records) = out
    ws.planes = DensePlanes.wrap(coef_buf, K)
    ws.face, ws.face_group = NO_FACE, None      # the loop's own face stays behind (its planes were renumbered)
    ws.delta, ws.age, ws.coef_sum, ws.abar = delta[:K].copy(), age[:K].copy(), coef_sum[:K].copy(), abar[:K].copy()
    ws.groups = [groups[i] for i in kept]
    ws.mu = mu.copy()
    for t, g in enumerate(ws.groups):
        g.G, g.age = grams[t, :K, :K].copy(), int(group_age[t])
        if by_values:
            g.values = DensePlanes.wrap(np.ascontiguousarray(values[t, :K, :g.cols.shape[0]]), K)
    w, w_b, xi = best
    if records.shape[0]:
        state.record(w, w_b, xi, cache.cols)
    first = state.n_iter
    state.n_iter += records.shape[0]
    for i, (objective, value, gap, planes, features) in enumerate(records):
        settings.callback(dict(outer=outer, iteration=first + i + 1, objective=objective, master=value,
                               inner_gap=gap, planes=int(planes), features=int(features),
                               solver="smo" if len(groups) == 1 else "ipm", seconds=np.nan))
    if status == HANDED_BACK:
        return None
    if status == STALLED:
        state.stalled = True
    return STATUS[status], master


@njit(cache=True)
def _times(rows: tuple[np.ndarray, np.ndarray, np.ndarray], dense: np.ndarray, w: np.ndarray,
           stride: int) -> np.ndarray:
    """X w (n,) from X's CSR arrays ``rows`` or a dense (n, m) ``dense`` (empty when sparse); X = B (x)
    I_stride read as B's rows where ``stride`` > 1 (ColumnCache.label_stride)."""
    if dense.shape[0] > 0:
        return dense @ w
    return compressed_dot_blocks(rows[0], rows[1], rows[2], w, stride)


@njit(cache=True)
def _times_t(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, dense: np.ndarray, v: np.ndarray,
             stride: int) -> np.ndarray:
    """X' v (m,), likewise."""
    if dense.shape[0] > 0:
        return v @ dense
    return compressed_dot_blocks(indptr, indices, data, v, stride)


@njit(cache=True)
def _grown(buf: np.ndarray, rows: int) -> np.ndarray:
    """``buf`` with room for ``rows`` rows, its rows kept."""
    out = np.empty((rows,) + buf.shape[1:], dtype=buf.dtype)
    out[:buf.shape[0]] = buf
    return out


@njit(cache=True)
def _combination(rows: np.ndarray, weights: np.ndarray) -> np.ndarray:
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
def _nonzero_pool(coef_buf: np.ndarray, K: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The nonzero coefficients of planes 0..K-1 as one pool: (positions, values, start, length), plane k's
    at pool[start[k] : start[k] + length[k]], in plane order; room for as many planes as ``coef_buf`` has rows."""
    total = 0
    for k in range(K):
        for i in range(coef_buf.shape[1]):
            if coef_buf[k, i] != 0.0:
                total += 1
    positions, values = np.empty(max(total, 16), dtype=np.int64), np.empty(max(total, 16))
    start, length = np.zeros(coef_buf.shape[0], dtype=np.int64), np.zeros(coef_buf.shape[0], dtype=np.int64)
    at = 0
    for k in range(K):
        start[k] = at
        for i in range(coef_buf.shape[1]):
            if coef_buf[k, i] != 0.0:
                positions[at], values[at] = i, coef_buf[k, i]
                at += 1
        length[k] = at - start[k]
    return positions, values, start, length


@njit(cache=True)
def _pool_append(pool: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], k: int,
                 coef: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The pool with plane k's nonzero coefficients ``coef`` after plane k - 1's (grown as needed)."""
    positions, values, start, length = pool
    at = 0 if k == 0 else start[k - 1] + length[k - 1]
    nonzero = np.flatnonzero(coef)
    if at + nonzero.shape[0] > positions.shape[0]:
        size = max(2 * positions.shape[0], at + nonzero.shape[0])
        positions, values = _grown(positions, size), _grown(values, size)
    if k >= start.shape[0]:
        start, length = _grown(start, 2 * k + 1), _grown(length, 2 * k + 1)
    positions[at:at + nonzero.shape[0]] = nonzero
    values[at:at + nonzero.shape[0]] = coef[nonzero]
    start[k], length[k] = at, nonzero.shape[0]
    return positions, values, start, length


@njit(cache=True)
def _pool_keep(pool: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
               live: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The pool of the planes ``live`` (increasing) only, renumbered 0.. in place: every read is at or
    after its write, as segments only move left."""
    positions, values, start, length = pool
    at = 0
    for a in range(live.shape[0]):
        k = live[a]
        begin, size = start[k], length[k]
        for i in range(size):
            positions[at + i], values[at + i] = positions[begin + i], values[begin + i]
        start[a], length[a] = at, size
        at += size
    return positions, values, start, length


@njit(cache=True)
def _pool_combination(pool: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], weights: np.ndarray,
                      n: int) -> np.ndarray:
    """sum_k weights_k coef_k (n,) from the pool, skipping zero weights: the planes' nonzeros only."""
    positions, values, start, length = pool
    out = np.zeros(n)
    for k in range(weights.shape[0]):
        a = weights[k]
        if a != 0.0:
            for p in range(start[k], start[k] + length[k]):
                out[positions[p]] += a * values[p]
    return out


@njit(cache=True)
def _pool_dots(pool: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], K: int, u: np.ndarray) -> np.ndarray:
    """coef_k . u for the first K planes of the pool."""
    positions, values, start, length = pool
    out = np.zeros(K)
    for k in range(K):
        acc = 0.0
        for p in range(start[k], start[k] + length[k]):
            acc += values[p] * u[positions[p]]
        out[k] = acc
    return out


@njit(cache=True)
def _by_coefficients(whole: bool, by_values: bool, K: int, m: int, length: np.ndarray, pass_cost: int) -> bool:
    """Whether this iteration forms the direction and the Gram row through the planes' nonzero
    coefficients (their pool, of the K planes' ``length``) and a pass over X (``pass_cost``), rather
    than their K x m values: always when the solve keeps no values, else where that costs less."""
    return whole and (not by_values or K * m > length[:K].sum() + pass_cost)


@njit(cache=True)
def _grown_square(G: np.ndarray, size: int) -> np.ndarray:
    """The T x K x K Gram matrices ``G`` with room for ``size`` planes."""
    out = np.zeros((G.shape[0], size, size))
    k = G.shape[1]
    out[:, :k, :k] = G
    return out


@njit(cache=True)
def _grown_planes(values: np.ndarray, rows: int) -> np.ndarray:
    """The T x K x width plane values with room for ``rows`` planes."""
    out = np.zeros((values.shape[0], rows, values.shape[2]))
    out[:, :values.shape[1], :] = values
    return out


# (position, dtype, ndim) of every array argument of the loop, from its signature
_ARRAY_ARGS = [(i, np.dtype(str(t.dtype)), t.ndim) for i, t in enumerate(_LOOP_ARGS) if isinstance(t, types.Array)]


def _check_arrays(args: tuple[Any, ...]) -> None:
    """Every array argument of the loop of the dtype, dimension and C layout of its signature: the
    entry point reads its memory as such, unchecked (an int64 array would be read as doubles)."""
    for i, dtype, ndim in _ARRAY_ARGS:
        a = args[i]
        if not (isinstance(a, np.ndarray) and a.dtype == dtype and a.ndim == ndim and a.flags.c_contiguous):
            raise TypeError(f"compiled loop argument {i}: expected a C-contiguous {dtype} array of {ndim} "
                            f"dimension(s), got {getattr(a, 'dtype', type(a))} {getattr(a, 'shape', '')}")


@functools.cache
def _compiled_loop() -> Any:
    """The loop compiled for ``_LOOP_ARGS`` (loaded from numba's disk cache after the first time), on
    first use rather than when structfs is imported: its machine-code entry point, called without
    the dispatcher, which types all 27 arguments at every call (0.4 ms, typing the oracle's function
    type; a MIL search makes hundreds of solves of a few hundred microseconds each)."""
    dispatcher: Any = njit(_LOOP_ARGS, cache=True)(_loop)      # numba's Dispatcher, not the function
    return dispatcher.overloads[dispatcher.signatures[0]].entry_point


def loop_is_cached() -> bool:
    """Whether this process has the loop, or numba's disk cache holds it (else its first use compiles)."""
    if _compiled_loop.cache_info().currsize:
        return True
    try:
        dispatcher: Any = numba.njit(cache=True)(_loop)
        return os.path.exists(dispatcher._cache._cache_file._index_path)
    except AttributeError:           # a numba with another cache layout: assume the worst
        return False


# Over 80 lines and 8 parameters: the whole inner iteration as one compiled call with its buffers allocated
# once (numba caches no objects, so the working set travels as arrays), which is what makes it pay on small
# problems; its steps are cutting_plane's, its bookkeeping WorkingSet's, named by the comments inside.
def _loop(oracle: Any, params: np.ndarray, y: np.ndarray, indptr: np.ndarray, indices: np.ndarray,
          data: np.ndarray, rows: tuple[np.ndarray, np.ndarray, np.ndarray], dense: np.ndarray, stride: int, m: int,
          bias: float, C: float, tol: float, max_iter: int, max_age: int, penalty: Any, penalty_params: np.ndarray,
          by_values: bool, coef_buf: np.ndarray, K: int, delta: np.ndarray,
          age: np.ndarray, coef_sum: np.ndarray, abar: np.ndarray, positions: np.ndarray, lengths: np.ndarray,
          values: np.ndarray, grams: np.ndarray, mu: np.ndarray, group_age: np.ndarray,
          interrupt: np.ndarray, failed: np.ndarray) -> tuple[Any, ...]:
    n, T = y.shape[0], lengths.shape[0]
    # A solve that starts with one group keeps it (groups only leave), with weight 1 on its columns and
    # w 0 off them: d then changes nothing (r is 1/2 ||w||^2, every segment quadratic) and is not formed
    # -- a handful of O(m) passes per plane at m = 10^4. (A solve down to one group from several keeps
    # the general form: its best point may still hold the weights of groups that left.)
    single = T == 1
    # One group of every column (an unbudgeted fit, a debiasing refit): the dual direction and the Gram
    # rows can go through the planes' coefficients instead of their values, a pass over X plus the
    # planes' nonzeros (F1's planes are nonzero on the positives and the errors only: 232 of 43,880
    # examples at R8's multi-label optimum) instead of K x m dense products. Each iteration takes the
    # cheaper; the pool of nonzeros is kept for that in every such solve. A solve that keeps no values is
    # always such a solve (compiled_inner_solve hands over no other), so it always goes through the pool.
    whole = single and lengths[0] == m
    if whole:
        for i in range(m):
            if positions[0, i] != i:
                whole = False
                break
    pass_cost = data.shape[0] if dense.shape[0] == 0 else dense.shape[0] * dense.shape[1]
    pool = _nonzero_pool(coef_buf, K if whole else 0)
    # Plane k's coefficients are row row_of[k] of coef_buf, which the loop only writes (the pool and the
    # values hold what it reads): a plane that leaves frees its row for the next one, and the rows are
    # put in plane order once, on return, rather than moved at every drop (K x n copies a plane).
    row_of = np.arange(max(coef_buf.shape[0], 1))
    free_rows, n_free, used = np.empty(max(coef_buf.shape[0], 1), dtype=np.int64), 0, K
    bias2 = bias * bias
    qp_tol = 1e-3 * tol            # the master only needs a small fraction of the gap we stop at
    records = np.empty((max(max_iter, 1), 5))
    recent = np.empty(STALL)
    kept = np.arange(T)            # the groups' indices on entry, of those still in the working set
    # the best point (cutting_plane.Point); with one group its d is never formed (r is 1/2 ||w||^2)
    no_d = np.zeros(m)
    best = (np.zeros(m), no_d, 0.0, np.zeros(n), np.zeros(n), 0.0, np.inf)
    rec_w, rec_wb, rec_xi, rec_value = np.zeros(m), 0.0, 0.0, np.inf
    # the single-group master's factorised face, carried from one master to the next (active_set_from):
    # its planes (-1: the slack coordinate, whose index moves as planes come) and its KKT inverse
    face, face_H, have_face = np.zeros(0, dtype=np.int64), np.zeros((0, 0)), False
    it = 0
    status, value = MAX_ITER, -np.inf
    while True:
        # Ctrl-C: the empty object-mode block lets Python run its signal handler, which sets interrupt[0]
        # during a fit (structfs._interrupt); about a microsecond a plane
        with numba.objmode():
            pass
        if interrupt[0] or failed[0]:      # failed: a Python oracle raised (python_oracle.py)
            status = INTERRUPTED
            break
        # -- the master over the planes: the simplex QP (one group) or the interior-point QCQP --
        full = np.empty((T, K, K))
        for t in range(T):
            for i in range(K):
                for j in range(K):
                    full[t, i, j] = grams[t, i, j] + bias2 * coef_sum[i] * coef_sum[j]
        if T == 1:
            x = simplex_point(abar[:K])
            _, _, face, face_H, have_face = simplex_qp_from(C * full[0], delta[:K], x, qp_tol, 200_000, face,
                                                            face_H, have_face)
            abar[:K] = x[:K]
            mu[0] = 1.0
        else:
            x, lam_q, _, converged = ipm_master(full, delta[:K].copy(), C, qp_tol, 100)
            # Not converged within its iterations (badly scaled features) or not factored: the Python
            # loop continues, with ECOS for this master. Keeping such an answer (a valid but loose dual
            # point) let raw columns of scale 1e3 run 687 planes in 142 s to a fit it could not
            # certify, where the Python driver certified in 395 planes; on scaled data it does not occur.
            if not converged or not np.all(np.isfinite(x)):
                status = HANDED_BACK
                break
            abar[:K] = plane_weights(x)
            mu[:T] = simplex_weights(lam_q)
        quad = -np.inf
        for t in range(T):
            quad = max(quad, abar[:K] @ (full[t] @ abar[:K]))
        value = C * (delta[:K] @ abar[:K] - 0.5 * C * quad)
        top = max(abar[:K].max(), 1e-300)
        for k in range(K):
            age[k] = 0 if abar[k] > 1e-6 * top else age[k] + 1
        for t in range(T):
            group_age[t] = 0 if mu[t] > 1e-8 else group_age[t] + 1
        # -- the master's primal point: w = d * X' beta on the cache, w_b = bias sum(beta) --
        alpha = C * abar[:K]
        d = no_d
        if not single:
            d = np.zeros(m)
            for t in range(T):
                if mu[t] > 0:
                    for i in range(lengths[t]):
                        d[positions[t, i]] += mu[t]
            d = np.minimum(d, 1.0)
        if _by_coefficients(whole, by_values, K, m, pool[3], pass_cost):
            direction = _times_t(indptr, indices, data, dense, _pool_combination(pool, alpha, n), stride)
        else:
            direction = np.zeros(m)
            for t in range(T):
                on_group = _combination(values[t], alpha)
                for i in range(lengths[t]):
                    direction[positions[t, i]] = on_group[i]
        w = direction if single else d * direction
        w_b = bias * (alpha @ coef_sum[:K])
        s = _times(rows, dense, w, stride)
        s += bias * w_b
        if it == 0:
            best, cut_coef, cut_delta = first_point(oracle, params, y, C, single, w, d, w_b, s)
        else:
            best, cut_coef, cut_delta = ocas_step(oracle, params, y, C, single, best, (w, d, w_b, s), value)
        best_w, _, best_wb, _, _, best_xi, best_value = best
        gap = best_value - value
        objective = penalty(best_w, penalty_params) + 0.5 * best_wb * best_wb + C * best_xi
        if objective < rec_value:           # the iterate of the lowest true objective (BestIterate)
            rec_w, rec_wb, rec_xi, rec_value = best_w.copy(), best_wb, best_xi, objective
        records[it, 0], records[it, 1], records[it, 2], records[it, 3] = objective, value, gap, K
        records[it, 4] = np.count_nonzero(best_w)
        it += 1
        status = stop_status(gap, C, tol, it, max_iter, recent, value)
        if status != CONTINUE:
            break
        # -- planes unused for max_age solves leave (rows and columns everywhere, in order) --
        live = np.flatnonzero(age[:K] <= max_age)
        if live.shape[0] < K:
            face, face_H, have_face = face_without(face, face_H, have_face, age[:K] <= max_age)
            for k in range(K):                  # the leaving planes' rows of coef_buf are free again
                if age[k] > max_age:
                    free_rows[n_free] = row_of[k]
                    n_free += 1
            for a in range(live.shape[0]):      # in place: every read is at or after its write
                k = live[a]
                row_of[a] = row_of[k]
                delta[a], age[a], coef_sum[a], abar[a] = delta[k], age[k], coef_sum[k], abar[k]
                for t in range(T):
                    if by_values:
                        values[t, a] = values[t, k]
                    for b in range(live.shape[0]):
                        grams[t, a, b] = grams[t, k, live[b]]
            if whole:
                pool = _pool_keep(pool, live)
            K = live.shape[0]
            total = abar[:K].sum()
            if total > 1.0:
                abar[:K] /= total
        # -- groups without weight for max_age solves leave (feature generation re-adds them) --
        keep = group_age[:T] <= max_age
        if not keep.all() and keep.any():
            stay = np.flatnonzero(keep)
            for a in range(stay.shape[0]):
                t = stay[a]
                positions[a] = positions[t]
                lengths[a], group_age[a], mu[a], kept[a] = lengths[t], group_age[t], mu[t], kept[t]
                grams[a] = grams[t]
                if by_values:
                    values[a] = values[t]
            T = stay.shape[0]
            mu[:T] = simplex_weights(mu[:T])
        # -- the new plane: its values on every group, its Gram rows --
        if by_values and K == values.shape[1]:
            values = _grown_planes(values, 2 * K)
        if K == delta.shape[0]:
            delta, age, coef_sum, abar = (_grown(delta, 2 * K), _grown(age, 2 * K), _grown(coef_sum, 2 * K),
                                          _grown(abar, 2 * K))
        if K == grams.shape[1]:
            grams = _grown_square(grams, 2 * K)
        v = _times_t(indptr, indices, data, dense, cut_coef, stride)
        by_coef = _by_coefficients(whole, by_values, K, m, pool[3], pass_cost)
        for t in range(T):
            if by_values:
                v_t = np.zeros(values.shape[2])         # zero past the group's width, as its values
                for i in range(lengths[t]):
                    v_t[i] = v[positions[t, i]]
                values[t, K] = v_t                      # row K: the Gram row below reads rows :K
            else:
                v_t = v
            if by_coef:                                 # coef_k . X X' coef (see `whole`)
                row = _pool_dots(pool, K, _times(rows, dense, v, stride))
            elif values.shape[2] >= 64:                 # BLAS for wide groups (unbudgeted: K x m)
                row = values[t, :K] @ v_t
            else:                                       # a call per small group costs more than its sums
                row = np.zeros(K)
                for k in range(K):
                    acc = 0.0
                    for i in range(lengths[t]):
                        acc += values[t, k, i] * v_t[i]
                    row[k] = acc
            grams[t, K, :K] = row
            grams[t, :K, K] = row
            grams[t, K, K] = v_t @ v_t
        if n_free > 0:
            n_free -= 1
            slot = free_rows[n_free]
        else:
            if used == coef_buf.shape[0]:
                coef_buf = _grown(coef_buf, 2 * used)
                row_of, free_rows = _grown(row_of, 2 * used), _grown(free_rows, 2 * used)
            slot, used = used, used + 1
        if K == row_of.shape[0]:
            row_of = _grown(row_of, 2 * K)
        row_of[K] = slot
        coef_buf[slot] = cut_coef
        if whole:
            pool = _pool_append(pool, K, cut_coef)
        delta[K], age[K], coef_sum[K], abar[K] = cut_delta, 0, cut_coef.sum(), 0.0
        K += 1
    return (status, value, coef_buf[row_of[:K]], K, delta, age, coef_sum, abar, kept[:T].copy(), values[:T].copy(),
            grams[:T].copy(), mu[:T].copy(), group_age[:T].copy(), (rec_w, rec_wb, rec_xi), records[:it].copy())
