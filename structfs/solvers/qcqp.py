"""The restricted master problem of the group (MKL) cutting-plane method.

With K planes (Psi_k, Delta_k) and T feature groups, G_t the K x K Gram matrix of the planes restricted
to group t (plus the bias coordinate, which every group shares), the master problem is the QCQP

    max_{alpha >= 0, sum(alpha) <= C, theta}  -theta + Delta' alpha   s.t.  1/2 alpha' G_t alpha <= theta  (all t)

Its multipliers mu_t >= 0 of the quadratic constraints sum to one and weight the groups:
d = sum_t mu_t 1[group t], w_j = d_j (sum_k alpha_k Psi_kj).

Numerics: with unit-norm TF-IDF rows the Gram entries are O(1e-4..1e-1) while useful C
runs to 1e5, which makes conic solvers report "inaccurate" on the problem as written. Substituting
alpha = C * abar (abar in the capped unit simplex) and dividing the objective by C fixes that:

    min_{abar, theta'}  theta' - Delta' abar   s.t.  abar >= 0, sum(abar) <= 1,  (C/2) ||F_t' abar||^2 <= theta'

with G_t = F_t F_t'. Each quadratic constraint is one second-order cone
||(2 sqrt(C) F_t' abar, 2 theta' - 1)|| <= 2 theta' + 1.

``solve_master`` builds that cone program for ECOS directly (no modelling layer on the hot path);
``solve_master_cvxpy`` states the same problem in cvxpy, as the readable reference the tests compare
against and as the fallback when ECOS does not report an optimal solution.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from .. import _defaults
from .._jit import njit
from .qcqp_ipm import ipm_master, plane_weights
from .simplex_qp import Face, solve_simplex_qp, solve_simplex_qp_from


@dataclass
class MasterSolution:
    abar: np.ndarray      # alpha / C, in the capped unit simplex
    mu: np.ndarray        # group weights, mu >= 0, sum(mu) = 1
    value: float          # optimal value of the master (original units: C * (Delta'abar - theta'))
    solver: str
    face: Face | None = None     # one group: the factorised face for the next master (simplex_qp)


def gram_factor(G: np.ndarray, tol: float = 1e-12) -> np.ndarray:
    """F with G ~= F F' (eigen-decomposition, tiny eigenvalues dropped)."""
    lam, V = np.linalg.eigh((G + G.T) / 2.0)
    keep = lam > tol * max(lam.max(initial=0.0), 1e-300)
    return V[:, keep] * np.sqrt(lam[keep])


def master_value(abar: np.ndarray, grams: Any, delta: np.ndarray, C: float) -> float:
    """C * (Delta'abar - max_t (C/2) abar'G_t abar): the master objective at any feasible abar."""
    quad = max(float(abar @ G @ abar) for G in grams)
    return C * (float(delta @ abar) - 0.5 * C * quad)


def _ecos_problem(factors: list[np.ndarray], delta: np.ndarray, C: float) -> tuple[np.ndarray, Any, np.ndarray,
                  dict[str, Any]]:
    K = delta.shape[0]
    n_var = K + 1                        # abar (K), theta'
    c = np.concatenate([-delta, [1.0]])
    rows: list[np.ndarray] = []
    cols: list[np.ndarray] = []
    vals: list[np.ndarray] = []
    h: list[Any] = []
    # linear cone: -abar <= 0, sum(abar) <= 1
    rows.append(np.arange(K)); cols.append(np.arange(K)); vals.append(-np.ones(K))
    rows.append(np.full(K, K)); cols.append(np.arange(K)); vals.append(np.ones(K))
    h.append(np.zeros(K)); h.append([1.0])
    r0 = K + 1
    cone_dims = []
    scale = 2.0 * np.sqrt(C)
    for F in factors:
        r = F.shape[1]
        # s0 = 2 theta' + 1, s1 = 2 theta' - 1, s_2.. = 2 sqrt(C) F' abar  (s = h - G z)
        rows.append(np.array([r0, r0 + 1])); cols.append(np.array([K, K])); vals.append(np.array([-2.0, -2.0]))
        h.append([1.0, -1.0])
        if r:
            rr, kk = np.meshgrid(np.arange(r), np.arange(K), indexing="ij")
            rows.append((r0 + 2 + rr).ravel()); cols.append(kk.ravel()); vals.append((-scale * F.T).ravel())
        h.append(np.zeros(r))
        cone_dims.append(r + 2)
        r0 += r + 2
    G = sp.csc_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(r0, n_var))
    return c, G, np.concatenate([np.asarray(x, dtype=float) for x in h]), {"l": K + 1, "q": cone_dims}


