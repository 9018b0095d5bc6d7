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
rules) and keep the working set the same way: this loop works on :class:`working_set.WorkingSet`'s own
arrays, in place (growing them where it must), and calls the bookkeeping the Python driver calls -- the
ages after a master, the planes and groups that leave, a new plane's place (``working_set.py``). What
it does its own way is the products with X (compiled, through the planes' nonzero coefficients where
that is cheaper) and where it keeps the planes' coefficient rows (a freed row takes the next plane, and
the rows are put in order once, on return). So both give the same models up to the order of
floating-point sums (tests/test_solvers.py). Where the multi-group master's interior-point method does
not converge (no factorisation, a non-finite answer, or its iterations spent) the loop hands the working
set back at the start of the iteration and the Python driver continues, solving that master with ECOS.
"""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import scipy.sparse as sp
from numba import types

from .._interrupt import PENDING, check_interrupt, interrupt_requested
from .._jit import njit
from .cutting_plane import CONTINUE, MAX_ITER, STALL, STALLED, STATUS, first_point, inner_solve, ocas_step, stop_status
from .data import compressed_dot_blocks
from .penalties import PENALTY_TYPE
from .plane_store import DensePlanes
from .python_oracle import ORACLE_TYPE, OracleCall
from .qcqp import simplex_weights
from .qcqp_ipm import ipm_master, plane_weights
from .simplex_qp import NO_FACE, face_without, feasible_start, simplex_point, simplex_qp_from
from .working_set import (
    GroupArrays,
    PlaneArrays,
    age_after_master,
    drop_idle_groups,
    grown,
    keep_planes,
    store_plane,
    with_room,
)

if TYPE_CHECKING:
    from .cutting_plane import InnerSettings, LossOracle
    from .data import ColumnCache
    from .feature_generation import BestIterate
    from .working_set import WorkingSet


class LoopData(NamedTuple):
    """The rows of a restricted solve, on the column cache's columns."""
    y: np.ndarray                                        # labels in {-1, +1}
    columns: tuple[np.ndarray, np.ndarray, np.ndarray]   # X's CSC (indptr, indices, data); empty when dense
    rows: tuple[np.ndarray, np.ndarray, np.ndarray]      # X's CSR, likewise
    dense: np.ndarray                                    # X (n, m) when dense, else (0, 0)
    stride: int                                          # X = B (x) I_stride read as B (ColumnCache.label_stride)
    m: int                                               # the cache's columns


class LoopSettings(NamedTuple):
    """What a restricted solve is asked: the bias feature's value, C, the precision, the planes it may
    add, and how long planes and groups stay unused."""
    bias: float
    C: float
    tol: float
    max_iter: int
    max_age: int


_VECTOR, _INDEX, _MATRIX = types.float64[::1], types.int64[::1], types.float64[:, ::1]
_COMPRESSED = types.Tuple((_INDEX, _INDEX, _VECTOR))
_PLANES = types.NamedTuple((_VECTOR, _INDEX, _VECTOR, _VECTOR), PlaneArrays)
_GROUPS = types.NamedTuple((_INDEX, types.boolean[::1], types.float64[:, :, ::1], types.float64[:, :, ::1], _VECTOR,
                            _INDEX), GroupArrays)
