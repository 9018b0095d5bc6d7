"""The primal objective and its regulariser, the squared k-support norm.

    min_{w, xi >= 0}  R(w) + w_b^2 / 2 + C xi   s.t.  w . Psi(y, ybar) >= Delta(y, ybar) - xi  for every ybar,

with R(w) = ||w||^2 / 2 without a budget (SVMperf's 1-slack problem) and half the squared B-support norm
min_{d in [0,1]^m, sum d <= B} sum_j w_j^2 / d_j with a budget B (Mao & Tsang's FS^Delta_multi).
"""
import numpy as np


def ksupport_sq(w, k):
    """min over d in [0,1]^m with sum(d) <= k of sum_j w_j^2 / d_j (the squared k-support norm).

    The minimiser caps the q largest |w_j| at d_j = 1 and spreads d_j = |w_j| / lam over the rest with
    lam = (sum of the rest) / (k - q) (water-filling). A q is feasible when the largest uncapped |w_j|
    is <= lam; the norm is the smallest value over feasible q (Argyriou, Foygel & Srebro 2012).
    """
    z = np.abs(np.asarray(w, dtype=np.float64))
    z = z[z > 0]
    if k is None or z.shape[0] <= k:
        return float(z @ z)
    z = -np.sort(-z)
    tail = np.concatenate((np.cumsum(z[::-1])[::-1], [0.0]))   # tail[q] = sum_{i >= q} z_i
    head_sq = np.concatenate(([0.0], np.cumsum(z * z)))        # head_sq[q] = sum_{i < q} z_i^2
    q = np.arange(k)
    lam = tail[q] / (k - q)
    feasible = z[q] <= lam * (1.0 + 1e-12)
    values = head_sq[q] + tail[q] ** 2 / (k - q)
    return float(values[feasible].min()) if feasible.any() else float(values.max())


def primal_objective(w, w_b, xi, C, budget):
    """1/2 ||w||_(B)^2 + 1/2 w_b^2 + C xi (||.||_(B) the B-support norm; Euclidean without a budget)."""
    return 0.5 * ksupport_sq(w, budget) + 0.5 * w_b * w_b + C * xi
