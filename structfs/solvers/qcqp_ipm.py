"""A dense primal-dual interior-point method for the multi-group master QCQP.

The master problem of ``qcqp.py`` in its scaled form,

    min_{x, theta}  theta - Delta'x   s.t.  x >= 0,  1'x <= 1,  (C/2) x'G_t x <= theta  (t = 1..T),

has K + 1 variables (K planes, independent of n, m and B) and K + 1 + T inequalities. A general
conic solver (ECOS) sees it as a sparse cone program whose size grows with the columns of the groups;
here each Newton step is one dense (K+1) x (K+1) Cholesky solve on

    H = sum_t lam_t C G_t + diag(lam_x / s_x) + (lam_s / s_s) 11' + sum_t (lam_t / s_t) g_t g_t',

with g_t = (C G_t x, -1), so an iteration costs O(T K^2 + K^3) whatever the group sizes are.

Every inequality f_i(z) <= 0 gets a slack s_i > 0 (f_i + s_i = 0 only at convergence, which lets
the quadratic constraints be violated on the way) and a multiplier lam_i > 0; the steps are
Mehrotra's predictor-corrector (one factorisation, two solves), a common step length for primal and
dual at 0.99 of the way to the boundary. It stops when the complementarity gap s'lam and the primal
and dual residuals are small; the multipliers of the quadratic constraints are the group weights mu
(stationarity in theta makes them sum to one).

The caller checks the answer independently (the master value is recomputed from x, and a failure
falls back to ECOS), so this solver only has to be fast and usually right. Where round-off makes the
Newton matrix indefinite its diagonal is shifted and the factorisation retried (:func:`_cholesky`);
where no shift repairs it the answer is NaN, which the caller treats as a failure.
"""
from __future__ import annotations

import numpy as np

from .._jit import njit


@njit(cache=True)
def _max_step(v: np.ndarray, dv: np.ndarray) -> float:
    step = 1.0
    for i in range(v.shape[0]):
        if dv[i] < 0.0:
            step = min(step, -v[i] / dv[i])
    return step


@njit(cache=True)
def _factor(H: np.ndarray, L: np.ndarray) -> bool:
    """The Cholesky factor of H into the lower triangle of L; False where a pivot is not positive.
    Four rows at a time below the pivot: their sums are independent, so the processor overlaps them
    instead of waiting on one sum's chain of subtractions (each entry still sums in increasing k, as
    one row at a time). Written out rather than ``np.linalg.cholesky``, which signals failure by
    raising: an exception in compiled code leaks the arrays it had allocated (numba's runtime counted
    four a failure)."""
    n = H.shape[0]
    for j in range(n):
        v = H[j, j]
        for k in range(j):
            v -= L[j, k] * L[j, k]
        if not v > 0.0:                # also NaN
            return False
        d = np.sqrt(v)
        L[j, j] = d
        i = j + 1
        while i + 3 < n:
            v0, v1, v2, v3 = H[i, j], H[i + 1, j], H[i + 2, j], H[i + 3, j]
            for k in range(j):
                l_jk = L[j, k]
                v0 -= L[i, k] * l_jk
                v1 -= L[i + 1, k] * l_jk
                v2 -= L[i + 2, k] * l_jk
                v3 -= L[i + 3, k] * l_jk
            L[i, j], L[i + 1, j], L[i + 2, j], L[i + 3, j] = v0 / d, v1 / d, v2 / d, v3 / d
            i += 4
        while i < n:
            v = H[i, j]
            for k in range(j):
                v -= L[i, k] * L[j, k]
            L[i, j] = v / d
            i += 1
    return True


@njit(cache=True)
def _cholesky(H: np.ndarray, L: np.ndarray) -> bool:
    """Factor H into the lower triangle of L (:func:`_factor`); where round-off has made H indefinite
    (near the optimum the barrier terms span 1e20), its diagonal is shifted by growing multiples of its
    largest entry, 1e-12 to 1e-2: the step is then damped but still drives the residuals down, which
    decide convergence. Without the shift one master in three failed on the MIL searches' later groups
    and went to ECOS, at 20x the cost. False when no shift repairs H."""
    n = H.shape[0]
    top = 0.0
    for i in range(n):
        top = max(top, abs(H[i, i]))
    shift = 1e-12 * top
    for _ in range(6):
        if _factor(H, L):
            return True
        for i in range(n):
            H[i, i] += shift
        shift *= 100.0
    return False


