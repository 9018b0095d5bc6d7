"""The error-rate (Hamming) loss: Delta = 100 (b + c) / n decomposes per example."""
import numpy as np

from .base import ContingencyLoss


class ErrorRateLoss(ContingencyLoss):
    """Flipping example i adds 100/n to Delta and (100/n) y_i s_i to coef . s, so the most violated
    labeling flips exactly the examples with margin y_i s_i < 1 — the hinge loss with margin 1."""

    name = "error"

    def __init__(self):
        super().__init__(self._table_delta)      # a method, not a lambda: the loss (and models) pickle

    @staticmethod
    def _table_delta(a, b, c, d):
        return 100.0 * (b + c) / (a + b + c + d)

    @property
    def params(self):
        return {}

    def oracle(self, y, s):
        n = y.shape[0]
        flip = y * s < 1.0
        coef = np.where(flip, (100.0 / n) * y, 0.0)
        return coef, 100.0 * np.count_nonzero(flip) / n

    def _score(self, y, s):
        return 100.0 * np.count_nonzero(np.where(s > 0, 1.0, -1.0) == y) / y.shape[0]
