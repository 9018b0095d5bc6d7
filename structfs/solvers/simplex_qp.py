"""Dense convex QP over the capped simplex: min 1/2 x'Qx - b'x  s.t.  x >= 0, sum(x) <= 1.

This is the restricted master problem of the 1-slack cutting-plane method with a single group of
features (alpha = C * x, Q = C * Gram of the planes, b = Delta of the planes). The constraint
sum(x) <= 1 becomes an equality with a slack coordinate (Q row/column 0, b 0).

Two solvers, same answer:

* ``active_set`` (the default): a primal active-set method. Consecutive masters differ by one plane,
  so warm-started from the previous support it typically finishes in a few steps, each a KKT solve
  on the current face; the face's KKT inverse is updated from step to step and, through
  ``active_set_from``, from one master to the next, rather than factored again.
  Cutting planes are often affinely dependent, making the KKT system singular; its least-squares
  residual is then a direction of unbounded descent (Q v = 0, 1'v = 0, b'v > 0), followed until a
  coordinate reaches zero. Exact up to round-off.
* SMO (sequential minimal optimisation) with second-order pair selection: closed-form two-coordinate
  steps, robust to any Gram matrix but slow on many correlated planes; the fallback.

The Frank-Wolfe gap g'x - min(g), g = Qx - b, bounds the suboptimality of either answer.
"""
from __future__ import annotations

import numpy as np

from .._jit import njit


@njit(cache=True)
def _curvature(Q: np.ndarray, K: int, i: int, j: int) -> float:
    """Second derivative of f along e_i - e_j (index K is the slack coordinate, whose Q is zero)."""
    if i < K and j < K:
        return Q[i, i] + Q[j, j] - 2.0 * Q[i, j]
    if j < K:
        return Q[j, j]
    if i < K:
        return Q[i, i]
    return 0.0


@njit(cache=True)
def _smo(Q: np.ndarray, b: np.ndarray, x: np.ndarray, tol: float, max_iter: int) -> tuple[int, float]:
    K = b.shape[0]
    # coordinates 0..K-1 are the planes; K is the slack (Q = 0, b = 0).
    g = Q @ x[:K] - b
    g_slack = 0.0
    it = 0
    fw_gap = np.inf
    while it < max_iter:
        # i_up: coordinate of smallest gradient (mass goes there)
        i_up = K
        g_up = g_slack
        for i in range(K):
            if g[i] < g_up:
                g_up = g[i]
                i_up = i
        fw_gap = float(x[K] * (g_slack - g_up))
        for j in range(K):
            fw_gap += x[j] * (g[j] - g_up)
        if fw_gap <= tol:
            break
        # j_down: among coordinates holding mass, the best second-order decrease with i_up
        j_down = -1
        best = 0.0
        for j in range(K + 1):
            if j == i_up or x[j] <= 0.0:
                continue
            gj = g[j] if j < K else g_slack
            diff = gj - g_up
            if diff <= 0.0:
                continue
            eta = max(_curvature(Q, K, i_up, j), 1e-300)
            # exact decrease of f along e_up - e_j, the step limited by the mass x[j] that can move
            step = diff / eta
            if step > x[j]:
                step = x[j]
            dec = step * diff - 0.5 * eta * step * step
            if dec > best:
                best = dec
                j_down = j
        if j_down < 0:
            break
        gj = g[j_down] if j_down < K else g_slack
        diff = gj - g_up
        eta = _curvature(Q, K, i_up, j_down)
        step = x[j_down] if eta <= 1e-300 else min(diff / eta, x[j_down])
        x[i_up] += step
        x[j_down] -= step
        if x[j_down] < 1e-300:
            x[j_down] = 0.0
        for k in range(K):
            dq = 0.0
            if i_up < K:
                dq += Q[k, i_up]
            if j_down < K:
                dq -= Q[k, j_down]
            g[k] += step * dq
        it += 1
    return it, fw_gap


def _fw_gap(Q: np.ndarray, b: np.ndarray, x: np.ndarray) -> float:
    g = np.append(Q @ x[:-1] - b, 0.0)
    return float(g @ x - g.min())