def solve_master_ecos(factors: list[np.ndarray], delta: np.ndarray, C: float, feastol: float = 1e-9,
                      abstol: float = 1e-9, reltol: float = 1e-9) -> tuple[MasterSolution | None, Any]:
    """ECOS on the cone program above. Returns (MasterSolution or None, ECOS exit flag)."""
    import ecos

    K = delta.shape[0]
    c, G, h, dims = _ecos_problem(factors, delta, C)
    sol = ecos.solve(c, G, h, dims, verbose=False, feastol=feastol, abstol=abstol, reltol=reltol,
                     max_iters=200)
    flag = sol["info"]["exitFlag"]
    if flag not in (0, 10) or sol["x"] is None:   # 10: optimal to reduced accuracy
        return None, flag
    abar = np.clip(sol["x"][:K], 0.0, None)
    if abar.sum() > 1.0:
        abar /= abar.sum()
    z = sol["z"]
    mu = []
    r0 = K + 1
    for q in dims["q"]:
        mu.append(2.0 * (z[r0] + z[r0 + 1]))   # stationarity in theta': sum_t 2 (z_t0 + z_t1) = 1
        r0 += q
    return MasterSolution(abar, normalise_weights(np.array(mu)), np.nan, "ecos"), flag


def solve_master_ecos_shared(F_union: np.ndarray, members: list[np.ndarray], delta: np.ndarray, C: float,
                             feastol: float = 1e-8, abstol: float = 1e-8,
                             reltol: float = 1e-8) -> tuple[MasterSolution | None, Any]:
    """ECOS on the same problem with shared variables u = 2 sqrt(C) F_union' abar.

    ``F_union`` (K x p) holds the planes' values on the union of the groups' columns (the bias
    column included) and ``members[t]`` the positions of group t's columns in it. Each group's cone
    then only selects its entries of u: K p + sum_t |t| nonzeros instead of K sum_t |t|, a large
    saving when consecutive groups overlap, as generated groups do. Same optimum as
    :func:`solve_master_ecos`; returns (MasterSolution or None, ECOS exit flag).
    """
    import ecos

    K, p = F_union.shape
    n_var = K + 1 + p                    # abar (K), theta', u (p)
    c = np.concatenate([-delta, [1.0], np.zeros(p)])
    # equality: u - 2 sqrt(C) F' abar = 0
    A = sp.hstack([sp.csc_matrix(-2.0 * np.sqrt(C) * F_union.T), sp.csc_matrix((p, 1)), sp.identity(p, format="csc")],
                  format="csc")
    b = np.zeros(p)
    rows: list[np.ndarray] = [np.arange(K), np.full(K, K)]
    cols: list[np.ndarray] = [np.arange(K), np.arange(K)]
    vals: list[np.ndarray] = [-np.ones(K), np.ones(K)]
    h: list[Any] = [np.zeros(K), [1.0]]
    r0 = K + 1
    cone_dims = []
    for idx in members:
        r = idx.shape[0]
        rows.append(np.array([r0, r0 + 1])); cols.append(np.array([K, K])); vals.append(np.array([-2.0, -2.0]))
        h.append([1.0, -1.0])
        rows.append(r0 + 2 + np.arange(r)); cols.append(K + 1 + idx); vals.append(-np.ones(r))
        h.append(np.zeros(r))
        cone_dims.append(r + 2)
        r0 += r + 2
    G = sp.csc_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(r0, n_var))
    h_vector = np.concatenate([np.asarray(x, dtype=float) for x in h])
    dims = {"l": K + 1, "q": cone_dims}
    sol = ecos.solve(c, G, h_vector, dims, A, b, verbose=False, feastol=feastol, abstol=abstol, reltol=reltol,
                     max_iters=200)
    flag = sol["info"]["exitFlag"]
    if flag not in (0, 10) or sol["x"] is None:
        return None, flag
    abar = np.clip(sol["x"][:K], 0.0, None)
    if abar.sum() > 1.0:
        abar /= abar.sum()
    z = sol["z"]
    mu, r0 = [], K + 1
    for q in cone_dims:
        mu.append(2.0 * (z[r0] + z[r0 + 1]))
        r0 += q
    return MasterSolution(abar, normalise_weights(np.array(mu)), np.nan, "ecos"), flag


