"""The ROC-area loss: Delta = 100 * (#swapped positive-negative pairs) / (P N).

An output orders every pair (i positive, j negative); swapping a pair adds 100/(PN) to Delta and
(100/(PN)) (s_i - s_j) to coef . s, so H decomposes over pairs and the most violated ordering swaps
exactly the pairs with s_i - 1 < s_j. Counting them per example is a sort and two binary searches
(Joachims 2005, Algorithm 3): O(n log n).
"""
import numpy as np

from ..metrics import roc_auc
from .._validation import check_pm1
from .base import Loss


class ROCAreaLoss(Loss):
    name = "auc"

    def _check_classes(self, y):
        if not ((y > 0).any() and (y < 0).any()):
            raise ValueError("y must contain both classes (-1 and +1) for the auc loss.")

    def _oracle(self, y, s):
        pos = y > 0
        shifted = s[pos] - 1.0            # positive i is swapped with negative j iff shifted_i < s_j
        s_neg = s[~pos]
        P, N = shifted.shape[0], s_neg.shape[0]
        # Both counts use the single comparison shifted_i < s_j, so they agree exactly.
        swapped_of_pos = N - np.searchsorted(np.sort(s_neg), shifted, side="right")
        swapped_of_neg = np.searchsorted(np.sort(shifted), s_neg, side="left")
        scale = 100.0 / (P * N)
        coef = np.empty(y.shape[0])
        coef[pos] = scale * swapped_of_pos
        coef[~pos] = -scale * swapped_of_neg
        return coef, scale * float(swapped_of_pos.sum())

    def delta(self, y, y_bar):
        """Delta of a pairwise ordering ``y_bar`` of shape (P, N): +1 ranks positive i above negative j."""
        y = check_pm1(y, "y")
        self._check_classes(y)
        P = int(np.count_nonzero(y > 0))
        y_bar = np.asarray(y_bar)
        if y_bar.shape != (P, y.shape[0] - P):
            raise ValueError(f"y_bar must have shape (P, N) = {(P, y.shape[0] - P)}, got {y_bar.shape}.")
        return 100.0 * np.count_nonzero(y_bar < 0) / y_bar.size

    def _score(self, y, s):
        return roc_auc(y, s)