@njit(cache=True)
def _cholesky_solve(L: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """out = (L L')^{-1} b by forward and back substitution."""
    n = b.shape[0]
    for i in range(n):
        v = b[i]
        for j in range(i):
            v -= L[i, j] * out[j]
        out[i] = v / L[i, i]
    for i in range(n - 1, -1, -1):
        v = out[i]
        for j in range(i + 1, n):
            v -= L[j, i] * out[j]
        out[i] = v / L[i, i]


@njit(cache=True)
def plane_weights(x: np.ndarray) -> np.ndarray:
    """An interior-point answer ``x`` as plane weights on the capped simplex: clipped at 0, planes at
    1e-12 of the largest weight set to 0 (interior points never reach the bound: these are the
    inactive ones, and zeroing them keeps the point feasible and lets the caller skip them), and
    scaled to sum 1 if above."""
    abar = np.maximum(x, 0.0)
    if abar.shape[0]:
        abar[abar < 1e-12 * abar.max()] = 0.0
    if abar.sum() > 1.0:
        abar /= abar.sum()
    return abar


# Over 80 lines: one interior-point iteration in buffers allocated once, with loops rather than calls;
# the residuals, the Newton matrix, the predictor-corrector direction and the step are its marked parts.
@njit(cache=True)
def ipm_master(Gs: np.ndarray, delta: np.ndarray, C: float, gap_tol: float, max_iter: int) -> tuple[np.ndarray,
               np.ndarray, int, bool]:
    """Solve the scaled master; returns (x, mu, iterations, converged), x NaN where the Newton matrix
    could not be factored.

    ``gap_tol`` bounds the complementarity gap s'lam, i.e. the distance of the objective to the
    optimum once the residuals vanish (scaled units: the master value divided by C).

    Most masters are small (K of 20-60 planes, T of 2-30 groups) and solved thousands of times per
    search, so an iteration works in buffers allocated once and builds H in one pass over Gs with
    loops rather than BLAS calls and temporaries: 40% less time per master on the MIL searches'."""
    T, K = Gs.shape[0], Gs.shape[1]
    m = K + 1 + T                     # inequalities: -x_k <= 0, 1'x - 1 <= 0, q_t - theta <= 0
    x = np.full(K, 0.5 / K)
    Gx = np.empty((T, K))             # G_t x
    q = np.empty(T)
    for t in range(T):
        Gx[t] = Gs[t] @ x
        q[t] = 0.5 * C * (x @ Gx[t])
    theta = q.max() + max(1.0, abs(q.max()))
    s = np.empty(m)                   # slacks, ordered x (K), sum (1), quadratic (T)
    s[:K] = x
    s[K] = 1.0 - x.sum()
    s[K + 1:] = theta - q
    d_scale = 1.0 + np.abs(delta).max()
    # The simplex constraints' multipliers start at the scale of the losses Delta (percent), where
    # stationarity puts them, rather than at 1: 12.6 -> 10.7 Newton steps a master on musk1's.
    lam = np.full(m, d_scale)
    lam[K + 1:] = 1.0 / T
    G_rows = Gs.reshape(T * K, K)
    H = np.empty((K + 1, K + 1))
    L = np.zeros((K + 1, K + 1))
    rhs, dz = np.empty(K + 1), np.empty(K + 1)
    r_x = np.empty(K)
    r_p, r_c, u, a_dz = np.empty(m), np.empty(m), np.empty(m), np.empty(m)
    ds, dlam, ds_aff, dlam_aff = np.empty(m), np.empty(m), np.empty(m), np.empty(m)
    s_aff, lam_aff = np.empty(m), np.empty(m)
    lam_C, w_q = np.empty(T), np.empty(T)
    GdX = np.empty((T, K))
    converged = False
    r_d_prev = np.inf
    # the iterate within the gap tolerance with the smallest residuals (see the breakdown rule below)
    best_x, best_mu, best_merit = np.empty(K), np.empty(T), np.inf
    it = 0
    while it < max_iter:
        # residuals: dual (stationarity) and primal (f + s = 0)
        gx_max = 0.0
        for i in range(K):
            v = -delta[i] - lam[i] + lam[K]
            for t in range(T):
                v += lam[K + 1 + t] * C * Gx[t, i]
                gx_max = max(gx_max, abs(Gx[t, i]))
            r_x[i] = v
        r_theta = 1.0 - lam[K + 1:].sum()
        for i in range(K):
            r_p[i] = -x[i] + s[i]
        r_p[K] = x.sum() - 1.0 + s[K]
        for t in range(T):
            r_p[K + 1 + t] = q[t] - theta + s[K + 1 + t]
        gap = s @ lam
        r_d = max(np.abs(r_x).max(), abs(r_theta))
        # round-off in r_x is relative to its largest terms, C G_t x, not to the (cancelling) sum
        r_scale = d_scale + C * gx_max
        p_rel = np.abs(r_p).max() / (1.0 + abs(theta))
        p_ok = p_rel <= 1e-9
        if gap <= gap_tol and p_ok and r_d <= 1e-9 * r_scale:
            converged = True
            break
        # Past the gap tolerance the residuals only move by round-off: accept a small one once it
        # stops improving rather than iterate on noise.
        if gap <= gap_tol and p_ok and r_d <= 1e-6 * r_scale and r_d >= 0.5 * r_d_prev:
            converged = True
            break
        r_d_prev = r_d
        # Breakdown: where the Gram entries span orders of magnitude (MIL searches' later groups: 1e-3 to
        # 1e4), the dual residual can jump from 1e-10 to 1e-6 of its scale in the step that brings the
        # primal one under 1e-9, and neither recovers: the iterations ran out and the master went to
        # ECOS (19 of 228 masters, 5% of an elephant search). Once the residuals grow a hundredfold
        # past the best iterate within the gap tolerance, that iterate is the answer, if its residuals
        # are within what the stall rule above accepts (1e-6); so it is at the end of the iterations.
        if gap <= gap_tol:
            merit = max(r_d / r_scale, p_rel)
            if merit < best_merit:
                best_merit = merit
                best_x[:] = x
                best_mu[:] = lam[K + 1:]
            elif best_merit <= 1e-6 and merit > 100.0 * best_merit:
                break
        # H = sum_t C lam_t G_t + sum_t (lam_t / s_t) a_t a_t' + (lam_s / s_s) 11' + diag(lam_x / s_x) on x,
        # with a_t = C G_t x and the theta row -sum_t (lam_t / s_t) a_t; lower triangle, then mirrored
        for t in range(T):
            lam_C[t] = C * lam[K + 1 + t]
            w_q[t] = lam[K + 1 + t] / s[K + 1 + t]
        w_s = lam[K] / s[K]
        for i in range(K):
            for j in range(i + 1):
                H[i, j] = w_s
        for t in range(T):
            c_t, w_t = lam_C[t], w_q[t] * C * C
            for i in range(K):
                a_i = w_t * Gx[t, i]
                for j in range(i + 1):
                    H[i, j] += c_t * Gs[t, i, j] + a_i * Gx[t, j]
        # Round-off guard against the Gram part only: the barrier terms lam/s reach 1e20 on inactive
        # planes and a shift relative to them would swamp the small entries of the solution.
        reg = 0.0
        for i in range(K):
            gram_ii = 0.0
            for t in range(T):
                gram_ii += lam_C[t] * Gs[t, i, i]
            reg = max(reg, gram_ii)
            for j in range(i):
                H[j, i] = H[i, j]
        reg = 1e-14 * reg + 1e-300
        for i in range(K):
            col = 0.0
            for t in range(T):
                col -= w_q[t] * C * Gx[t, i]
            H[i, K] = col
            H[K, i] = col
            H[i, i] += lam[i] / s[i]
        H[K, K] = w_q.sum()
        for i in range(K + 1):
            H[i, i] += reg
        if not _cholesky(H, L):              # no shift repaired H: the caller sees a non-finite answer
            x[:] = np.nan
            converged = False
            break
        mu_now = gap / m
        ds_aff[:] = 0.0
        dlam_aff[:] = 0.0
        sigma_mu = 0.0
        for phase in range(2):
            # r_c = lam s (+ ds_aff dlam_aff - sigma mu in the corrector); u_i = (lam_i r_p,i - r_c,i) / s_i
            for i in range(m):
                r_c[i] = lam[i] * s[i] + ds_aff[i] * dlam_aff[i] - sigma_mu
                u[i] = (lam[i] * r_p[i] - r_c[i]) / s[i]
            # rhs = -r_dual - sum_i a_i u_i with a_i the gradient of constraint i
            for i in range(K):
                rhs[i] = -r_x[i] + u[i] - u[K]
            rhs[K] = -r_theta
            for t in range(T):
                ut = u[K + 1 + t]
                for i in range(K):
                    rhs[i] -= ut * C * Gx[t, i]
                rhs[K] += ut
            _cholesky_solve(L, rhs, dz)
            dtheta = dz[K]
            # ds = -r_p - a'dz ; dlam = (lam (r_p + a'dz) - r_c) / s = u + lam a'dz / s
            dx_sum = 0.0
            for i in range(K):
                a_dz[i] = -dz[i]
                dx_sum += dz[i]
            a_dz[K] = dx_sum
            for t in range(T):
                v = 0.0
                for i in range(K):
                    v += Gx[t, i] * dz[i]
                a_dz[K + 1 + t] = C * v - dtheta
            for i in range(m):
                ds[i] = -r_p[i] - a_dz[i]
                dlam[i] = u[i] + lam[i] * a_dz[i] / s[i]
            if phase == 0:
                step = min(_max_step(s, ds), _max_step(lam, dlam))
                for i in range(m):
                    s_aff[i] = s[i] + step * ds[i]
                    lam_aff[i] = lam[i] + step * dlam[i]
                mu_aff = (s_aff @ lam_aff) / m
                sigma_mu = (mu_aff / mu_now) ** 3 * mu_now
                ds_aff[:] = ds
                dlam_aff[:] = dlam
        step = 0.99 * min(_max_step(s, ds), _max_step(lam, dlam))
        if step < 1e-12:
            break
        dx = dz[:K]
        GdX[:, :] = np.dot(G_rows, dx).reshape(T, K)
        for t in range(T):
            q[t] += C * (step * (x @ GdX[t]) + 0.5 * step * step * (dx @ GdX[t]))
            for i in range(K):
                Gx[t, i] += step * GdX[t, i]
        for i in range(K):
            x[i] += step * dx[i]
        theta += step * dtheta
        for i in range(m):
            s[i] += step * ds[i]
            lam[i] += step * dlam[i]
        it += 1
    if not converged and best_merit <= 1e-6:
        return best_x, best_mu, it, True
    return x, lam[K + 1:].copy(), it, converged
