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
        # one compiled pass after the sorts (prefix sums, the search over a, the labeling): the oracle
        # runs once or more per plane, and on small n (MIL: tens of bags) a chain of NumPy calls
        # cost 20x the arithmetic
        pos = y > 0
        # NumPy's sort is several times faster than the one compiled by numba
        coef, delta = _fbeta_oracle(y, s, np.sort(s[pos])[::-1], np.sort(s[~pos])[::-1], self.beta ** 2)
        return coef, float(delta)

    def _oracle_reference(self, y, s):
        """The same oracle through SortedClasses (NumPy); kept to test the compiled one against."""
        srt = SortedClasses(y, s)
        b_best = _best_b_per_a_bisect(srt.sorted_neg, srt.P, self.beta ** 2, 100.0 / srt.n)
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
def _best_b_per_a_bisect(sorted_neg, P, beta2, scale):
    """For each a, the largest b in [0, N] whose increment of h_a is > 0 (binary search over all b)."""
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


@njit(cache=True)
def _best_b_per_a(sorted_neg, P, beta2, scale):
    """As :func:`_best_b_per_a_bisect`, but each a's search starts from the previous a's answer g:
    the increments decrease in b (concavity), so the boundary is the same whatever the start, and
    consecutive a have nearby boundaries. Galloping from g brackets it in a few probes instead of
    log2 N (the bisection over all b was half of the oracle's time at n = 10^6). The increment is
    written out in each loop: a helper function for it was not inlined and cost 3x."""
    N = sorted_neg.shape[0]
    out = np.empty(P + 1, dtype=np.int64)
    g = 0
    for a in range(P + 1):
        # bracket [lo, hi]: the increment is positive at lo (or lo = 0), not positive above hi
        lo, hi = 0, N
        if a > 0:
            step = 1
            if g == 0 or (_fbeta_delta_scalar(a, g, P, beta2) - _fbeta_delta_scalar(a, g - 1, P, beta2)
                          + scale * sorted_neg[g - 1]) > 0:
                lo = g
                while lo + step <= N:
                    b = lo + step
                    if (_fbeta_delta_scalar(a, b, P, beta2) - _fbeta_delta_scalar(a, b - 1, P, beta2)
                            + scale * sorted_neg[b - 1]) > 0:
                        lo = b
                        step *= 2
                    else:
                        hi = b - 1
                        break
            else:
                hi = g - 1
                while hi - step + 1 > 0:
                    b = hi - step + 1
                    if (_fbeta_delta_scalar(a, b, P, beta2) - _fbeta_delta_scalar(a, b - 1, P, beta2)
                            + scale * sorted_neg[b - 1]) > 0:
                        lo = b
                        break
                    hi = b - 1
                    step *= 2
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if (_fbeta_delta_scalar(a, mid, P, beta2) - _fbeta_delta_scalar(a, mid - 1, P, beta2)
                    + scale * sorted_neg[mid - 1]) > 0:
                lo = mid
            else:
                hi = mid - 1
        out[a] = g = lo
    return out


@njit(cache=True)
def _fbeta_oracle(y, s, sorted_pos, sorted_neg, beta2):
    """(coef, Delta) of the most violated labeling from the classes' scores sorted decreasingly: for
    every a the best b (``_best_b_per_a``), the best (a, b) by H (first maximum, as np.argmax), then
    + on the a highest-scoring positives and the b highest-scoring negatives (ties: lowest index
    first), as SortedClasses does."""
    n = y.shape[0]
    P = sorted_pos.shape[0]
    N = sorted_neg.shape[0]
    cum_pos = np.zeros(P + 1)
    for i in range(P):
        cum_pos[i + 1] = cum_pos[i] + sorted_pos[i]
    cum_neg = np.zeros(N + 1)
    for j in range(N):
        cum_neg[j + 1] = cum_neg[j] + sorted_neg[j]
    scale = 100.0 / n
    b_best = _best_b_per_a(sorted_neg, P, beta2, scale)
    best_h = -np.inf
    best_a = 0
    for a in range(P + 1):
        b = b_best[a]
        h = _fbeta_delta_scalar(a, b, P, beta2) + scale * (cum_neg[b] - (cum_pos[P] - cum_pos[a]))
        if h > best_h:
            best_h = h
            best_a = a
    best_b = b_best[best_a]
    coef = np.empty(n)
    for i in range(n):
        coef[i] = scale if y[i] > 0 else 0.0
    _label_top(y, s, True, sorted_pos, best_a, coef, 0.0)
    _label_top(y, s, False, sorted_neg, best_b, coef, -scale)
    return coef, _fbeta_delta_scalar(best_a, best_b, P, beta2)


@njit(cache=True)
def _label_top(y, s, positive, sorted_desc, count, coef, value):
    """coef = value on the ``count`` highest-scoring examples of one class (ties: lowest index first)."""
    if count == 0:
        return
    threshold = sorted_desc[count - 1]
    done = 0
    for i in range(y.shape[0]):
        if (y[i] > 0) == positive and s[i] > threshold:
            coef[i] = value
            done += 1
    for i in range(y.shape[0]):
        if done == count:
            break
        if (y[i] > 0) == positive and s[i] == threshold:
            coef[i] = value
            done += 1


class F1Loss(FBetaLoss):
    """Delta = 100 (1 - F1), F1 = 2a / (2a + b + c)."""

    name = "f1"

    def __init__(self):
        super().__init__(1.0)

    @property
    def params(self):
        return {}
