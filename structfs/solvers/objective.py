"""The primal objective and its regulariser, the squared k-support norm.

    min_{w, xi >= 0}  R(w) + w_b^2 / 2 + C xi   s.t.  w . Psi(y, ybar) >= Delta(y, ybar) - xi  for every ybar,

with R(w) = ||w||^2 / 2 without a budget (SVMperf's 1-slack problem) and half the squared B-support norm
min_{d in [0,1]^m, sum d <= B} sum_j w_j^2 / d_j with a budget B (Mao & Tsang's FS^Delta_multi).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .._jit import njit


def ksupport_sq(w: Any, k: int | None) -> float:
    """min over d in [0,1]^m with sum(d) <= k of sum_j w_j^2 / d_j (the squared k-support norm; k None:
    the squared Euclidean norm)."""
    return float(ksupport_sq_kernel(np.ascontiguousarray(w, dtype=np.float64), 0 if k is None else int(k)))


@njit(cache=True)
def ksupport_sq_kernel(w: np.ndarray, k: int) -> float:
    """:func:`ksupport_sq` compiled, for the compiled loop and for Python (k = 0: the squared Euclidean norm).

    The minimiser caps the q largest |w_j| at d_j = 1 and spreads d_j = |w_j| / lam over the rest with
    lam = (sum of the rest) / (k - q) (water-filling). A q is feasible when the largest uncapped |w_j|
    is <= lam; the norm is the smallest value over feasible q (Argyriou, Foygel & Srebro 2012).
    """
    z = np.abs(w)
    z = z[z > 0]
    if k == 0 or z.shape[0] <= k:
        return z @ z
    z = -np.sort(-z)
    n = z.shape[0]
    tail = np.zeros(n + 1)                  # tail[q] = sum_{i >= q} z_i
    for i in range(n - 1, -1, -1):
        tail[i] = tail[i + 1] + z[i]
    head_sq = 0.0                           # sum_{i < q} z_i^2
    best, largest, any_feasible = np.inf, -np.inf, False
    for q in range(k):
        lam = tail[q] / (k - q)
        value = head_sq + tail[q] ** 2 / (k - q)
        largest = max(largest, value)
        if z[q] <= lam * (1.0 + 1e-12):
            best, any_feasible = min(best, value), True
        head_sq += z[q] * z[q]
    return best if any_feasible else largest


def primal_objective(w: Any, w_b: float, xi: float, C: float, budget: int | None) -> float:
    """1/2 ||w||_(B)^2 + 1/2 w_b^2 + C xi (||.||_(B) the B-support norm; Euclidean without a budget)."""
    return 0.5 * ksupport_sq(w, budget) + 0.5 * w_b * w_b + C * xi
