"""F_beta losses with an O(n log n) exact oracle.

For a fixed number a of positives labelled +, h_a(b) = Delta(a, b) + (gain of the top-b negatives) is
concave in b: Delta_Fbeta = 100 (1 - (1+beta^2) a / (a + beta^2 P + b)) is concave in b and the prefix
sums of negatives sorted by decreasing score are concave. So the best b for every a is where the
increments of h_a change sign, found by one binary search run for all a at once (vectorised), and the
oracle costs two sorts plus O(P log N).
"""
import numpy as np

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

    def _oracle(self, y, s):
        srt = SortedClasses(y, s)
        P, N = srt.P, srt.N
        beta2 = self.beta ** 2
        a = np.arange(P + 1)
        scale = 100.0 / srt.n
        sorted_neg = np.diff(srt.cum_neg)

        def delta(b):
            return 100.0 * (1.0 - fbeta_from_table(a, b, P - a, beta2))

        # Largest b in [0, N] with b == 0 or increment(b) > 0, for every a at once.
        lo = np.zeros(P + 1, dtype=np.int64)
        hi = np.full(P + 1, N, dtype=np.int64)
        while True:
            active = lo < hi
            if not active.any():
                break
            mid = np.maximum((lo + hi + 1) // 2, 1)
            inc = delta(mid) - delta(mid - 1) + scale * sorted_neg[np.minimum(mid, N) - 1]
            up = active & (inc > 0)
            down = active & ~(inc > 0)
            lo = np.where(up, mid, lo)
            hi = np.where(down, mid - 1, hi)
        h = delta(lo) + srt.score_part(a, lo)
        best = int(np.argmax(h))
        b = int(lo[best])
        return srt.coef(best, b), float(delta(lo)[best])


class F1Loss(FBetaLoss):
    """Delta = 100 (1 - F1), F1 = 2a / (2a + b + c)."""

    name = "f1"

    def __init__(self):
        super().__init__(1.0)

    @property
    def params(self):
        return {}
