"""The error-rate (Hamming) loss: Delta = 100 (b + c) / n decomposes per example."""
from __future__ import annotations

from typing import Any

import numpy as np

from .._jit import njit
from .base import ContingencyLoss, cut_value, untied_cuts


@njit(cache=True)
def _error_jit_oracle(y: np.ndarray, s: np.ndarray, params: np.ndarray) -> tuple[np.ndarray, float]:
    """ErrorRateLoss.oracle for the compiled inner loop (no settings)."""
    return _error_oracle(y, s)


@njit(cache=True)
def _error_weighted_jit_oracle(y: np.ndarray, s: np.ndarray, params: np.ndarray) -> tuple[np.ndarray, float]:
    """ErrorRateLoss.weighted_oracle for the compiled inner loop, the weights as its params."""
    return _error_weighted_oracle(y, s, params)


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
    decomposes = True      # takes fractional sample weights (structfs.losses.SampleWeighted)
    weighted_jit_oracle = staticmethod(_error_weighted_jit_oracle)       # params: the weights

    def __init__(self) -> None:
        super().__init__(self._table_delta)      # a method, not a lambda: the loss (and models) pickle

    @staticmethod
    def _table_delta(a: Any, b: Any, c: Any, d: Any) -> Any:
        return 100.0 * (b + c) / (a + b + c + d)

    @property
    def params(self) -> dict[str, Any]:
        return {}

    def oracle(self, y: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, float]:
        return _error_oracle(np.asarray(y, dtype=np.float64), np.asarray(s, dtype=np.float64))

    def _score(self, y: np.ndarray, s: np.ndarray) -> float:
        return 100.0 * np.count_nonzero(np.where(s > 0, 1.0, -1.0) == y) / y.shape[0]

    # -- weighted examples: Delta = 100 (weight of the errors) / (total weight) -------------------
    @staticmethod
    def weighted_oracle(y: np.ndarray, s: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, float]:
        """The oracle with example i counted w_i times (any w >= 0): the same flips (margin y_i s_i < 1),
        each weighing w_i / sum(w) instead of 1/n."""
        return _error_weighted_oracle(np.asarray(y, dtype=np.float64), np.asarray(s, dtype=np.float64),
                                      np.asarray(w, dtype=np.float64))

    @staticmethod
    def weighted_score(y: np.ndarray, s: np.ndarray, w: np.ndarray) -> float:
        """Weighted accuracy in percent."""
        return 100.0 * float(w[np.where(s > 0, 1.0, -1.0) == y].sum()) / float(w.sum())

    @staticmethod
    def weighted_best_cut(y: np.ndarray, s: np.ndarray, w: np.ndarray) -> float:
        """The cut t with the least weight of errors of ``s - t > 0`` (midpoint of a gap; ties: the
        fewest positives)."""
        order = np.argsort(-s, kind="stable")
        ranked, weights, positive = s[order], w[order], y[order] > 0
        above_neg = np.concatenate(([0.0], np.cumsum(np.where(positive, 0.0, weights))))   # false alarms
        above_pos = np.concatenate(([0.0], np.cumsum(np.where(positive, weights, 0.0))))
        errors = above_neg + (above_pos[-1] - above_pos)                                    # + misses
        admissible = untied_cuts(ranked)
        k = int(np.flatnonzero(admissible)[np.argmin(errors[admissible])])
        return cut_value(ranked, k)


@njit(cache=True)
def _error_oracle(y: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, float]:
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


@njit(cache=True)
def _error_weighted_oracle(y: np.ndarray, s: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, float]:
    """_error_oracle with example i counted w[i] times."""
    total = 0.0
    for i in range(w.shape[0]):
        total += w[i]
    scale = 100.0 / total
    coef = np.empty(y.shape[0])
    flipped = 0.0
    for i in range(y.shape[0]):
        if y[i] * s[i] < 1.0:
            coef[i] = scale * w[i] * y[i]
            flipped += w[i]
        else:
            coef[i] = 0.0
    return coef, scale * flipped