@njit(cache=True)
def _pivoted(M: np.ndarray, X: np.ndarray, j: int) -> bool:
    """Partial pivoting at column j of an elimination on M carrying the rows of X along: the row of
    the largest |M[i, j]|, i >= j, swapped into row j of both; False where that entry is exactly 0."""
    p = j
    for i in range(j + 1, M.shape[0]):
        if abs(M[i, j]) > abs(M[p, j]):
            p = i
    if M[p, j] == 0.0:
        return False
    if p != j:
        for c in range(M.shape[1]):
            M[j, c], M[p, c] = M[p, c], M[j, c]
        for c in range(X.shape[1]):
            X[j, c], X[p, c] = X[p, c], X[j, c]
    return True


@njit(cache=True)
def _lu_solve_columns(A: np.ndarray, B: np.ndarray) -> tuple[np.ndarray, bool]:
    """(X, solved): A X = B for the columns of B by Gaussian elimination with partial pivoting;
    ``solved`` False at an exactly zero pivot (LAPACK's dgesv test). Written out rather than
    ``np.linalg.solve``, which signals a singular matrix by raising: an exception in compiled code
    leaks the arrays it had allocated (numba's runtime counted four a singular KKT system, every few
    solves on MIL folds)."""
    n, k = B.shape
    M = A.copy()
    X = B.copy()
    for j in range(n):
        if not _pivoted(M, X, j):
            return X, False
        for i in range(j + 1, n):
            f = M[i, j] / M[j, j]
            if f != 0.0:
                for c in range(j + 1, n):
                    M[i, c] -= f * M[j, c]
                for c in range(k):
                    X[i, c] -= f * X[j, c]
    for c in range(k):
        for i in range(n - 1, -1, -1):
            v = X[i, c]
            for q in range(i + 1, n):
                v -= M[i, q] * X[q, c]
            X[i, c] = v / M[i, i]
    return X, True


@njit(cache=True)
def _lu_solve(A: np.ndarray, rhs: np.ndarray) -> tuple[np.ndarray, bool]:
    """(x, solved): A x = rhs (:func:`_lu_solve_columns` of one column)."""
    X, solved = _lu_solve_columns(A, rhs.reshape((rhs.shape[0], 1)))
    return X[:, 0].copy(), solved


