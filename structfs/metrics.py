"""Performance measures on decision scores, in percent (as svm_perf reports them), and scikit-learn
scorers for them on scikit-learn's 0-1 scale.

All measures take true labels (``{-1,+1}``, ``{0,1}`` or bool) and real-valued decision scores:

* F1 / F_beta / accuracy / error rate label an example positive when its score is > 0;
* Prec@k / Rec@k label the ``k`` highest scores positive; PRBEP is the precision of the top-P
  scores (P = number of positives), where precision = recall. Where the k-th highest score is tied,
  the tied examples share the remaining places: the measure is its average over every order of the
  ties (as scikit-learn's ranking measures treat ties), never a function of the examples' order;
* the operating points (precision at recall >= r, recall at precision >= p, true-positive rate at
  false-positive rate <= f) are read off the ranking: the best value of the measure over the cuts
  that meet the constraint, a cut never splitting tied scores;
* ROC-AUC counts tied positive/negative pairs as one half;
* average precision and the partial ROC area are scikit-learn's (``average_precision_score``; the
  area under the ROC curve over false-positive rates [0, beta], interpolated at beta as
  ``roc_auc_score(max_fpr=beta)`` does before its McClish standardisation), the partial area divided
  by beta so that 100 is a perfect ranking.

These are exactly ``100 - Delta`` of the corresponding losses in :mod:`structfs.losses` (for "ap"
and "pauc" on untied scores; "pauc" when beta N is a whole number of negatives).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.stats import rankdata

from ._validation import check_binary_labels, check_positive_float, check_positive_int, check_scores

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

__all__ = [
    "contingency_table", "f1", "fbeta", "accuracy", "error_rate", "precision_at_k", "recall_at_k",
    "prbep", "roc_auc", "average_precision", "partial_auc", "precision_at_recall",
    "recall_at_precision", "tpr_at_fpr", "resolve_k", "resolve_beta", "MEASURES", "get_scorer",
    "StructScorer", "check_rate", "min_true_positives", "max_false_positives", "max_false_positives_at_precision",
]


def _prepare(y: ArrayLike, s: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    y = check_binary_labels(y, "y_true")
    return y, check_scores(s, y.shape[0], "scores")


def contingency_table(y_true: ArrayLike, y_pred: ArrayLike) -> tuple[int, int, int, int]:
    """(a, b, c, d) = (TP, FP, FN, TN) of two -1/+1 labelings."""
    y_true = check_binary_labels(y_true, "y_true")
    y_pred = check_binary_labels(y_pred, "y_pred")
    if y_pred.shape != y_true.shape:
        raise ValueError(f"y_pred has length {y_pred.shape[0]} but y_true has {y_true.shape[0]}.")
    tp = int(np.count_nonzero((y_true > 0) & (y_pred > 0)))
    fp = int(np.count_nonzero((y_true < 0) & (y_pred > 0)))
    fn = int(np.count_nonzero((y_true > 0) & (y_pred < 0)))
    tn = y_true.shape[0] - tp - fp - fn
    return tp, fp, fn, tn


def fbeta_from_table(a: ArrayLike, b: ArrayLike, c: ArrayLike, beta2: float) -> np.ndarray:
    """F_beta in [0, 1] from TP/FP/FN counts (0 where there is no true positive); array-friendly."""
    a = np.asarray(a, dtype=np.float64)
    num = (1.0 + beta2) * a
    den = num + np.asarray(b, dtype=np.float64) + beta2 * np.asarray(c, dtype=np.float64)
    return np.divide(num, den, out=np.zeros(np.broadcast(num, den).shape), where=a > 0)


def fbeta_of_counts(a: int, b: int, c: int, beta2: float) -> float:
    """:func:`fbeta_from_table` of one table, by float arithmetic: the same operations in the same order,
    so the same value, without the array calls (a search scores every point of every path by it)."""
    num = (1.0 + beta2) * a
    return num / (num + b + beta2 * c) if a > 0 else 0.0


def _table_at_sign(y: np.ndarray, s: np.ndarray) -> tuple[int, int, int, int]:
    pred = s > 0
    pos = y > 0
    a = int(np.count_nonzero(pos & pred))
    b = int(np.count_nonzero(~pos & pred))
    c = int(np.count_nonzero(pos & ~pred))
    return a, b, c, y.shape[0] - a - b - c


def fbeta(y_true: ArrayLike, scores: ArrayLike, beta: float = 1.0) -> float:
    """F_beta (percent) of the labeling sign(scores)."""
    beta = check_positive_float(beta, "beta")
    y, s = _prepare(y_true, scores)
    a, b, c, _ = _table_at_sign(y, s)
    return 100.0 * float(fbeta_from_table(a, b, c, beta * beta))


def f1(y_true: ArrayLike, scores: ArrayLike) -> float:
    """F1 (percent) of the labeling sign(scores); 0 when there is no true positive."""
    return fbeta(y_true, scores, 1.0)


def accuracy(y_true: ArrayLike, scores: ArrayLike) -> float:
    """Percent of examples whose label is the sign of their score (a score of 0 counts as negative)."""
    y, s = _prepare(y_true, scores)
    a, b, c, d = _table_at_sign(y, s)
    return 100.0 * (a + d) / y.shape[0]


def error_rate(y_true: ArrayLike, scores: ArrayLike) -> float:
    """Percent of examples whose label is not the sign of their score: 100 - accuracy."""
    return 100.0 - accuracy(y_true, scores)


def resolve_k(k: int | None, k_frac: float | None, n_pos: int, n: int, default_frac: float,
              above_n: bool = False) -> int:
    """The k of Prec@k/Rec@k: explicit ``k``, else ``max(1, floor(k_frac * n_pos))`` as svm_perf.

    With neither given, ``default_frac`` applies (svm_perf's defaults: 0.5 for Prec@k, 2 for Rec@k).
    ``above_n``: k may exceed n (Rec@k: the top k are then all the examples).
    """
    if k is not None and k_frac is not None:
        raise ValueError("Give either k or k_frac, not both.")
    if k is None:
        frac = default_frac if k_frac is None else check_positive_float(k_frac, "k_frac")
        k = max(1, int(np.floor(frac * n_pos)))
    else:
        k = check_positive_int(k, "k")
    if k < 1 or (k > n and not above_n):
        raise ValueError(f"k={k} is outside 1..n (n={n}); choose k (or k_frac) so that 1 <= k <= n.")
    return k


def top_k_hits(y: np.ndarray, s: np.ndarray, k: int) -> float:
    """Positives among the k highest scores; where the k-th score ties with others, the tied block
    counts its share (positives in the block x places left / block size): the expected count over
    every order of the ties, so the measure never depends on the examples' order. k >= n: all of them
    (Rec@k allows k beyond n, where every example is among the top k)."""
    if k >= s.shape[0]:
        return float(np.count_nonzero(y > 0))
    threshold = np.partition(s, s.shape[0] - k)[s.shape[0] - k]
    above, tied = s > threshold, s == threshold
    n_above = int(np.count_nonzero(above))
    hits = float(np.count_nonzero(y[above] > 0))
    return hits + (k - n_above) * np.count_nonzero(y[tied] > 0) / np.count_nonzero(tied)


def precision_at_k(y_true: ArrayLike, scores: ArrayLike, k: int | None = None, k_frac: float | None = None) -> float:
    """Percent of positives among the k highest scores; k as :func:`resolve_k` (default: half the
    positives, as svm_perf). Ties at the k-th score count their block's share of positives."""
    y, s = _prepare(y_true, scores)
    k = resolve_k(k, k_frac, int(np.count_nonzero(y > 0)), y.shape[0], 0.5)
    return 100.0 * top_k_hits(y, s, k) / k


def recall_at_k(y_true: ArrayLike, scores: ArrayLike, k: int | None = None, k_frac: float | None = None) -> float:
    """Percent of the positives found among the k highest scores; k as :func:`resolve_k` (default: twice
    the positives, as svm_perf; k may exceed n). Ties at the k-th score count their block's share."""
    y, s = _prepare(y_true, scores)
    n_pos = int(np.count_nonzero(y > 0))
    if n_pos == 0:
        raise ValueError("y_true has no positive example; Rec@k needs at least one.")
    k = resolve_k(k, k_frac, n_pos, y.shape[0], 2.0, above_n=True)
    return 100.0 * top_k_hits(y, s, k) / n_pos


def prbep(y_true: ArrayLike, scores: ArrayLike) -> float:
    """Precision (= recall) of the top-P scores, P the number of positives."""
    y, s = _prepare(y_true, scores)
    n_pos = int(np.count_nonzero(y > 0))
    if n_pos == 0:
        raise ValueError("y_true has no positive example; PRBEP needs at least one.")
    return 100.0 * top_k_hits(y, s, n_pos) / n_pos


def roc_auc(y_true: ArrayLike, scores: ArrayLike) -> float:
    """Area under the ROC curve in percent; tied positive/negative pairs count one half."""
    y, s = _prepare(y_true, scores)
    pos = y > 0
    n_pos = int(np.count_nonzero(pos))
    n_neg = y.shape[0] - n_pos
    if n_pos == 0 or n_neg == 0:
        raise ValueError("y_true must contain both classes for ROC-AUC.")
    ranks = rankdata(s)
    return 100.0 * (ranks[pos].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg)


def _ranked_counts(y: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """True and false positives above each distinct score threshold, highest threshold first."""
    order = np.argsort(-s, kind="stable")
    s_sorted, pos_sorted = s[order], y[order] > 0
    ends = np.flatnonzero(np.diff(s_sorted) != 0)            # last index of every group of tied scores
    ends = np.append(ends, s_sorted.shape[0] - 1)
    tps = np.cumsum(pos_sorted)[ends]
    return tps, ends + 1 - tps


def average_precision(y_true: ArrayLike, scores: ArrayLike) -> float:
    """Average precision in percent: sum over thresholds of (recall gained) x precision, tied scores
    forming one threshold -- scikit-learn's ``average_precision_score``."""
    y, s = _prepare(y_true, scores)
    n_pos = int(np.count_nonzero(y > 0))
    if n_pos == 0:
        raise ValueError("y_true has no positive example; average precision needs at least one.")
    tps, fps = _ranked_counts(y, s)
    recall_gain = np.diff(np.concatenate(([0], tps))) / n_pos
    return 100.0 * float(np.sum(recall_gain * tps / (tps + fps)))


def resolve_beta(beta: float, name: str = "beta") -> float:
    """beta of the partial ROC area (the largest false-positive rate counted): a number in (0, 1];
    ValueError naming ``name`` otherwise."""
    return check_rate(beta, name)


def partial_auc(y_true: ArrayLike, scores: ArrayLike, beta: float = 0.1) -> float:
    """ROC area over false-positive rates [0, beta] divided by beta, in percent (100: every positive
    above the top beta-fraction of the negatives). Tied scores give a diagonal ROC segment, and the
    curve is interpolated at beta, as in scikit-learn's ``roc_auc_score(max_fpr=beta)``, which then
    reports 50 (1 + (A - beta^2/2) / (beta - beta^2/2)) for the unnormalised area A = beta *
    partial_auc / 100 (McClish's standardisation); beta = 1 is the ROC area."""
    beta = resolve_beta(beta)
    y, s = _prepare(y_true, scores)
    n_pos = int(np.count_nonzero(y > 0))
    n_neg = y.shape[0] - n_pos
    if n_pos == 0 or n_neg == 0:
        raise ValueError("y_true must contain both classes for the partial ROC area.")
    tps, fps = _ranked_counts(y, s)
    fpr = np.concatenate(([0.0], fps / n_neg))
    tpr = np.concatenate(([0.0], tps / n_pos))
    stop = int(np.searchsorted(fpr, beta, side="right"))
    if stop < fpr.shape[0]:                  # cut the curve at beta, interpolating its segment there
        tpr = np.append(tpr[:stop], np.interp(beta, fpr[stop - 1:stop + 1], tpr[stop - 1:stop + 1]))
        fpr = np.append(fpr[:stop], beta)
    area = float(np.sum(np.diff(fpr) * (tpr[1:] + tpr[:-1]) / 2.0))
    return 100.0 * area / beta


# Operating points: integer forms of the constraints, rounded so that r * P = 9.000000000000002 still
# asks for 9 true positives (the tolerance is far below one example).
_ROUNDING = 1e-9


def min_true_positives(recall: ArrayLike, n_pos: ArrayLike) -> np.ndarray:
    """The fewest true positives that reach recall ``recall`` among ``n_pos`` positives: ceil(recall P)."""
    return np.ceil(np.multiply(recall, n_pos) - _ROUNDING).astype(np.int64)


def max_false_positives(fpr: ArrayLike, n_neg: ArrayLike) -> np.ndarray:
    """The most false positives a false-positive rate ``fpr`` allows among ``n_neg`` negatives: floor(fpr N)."""
    return np.floor(np.multiply(fpr, n_neg) + _ROUNDING).astype(np.int64)


def max_false_positives_at_precision(precision: float, tp: ArrayLike) -> np.ndarray:
    """The most false positives that keep precision ``precision`` with ``tp`` true positives:
    floor(tp (1 - p) / p), i.e. tp / (tp + fp) >= p."""
    return np.floor(np.multiply(tp, (1.0 - precision) / precision) + _ROUNDING).astype(np.int64)


def check_rate(value: Any, name: str, allow_zero: bool = False) -> float:
    """A rate in (0, 1] (or [0, 1] with ``allow_zero``) as a float; ValueError naming ``name`` otherwise."""
    low = "[0" if allow_zero else "(0"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a number in {low}, 1], got {value!r}.")
    value = float(value)
    if not ((0.0 <= value if allow_zero else 0.0 < value) and value <= 1.0):
        raise ValueError(f"{name} must be in {low}, 1], got {value!r}.")
    return value


def _cuts(y_true: ArrayLike, scores: ArrayLike, what: str) -> tuple[np.ndarray, np.ndarray, int, int]:
    """(true positives, false positives, P, N) above every cut of the ranking: the empty cut first, then
    after each group of tied scores (a cut never splits a tie, so no measure depends on the order of
    tied examples); ValueError naming the measure ``what`` when there is no positive."""
    y, s = _prepare(y_true, scores)
    tps, fps = _ranked_counts(y, s)
    if tps[-1] == 0:
        raise ValueError(f"y_true has no positive example; {what} needs at least one.")
    return (np.concatenate(([0], tps)), np.concatenate(([0], fps)), int(tps[-1]), int(fps[-1]))


def precision_at_recall(y_true: ArrayLike, scores: ArrayLike, recall: float = 0.9) -> float:
    """The best precision (percent) of a cut of the ranking whose recall is at least ``recall``:
    precision at the operating point "recall >= r" (the cut below every example always qualifies)."""
    recall = check_rate(recall, "recall")
    tp, fp, P, _ = _cuts(y_true, scores, "precision at recall")
    ok = tp >= min_true_positives(recall, P)
    return 100.0 * float(np.max(tp[ok] / (tp[ok] + fp[ok])))


def recall_at_precision(y_true: ArrayLike, scores: ArrayLike, precision: float = 0.9) -> float:
    """The best recall (percent) of a cut of the ranking with at least one predicted positive and
    precision at least ``precision``; 0 where no cut reaches that precision."""
    precision = check_rate(precision, "precision")
    tp, fp, P, _ = _cuts(y_true, scores, "recall at precision")
    ok = (tp + fp >= 1) & (fp <= max_false_positives_at_precision(precision, tp))
    return 100.0 * float(np.max(tp[ok], initial=0)) / P


def tpr_at_fpr(y_true: ArrayLike, scores: ArrayLike, fpr: float = 0.01) -> float:
    """The best true-positive rate (recall, percent) of a cut of the ranking whose false-positive rate
    is at most ``fpr``: the ROC curve's height at ``fpr`` read off its steps (no interpolation)."""
    fpr = check_rate(fpr, "fpr", allow_zero=True)
    tp, fp, P, N = _cuts(y_true, scores, "the true-positive rate")
    ok = fp <= max_false_positives(fpr, N)
    return 100.0 * float(np.max(tp[ok])) / P


MEASURES = {
    "f1": f1,
    "fbeta": fbeta,
    "accuracy": accuracy,
    "error": error_rate,
    "prec@k": precision_at_k,
    "rec@k": recall_at_k,
    "prbep": prbep,
    "auc": roc_auc,
    "ap": average_precision,
    "pauc": partial_auc,
    "prec@rec": precision_at_recall,
    "rec@prec": recall_at_precision,
    "tpr@fpr": tpr_at_fpr,
}
_GREATER_IS_BETTER = {"error": False}


def _copies(sample_weight: ArrayLike, n: int) -> np.ndarray:
    """Row i repeated ``sample_weight[i]`` times, as indices: a measure of weighted examples is the measure
    of their copies (ValueError for weights that are not whole non-negative numbers)."""
    weights = np.asarray(sample_weight, dtype=np.float64)
    if weights.shape != (n,) or not np.all(np.isfinite(weights)) or np.any(weights < 0) \
            or np.any(weights != np.round(weights)):
        raise ValueError(f"sample_weight must hold {n} whole non-negative numbers (a weight is a number of copies "
                         "of its example).")
    return np.repeat(np.arange(n), weights.astype(np.int64))


class StructScorer:
    """A scikit-learn scorer ``scorer(estimator, X, y)`` for a structfs measure, on scikit-learn's 0-1
    scale (the measure functions above return percent; a scorer returns that / 100), so it mixes with
    scikit-learn's own scorers in ``GridSearchCV(scoring={...})`` or ``cross_validate``.

    It maps ``y`` to -1/+1 with ``pos_label`` as the positive class (scikit-learn's meaning; None: the
    estimator's ``classes_[1]``, the class of positive decision values) and scores
    ``estimator.decision_function(X)`` (negated where ``pos_label`` is ``classes_[0]``), so it works with
    any binary linear classifier. The error rate is negated (scikit-learn maximises scores).
    ``sample_weight`` (whole numbers) counts each example that many times.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.model_selection import cross_val_score
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from sklearn.svm import LinearSVC
    >>> from structfs.metrics import get_scorer
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> scores = cross_val_score(make_pipeline(StandardScaler(), LinearSVC()), X, y, cv=3,
    ...                          scoring=get_scorer("prbep"))
    >>> bool(((0 <= scores) & (scores <= 1)).all())     # scikit-learn's 0-1 scale
    True
    """

    def __init__(self, measure: str, pos_label: Any = None, **params: Any) -> None:
        if measure not in MEASURES:
            raise ValueError(f"Unknown measure {measure!r}; known measures: {sorted(MEASURES)}.")
        self.measure = measure
        self.pos_label = pos_label
        self.params = params

    def __call__(self, estimator: Any, X: Any, y: ArrayLike, sample_weight: ArrayLike | None = None) -> float:
        y = np.asarray(y)
        classes = getattr(estimator, "classes_", None)
        scores = np.asarray(estimator.decision_function(X), dtype=np.float64).ravel()
        if classes is not None and len(classes) == 2:
            positive = classes[1] if self.pos_label is None else self.pos_label
            if not np.any(classes == positive):
                raise ValueError(f"pos_label={positive!r} is not a class of the estimator; its classes are "
                                 f"{list(classes)}.")
            y_pm = np.where(y == positive, 1.0, -1.0)
            if positive == classes[0]:
                scores = -scores
        elif self.pos_label is not None:
            y_pm = np.where(y == self.pos_label, 1.0, -1.0)
        else:
            y_pm = check_binary_labels(y)
        if sample_weight is not None:               # weight w: the example w times (whole numbers)
            copies = _copies(sample_weight, y_pm.shape[0])
            y_pm, scores = y_pm[copies], scores[copies]
        value = MEASURES[self.measure](y_pm, scores, **self.params) / 100.0
        return value if _GREATER_IS_BETTER.get(self.measure, True) else -value

    def __repr__(self) -> str:
        extra = "" if self.pos_label is None else f", pos_label={self.pos_label!r}"
        extra += "".join(f", {k}={v!r}" for k, v in self.params.items())
        return f"StructScorer({self.measure!r}{extra})"


def get_scorer(measure: str, pos_label: Any = None, **params: Any) -> StructScorer:
    """Scorer for ``GridSearchCV(scoring=get_scorer("f1"))`` on the 0-1 scale; measures as in
    :data:`MEASURES`, of the class ``pos_label`` (None: the estimator's ``classes_[1]``)."""
    return StructScorer(measure, pos_label=pos_label, **params)