def solve_master_cvxpy(factors: list[np.ndarray], delta: np.ndarray, C: float, solver: str | None = None,
                       **solver_opts: Any) -> tuple[MasterSolution | None, str]:
    """Reference formulation of the same master problem in cvxpy (default solver: Clarabel)."""
    import cvxpy as cp

    K = delta.shape[0]
    abar = cp.Variable(K, nonneg=True)
    theta = cp.Variable()
    quad = [0.5 * C * cp.sum_squares(F.T @ abar) <= theta for F in factors]
    prob = cp.Problem(cp.Minimize(theta - delta @ abar), [cp.sum(abar) <= 1] + quad)
    try:
        with warnings.catch_warnings():    # "inaccurate": the status below says so, and the caller decides
            warnings.simplefilter("ignore", UserWarning)
            prob.solve(solver=solver or cp.CLARABEL, **solver_opts)
    except cp.error.SolverError as exc:    # the caller's chain goes on to the next solver, then warns
        return None, f"{solver or 'CLARABEL'}: {exc}"
    if prob.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) or abar.value is None:
        return None, prob.status
    a = np.clip(abar.value, 0.0, None)
    if a.sum() > 1.0:
        a /= a.sum()
    mu = normalise_weights(np.array([float(np.sum(q.dual_value)) for q in quad]))
    return MasterSolution(a, mu, np.nan, f"cvxpy-{prob.solver_stats.solver_name}"), prob.status


def normalise_weights(mu: Any) -> np.ndarray:
    """Group weights on the simplex: negatives and NaN (solver noise) to 0, then sum 1 (uniform if all 0)."""
    return simplex_weights(np.ascontiguousarray(mu, dtype=np.float64))


@njit(cache=True)
def simplex_weights(mu: np.ndarray) -> np.ndarray:
    """:func:`normalise_weights` compiled, for the compiled loop and for Python."""
    out = np.empty(mu.shape[0])
    for i in range(mu.shape[0]):
        v = mu[i]
        out[i] = 0.0 if not v > 0 else min(v, 1.7976931348623157e308)     # NaN compares false: 0
    total = out.sum()
    if total > 0 and total < np.inf:
        return out / total
    if total > 0:                       # overflow: the largest weights share the simplex
        out = (out == out.max()).astype(np.float64)
        return out / out.sum()
    return np.full(mu.shape[0], 1.0 / mu.shape[0])


