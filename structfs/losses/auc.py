"""The ROC-area loss: Delta = 100 * (#swapped positive-negative pairs) / (P N).

An output orders every pair (i positive, j negative); swapping a pair adds 100/(PN) to Delta and
(100/(PN)) (s_i - s_j) to coef . s, so H decomposes over pairs and the most violated ordering swaps
exactly the pairs with s_i - 1 < s_j. Counting them per example is a sort and two binary searches
(Joachims 2005, Algorithm 3): O(n log n).
"""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from .._jit import argsort, njit
from .._validation import check_pm1
from ..metrics import roc_auc
from .base import Loss, require_both_classes


@njit(cache=True)
def _auc_jit_oracle(y: np.ndarray, s: np.ndarray, params: np.ndarray) -> tuple[np.ndarray, float]:
    """ROCAreaLoss's oracle, compiled (the inner loop calls it too; no settings). Positive i is swapped
    with negative j iff s_i - 1 < s_j: one sort of the shifted positive scores together with the
    negative scores, then one counting pass (ties are counted per value, so the sort's order among
    equal values does not matter)."""
    pos = y > 0
    values = np.where(pos, s - 1.0, s)
    swapped, total = count_swaps(values, argsort(values), pos)
    P = np.count_nonzero(pos)
    scale = 100.0 / (P * (y.shape[0] - P))
    return scale * np.where(pos, swapped, -swapped), scale * total


class ROCAreaLoss(Loss):
    """Delta = 100 x the fraction of (positive, negative) pairs in the wrong order: 100 - ROC area.

    Examples
    --------
    >>> import numpy as np
    >>> from structfs.losses import ROCAreaLoss
    >>> y = np.array([1.0, -1.0, 1.0, -1.0, -1.0, 1.0])
    >>> s = np.array([2.0, 1.5, -0.5, -1.0, 0.3, 0.8])
    >>> loss = ROCAreaLoss()
    >>> round(loss.score(y, s), 2)                 # its measure of the scores, in percent
    66.67
    >>> coef, delta = loss.most_violated(y, s)     # the output maximising loss - margin
    >>> round(float(delta), 2)                     # and its loss
    66.67
    """

    name = "auc"
    jit_oracle = staticmethod(_auc_jit_oracle)

    def _check_classes(self, y: np.ndarray) -> None:
        require_both_classes(y, self.name)

    def oracle(self, y: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, float]:
        return _auc_jit_oracle(y, s, np.zeros(0))

    def outputs(self, y: np.ndarray) -> Iterator[tuple[np.ndarray, float]]:
        """Every pairwise ordering as (coef, delta): 2^(P N) of them, for verification on tiny n
        (``structfs.testing.check_loss``)."""
        import itertools

        pos = np.flatnonzero(y > 0)
        neg = np.flatnonzero(y < 0)
        scale = 100.0 / (pos.shape[0] * neg.shape[0])
        for bits in itertools.product((False, True), repeat=pos.shape[0] * neg.shape[0]):
            swapped = np.array(bits, dtype=bool).reshape(pos.shape[0], neg.shape[0])
            coef = np.zeros(y.shape[0])
            coef[pos] = scale * swapped.sum(axis=1)
            coef[neg] = -scale * swapped.sum(axis=0)
            yield coef, scale * swapped.sum()

    def delta(self, y: np.ndarray, y_bar: np.ndarray) -> float:
        """Delta of a pairwise ordering ``y_bar`` of shape (P, N): +1 ranks positive i above negative j."""
        y = check_pm1(y, "y")
        self._check_classes(y)
        P = int(np.count_nonzero(y > 0))
        y_bar = np.asarray(y_bar)
        if y_bar.shape != (P, y.shape[0] - P):
            raise ValueError(f"y_bar must have shape (P, N) = {(P, y.shape[0] - P)}, got {y_bar.shape}.")
        return 100.0 * np.count_nonzero(y_bar < 0) / y_bar.size

    def _score(self, y: np.ndarray, s: np.ndarray) -> float:
        return roc_auc(y, s)


@njit(cache=True)
def count_swaps(values: np.ndarray, order: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, float]:
    """Per example, the number of swapped pairs it belongs to, in one pass over the sorted values.

    A positive (value s_i - 1) is swapped with every negative of larger value; a negative with every
    positive of strictly smaller value. Ties (equal values) are not swapped.
    """
    n = values.shape[0]
    v_sorted = values[order]
    pos_sorted = pos[order]
    n_neg_total = n - np.count_nonzero(pos_sorted)
    counts = np.empty(n)
    pos_below = 0   # positives with value < current group
    neg_upto = 0    # negatives with value <= current group
    total = 0.0
    start = 0
    while start < n:
        stop = start
        group_pos = 0
        while stop < n and v_sorted[stop] == v_sorted[start]:
            group_pos += pos_sorted[stop]
            stop += 1
        neg_upto += (stop - start) - group_pos
        for r in range(start, stop):
            if pos_sorted[r]:
                counts[r] = n_neg_total - neg_upto
                total += n_neg_total - neg_upto
            else:
                counts[r] = pos_below
        pos_below += group_pos
        start = stop
    swapped = np.empty(n)
    swapped[order] = counts
    return swapped, total
