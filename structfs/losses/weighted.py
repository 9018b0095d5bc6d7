"""Sample weights for any loss: a weighted example counts as that many copies of itself.

A weight w_i is the frequency of example i, so a fit with weights is the fit on the data with example i
repeated w_i times (scikit-learn's meaning of ``sample_weight``; weight 0 drops the example). The loss's
measure is taken of the weighted contingency table (weighted F1, weighted error...) and Psi counts
example i w_i times, so its coefficients scale with 1/sum(w) where they scaled with 1/n.

Two cases have exact oracles:

* Losses that decompose over examples (``Loss.decomposes``, the error rate): any non-negative weights.
  Each example's most violated label does not depend on the others, so the oracle is the unweighted one
  with each example's share of Delta and Psi scaled by w_i n / sum(w).
* Every other loss: whole-number weights. The oracle runs on the sum(w) copies (``np.repeat``) and adds
  the copies' coefficients back per example, so it is the loss's own exact oracle on the repeated data
  and costs what that oracle costs on sum(w) examples. With fractional weights a labeling's weighted
  table is a subset-sum of the weights: the most violated labeling of, e.g., weighted F1 is a knapsack
  problem, so they are refused rather than answered inexactly (scale them to whole numbers instead).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .base import Loss

__all__ = ["SampleWeighted", "check_frequency_weights"]

# The oracle of a loss that does not decompose holds sum(w) copies (an index and two float vectors, 24
# bytes each): 2^28 copies are 6 GB.
MAX_COPIES = 2 ** 28


def check_frequency_weights(sample_weight: np.ndarray, loss: Loss) -> np.ndarray:
    """``sample_weight`` (validated float64, non-negative) as the loss can take it: float64 for a loss
    that decomposes over examples, int64 whole numbers otherwise (ValueError naming the first fraction)."""
    if not sample_weight.sum() > 0:
        raise ValueError("sample_weight is zero everywhere: at least one example needs a positive weight.")
    if getattr(loss, "decomposes", False):
        return sample_weight
    fractional = np.flatnonzero(sample_weight != np.round(sample_weight))
    if fractional.size:
        i = int(fractional[0])
        raise ValueError(f"sample_weight[{i}] = {float(sample_weight[i])!r} is not a whole number: with the "
                         f"{loss.name!r} loss a weight is a number of copies of its example (only the 'error' "
                         "loss, which decomposes over examples, takes fractional weights); scale the weights to "
                         "whole numbers.")
    total = float(sample_weight.sum())
    if total > MAX_COPIES:
        raise ValueError(f"sample_weight sums to {total:.4g}: with the {loss.name!r} loss the oracle works on that "
                         f"many copies of the examples (at most {MAX_COPIES:.4g}); scale the weights down.")
    return sample_weight.astype(np.int64)


class SampleWeighted(Loss):
    """``loss`` on weighted examples (see the module docstring): what :meth:`structfs.StructSVM.fit` trains
    with when given ``sample_weight``.

    Parameters
    ----------
    loss : Loss
        The loss measured on the weighted examples.
    sample_weight : array of shape (n_samples,)
        Non-negative weights; whole numbers unless ``loss.decomposes`` (see
        :func:`check_frequency_weights`).

    Examples
    --------
    Weight 2 is the example twice:

    >>> import numpy as np
    >>> from structfs.losses import SampleWeighted, get_loss
    >>> y, s = np.array([1.0, 1.0, -1.0]), np.array([0.5, -0.2, 0.3])
    >>> weighted = SampleWeighted(get_loss("f1"), np.array([2, 1, 1]))
    >>> round(weighted.score(y, s), 4) == round(get_loss("f1").score(np.repeat(y, [2, 1, 1]),
    ...                                                           np.repeat(s, [2, 1, 1])), 4)
    True
    """

    def __init__(self, loss: Loss, sample_weight: np.ndarray) -> None:
        if not isinstance(loss, Loss):
            raise TypeError(f"loss must be a structfs Loss, got {loss!r}.")
        weights = np.asarray(sample_weight, dtype=np.float64)
        if weights.ndim != 1 or not np.all(np.isfinite(weights)) or np.any(weights < 0):
            raise ValueError("sample_weight must be a 1-d array of finite, non-negative numbers.")
        self.loss: Any = loss        # a Loss; the error rate's weighted_* methods where it has them
        self.sample_weight = check_frequency_weights(weights, loss)
        self.name = loss.name
        self.ranks_only = loss.ranks_only
        self.is_contingency = loss.is_contingency
        if getattr(loss, "decomposes", False):
            self._copies = None
            # the compiled loop runs weighted fits too where the loss compiles its weighted oracle
            self.jit_oracle = getattr(loss, "weighted_jit_oracle", None)
        else:               # copy j of the repeated data is a copy of example _copies[j]
            self._copies = np.repeat(np.arange(weights.shape[0]), self.sample_weight)

    @property
    def params(self) -> dict[str, Any]:
        return self.loss.params

    @property
    def jit_params(self) -> np.ndarray:
        """The weights, which ``jit_oracle`` (the loss's weighted oracle, compiled) takes as settings."""
        return np.asarray(self.sample_weight, dtype=np.float64)

    def _check_length(self, y: np.ndarray) -> None:
        if y.shape[0] != self.sample_weight.shape[0]:
            raise ValueError(f"sample_weight has {self.sample_weight.shape[0]} entries but y has {y.shape[0]}.")

    def _check_classes(self, y: np.ndarray) -> None:
        self._check_length(y)
        if self._copies is None:
            self.loss._check_classes(y[self.sample_weight > 0])
        else:
            self.loss._check_classes(y[self._copies])

    def oracle(self, y: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, float]:
        if self._copies is None:
            return self.loss.weighted_oracle(y, s, self.sample_weight)
        copies = self._copies
        coef, delta = self.loss.oracle(y[copies], s[copies])
        return np.bincount(copies, weights=coef, minlength=y.shape[0]), delta

    def _score(self, y: np.ndarray, s: np.ndarray) -> float:
        if self._copies is None:
            return self.loss.weighted_score(y, s, self.sample_weight)
        return self.loss._score(y[self._copies], s[self._copies])

    def best_cut(self, y: np.ndarray, s: np.ndarray) -> float:
        """The loss's best cut of the weighted examples' scores (copies tie, so no cut splits them)."""
        if self._copies is None:
            return self.loss.weighted_best_cut(y, s, self.sample_weight)
        return self.loss.best_cut(y[self._copies], s[self._copies])

    def __repr__(self) -> str:
        return f"SampleWeighted({self.loss!r}, <{self.sample_weight.shape[0]} weights>)"

