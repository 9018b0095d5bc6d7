"""What a search scores: the loss's own measure by default, or any scikit-learn scorer."""
import numpy as np

from ..metrics import MEASURES, StructScorer


class _LossScorer:
    """The loss's own measure as a scorer on scikit-learn's 0-1 scale (``loss.score`` / 100; greater is
    better)."""

    def __init__(self, loss):
        self.loss = loss

    def __call__(self, estimator, X, y):
        y_pm = np.where(np.asarray(y) == estimator.classes_[1], 1.0, -1.0)
        return self.loss.score(y_pm, estimator.decision_function(X)) / 100.0


def check_scoring(scoring, loss):
    """A scorer(estimator, X, y): None -> the loss's own measure; a structfs measure name; any
    scikit-learn scorer name or callable. ValueError naming ``scoring`` otherwise."""
    if scoring is None:
        return _LossScorer(loss)
    if callable(scoring):
        return scoring
    if isinstance(scoring, str):
        if scoring in MEASURES:
            return StructScorer(scoring)
        from sklearn.metrics import get_scorer

        try:
            return get_scorer(scoring)
        except ValueError:
            raise ValueError(f"scoring={scoring!r} is unknown; use a structfs measure ({', '.join(MEASURES)}), "
                             "a scikit-learn scorer name, a callable scorer(estimator, X, y), or None for the "
                             "loss's own measure.") from None
    raise ValueError(f"scoring must be None, a string or a callable scorer, got {scoring!r}.")