_LOOP_ARGS = (ORACLE_TYPE, _VECTOR, PENALTY_TYPE, _VECTOR,
              types.NamedTuple((_VECTOR, _COMPRESSED, _COMPRESSED, _MATRIX, types.int64, types.int64), LoopData),
              types.NamedTuple((types.float64, types.float64, types.float64, types.int64, types.int64), LoopSettings),
              types.Tuple((_MATRIX, _PLANES, _GROUPS, types.int64[:, ::1], types.int64, types.int64)),
              types.Tuple((_INDEX, _INDEX)))

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
        columns, rows, dense = cache.csc_arrays(), cache.csr_arrays(), np.zeros((0, 0))
    elif isinstance(X, np.ndarray):
        columns = (np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0))
        rows, dense = columns, cache.dense_rows()
    else:
        return None
    K, T = ws.K, len(groups)
    positions = np.full((T, max(g.cols.shape[0] for g in groups)), -1, dtype=np.int64)
    for t, g in enumerate(groups):
        positions[t, :g.cols.shape[0]] = cache.positions(g.cols)
    ws.abar[:] = feasible_start(ws.abar, K)[:K]
    call = OracleCall(loss)
    data = LoopData(np.ascontiguousarray(y, dtype=np.float64), columns, rows, dense, cache.label_stride(),
                    cache.cols.shape[0])
    settings_in = LoopSettings(float(ws.bias), float(ws.C), float(settings.tol),
                               int(settings.max_iter - state.n_iter), int(settings.max_age))
    args = (call.function, call.params, *penalty, data, settings_in,
            (ws.planes.buffer, ws.arrays, ws.group_arrays, positions, K, T), (PENDING, call.failed))
    _check_arrays(args)
    with call:
        out = _compiled_loop()(*args)
    call.raise_failure()           # a Python oracle raised (INTERRUPTED): the fit ends with its error
    check_interrupt()              # Ctrl-C stopped the loop (INTERRUPTED): likewise
    status, master, (coef_rows, planes, group_arrays, K, T), kept, best, records = out
    ws.planes = DensePlanes.wrap(coef_rows, K)
    ws.face, ws.face_group = NO_FACE, None      # the loop's own face stays behind (its planes were renumbered)
    ws.adopt(planes, group_arrays, K, kept)
    w, w_b, xi = best
    if records.shape[0]:
        state.record(w, w_b, xi, cache.cols)
    first = state.n_iter
    state.n_iter += records.shape[0]
    for i, (objective, value, gap, n_planes, features) in enumerate(records if settings.hears else ()):
        settings.callback(dict(outer=outer, iteration=first + i + 1, objective=objective, master=value,
                               inner_gap=gap, planes=int(n_planes), features=int(features),
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
        positions, values = grown(positions, size), grown(values, size)
    if k >= start.shape[0]:
        start, length = grown(start, 2 * k + 1), grown(length, 2 * k + 1)
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


def _array_places(expected: Any, path: tuple[int, ...] = ()) -> list[tuple[tuple[int, ...], np.dtype, int]]:
    """(where, dtype, dimensions) of every array among numba types ``expected``, nested tuples followed:
    ``where`` the indices that reach it from the top."""
    if isinstance(expected, types.Array):
        return [(path, np.dtype(str(expected.dtype)), expected.ndim)]
    if isinstance(expected, tuple | types.BaseTuple):
        its_types: Any = expected          # numba's tuple types iterate over their items' types
        return [place for i, item in enumerate(its_types) for place in _array_places(item, (*path, i))]
    return []


_ARRAYS = _array_places(_LOOP_ARGS)


def _check_arrays(args: Any) -> None:
    """Every array in the loop's arguments ``args`` of the dtype, dimension and C layout of its type in
    ``_LOOP_ARGS``: the entry point reads their memory as such, unchecked (an int64 array would be read as
    doubles)."""
    for path, dtype, ndim in _ARRAYS:
        value = args
        for i in path:
            value = value[i]
        if not (isinstance(value, np.ndarray) and value.dtype == dtype and value.ndim == ndim
                and value.flags.c_contiguous):
            where = ".".join(map(str, path))
            raise TypeError(f"compiled loop argument {where}: expected a C-contiguous {dtype} array of {ndim} "
                            f"dimension(s), got {getattr(value, 'dtype', type(value))} {getattr(value, 'shape', '')}")


@functools.cache
def _compiled_loop() -> Any:
    """The loop compiled for ``_LOOP_ARGS`` (loaded from numba's disk cache after the first time), on
    first use rather than when structfs is imported: its machine-code entry point, called without
    the dispatcher, which types every argument at every call (about 0.4 ms, most of it the oracle's
    function type; a MIL search makes hundreds of solves of a few hundred microseconds each)."""
    dispatcher: Any = njit(_LOOP_ARGS, cache=True)(_loop)      # numba's Dispatcher, not the function
    return dispatcher.overloads[dispatcher.signatures[0]].entry_point


def loop_is_cached() -> bool:
    """Whether this process has the loop, or numba's disk cache holds it for the package's sources as they
    are (else its first use compiles)."""
    if _compiled_loop.cache_info().currsize:
        return True
    try:
        dispatcher: Any = njit(cache=True)(_loop)
        return bool(dispatcher._cache._cache_file._load_index())
    except AttributeError:           # a numba with another cache layout: assume the worst
        return False


# Over 80 lines: the whole inner iteration as one compiled call with its buffers allocated once (numba
# caches no objects, so the working set travels as arrays), which is what makes it pay on small problems;
# its steps are cutting_plane's, its bookkeeping working_set's, named by the comments inside.
def _loop(oracle: Any, params: np.ndarray, penalty: Any, penalty_params: np.ndarray, data: LoopData,
          settings: LoopSettings, ws: Any, signals: Any) -> tuple[Any, ...]:
    """The restricted solve from the working set ``ws`` = (the planes' coefficient rows, PlaneArrays,
    GroupArrays, the groups' columns' positions in the cache, K, T), its arrays changed in place or
    grown; ``oracle`` and ``penalty``: compiled functions, each followed by its parameters (numba warns
    that a tuple holding a function type is experimental); ``signals``: (Ctrl-C flag, Python oracle
    failure flag). Returns (status, master value, the working set (coefficient rows in plane order,
    PlaneArrays, GroupArrays, K, T), the indices of the groups kept, the best iterate (w, w_b, xi), one
    record per iteration)."""
    y, (indptr, indices, values_csc), rows, dense, stride, m = data
    bias, C, tol, max_iter, max_age = settings
    coef_buf, planes, groups, positions, K, T = ws
    interrupt, failed = signals
    n = y.shape[0]
    lengths = groups.lengths
    by_values = groups.keeps[:T].all()      # else one group of every column (see compiled_inner_solve)
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
    pass_cost = values_csc.shape[0] if dense.shape[0] == 0 else dense.shape[0] * dense.shape[1]
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
    columns_of = positions.copy()  # the positions of the groups on entry
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
        # Ctrl-C: Python's handler runs here and sets interrupt[0] during a fit (structfs._interrupt)
        if interrupt_requested(interrupt) or failed[0]:      # failed: a Python oracle raised (python_oracle.py)
            status = INTERRUPTED
            break
        delta, coef_sum, abar, mu = planes.delta, planes.coef_sum, planes.abar, groups.mu   # with_room may regrow them
        # -- the master over the planes: the simplex QP (one group) or the interior-point QCQP --
        full = np.empty((T, K, K))
        for t in range(T):
            for i in range(K):
                for j in range(K):
                    full[t, i, j] = groups.grams[t, i, j] + bias2 * coef_sum[i] * coef_sum[j]
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
        age_after_master(planes, groups, K, T)
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
            direction = _times_t(indptr, indices, values_csc, dense, _pool_combination(pool, alpha, n), stride)
        else:
            direction = np.zeros(m)
            for t in range(T):
                on_group = _combination(groups.values[t], alpha)
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
        live = np.flatnonzero(planes.age[:K] <= max_age)
        if live.shape[0] < K:
            face, face_H, have_face = face_without(face, face_H, have_face, planes.age[:K] <= max_age)
            for k in range(K):                  # the leaving planes' rows of coef_buf are free again
                if planes.age[k] > max_age:
                    free_rows[n_free] = row_of[k]
                    n_free += 1
            for a in range(live.shape[0]):      # in place: every read is at or after its write
                row_of[a] = row_of[live[a]]
            K = keep_planes(planes, groups, K, T, live)
            if whole:
                pool = _pool_keep(pool, live)
            total = abar[:K].sum()
            if total > 1.0:
                abar[:K] /= total
        # -- groups without weight for max_age solves leave (feature generation re-adds them) --
        before = T
        T = drop_idle_groups(groups, T, max_age, kept)
        if T < before:
            for a in range(T):
                positions[a] = columns_of[kept[a]]
        # -- the new plane: its values on every group, its Gram rows --
        planes, groups = with_room(planes, groups, K)
        v = _times_t(indptr, indices, values_csc, dense, cut_coef, stride)
        by_coef = _by_coefficients(whole, by_values, K, m, pool[3], pass_cost)
        v_rows = np.zeros((T, groups.values.shape[2]))
        gram_rows = np.empty((T, K + 1))
        for t in range(T):
            if by_values:
                v_t = v_rows[t]                         # zero past the group's width, as its values
                for i in range(lengths[t]):
                    v_t[i] = v[positions[t, i]]
            else:
                v_t = v
            if by_coef:                                 # coef_k . X X' coef (see `whole`)
                gram_rows[t, :K] = _pool_dots(pool, K, _times(rows, dense, v, stride))
            elif groups.values.shape[2] >= 64:          # BLAS for wide groups (unbudgeted: K x m)
                gram_rows[t, :K] = groups.values[t, :K] @ v_t
            else:                                       # a call per small group costs more than its sums
                for k in range(K):
                    acc = 0.0
                    for i in range(lengths[t]):
                        acc += groups.values[t, k, i] * v_t[i]
                    gram_rows[t, k] = acc
            gram_rows[t, K] = v_t @ v_t
        store_plane(planes, groups, K, T, cut_delta, cut_coef.sum(), v_rows, gram_rows)
        if n_free > 0:
            n_free -= 1
            slot = free_rows[n_free]
        else:
            if used == coef_buf.shape[0]:
                coef_buf = grown(coef_buf, 2 * used)
                row_of, free_rows = grown(row_of, 2 * used), grown(free_rows, 2 * used)
            slot, used = used, used + 1
        if K == row_of.shape[0]:
            row_of = grown(row_of, 2 * K)
        row_of[K] = slot
        coef_buf[slot] = cut_coef
        if whole:
            pool = _pool_append(pool, K, cut_coef)
        K += 1
    return (status, value, (coef_buf[row_of[:K]], planes, groups, K, T), kept[:T].copy(), (rec_w, rec_wb, rec_xi),
            records[:it].copy())
