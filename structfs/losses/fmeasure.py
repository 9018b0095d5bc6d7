"""F_beta losses with an O(n log n) exact oracle.

For a fixed number a of positives labelled +, h_a(b) = Delta(a, b) + (gain of the top-b negatives) is
concave in b: Delta_Fbeta = 100 (1 - (1+beta^2) a / (a + beta^2 P + b)) is concave in b and the prefix
sums of negatives sorted by decreasing score are concave. So the best b for every a is where the
increments of h_a change sign (a search per a, galloping from the previous a's answer), and the
oracle costs two sorts plus O(P log N) -- the sort of the negatives only over those that some labeling
can put on the + side (see :func:`_class_scores`).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .._jit import njit, sort_in_place
from .._validation import check_positive_float
from ..metrics import _table_at_sign, fbeta_from_table, fbeta_of_counts
from .base import ContingencyLoss, SortedClasses


@njit(cache=True)
def _fbeta_jit_oracle(y: np.ndarray, s: np.ndarray, params: np.ndarray) -> tuple[np.ndarray, float]:
    """FBetaLoss.oracle compiled whole (``params`` = [beta^2]), for the compiled inner loop."""
    beta2 = params[0]
    sorted_pos, sorted_neg = _class_scores(y, s, beta2)
    sort_in_place(sorted_pos)
    sort_in_place(sorted_neg)
    return _fbeta_oracle(y, s, sorted_pos[::-1], sorted_neg[::-1], beta2)


class FBetaLoss(ContingencyLoss):
    """Delta = 100 (1 - F_beta); F_beta := 0 when there is no true positive.

    Examples
    --------
    >>> import numpy as np
    >>> from structfs.losses import FBetaLoss
    >>> y = np.array([1.0, -1.0, 1.0, -1.0, -1.0, 1.0])
    >>> s = np.array([2.0, 1.5, -0.5, -1.0, 0.3, 0.8])
    >>> loss = FBetaLoss()
    >>> round(loss.score(y, s), 2)                 # its measure of the scores, in percent
    57.14
    >>> coef, delta = loss.most_violated(y, s)     # the output maximising loss - margin
    >>> round(float(delta), 2)                     # and its loss
    66.67
    """

    name = "fbeta"
    jit_oracle = staticmethod(_fbeta_jit_oracle)

    def __init__(self, beta: float = 1.0) -> None:
        self.beta = check_positive_float(beta, "beta")
        super().__init__(self._fbeta_delta)

    @property
    def params(self) -> dict[str, Any]:
        return {"beta": self.beta}

    def _fbeta_delta(self, a: Any, b: Any, c: Any, d: Any) -> Any:
        return 100.0 * (1.0 - fbeta_from_table(a, b, c, self.beta ** 2))

    def _score(self, y: np.ndarray, s: np.ndarray) -> float:
        # one table: _fbeta_delta's value by float arithmetic, without the array path's checks (the
        # measure of a labeling is finite and in [0, 100])
        a, b, c, _ = _table_at_sign(y, s)
        return 100.0 - 100.0 * (1.0 - fbeta_of_counts(a, b, c, self.beta ** 2))

    def oracle(self, y: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, float]:
        # one compiled call (split of the classes, sorts -- NumPy's above a few hundred scores --, the
        # search over a, the labeling): the oracle runs once or more per plane, and on small n (MIL:
        # tens of bags) each call out of Python costs more than the arithmetic
        coef, delta = _fbeta_jit_oracle(y, s, np.array([self.beta ** 2]))
        return coef, float(delta)

    @property
    def jit_params(self) -> np.ndarray:
        return np.array([self.beta ** 2])

    def _oracle_reference(self, y: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, float]:
        """The same oracle through SortedClasses (NumPy); kept to test the compiled one against."""
        srt = SortedClasses(y, s)
        b_best = _best_b_per_a_bisect(srt.sorted_neg, srt.P, self.beta ** 2, 100.0 / srt.n)
        a = np.arange(srt.P + 1)
        delta = self._fbeta_delta(a, b_best, srt.P - a, 0)
        best = int(np.argmax(delta + srt.score_part(a, b_best)))
        return srt.coef(best, int(b_best[best])), float(delta[best])


@njit(cache=True)
def _class_scores(y: np.ndarray, s: np.ndarray, beta2: float) -> tuple[np.ndarray, np.ndarray]:
    """(scores of the positives, scores of the negatives that can be labelled +), each in the order
    of the examples.

    A negative is worth labelling + only while the increment of h_a at its rank is positive: the
    change of Delta, 100 (1+beta^2) a / ((D+b-1)(D+b)) with D = a + beta^2 P, is below
    100 (1+beta^2) / (4 beta^2 P) for every a and b >= 1, so a negative scoring s <= -(1+beta^2) n /
    (4 beta^2 P) never is, and need not be sorted (on balanced data, most negatives of a trained
    model). The cut-off keeps a margin of 1e-6 relative, far above the rounding of the increments.
    """
    n = y.shape[0]
    P = 0
    for i in range(n):
        P += np.int64(y[i] > 0)
    cutoff = -np.inf
    if P > 0:
        bound = (1.0 + beta2) * n / (4.0 * beta2 * P)
        cutoff = -bound - 1e-6 * (1.0 + bound)
    # a branch-free partition: each score is written to both buffers and kept by advancing the index
    pos = np.empty(P + 1)
    neg = np.empty(n - P + 1)
    p = q = 0
    for i in range(n):
        value = s[i]
        positive = np.int64(y[i] > 0)
        pos[p] = value
        neg[q] = value
        p += positive
        q += (1 - positive) * np.int64(value > cutoff)     # arithmetic: `and` would branch again
    return pos[:P], neg[:q]


@njit(cache=True)
def _fbeta_delta_scalar(a: int, b: int, P: int, beta2: float) -> float:
    if a == 0:
        return 100.0
    num = (1.0 + beta2) * a
    return 100.0 * (1.0 - num / (num + b + beta2 * (P - a)))


@njit(cache=True)
def _best_b_per_a_bisect(sorted_neg: np.ndarray, P: int, beta2: float, scale: float) -> np.ndarray:
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
def _rises(a: int, b: int, P: int, beta2: float, n: float, neg: float) -> bool:
    """Whether h_a increases at b >= 1, the b-th negative (score ``neg``) labelled +: the increment
    100 (1+beta^2) a / ((E+b-1)(E+b)) + (100/n) neg, E = a + beta^2 P, is > 0. Tested multiplied out,
    without a division: two divisions and the difference of two near-equal F-measures cost three
    times as much (the search runs a few of these per a, on every oracle call) and round off more."""
    if a == 0:                 # Delta is 100 whatever b: only the score part moves
        return neg > 0.0
    E = a + beta2 * P
    return neg * ((E + b - 1.0) * (E + b)) > -(1.0 + beta2) * a * n


@njit(cache=True)
def _best_b_per_a(sorted_neg: np.ndarray, P: int, beta2: float, n: float) -> np.ndarray:
    """As :func:`_best_b_per_a_bisect` (``n`` the number of examples, which sets the score part's scale),
    but each a's search starts from the previous a's answer g: the increments decrease in b (concavity),
    so the boundary is the same whatever the start, and consecutive a have nearby boundaries.
    Galloping from g brackets it in a few probes instead of log2 N (the bisection over all b was half of
    the oracle's time at n = 10^6)."""
    N = sorted_neg.shape[0]
    out = np.empty(P + 1, dtype=np.int64)
    g = 0
    for a in range(P + 1):
        # bracket [lo, hi]: the increment is positive at lo (or lo = 0), not positive above hi
        lo, hi = 0, N
        if a > 0:
            step = 1
            if g == 0 or _rises(a, g, P, beta2, n, sorted_neg[g - 1]):
                lo = g
                while lo + step <= N:
                    b = lo + step
                    if _rises(a, b, P, beta2, n, sorted_neg[b - 1]):
                        lo = b
                        step *= 2
                    else:
                        hi = b - 1
                        break
            else:
                hi = g - 1
                while hi - step + 1 > 0:
                    b = hi - step + 1
                    if _rises(a, b, P, beta2, n, sorted_neg[b - 1]):
                        lo = b
                        break
                    hi = b - 1
                    step *= 2
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if _rises(a, mid, P, beta2, n, sorted_neg[mid - 1]):
                lo = mid
            else:
                hi = mid - 1
        out[a] = g = lo
    return out


@njit(cache=True)
def _fbeta_oracle(y: np.ndarray, s: np.ndarray, sorted_pos: np.ndarray, sorted_neg: np.ndarray,
                  beta2: float) -> tuple[np.ndarray, float]:
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
    b_best = _best_b_per_a(sorted_neg, P, beta2, float(n))
    best_h = -np.inf
    best_a = 0
    for a in range(P + 1):
        b = b_best[a]
        h = _fbeta_delta_scalar(a, b, P, beta2) + scale * (cum_neg[b] - (cum_pos[P] - cum_pos[a]))
        if h > best_h:
            best_h = h
            best_a = a
    best_b = b_best[best_a]
    # one pass: coef = 0 on the best_a top positives (else scale), -scale on the best_b top negatives
    # (else 0); of the examples tied with a class's last labelled score, the lowest indices first
    pos_thr, pos_ties = _threshold(sorted_pos, best_a)
    neg_thr, neg_ties = _threshold(sorted_neg, best_b)
    # written with selects, not branches on the class: labels in random order mispredict half of them
    coef = np.empty(n)
    for i in range(n):
        positive = y[i] > 0
        threshold = pos_thr if positive else neg_thr
        top = s[i] > threshold
        if s[i] == threshold:
            if positive:
                top = pos_ties > 0
                pos_ties -= top
            else:
                top = neg_ties > 0
                neg_ties -= top
        coef[i] = (scale if positive else 0.0) - (scale if top else 0.0)
    return coef, _fbeta_delta_scalar(best_a, best_b, P, beta2)


@njit(cache=True)
def _threshold(sorted_desc: np.ndarray, count: int) -> tuple[float, int]:
    """(t, k): the ``count`` highest of the decreasingly sorted scores are those above t and k of
    those equal to t (t = +inf, k = 0 when count is 0)."""
    if count == 0:
        return np.inf, 0
    threshold = sorted_desc[count - 1]
    first = count - 1
    while first > 0 and sorted_desc[first - 1] == threshold:
        first -= 1
    return threshold, count - first


class F1Loss(FBetaLoss):
    """Delta = 100 (1 - F1), F1 = 2a / (2a + b + c).

    Examples
    --------
    >>> import numpy as np
    >>> from structfs.losses import F1Loss
    >>> y = np.array([1.0, -1.0, 1.0, -1.0, -1.0, 1.0])
    >>> s = np.array([2.0, 1.5, -0.5, -1.0, 0.3, 0.8])
    >>> loss = F1Loss()
    >>> round(loss.score(y, s), 2)                 # its measure of the scores, in percent
    57.14
    >>> coef, delta = loss.most_violated(y, s)     # the output maximising loss - margin
    >>> round(float(delta), 2)                     # and its loss
    66.67
    """

    name = "f1"

    def __init__(self) -> None:
        super().__init__(1.0)

    @property
    def params(self) -> dict[str, Any]:
        return {}
