"""Prec@k, Rec@k and PRBEP: losses restricted by the number t = a + b of predicted positives.

As svm_perf 3.00 defines them (its ``svm_struct_api.c``): Prec@k admits every labeling with t >= k and
Delta = 100 (1 - a/t); Rec@k every labeling with t <= k and Delta = 100 (1 - a/P); PRBEP t = P (then
b = c and precision = recall), Delta = 100 (1 - a/P).

For a fixed t, H(a) = Delta(a, t) + (100/n) (cum_pos[a] + cum_neg[t - a]) + const with the classes
sorted by decreasing score. Delta is linear in a, and cum_pos[a] + cum_neg[t - a] is concave in a (its
increments pos[a] - neg[t - a - 1] do not increase with a), so H is concave in a and its maximiser
is where the increments change sign. That point never moves down as t grows, so one pointer finds it
for every t: the oracle is two sorts plus O(n).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._jit import njit
from .._validation import check_positive_float, check_positive_int
from ..metrics import resolve_k, top_k_hits
from .base import ContingencyLoss, SortedClasses, require_positive


# Over 8 parameters: a compiled kernel takes the sorted scores and their prefix sums as arrays.
@njit(cache=True)
def best_table(sorted_pos: np.ndarray, sorted_neg: np.ndarray, cum_pos: np.ndarray, cum_neg: np.ndarray, t_lo: int,
               t_hi: int, per_total: bool, n: int, a_least: int) -> tuple[int, int, float]:
    """(a, b, H) maximising H over t = a + b in [t_lo, t_hi] and a >= ``a_least``; Delta = 100 (1 - a/t)
    if ``per_total`` else 100 (1 - a/P). ``sorted_*`` decreasing, ``cum_*`` their prefix sums (with a
    leading 0).

    For each t the maximiser a*(t) is the first a whose increment H(a + 1) - H(a) =
    (100/n) (pos[a] - neg[t - a - 1]) - 100/denom is <= 0. Every increment grows with t (neg[t - a - 1]
    moves down the sorted negatives, 100/t shrinks), so a*(t) never decreases: one pointer walks up
    through all t, O(P + N) after the first binary search. H is concave in a, so the lower bound
    ``a_least`` clips the maximiser, and the clipped one does not decrease with t either.
    """
    P, N = sorted_pos.shape[0], sorted_neg.shape[0]
    scale = 100.0 / n
    best_h, best_a, best_b = -np.inf, -1, -1
    a = -1
    for t in range(t_lo, t_hi + 1):
        lo, hi = max(a_least, t - N), min(P, t)
        if lo > hi:
            continue
        denom = t if per_total else P
        step = 100.0 / denom if denom > 0 else 0.0
        if a < 0:                     # first t: binary search for the first non-positive increment
            left, right = lo, hi
            while left < right:
                mid = (left + right) // 2
                if scale * (sorted_pos[mid] - sorted_neg[t - mid - 1]) - step > 0:
                    left = mid + 1
                else:
                    right = mid
            a = left
        else:
            a = max(a, lo)
            while a < hi and scale * (sorted_pos[a] - sorted_neg[t - a - 1]) - step > 0:
                a += 1
        b = t - a
        delta = 100.0 * (1.0 - a / denom) if denom > 0 else 100.0
        h = delta + scale * (cum_neg[b] - (cum_pos[P] - cum_pos[a]))
        if h > best_h:
            best_h, best_a, best_b = h, a, b
    return best_a, best_b, best_h


class _CountRestrictedLoss(ContingencyLoss):
    """Shared oracle: the best labeling over a range [t_lo, t_hi] of predicted-positive counts."""

    per_total = False          # Delta = 100 (1 - a/t) (precision) if True, else 100 (1 - a/P) (recall)

    def _t_range(self, P: int, n: int) -> tuple[int, int]:  # pragma: no cover - interface
        raise NotImplementedError

    def oracle(self, y: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, float]:
        srt = SortedClasses(y, s)
        t_lo, t_hi = self._t_range(srt.P, srt.n)
        a, b, _ = best_table(srt.sorted_pos, srt.sorted_neg, srt.cum_pos, srt.cum_neg, t_lo, t_hi,
                              self.per_total, srt.n, 0)
        if a < 0:
            raise ValueError(f"No labeling satisfies the {self.name} restriction on these labels.")
        delta = float(self._delta_table(np.int64(a), np.int64(b), np.int64(srt.P - a), np.int64(srt.N - b)))
        return srt.coef(a, b), delta


class _AtKLoss(_CountRestrictedLoss):
    default_frac: float        # each subclass's svm_perf default (k_frac)
    needs_positive: bool
    _table_delta: Callable[..., Any]
    _table_feasible: Callable[..., Any]
    k_above_n = False          # may k exceed the number of examples (Rec@k: then every labeling is admitted)

    def __init__(self, k: int | None = None, k_frac: float | None = None) -> None:
        if k is not None and k_frac is not None:
            raise ValueError("Give either k or k_frac, not both.")
        self.k = None if k is None else check_positive_int(k, "k")
        self.k_frac = None if k_frac is None else check_positive_float(k_frac, "k_frac")
        super().__init__(self._table_delta, self._table_feasible)

    @property
    def params(self) -> dict[str, Any]:
        return {"k": self.k, "k_frac": self.k_frac}

    def k_for(self, P: int, n: int) -> int:
        """The k of this loss on data with P positives among n examples."""
        return resolve_k(self.k, self.k_frac, int(P), int(n), self.default_frac, self.k_above_n)

    def _check_classes(self, y: np.ndarray) -> None:
        if self.needs_positive:
            require_positive(y, self.name)
        self.k_for(int(np.count_nonzero(y > 0)), y.shape[0])  # raises when k is outside the admissible range

    @staticmethod
    def _table_scalars(a: Any, b: Any, c: Any, d: Any) -> tuple[int, int]:
        P = int(np.asarray(a + c).flat[0])
        n = int(np.asarray(a + b + c + d).flat[0])
        return P, n


class PrecisionAtKLoss(_AtKLoss):
    """Delta = 100 (1 - a/(a+b)) over labelings with at least k predicted positives (a + b >= k), as
    svm_perf's loss 4; k = max(1, floor(k_frac * P)), k_frac 0.5 by default; k <= n.

    Examples
    --------
    >>> import numpy as np
    >>> from structfs.losses import PrecisionAtKLoss
    >>> y = np.array([1.0, -1.0, 1.0, -1.0, -1.0, 1.0])
    >>> s = np.array([2.0, 1.5, -0.5, -1.0, 0.3, 0.8])
    >>> loss = PrecisionAtKLoss()
    >>> round(loss.score(y, s), 2)                 # its measure of the scores, in percent
    100.0
    >>> coef, delta = loss.most_violated(y, s)     # the output maximising loss - margin
    >>> round(float(delta), 2)                     # and its loss
    66.67
    """

    name = "prec@k"
    default_frac = 0.5
    needs_positive = False
    per_total = True

    def _table_delta(self, a: Any, b: Any, c: Any, d: Any) -> Any:
        return 100.0 * (1.0 - a / (a + b))

    def _table_feasible(self, a: Any, b: Any, P: Any, N: Any) -> Any:
        return a + b >= self.k_for(P, P + N)

    def _t_range(self, P: int, n: int) -> tuple[int, int]:
        return self.k_for(P, n), n

    def _score(self, y: np.ndarray, s: np.ndarray) -> float:
        k = self.k_for(int(np.count_nonzero(y > 0)), y.shape[0])
        return 100.0 * top_k_hits(y, s, k) / k


class RecallAtKLoss(_AtKLoss):
    """Delta = 100 (1 - a/P) over labelings with at most k predicted positives (a + b <= k), as
    svm_perf's loss 5; k = max(1, floor(k_frac * P)), k_frac 2 by default; k >= n admits every labeling.

    Examples
    --------
    >>> import numpy as np
    >>> from structfs.losses import RecallAtKLoss
    >>> y = np.array([1.0, -1.0, 1.0, -1.0, -1.0, 1.0])
    >>> s = np.array([2.0, 1.5, -0.5, -1.0, 0.3, 0.8])
    >>> loss = RecallAtKLoss()
    >>> round(loss.score(y, s), 2)                 # its measure of the scores, in percent
    100.0
    >>> coef, delta = loss.most_violated(y, s)     # the output maximising loss - margin
    >>> round(float(delta), 2)                     # and its loss
    66.67
    """

    name = "rec@k"
    default_frac = 2.0
    needs_positive = True
    k_above_n = True

    def _table_delta(self, a: Any, b: Any, c: Any, d: Any) -> Any:
        return 100.0 * (1.0 - a / (a + c))

    def _table_feasible(self, a: Any, b: Any, P: Any, N: Any) -> Any:
        return a + b <= self.k_for(P, P + N)

    def _t_range(self, P: int, n: int) -> tuple[int, int]:
        return 0, min(self.k_for(P, n), n)

    def _score(self, y: np.ndarray, s: np.ndarray) -> float:
        P = int(np.count_nonzero(y > 0))
        return 100.0 * top_k_hits(y, s, self.k_for(P, y.shape[0])) / P


class PRBEPLoss(_CountRestrictedLoss):
    """Delta = 100 (1 - a/(a+b)) over labelings with b = c, i.e. a + b = P (precision = recall), as
    svm_perf's loss 3.

    Examples
    --------
    >>> import numpy as np
    >>> from structfs.losses import PRBEPLoss
    >>> y = np.array([1.0, -1.0, 1.0, -1.0, -1.0, 1.0])
    >>> s = np.array([2.0, 1.5, -0.5, -1.0, 0.3, 0.8])
    >>> loss = PRBEPLoss()
    >>> round(loss.score(y, s), 2)                 # its measure of the scores, in percent
    66.67
    >>> coef, delta = loss.most_violated(y, s)     # the output maximising loss - margin
    >>> round(float(delta), 2)                     # and its loss
    66.67
    """

    name = "prbep"
    per_total = True

    def __init__(self) -> None:
        super().__init__(self._table_delta, self._table_feasible)

    @property
    def params(self) -> dict[str, Any]:
        return {}

    def _check_classes(self, y: np.ndarray) -> None:
        require_positive(y, self.name)

    @staticmethod
    def _table_delta(a: Any, b: Any, c: Any, d: Any) -> Any:
        return 100.0 * (1.0 - a / (a + c))

    @staticmethod
    def _table_feasible(a: Any, b: Any, P: Any, N: Any) -> Any:
        return a + b == P

    def _t_range(self, P: int, n: int) -> tuple[int, int]:
        return P, P

    def _score(self, y: np.ndarray, s: np.ndarray) -> float:
        P = int(np.count_nonzero(y > 0))
        return 100.0 * top_k_hits(y, s, P) / P
