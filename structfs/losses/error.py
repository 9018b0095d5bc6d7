"""The error-rate (Hamming) loss: Delta = 100 (b + c) / n decomposes per example."""
import numpy as np

from .._jit import njit
from .base import ContingencyLoss


@njit(cache=True)
def _error_jit_oracle(y, s, params):
    """ErrorRateLoss.oracle for the compiled inner loop (no settings)."""
    return _error_oracle(y, s)


class ErrorRateLoss(ContingencyLoss):
    """Flipping example i adds 100/n to Delta and (100/n) y_i s_i to coef . s, so the most violated
    labeling flips exactly the examples with margin y_i s_i < 1 — the hinge loss with margin 1.

    Examples
    --------
    >>> import numpy as np
    >>> from structfs.losses import ErrorRateLoss
    >>> y = np.array([1.0, -1.0, 1.0, -1.0, -1.0, 1.0])
    >>> s = np.array([2.0, 1.5, -0.5, -1.0, 0.3, 0.8])
    >>> loss = ErrorRateLoss()
    >>> round(loss.score(y, s), 2)                 # its measure of the scores, in percent
    50.0
    >>> coef, delta = loss.most_violated(y, s)     # the output maximising loss - margin
    >>> round(float(delta), 2)                     # and its loss
    66.67
    """

    name = "error"
    jit_oracle = staticmethod(_error_jit_oracle)

    def __init__(self):
        super().__init__(self._table_delta)      # a method, not a lambda: the loss (and models) pickle

    @staticmethod
    def _table_delta(a, b, c, d):
        return 100.0 * (b + c) / (a + b + c + d)

    @property
    def params(self):
        return {}

    def oracle(self, y, s):
        return _error_oracle(np.asarray(y, dtype=np.float64), np.asarray(s, dtype=np.float64))

    def _score(self, y, s):
        return 100.0 * np.count_nonzero(np.where(s > 0, 1.0, -1.0) == y) / y.shape[0]


@njit(cache=True)
def _error_oracle(y, s):
    """One pass (four NumPy passes cost 4 ms at n = 2e5, per cutting plane)."""
    n = y.shape[0]
    scale = 100.0 / n
    coef = np.empty(n)
    flips = 0
    for i in range(n):
        if y[i] * s[i] < 1.0:
            coef[i] = scale * y[i]
            flips += 1
        else:
            coef[i] = 0.0
    return coef, 100.0 * flips / n