def solve_master_ipm(grams: Any, delta: np.ndarray, C: float, gap_tol: float) -> tuple[MasterSolution | None, str]:
    """The dense interior-point method of ``qcqp_ipm.py``; returns (MasterSolution or None, reason)."""
    Gs = np.ascontiguousarray(grams if isinstance(grams, np.ndarray) else np.stack(grams), dtype=np.float64)
    x, lam_q, iterations, converged = ipm_master(Gs, np.ascontiguousarray(delta, dtype=np.float64),
                                                 float(C), float(gap_tol), 100)
    if not np.isfinite(x).all():           # Cholesky failed: the Newton matrix lost definiteness
        return None, "cholesky"
    if not converged:
        return None, f"not converged in {iterations} iterations"
    return MasterSolution(plane_weights(x), normalise_weights(lam_q), np.nan, "ipm"), "optimal"


# Over 8 parameters: the problem (grams, delta, C) and the optional hints of its solvers, each a keyword
# with a default (a warm start, factors, a tolerance, the shared form, the solver, the active face).
def solve_master(grams: Any, delta: np.ndarray, C: float, abar0: np.ndarray | None = None,
                 factors: list[np.ndarray] | None = None, qp_tol: float | None = None,
                 shared: tuple[np.ndarray, list[np.ndarray]] | None = None,
                 master_solver: str = _defaults.MASTER_SOLVER, face: Face | None = None) -> MasterSolution:
    """Solve the master problem for Gram matrices ``grams`` (one per group).

    One group is a QP over the capped simplex, solved exactly by the active-set method with a warm
    start; several groups go to the dense interior-point method (``master_solver="ipm"``, the default) or
    straight to ECOS (``master_solver="ecos"``); ECOS is also the fallback when the interior-point method
    does not converge, then cvxpy with Clarabel and SCS. ``factors`` (F_t with G_t = F_t F_t')
    may be passed when the caller has them cheaply; ``shared`` = (F_union, members) selects the
    shared-variable cone program (see :func:`solve_master_ecos_shared`). ``qp_tol`` is the absolute accuracy wanted of
    the master value (original units), for the single-group QP and the interior-point method. A failed solve is never
    returned silently: when
    every solver fails a ConvergenceWarning is raised and the best feasible point found is used.
    ``face``: one group's factorised face of the previous master of the same planes (the result
    carries the next), None to factor afresh.
    """
    delta = np.asarray(delta, dtype=np.float64)
    if len(grams) == 1:
        # The QP is min (C/2) abar'G abar - Delta'abar = -(master value) / C.
        tol = 1e-12 * max(1.0, float(np.abs(delta).max())) if qp_tol is None else qp_tol / C
        if face is None:
            abar, _, _ = solve_simplex_qp(C * grams[0], delta, abar0, tol=tol)
        else:
            abar, _, face = solve_simplex_qp_from(C * grams[0], delta, abar0, tol, face)
        return MasterSolution(abar, np.ones(1), master_value(abar, grams, delta, C), "smo", face)
    result, flag, status = None, None, None
    if master_solver == "ipm":
        gap_tol = qp_tol / C if qp_tol is not None else 1e-10 * (1.0 + float(np.abs(delta).max()))
        result, _ = solve_master_ipm(grams, delta, C, gap_tol)
    if result is None and shared is not None:
        result, flag = solve_master_ecos_shared(shared[0], shared[1], delta, C)
    if result is None:
        if factors is None:
            factors = [gram_factor(G) for G in grams]
        result, flag = solve_master_ecos(factors, delta, C)
        for solver in ("CLARABEL", "SCS"):
            if result is not None:
                break
            result, status = solve_master_cvxpy(factors, delta, C, solver)
    if result is None:
        warnings.warn(f"The master QCQP was not solved (ECOS exit flag {flag}, cvxpy status {status}); "
                      "continuing from the previous point.", ConvergenceWarning, stacklevel=3)
        K = delta.shape[0]
        abar = np.zeros(K) if abar0 is None else np.asarray(abar0, dtype=float)
        result = MasterSolution(abar, np.full(len(grams), 1.0 / len(grams)), np.nan, "failed")
    result.value = master_value(result.abar, grams, delta, C)
    return result
