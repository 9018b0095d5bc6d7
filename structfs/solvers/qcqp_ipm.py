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
Newton matrix indefinite its diagonal is shifted and the factorisation retried (:func:`_cholesky`).
"""
import numpy as np

from .._jit import njit


@njit(cache=True)
def _max_step(v, dv):
    step = 1.0
    for i in range(v.shape[0]):
        if dv[i] < 0.0:
            step = min(step, -v[i] / dv[i])
    return step


@njit(cache=True)
def _cholesky(H):
    """The Cholesky factor of H; where round-off has made H indefinite (near the optimum the barrier
    terms span 1e20), its diagonal is shifted by growing multiples of its largest entry, 1e-12 to
    1e-2: the step is then damped but still drives the residuals down, which decide convergence.
    Without the shift one master in three failed on the MIL searches' later groups and went to ECOS,
    at 20x the cost."""
    n = H.shape[0]
    top = 0.0
    for i in range(n):
        top = max(top, abs(H[i, i]))
    L = np.zeros_like(H)
    shift = 1e-12 * top
    for _ in range(6):
        factored = True
        try:
            L = np.linalg.cholesky(H)
        except Exception:      # noqa: BLE001 - not positive definite: shift and retry
            factored = False
        if factored:
            return L
        for i in range(n):
            H[i, i] += shift
        shift *= 100.0
    raise np.linalg.LinAlgError("the interior-point Newton matrix is not positive definite")


@njit(cache=True)
def _cholesky_solve(L, b, out):
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
def ipm_master(Gs, delta, C, gap_tol, max_iter):
    """Solve the scaled master; returns (x, mu, iterations, converged).

    ``gap_tol`` bounds the complementarity gap s'lam, i.e. the distance of the objective to the
    optimum once the residuals vanish (scaled units: the master value divided by C)."""
    T, K = Gs.shape[0], Gs.shape[1]
    m = K + 1 + T                     # inequalities: -x_k <= 0, 1'x - 1 <= 0, q_t - theta <= 0
    x = np.full(K, 0.5 / K)
    Gx = np.empty((T, K))
    q = np.empty(T)
    for t in range(T):
        Gx[t] = Gs[t] @ x
        q[t] = 0.5 * C * (x @ Gx[t])
    theta = q.max() + max(1.0, abs(q.max()))
    s = np.empty(m)                   # slacks, ordered x (K), sum (1), quadratic (T)
    s[:K] = x
    s[K] = 1.0 - x.sum()
    s[K + 1:] = theta - q
    lam = np.ones(m)
    lam[K + 1:] = 1.0 / T
    G_flat = Gs.reshape(T, K * K)
    G_rows = Gs.reshape(T * K, K)
    H = np.empty((K + 1, K + 1))
    rhs = np.empty(K + 1)
    GdX = np.empty((T, K))
    d_scale = 1.0 + np.abs(delta).max()
    converged = False
    r_d_prev = np.inf
    it = 0
    while it < max_iter:
        # residuals: dual (stationarity) and primal (f + s = 0)
        r_x = -delta - lam[:K] + lam[K]
        for t in range(T):
            r_x += lam[K + 1 + t] * C * Gx[t]
        r_theta = 1.0 - lam[K + 1:].sum()
        r_p = np.empty(m)
        r_p[:K] = -x + s[:K]
        r_p[K] = x.sum() - 1.0 + s[K]
        r_p[K + 1:] = q - theta + s[K + 1:]
        gap = s @ lam
        r_d = max(np.abs(r_x).max(), abs(r_theta))
        # round-off in r_x is relative to its largest terms, C G_t x, not to the (cancelling) sum
        r_scale = d_scale + C * np.abs(Gx).max()
        p_ok = np.abs(r_p).max() <= 1e-9 * (1.0 + abs(theta))
        if gap <= gap_tol and p_ok and r_d <= 1e-9 * r_scale:
            converged = True
            break
        # Past the gap tolerance the residuals only move by round-off: accept a small one once it
        # stops improving rather than iterate on noise.
        if gap <= gap_tol and p_ok and r_d <= 1e-6 * r_scale and r_d >= 0.5 * r_d_prev:
            converged = True
            break
        r_d_prev = r_d
        # H (the same for predictor and corrector). The Gram part is one pass over Gs (a gemv on
        # the T x K^2 array), the rank-one part a T-inner-dimension gemm: Gs is the only large input.
        H[:K, :K] = np.dot(C * lam[K + 1:], G_flat).reshape(K, K)
        # Round-off guard against the Gram part only: the barrier terms lam/s reach 1e20 on inactive
        # planes and a shift relative to them would swamp the small entries of the solution.
        reg = 0.0
        for i in range(K):
            reg = max(reg, H[i, i])
        reg = 1e-14 * reg + 1e-300
        w_q = lam[K + 1:] / s[K + 1:]
        A = C * Gx                                   # T x K: the x-part of the quadratic constraints' gradients
        WA = A * w_q.reshape(T, 1)
        H[:K, :K] += np.dot(A.T, WA)
        col = -WA.sum(axis=0)
        H[:K, K] = col
        H[K, :K] = col
        H[K, K] = w_q.sum()
        w_s = lam[K] / s[K]
        H[:K, :K] += w_s
        for i in range(K):
            H[i, i] += lam[i] / s[i]
        for i in range(K + 1):
            H[i, i] += reg
        L = _cholesky(H)
        mu_now = gap / m
        dz = np.empty(K + 1)
        ds = np.empty(m)
        dlam = np.empty(m)
        ds_aff = np.zeros(m)
        dlam_aff = np.zeros(m)
        sigma_mu = 0.0
        for phase in range(2):
            # r_c = lam s (+ ds_aff dlam_aff - sigma mu in the corrector); u_i = (lam_i r_p,i - r_c,i) / s_i
            r_c = lam * s + ds_aff * dlam_aff - sigma_mu
            u = (lam * r_p - r_c) / s
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
            dx = dz[:K]
            dtheta = dz[K]
            # ds = -r_p - a'dz ; dlam = (lam (r_p + a'dz) - r_c) / s = u + lam a'dz / s
            a_dz = np.empty(m)
            a_dz[:K] = -dx
            a_dz[K] = dx.sum()
            for t in range(T):
                a_dz[K + 1 + t] = C * (Gx[t] @ dx) - dtheta
            ds[:] = -r_p - a_dz
            dlam[:] = u + lam * a_dz / s
            if phase == 0:
                step = min(_max_step(s, ds), _max_step(lam, dlam))
                mu_aff = ((s + step * ds) @ (lam + step * dlam)) / m
                sigma_mu = (mu_aff / mu_now) ** 3 * mu_now
                ds_aff[:] = ds
                dlam_aff[:] = dlam
        step = 0.99 * min(_max_step(s, ds), _max_step(lam, dlam))
        if step < 1e-12:
            break
        GdX[:, :] = np.dot(G_rows, dx).reshape(T, K)
        for t in range(T):
            q[t] += C * (step * (x @ GdX[t]) + 0.5 * step * step * (dx @ GdX[t]))
            Gx[t] += step * GdX[t]
        x = x + step * dx
        theta += step * dtheta
        s = s + step * ds
        lam = lam + step * dlam
        it += 1
    return x, lam[K + 1:].copy(), it, converged
