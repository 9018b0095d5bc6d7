"""Operating-point losses: a measure optimised subject to a constraint on another.

Each is a contingency-table loss restricted to the labelings that meet its constraint, as svm_perf
restricts Prec@k and Rec@k (P positives, N negatives, a true and b false positives):

* ``"prec@rec"``: precision 100 (1 - a/(a+b)) over labelings with recall at least r, a >= ceil(r P);
* ``"rec@prec"``: recall 100 (1 - a/P) over labelings with precision at least p, a + b >= 1 and
  b <= floor(a (1 - p)/p);
* ``"tpr@fpr"``: recall 100 (1 - a/P) over labelings with false-positive rate at most f, b <= floor(f N).

Fitted with a bias feature, these losses degenerate: every admissible violating labeling of "prec@rec"
predicts more positives than the truth (b > c), so a negative bias weight alone pays their margins and
the learned w is about 0 (measured on ``make_classification`` data: test ROC area 0.46-0.75 against
0.76-0.83 without the bias). They are therefore fitted without it (``Loss.ranks_only``), as rankings,
and the estimators cut the scores at the best operating point that meets the constraint.

The most violated labeling is searched among the admissible ones only; ``delta`` of a labeling that
misses the constraint is 100, the largest loss, so that any cut that fails the constraint ranks below
every cut that meets it (``StructSVMCV`` chooses its cut by this Delta). The measures
(``structfs.metrics.precision_at_recall`` and its siblings) read the operating point off the ranking:
the best value over the cuts that meet the constraint.

With the classes sorted by decreasing score, H(a, b) = Delta(a, b) + (100/n) (cum_neg[b] -
(cum_pos[P] - cum_pos[a])) (see :mod:`structfs.losses.base`); both prefix sums are concave.

* tpr@fpr: H separates into a term in a and a term in b; b maximises cum_neg[b] up to floor(f N)
  (every negative of positive score, at most that many) and a takes every positive whose score
  exceeds n/P. O(n log n).
* rec@prec: for each a the best b is the concave maximiser capped at floor(a (1 - p)/p), so H is
  evaluated for every a in 1..P in O(P). O(n log n).
* prec@rec: for each t = a + b the loss is linear in a and H concave in a; the maximiser clipped to
  [max(ceil(r P), t - N), min(P, t)] never decreases with t, so svm_perf's Prec@k pointer walk
  (:func:`structfs.losses.ranking.best_table`) with a lower bound on a is exact. O(n log n).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..metrics import (
    check_rate,
    max_false_positives,
    max_false_positives_at_precision,
    min_true_positives,
    precision_at_recall,
    recall_at_precision,
    tpr_at_fpr,
)
from .base import ContingencyLoss, SortedClasses, require_positive
from .ranking import best_table

_INFEASIBLE = 100.0


class _OperatingPointLoss(ContingencyLoss):
    """Shared: a positive is needed; Delta is 100 on labelings that miss the constraint; fitted as a
    ranking (``ranks_only``), cut at the operating point."""

    ranks_only = True
    constraint = ""            # the name of the constraint's parameter (and attribute)
    measure: Callable[..., float]      # the metric of structfs.metrics that reads the point
    _table_feasible: Callable[..., Any]

    def __init__(self) -> None:
        super().__init__(self._table_delta, self._table_feasible)

    @property
    def params(self) -> dict[str, Any]:
        return {self.constraint: getattr(self, self.constraint)}

    def _measure_loss(self, a: Any, b: Any, c: Any, d: Any) -> Any:
        """100 (1 - recall); precision at recall overrides it."""
        return 100.0 * (1.0 - a / (a + c))

    def _score(self, y: np.ndarray, s: np.ndarray) -> float:
        return type(self).measure(y, s, getattr(self, self.constraint))

    def _check_classes(self, y: np.ndarray) -> None:
        require_positive(y, self.name)

    def _table_delta(self, a: Any, b: Any, c: Any, d: Any) -> Any:
        with np.errstate(divide="ignore", invalid="ignore"):
            value = self._measure_loss(a, b, c, d)
        return np.where(self._table_feasible(a, b, a + c, b + d), value, _INFEASIBLE)

    def _result(self, srt: SortedClasses, a: int, b: int) -> tuple[np.ndarray, float]:
        delta = float(self._delta_table(np.int64(a), np.int64(b), np.int64(srt.P - a), np.int64(srt.N - b)))
        return srt.coef(a, b), delta


class PrecisionAtRecallLoss(_OperatingPointLoss):
    """Delta = 100 (1 - precision) over labelings whose recall is at least ``recall`` (a >= ceil(r P));
    100 on the others. Measure: the best precision of a cut of the scores with recall >= r, in percent
    (:func:`structfs.metrics.precision_at_recall`).

    Examples
    --------
    >>> import numpy as np
    >>> from structfs.losses import get_loss
    >>> y = np.array([1.0, -1.0, 1.0, -1.0, -1.0, 1.0])
    >>> s = np.array([2.0, 1.5, -0.5, -1.0, 0.3, 0.8])
    >>> loss = get_loss("prec@rec", recall=0.6)
    >>> round(loss.score(y, s), 2)                 # two positives of three need the top three scores
    66.67
    >>> coef, delta = loss.most_violated(y, s)     # the admissible output maximising loss - margin
    >>> round(float(delta), 2)
    50.0
    """

    name = "prec@rec"
    constraint = "recall"
    measure = precision_at_recall

    def __init__(self, recall: float = 0.9) -> None:
        self.recall = check_rate(recall, "recall")
        super().__init__()

    def _measure_loss(self, a: Any, b: Any, c: Any, d: Any) -> Any:
        return 100.0 * b / (a + b)

    def _table_feasible(self, a: Any, b: Any, P: Any, N: Any) -> Any:
        return (a >= min_true_positives(self.recall, P)) & (a + b >= 1)

    def oracle(self, y: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, float]:
        srt = SortedClasses(y, s)
        least = max(1, int(min_true_positives(self.recall, srt.P)))
        a, b, _ = best_table(srt.sorted_pos, srt.sorted_neg, srt.cum_pos, srt.cum_neg, least, srt.n, True,
                              srt.n, least)
        return self._result(srt, a, b)


class RecallAtPrecisionLoss(_OperatingPointLoss):
    """Delta = 100 (1 - recall) over labelings with a predicted positive and precision at least
    ``precision`` (b <= floor(a (1 - p)/p)); 100 on the others. Measure: the best recall of a cut of
    the scores with precision >= p, in percent, 0 where none reaches it
    (:func:`structfs.metrics.recall_at_precision`).

    Examples
    --------
    >>> import numpy as np
    >>> from structfs.losses import get_loss
    >>> y = np.array([1.0, -1.0, 1.0, -1.0, -1.0, 1.0])
    >>> s = np.array([2.0, 1.5, -0.5, -1.0, 0.3, 0.8])
    >>> loss = get_loss("rec@prec", precision=0.6)
    >>> round(loss.score(y, s), 2)                 # the top three: precision 2/3, recall 2/3
    66.67
    """

    name = "rec@prec"
    constraint = "precision"
    measure = recall_at_precision

    def __init__(self, precision: float = 0.9) -> None:
        self.precision = check_rate(precision, "precision")
        super().__init__()

    def _table_feasible(self, a: Any, b: Any, P: Any, N: Any) -> Any:
        return (a + b >= 1) & (b <= max_false_positives_at_precision(self.precision, a))

    def oracle(self, y: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, float]:
        srt = SortedClasses(y, s)
        P, N = srt.P, srt.N
        a = np.arange(1, P + 1)
        # the unconstrained best b takes every negative of positive score; the constraint caps it
        b = np.minimum(np.count_nonzero(srt.sorted_neg > 0), max_false_positives_at_precision(self.precision, a))
        b = np.minimum(b, N)
        h = 100.0 * (1.0 - a / P) + (100.0 / srt.n) * (srt.cum_neg[b] - (srt.cum_pos[P] - srt.cum_pos[a]))
        best = int(np.argmax(h))
        return self._result(srt, int(a[best]), int(b[best]))


class TPRAtFPRLoss(_OperatingPointLoss):
    """Delta = 100 (1 - true-positive rate) over labelings whose false-positive rate is at most
    ``fpr`` (b <= floor(f N)); 100 on the others. Measure: the ROC curve's height at ``fpr``, the best
    recall of a cut of the scores with false-positive rate <= f, in percent
    (:func:`structfs.metrics.tpr_at_fpr`) -- the operating-point form of the partial ROC area.

    Examples
    --------
    >>> import numpy as np
    >>> from structfs.losses import get_loss
    >>> y = np.array([1.0, -1.0, 1.0, -1.0, -1.0, 1.0])
    >>> s = np.array([2.0, 1.5, -0.5, -1.0, 0.3, 0.8])
    >>> loss = get_loss("tpr@fpr", fpr=0.0)
    >>> round(loss.score(y, s), 2)                 # no false positive: only the top score
    33.33
    """

    name = "tpr@fpr"
    constraint = "fpr"
    measure = tpr_at_fpr

    def __init__(self, fpr: float = 0.01) -> None:
        self.fpr = check_rate(fpr, "fpr", allow_zero=True)
        super().__init__()

    def _table_feasible(self, a: Any, b: Any, P: Any, N: Any) -> Any:
        return b <= max_false_positives(self.fpr, N)

    def oracle(self, y: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, float]:
        srt = SortedClasses(y, s)
        b = min(int(np.count_nonzero(srt.sorted_neg > 0)), int(max_false_positives(self.fpr, srt.N)))
        a = int(np.count_nonzero(srt.sorted_pos > srt.n / srt.P))     # (100/n) s_i > 100/P
        return self._result(srt, a, b)
