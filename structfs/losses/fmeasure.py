"""F_beta losses with an O(n log n) exact oracle.

For a fixed number a of positives labelled +, h_a(b) = Delta(a, b) + (gain of the top-b negatives) is
concave in b: Delta_Fbeta = 100 (1 - (1+beta^2) a / (a + beta^2 P + b)) is concave in b and the prefix
sums of negatives sorted by decreasing score are concave. So the best b for every a is where the
increments of h_a change sign, found by one binary search run for all a at once (vectorised), and the
oracle costs two sorts plus O(P log N).
"""
import numpy as np
from numba import njit

from .._validation import check_positive_float
from ..metrics import fbeta_from_table
from .base import ContingencyLoss, SortedClasses


class FBetaLoss(ContingencyLoss):
    """Delta = 100 (1 - F_beta); F_beta := 0 when there is no true positive."""

    name = "fbeta"

    def __init__(self, beta=1.0):
        self.beta = check_positive_float(beta, "beta")
        super().__init__(self._fbeta_delta)

    @property
    def params(self):
        return {"beta": self.beta}

    def _fbeta_delta(self, a, b, c, d):
        return 100.0 * (1.0 - fbeta_from_table(a, b, c, self.beta ** 2))

    def oracle(self, y, s):
        srt = SortedClasses(y, s)
        b_best = _best_b_per_a(srt.sorted_neg, srt.P, self.beta ** 2, 100.0 / srt.n)
        a = np.arange(srt.P + 1)
        delta = self._fbeta_delta(a, b_best, srt.P - a, 0)
        best = int(np.argmax(delta + srt.score_part(a, b_best)))
        return srt.coef(best, int(b_best[best])), float(delta[best])


@njit(cache=True)
def _fbeta_delta_scalar(a, b, P, beta2):
    if a == 0:
        return 100.0
    num = (1.0 + beta2) * a
    return 100.0 * (1.0 - num / (num + b + beta2 * (P - a)))


@njit(cache=True)
def _best_b_per_a(sorted_neg, P, beta2, scale):
    """For each a, the largest b in [0, N] whose increment of h_a is > 0 (binary search)."""
    N = sorted_neg.shape[0]
    out = np.empty(P + 1, dtype=np.int64)
    for a in range(P + 1):
        lo, hi = 0, N
        while lo < hi:
            mid = (lo + hi + 1) // 2
            inc = (_fbeta_delta_scalar(a, mid, P, beta2) - _fbeta_delta_scalar(a, mid - 1, P, beta2)
                   + scale * sorted_neg[mid - 1])
            if inc > 0:
                lo = mid
            else:
                hi = mid - 1
        out[a] = lo
    return out


class F1Loss(FBetaLoss):
    """Delta = 100 (1 - F1), F1 = 2a / (2a + b + c)."""

    name = "f1"

    def __init__(self):
        super().__init__(1.0)

    @property
    def params(self):
        return {}