@njit(cache=True)
def _kkt_solve(A: np.ndarray, rhs: np.ndarray, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """Solution of the KKT system and its residual: LU first (about ten times cheaper than the SVD
    behind least squares), the least-squares solution where LU fails or leaves a residual."""
    sol, ok = _lu_solve(A, rhs)
    if ok:
        resid = rhs - A @ sol
        if np.all(np.isfinite(sol)) and np.sqrt(np.sum(resid * resid)) <= 1e-9 * scale:
            return sol, resid
    sol = np.linalg.lstsq(A, rhs, rcond=1e-13)[0]
    return sol, rhs - A @ sol


# The proximal term of a singular face's step, relative to the QP's scale (see active_set_from): small
# enough that the step is the face's Newton step wherever Q_ff has curvature, large enough that the
# regularised KKT matrix factors (its condition about 1 / PROXIMAL).
PROXIMAL = 1e-10


@njit(cache=True)
def _proximal_solve(A: np.ndarray, rhs: np.ndarray, x_face: np.ndarray, eps: float) -> tuple[np.ndarray, bool]:
    """(solution, solved) of the face's KKT system ``A`` [lambda; target] = ``rhs`` with ``eps`` / 2
    ||target - x_face||^2 added to the objective: Q_ff + eps I in A, eps x_face added to the
    right-hand side's face rows. Nonsingular for eps > 0, whatever the planes' dependence."""
    A_reg, rhs_reg = A.copy(), rhs.copy()
    for r in range(x_face.shape[0]):
        A_reg[r + 1, r + 1] += eps
        rhs_reg[r + 1] += eps * x_face[r]
    sol, ok = _lu_solve(A_reg, rhs_reg)
    return sol, ok and bool(np.all(np.isfinite(sol)))


@njit(cache=True)
def _kkt_matrix(Qa: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """The KKT matrix of the face ``idx``: [[0, 1'], [1, Q_ff]] (the simplex constraint first)."""
    s = idx.shape[0]
    A = np.zeros((s + 1, s + 1))
    for r in range(s):
        A[0, r + 1] = 1.0
        A[r + 1, 0] = 1.0
        for c in range(s):
            A[r + 1, c + 1] = Qa[idx[r], idx[c]]
    return A


@njit(cache=True)
def _kkt_times(Qa: np.ndarray, idx: np.ndarray, v: np.ndarray) -> np.ndarray:
    """:func:`_kkt_matrix` times ``v``, without forming the matrix."""
    s = idx.shape[0]
    out = np.empty(s + 1)
    out[0] = v[1:].sum()
    for r in range(s):
        acc = v[0]
        row = idx[r]
        for c in range(s):
            acc += Qa[row, idx[c]] * v[c + 1]
        out[r + 1] = acc
    return out


@njit(cache=True)
def _inverse(A: np.ndarray) -> tuple[np.ndarray, bool]:
    """(A^-1, ok) by Gauss-Jordan elimination with partial pivoting; ok False at an exactly zero pivot
    or a non-finite result."""
    n = A.shape[0]
    M = A.copy()
    H = np.eye(n)
    for j in range(n):
        if not _pivoted(M, H, j):
            return H, False
        pivot = M[j, j]
        for k in range(n):
            M[j, k] /= pivot
            H[j, k] /= pivot
        for i in range(n):
            if i != j:
                f = M[i, j]
                if f != 0.0:
                    for k in range(n):
                        M[i, k] -= f * M[j, k]
                        H[i, k] -= f * H[j, k]
    return H, bool(np.all(np.isfinite(H)))


@njit(cache=True)
def _bordered(H: np.ndarray, a: np.ndarray, d: float) -> tuple[np.ndarray, bool]:
    """The inverse of [[A, a], [a', d]] from H = A^-1 (the Schur complement d - a'H a); ok False where
    that complement is 0 (the bordered matrix is singular)."""
    n = H.shape[0]
    u = H @ a
    schur = d - a @ u
    out = np.empty((n + 1, n + 1))
    if schur == 0.0 or not np.isfinite(schur):
        return out, False
    for i in range(n):
        for k in range(n):
            out[i, k] = H[i, k] + u[i] * u[k] / schur
        out[i, n] = out[n, i] = -u[i] / schur
    out[n, n] = 1.0 / schur
    return out, True


@njit(cache=True)
def without_coordinate(H: np.ndarray, p: int) -> tuple[np.ndarray, bool]:
    """The inverse of A without row and column ``p`` from H = A^-1; ok False where H[p, p] is 0."""
    n = H.shape[0]
    h = H[p, p]
    out = np.empty((n - 1, n - 1))
    if h == 0.0 or not np.isfinite(h):
        return out, False
    for i in range(n - 1):
        a = i + (i >= p)
        for k in range(n - 1):
            b = k + (k >= p)
            out[i, k] = H[a, b] - H[a, p] * H[p, b] / h
    return out, True


@njit(cache=True)
def active_set(Q: np.ndarray, b: np.ndarray, x: np.ndarray, tol: float, max_iter: int) -> tuple[int, float]:
    """Primal active-set method on the simplex {x >= 0, sum(x) = 1} (slack last). Modifies x.

    Returns (steps, fw_gap); fw_gap is inf when ``max_iter`` ran out. Compiled: the masters of small
    problems are solved thousands of times per fit, a few planes each. (:func:`active_set_from`
    with nothing carried.)"""
    steps, gap, _, _, _ = active_set_from(Q, b, x, tol, max_iter, np.zeros(0, dtype=np.int64), np.zeros((0, 0)),
                                          False)
    return steps, gap


@njit(cache=True)
def _face_with(H: np.ndarray, have_H: bool, idx: np.ndarray, Qa: np.ndarray,
               j: int) -> tuple[np.ndarray, bool, np.ndarray]:
    """(H, have_H, idx) with coordinate ``j`` joining the face ``idx`` (of the QP matrix ``Qa``, slack
    included), the inverse bordered by it where it is valid."""
    s = idx.shape[0]
    if have_H:
        a = np.ones(s + 1)
        for r in range(s):
            a[r + 1] = Qa[idx[r], j]
        H, have_H = _bordered(H, a, Qa[j, j])
    grown = np.empty(s + 1, dtype=np.int64)
    grown[:s] = idx
    grown[s] = j
    return H, have_H, grown


@njit(cache=True)
def _face_without(H: np.ndarray, have_H: bool, idx: np.ndarray,
                  kept: np.ndarray) -> tuple[np.ndarray, bool, np.ndarray]:
    """(H, have_H, idx) without the coordinates of the face ``idx`` whose ``kept`` is False, the inverse
    reduced where it is valid (last position first, so that the positions still to go stay put)."""
    for r in range(idx.shape[0] - 1, -1, -1):
        if have_H and not kept[idx[r]]:
            H, have_H = without_coordinate(H, r + 1)
    return H, have_H, idx[kept[idx]]


# Over 80 lines: one method, its steps sharing the face and the inverse they keep up to date.
@njit(cache=True)
def active_set_from(Q: np.ndarray, b: np.ndarray, x: np.ndarray, tol: float, max_iter: int, face: np.ndarray,
               H: np.ndarray, have_H: bool) -> tuple[int, float, np.ndarray, np.ndarray, bool]:
    """:func:`active_set` from a factorised face: ``face`` (coordinates, slack = K) and ``H``, the
    inverse of its KKT matrix [[0, 1'], [1, Q_ff]] (valid where ``have_H``), as an earlier call left
    them; returns (steps, fw_gap, face, H, have_H) for the next call.

    Each step changes the face by one coordinate (or drops those that reach zero), and consecutive
    masters of a cutting-plane solve differ by a plane, so the inverse is carried by bordering and
    deletion (O(s^2) for s free coordinates) instead of factored again (O(s^3)): SMS spam's
    unbudgeted fits keep 130 of 140 planes active late in a solve, where the factorisations were
    most of the master's time. Every solution is checked by its residual; where the carried inverse
    falls short the step factors afresh. Where the face's matrix is singular (affinely dependent
    planes) the step goes to the face's proximal point instead, the minimiser of f + PROXIMAL * scale
    / 2 ||x' - x||^2 on it: a least-squares solution of the singular system need not be a descent
    direction, and on a musk1 refit it was not -- a coordinate entered, the face's least-squares
    target was negative there, it left at a step of length 0, and so on until the steps ran out,
    after which SMO took 88,796 steps (17 ms, where a master takes tens of microseconds); the
    proximal steps solved that master in 13 steps to a smaller objective. A proximal step always
    descends, and with it an entering coordinate whose gradient is below the face's takes positive
    weight, as in the nonsingular case, so the method cannot cycle. A proximal point is not the
    face's minimiser: the method returns from it only within ``tol``, else it steps again. Where even
    the regularised system does not factor, the least-squares residual is followed as a direction of
    unbounded descent, as :func:`_kkt_solve` gives it.
    """
    K = b.shape[0]
    Qa = np.zeros((K + 1, K + 1))
    Qa[:K, :K] = Q
    ba = np.zeros(K + 1)
    ba[:K] = b
    diag_max = 0.0
    for i in range(K):
        diag_max = max(diag_max, abs(Q[i, i]))
    scale = max(1.0, np.max(np.abs(ba)), diag_max)
    free = x > 0
    # the face, in the order of H's rows 1..s (row 0: the constraint): the carried one, brought to x's
    idx = np.nonzero(free)[0]
    if have_H:
        H, have_H, face = _face_without(H, have_H, face, free)
        carried = np.zeros(K + 1, dtype=np.bool_)
        carried[face] = True
        for j in range(K + 1):
            if have_H and free[j] and not carried[j]:
                H, have_H, face = _face_with(H, have_H, face, Qa, j)
        if have_H:
            idx = face
    for step in range(max_iter):
        s = idx.shape[0]
        proximal = False
        rhs = np.ones(s + 1)
        rhs[1:] = ba[idx]
        solved = False
        sol, resid = rhs, rhs
        if have_H:
            sol = H @ rhs
            resid = rhs - _kkt_times(Qa, idx, sol)
            solved = bool(np.all(np.isfinite(sol))) and np.sqrt(np.sum(resid * resid)) <= 1e-9 * scale
        if not solved:
            A = _kkt_matrix(Qa, idx)
            H, have_H = _inverse(A)
            if have_H:
                sol = H @ rhs
                resid = rhs - A @ sol
                solved = bool(np.all(np.isfinite(sol))) and np.sqrt(np.sum(resid * resid)) <= 1e-9 * scale
            if not solved:                # a singular face: its proximal step (see the docstring)
                have_H = False
                sol, proximal = _proximal_solve(A, rhs, x[idx], PROXIMAL * scale)
                if proximal:
                    resid = np.zeros(s + 1)   # the regularised system is solved: a bounded step
                else:
                    sol, resid = _kkt_solve(A, rhs, scale)
        bounded = np.sqrt(np.sum(resid * resid)) <= 1e-9 * scale
        target = sol[1:]
        if bounded:
            direction = target - x[idx]
        else:                                 # unbounded descent inside the face: follow it
            direction = resid[1:]
        if bounded and not np.any(target < 0):
            x[:] = 0.0
            x[idx] = target
            g = Qa @ x - ba
            mu = np.mean(g[idx])
            gap = np.sum(g * x) - np.min(g)
            entering, g_in = -1, np.inf
            for j in range(K + 1):
                if not free[j] and g[j] < g_in:
                    entering, g_in = j, g[j]
            if entering < 0 or g_in >= mu - 1e-12 * scale or gap <= tol:
                if gap <= tol or not proximal:
                    return step + 1, gap, idx, H, have_H
                continue                      # a proximal point of the face, not its minimiser: again
            free[entering] = True
            H, have_H, idx = _face_with(H, have_H, idx, Qa, entering)
            continue
        shrinking = direction < -1e-15
        if not np.any(shrinking):
            return step + 1, np.inf, idx, H, False
        ratio, block = np.inf, -1
        for r in range(s):
            if shrinking[r]:
                t_r = x[idx[r]] / -direction[r]
                if t_r < ratio:
                    ratio, block = t_r, idx[r]
        t = min(1.0, ratio) if bounded else ratio
        for r in range(s):
            v = x[idx[r]] + t * direction[r]
            x[idx[r]] = 0.0 if v < 1e-14 else v
        x[block] = 0.0
        free = x > 0
        x /= np.sum(x)
        H, have_H, idx = _face_without(H, have_H, idx, free)    # the coordinates that reached zero leave
    return max_iter, np.inf, idx, H, False


@njit(cache=True)
def simplex_qp(Q: np.ndarray, b: np.ndarray, x: np.ndarray, tol: float, max_iter: int) -> tuple[float, int]:
    """Minimise 1/2 x'Qx - b'x over the simplex from the feasible ``x`` (length K + 1, slack last),
    in place; returns (fw_gap, steps). (:func:`simplex_qp_from` with nothing carried.)"""
    gap, steps, _, _, _ = simplex_qp_from(Q, b, x, tol, max_iter, np.zeros(0, dtype=np.int64), np.zeros((0, 0)),
                                          False)
    return gap, steps


@njit(cache=True)
def simplex_qp_from(Q: np.ndarray, b: np.ndarray, x: np.ndarray, tol: float, max_iter: int, face: np.ndarray,
                    H: np.ndarray, have_H: bool) -> tuple[float, int, np.ndarray, np.ndarray, bool]:
    """:func:`simplex_qp` from the factorised face an earlier call left (see :func:`active_set_from`),
    its planes numbered as the working set's (the slack -1: its coordinate K moves as planes come);
    returns (fw_gap, steps, face, H, have_H), numbered so. The active-set method runs first; if it stalls (badly
    scaled planes leave it a little short of ``tol``), SMO continues from its point and the answer
    with the smaller gap is kept. Compiled so that the compiled inner loop (``compiled_loop.py``)
    calls it too."""
    K = b.shape[0]
    start = x.copy()
    steps, gap, face, H, have_H = active_set_from(Q, b, x, tol, 4 * K + 20, np.where(face < 0, K, face), H, have_H)
    face = np.where(face == K, -1, face)
    b_max = 0.0
    for i in range(K):
        b_max = max(b_max, abs(b[i]))
    if not np.isfinite(gap) or gap > max(tol, 1e-9 * max(1.0, b_max)):
        # SMO is a descent method: it continues from the active set's point when that one is feasible
        # (badly scaled planes -- Q ~ 1e10 against b ~ 1 -- leave it close but not within tol), and the
        # answer with the smaller Frank-Wolfe gap is kept: from the start point, 2e5 SMO steps ended
        # 25x further from the optimum than the point they replaced.
        finite = np.isfinite(gap)
        smo_x = x.copy() if finite else start
        smo_steps, smo_gap = _smo(Q, b, smo_x, tol, max_iter)
        if not finite or smo_gap <= gap:
            x[:] = smo_x
            steps, gap, have_H = steps + smo_steps, smo_gap, False      # SMO's face is not the factorised one
    return gap, steps, face, H, have_H


@njit(cache=True)
def simplex_point(x0: np.ndarray) -> np.ndarray:
    """The simplex point (length K + 1, slack last) of plane weights ``x0`` (length K): clipped at 0,
    scaled to sum at most 1, the slack taking the rest."""
    K = x0.shape[0]
    x = np.zeros(K + 1)
    x[:K] = np.maximum(x0, 0.0)
    total = x[:K].sum()
    if total > 1.0:
        x[:K] /= total
    x[K] = max(0.0, 1.0 - x[:K].sum())
    return x


def feasible_start(x0: np.ndarray | None, K: int) -> np.ndarray:
    """The simplex point (length K + 1, slack last) a warm start ``x0`` (length K, or None) gives."""
    if x0 is None:
        x = np.zeros(K + 1)
        x[K] = 1.0
        return x
    x0 = np.ascontiguousarray(x0, dtype=np.float64)
    if x0.shape != (K,):
        raise ValueError(f"x0 has shape {x0.shape}, expected ({K},): one weight per plane.")
    return simplex_point(x0)


def solve_simplex_qp(Q: np.ndarray, b: np.ndarray, x0: np.ndarray | None = None, tol: float = 1e-10,
                     max_iter: int = 200_000) -> tuple[np.ndarray, float, int]:
    """Minimise 1/2 x'Qx - b'x over {x >= 0, sum(x) <= 1}.

    Returns (x, fw_gap, n_steps). ``x0`` (length K, feasible) warm-starts; ``tol`` is absolute on the
    Frank-Wolfe gap, which bounds f(x) - f* (:func:`simplex_qp`).
    """
    Q = np.ascontiguousarray(Q, dtype=np.float64)
    b = np.ascontiguousarray(b, dtype=np.float64)
    K = b.shape[0]
    x = feasible_start(x0, K)
    gap, steps = simplex_qp(Q, b, x, float(tol), int(max_iter))
    return x[:K], gap, steps


# The factorised face a single-group master leaves for the next (see active_set_from): its planes, numbered
# as the working set's (the slack -1, as its index moves when planes come), the inverse of its KKT
# matrix, and whether that inverse is valid.
Face = tuple[np.ndarray, np.ndarray, bool]
NO_FACE: Face = (np.zeros(0, dtype=np.int64), np.zeros((0, 0)), False)


def solve_simplex_qp_from(Q: np.ndarray, b: np.ndarray, x0: np.ndarray | None, tol: float,
                          face: Face) -> tuple[np.ndarray, float, Face]:
    """:func:`solve_simplex_qp` from the factorised ``face`` of the previous master of the same planes
    (as the compiled loop carries it); returns (x, fw_gap, the face for the next)."""
    Q = np.ascontiguousarray(Q, dtype=np.float64)
    b = np.ascontiguousarray(b, dtype=np.float64)
    x = feasible_start(x0, b.shape[0])
    gap, _, planes, H, have_H = simplex_qp_from(Q, b, x, float(tol), 200_000, *face)
    return x[:-1], gap, (planes, H, have_H)


@njit(cache=True)
def face_without(planes: np.ndarray, H: np.ndarray, have_H: bool, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray,
                                                                                             bool]:
    """The face (``planes`` in the working set's numbering, the slack -1; its inverse ``H``) after the
    planes with ``keep`` False left the working set, the others renumbered."""
    K = keep.shape[0]
    kept = np.ones(K + 1, dtype=np.bool_)            # the slack, coordinate K, always stays
    kept[:K] = keep
    H, have_H, coords = _face_without(H, have_H, np.where(planes < 0, K, planes), kept)
    renumbered = np.empty(K + 1, dtype=np.int64)
    renumbered[K] = -1
    count = 0
    for k in range(K):
        renumbered[k] = count
        count += keep[k]
    return renumbered[coords], H, have_H
