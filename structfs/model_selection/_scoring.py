"""What a search scores: the loss's own measure by default, or any scikit-learn scorer."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..losses import Loss, on_rows
from ..metrics import MEASURES, StructScorer


class _LossScorer:
    """The loss's own measure as a scorer on scikit-learn's 0-1 scale (``loss.score`` / 100; greater is
    better), of the class ``pos_label`` (None: ``classes_[1]``); of weighted examples (``sample_weight``)
    or averaged over queries (``qid``) where given."""

    def __init__(self, loss: Loss, pos_label: Any = None) -> None:
        self.loss, self.pos_label = loss, pos_label

    def __call__(self, estimator: Any, X: Any, y: Any, sample_weight: np.ndarray | None = None,
                 qid: np.ndarray | None = None) -> float:
        return self.of_decisions(estimator.classes_, estimator.decision_function(X), y, sample_weight, qid)

    def of_decisions(self, classes: np.ndarray, scores: np.ndarray, y: Any, sample_weight: np.ndarray | None = None,
                     qid: np.ndarray | None = None) -> float:
        """The score of a model with ``classes`` whose decision values on the rows of ``y`` are ``scores``
        (a search that keeps them scores a path point from the same values)."""
        positive = classes[1] if self.pos_label is None else self.pos_label
        y_pm = np.where(np.asarray(y) == positive, 1.0, -1.0)
        return on_rows(self.loss, sample_weight, qid).score(y_pm, scores if positive == classes[1] else -scores) / 100.0


def check_scoring(scoring: str | Callable[..., float] | None, loss: Loss, pos_label: Any = None) -> Callable[...,
                  float]:
    """A scorer(estimator, X, y): None -> the loss's own measure (of the class ``pos_label``); a structfs
    measure name; any scikit-learn scorer name or callable. ValueError naming ``scoring`` otherwise."""
    if scoring is None:
        return _LossScorer(loss, pos_label)
    if callable(scoring):
        return scoring
    if isinstance(scoring, str):
        if scoring in MEASURES:
            return StructScorer(scoring, pos_label=pos_label)
        from sklearn.metrics import get_scorer

        try:
            return get_scorer(scoring)
        except ValueError:
            raise ValueError(f"scoring={scoring!r} is unknown; use a structfs measure ({', '.join(MEASURES)}), "
                             "a scikit-learn scorer name, a callable scorer(estimator, X, y), or None for the "
                             "loss's own measure.") from None
    raise ValueError(f"scoring must be None, a string or a callable scorer, got {scoring!r}.")
