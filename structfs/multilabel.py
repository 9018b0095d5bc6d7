"""Many labels under one measure and one feature budget: MultiLabelStructSVM and MultiLabelStructSVMCV.

An indicator matrix Y (n documents x L labels) makes n L (document, label) decisions. The joint model
has one weight vector per label, w_l, and scores decision (i, l) by w_l . x_i + b. Written as one
binary problem, decision (i, l) is row i L + l of the Kronecker product X (x) I_L, whose column j L + l
is label l's weight on input feature j, and the joint feature map of a labeling of all n L decisions is
the binary one on those rows. So

* ``average="micro"``: ONE structured loss over all n L decisions (micro-F1 is the F1 of their pooled
  contingency table), solved exactly as a binary problem on the expanded rows: the same oracle, the
  same certificate;
* ``average="macro"``: the mean of the per-label losses, Delta = (1/L) sum_l Delta_l, whose most
  violated output is every label's own most violated labeling (the labels' terms are separate), with
  Psi scaled by 1/L (:class:`LabelwiseLoss`); the labels are still solved jointly, sharing the budget;
* one budget shared by all labels: input feature j is the group of its L weights (one column per
  label), and feature generation counts groups (:class:`structfs.solvers.GroupBSupport`), so "these
  100 words serve every label". The features are chosen as StructSVMCV chooses them, in rounds of
  budget // 5 groups (at least one) up to ``budget``, and the model is refitted without budget on
  them (StructSVM's debiasing ``refit``, which undoes the norm's shrinkage).

A 1-D class vector (a multi-class problem, one class per document) is taken as its one-hot form, and
the model then gives every document one class: ``predict`` marks each row's top-scoring label, and the
search chooses C and the budget by the measure of those decisions (:class:`TopLabelScorer`). The joint
model's scores share one scale (one problem, one intercept), which is what makes its top label a good
class: on R8 as 8 classes the top label gained 0.9 micro-F1 over the cut at 0, against 0.2 for
one-vs-rest structural SVMs' (the benchmarks page, "Many labels").

The intercept b is the solver's bias feature, one for all labels (``intercept_`` repeats it): the
fitted model is the joint problem's own, the one its search scores. A refit with an intercept per label
learned nothing more on the benchmarks (R8 as 8 classes and a synthetic 10-label problem, micro- and
macro-F1 equal or lower) and cost a second fit.

Memory: the expanded matrix holds L copies of X's nonzeros. Its interleaved layout (a document's L
decisions adjacent, a feature's L weights adjacent) is what lets the solver's compiled passes read one
copy and update the L labels together (:class:`structfs.solvers.data.ColumnCache`'s ``label_stride``).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from . import _defaults
from ._validation import MatrixLike, check_positive_int, keeps_state_on_failure
from .estimators import StructSVM
from .losses import Loss, get_loss

if TYPE_CHECKING:
    from numpy.typing import ArrayLike
    from typing_extensions import Self

__all__ = ["LabelwiseLoss", "MultiLabelStructSVM", "MultiLabelStructSVMCV", "TopLabelScorer", "label_decisions",
           "top_label"]

_AVERAGES = ("micro", "macro")


class LabelwiseLoss(Loss):
    """The mean over L labels of a binary loss, for document-major stacked decisions: rows l, l + L,
    l + 2 L, ... are label l's n decisions. Its most violated output is each label's own (the terms are separate),
    with every label's Psi coefficients divided by L; its measure is the mean of the labels' measures.

    Examples
    --------
    >>> import numpy as np
    >>> from structfs.multilabel import LabelwiseLoss
    >>> loss = LabelwiseLoss("f1", n_labels=2)
    >>> y = np.array([1.0, -1.0, -1.0, 1.0, 1.0, 1.0])    # label 0: rows 0, 2, 4; label 1: rows 1, 3, 5
    >>> s = np.array([1.0, -1.0, -1.0, 1.0, -1.0, 1.0])
    >>> round(loss.score(y, s), 2)                      # F1 66.67 for label 0, 100 for label 1
    83.33
    """

    def __init__(self, loss: str | Loss = "f1", n_labels: int = 1, loss_params: dict[str, Any] | None = None) -> None:
        self.loss = loss
        self.n_labels = n_labels
        self.loss_params = loss_params
        self.base = get_loss(loss, **(loss_params or {}))
        self.name = f"macro {self.base.name}"

    @property
    def params(self) -> dict[str, Any]:
        return {"loss": self.loss, "n_labels": self.n_labels, "loss_params": self.loss_params}

    def _blocks(self, v: np.ndarray) -> np.ndarray:
        if v.shape[0] % self.n_labels:
            raise ValueError(f"{v.shape[0]} decisions do not split into {self.n_labels} labels of equal size.")
        return v.reshape(-1, self.n_labels).T

    def _check_classes(self, y: np.ndarray) -> None:
        for block in self._blocks(y):
            self.base._check_classes(block)

    def oracle(self, y: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, float]:
        parts = [self.base.oracle(yl, sl) for yl, sl in zip(self._blocks(y), self._blocks(s))]
        coef = np.ravel(np.column_stack([c for c, _ in parts])) / self.n_labels
        return coef, float(np.mean([d for _, d in parts]))

    def _score(self, y: np.ndarray, s: np.ndarray) -> float:
        return float(np.mean([self.base._score(yl, sl) for yl, sl in zip(self._blocks(y), self._blocks(s))]))


def top_label(scores: np.ndarray) -> np.ndarray:
    """The (n, L) 0/1 matrix marking each row's largest score (the first where scores tie)."""
    decisions = np.zeros(scores.shape, dtype=np.int64)
    decisions[np.arange(scores.shape[0]), np.argmax(scores, axis=1)] = 1
    return decisions


def _top_label_signs(s: np.ndarray, n_labels: int) -> np.ndarray:
    """The joint problem's rows' scores ``s`` (document-major, ``n_labels`` per document) replaced by the
    +1/-1 decisions of each document's top label: what a single-label model's measure is taken on."""
    return np.where(np.ravel(top_label(np.asarray(s).reshape(-1, n_labels))) == 1, 1.0, -1.0)


def label_decisions(scores: np.ndarray, single_label: bool) -> np.ndarray:
    """The (n, L) 0/1 decisions of a multi-label model's scores: each row's top label for a model fitted
    on a class vector (``single_label``), else every label whose score is > 0."""
    return top_label(scores) if single_label else (scores > 0).astype(np.int64)


class TopLabelScorer:
    """A scorer of the joint problem's rows for a single-label (multi-class) search: each document's
    top-scoring label is its decision, and ``loss``'s measure of those n L decisions (0-1 scale) is
    the score, so that C and the budget are chosen by the decisions ``predict`` makes."""

    def __init__(self, loss: Loss, n_labels: int) -> None:
        self.loss, self.n_labels = loss, n_labels

    def __call__(self, estimator: Any, X: Any, y: np.ndarray) -> float:
        y_pm = np.where(np.asarray(y) == estimator.classes_[1], 1.0, -1.0)
        return self.loss.score(y_pm, _top_label_signs(estimator.decision_function(X), self.n_labels)) / 100.0


def indicator_matrix(Y: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """(Y as an (n, L) 0/1 int matrix, the labels' names): an indicator matrix as it is (labels 0..L-1),
    a 1-D multi-class vector as its one-hot form (labels the classes)."""
    Y = np.asarray(Y)
    if Y.ndim == 1:
        classes, codes = np.unique(Y, return_inverse=True)
        if classes.shape[0] < 2:
            raise ValueError(f"Y has a single class ({classes[0]!r}); give at least two classes or an indicator "
                             "matrix.")
        return np.eye(classes.shape[0], dtype=np.int64)[codes], classes
    if Y.ndim != 2:
        raise ValueError(f"Y must be an (n_samples, n_labels) 0/1 indicator matrix or a 1-D class vector; got "
                         f"{Y.ndim} dimensions.")
    if Y.dtype == bool:
        Y = Y.astype(np.int64)
    if not np.all(np.isin(Y, (0, 1))):
        raise ValueError("Y must be a 0/1 indicator matrix (scikit-learn's multi-label format): it holds values "
                         f"{np.setdiff1d(np.unique(Y), [0, 1])[:5].tolist()}.")
    empty = np.flatnonzero(Y.sum(axis=0) == 0)
    if empty.size:
        raise ValueError(f"Y: label(s) {empty[:10].tolist()} have no positive example; every label needs one.")
    return Y.astype(np.int64), np.arange(Y.shape[1])


def expand(X: MatrixLike, n_labels: int) -> sp.csr_matrix:
    """The (n L) x (m L) matrix X (x) I_L of the joint problem: row i L + l is document i for label l,
    column j L + l label l's weight on input feature j."""
    return sp.kron(sp.csr_matrix(X, dtype=np.float64), sp.identity(n_labels, format="csr"), format="csr")


def feature_groups(n_features: int, n_labels: int) -> np.ndarray:
    """The group of every column of :func:`expand` (without intercepts): input feature j is group j."""
    return np.repeat(np.arange(n_features), n_labels)


def _check_average(average: str) -> None:
    if average not in _AVERAGES:
        raise ValueError(f"average must be one of {_AVERAGES}, got {average!r}.")


def _check_budget(budget: int | None, name: str = "budget") -> int | None:
    return None if budget is None else check_positive_int(budget, name)


class _MultiLabelMixin:
    """What both estimators share: the joint problem's loss and rows, and the fitted weights read back."""

    # the parameters both estimators have
    loss: str | Loss
    average: str
    loss_params: dict[str, Any] | None
    bias: float

    def _joint_loss(self, n_labels: int) -> Loss:
        _check_average(self.average)
        if self.average == "macro":
            return LabelwiseLoss(self.loss, n_labels, self.loss_params)
        return get_loss(self.loss, **(self.loss_params or {}))

    def _prepare(self, X: MatrixLike, Y: ArrayLike) -> tuple[Any, np.ndarray]:
        X = validate_data(self, X, accept_sparse=["csr"], dtype=np.float64, ensure_all_finite=True)
        single_label = np.ndim(Y) == 1
        Y, self.classes_ = indicator_matrix(Y)
        self.single_label_ = single_label
        if Y.shape[0] != X.shape[0]:
            raise ValueError(f"X has {X.shape[0]} rows but Y has {Y.shape[0]}.")
        # document-major: document i's decisions are rows i L .. i L + L - 1
        return X, np.ravel(Y)

    def _read_weights(self, joint: Any, n_features: int) -> Self:
        """coef_ (L, m), intercept_ (L,), the shared features and the certificate from ``joint``, the
        fitted binary model of the joint problem (StructSVM or StructSVMCV on :func:`expand`'s rows)."""
        n_labels = len(self.classes_)
        coef = joint.coef_
        self.coef_ = np.asarray(coef.toarray() if sp.issparse(coef) else coef).reshape(n_features, n_labels).T.copy()
        self.intercept_ = np.full(n_labels, float(joint.intercept_[0]))
        self.selected_features_ = np.flatnonzero(np.any(self.coef_ != 0, axis=0))
        for name in ("objective_", "lower_bound_", "gap_", "n_iter_", "converged_"):
            if hasattr(joint, name):
                setattr(self, name, getattr(joint, name))
        return self

    def decision_function(self, X: MatrixLike) -> np.ndarray:
        """(n_samples, n_labels) scores; label l is predicted where its score is > 0."""
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse=["csr", "csc", "coo"], dtype=np.float64, reset=False)
        return np.asarray(X @ self.coef_.T) + self.intercept_

    def predict(self, X: MatrixLike) -> np.ndarray:
        """(n_samples, n_labels) 0/1 indicator matrix: 1 where the label's score is > 0; for a model fitted
        on a class vector (``single_label_``), 1 at each row's top-scoring label only (its class, one-hot:
        ``classes_[predict(X).argmax(axis=1)]`` are the class names)."""
        return label_decisions(self.decision_function(X), getattr(self, "single_label_", False))

    def score(self, X: MatrixLike, Y: ArrayLike) -> float:
        """The loss's measure of the decisions on X against Y on scikit-learn's 0-1 scale: micro-averaged
        (all decisions pooled) or macro-averaged (the labels' mean), as ``average`` says."""
        check_is_fitted(self)
        if np.ndim(Y) == 2:
            indicator = indicator_matrix(Y)[0]
        else:                                   # a class vector: its one-hot form over the fitted classes
            indicator = (np.asarray(Y)[:, None] == self.classes_[None, :]).astype(np.int64)
        y = np.where(np.ravel(indicator) == 1, 1.0, -1.0)
        s = np.ravel(self.decision_function(X))
        if getattr(self, "single_label_", False):      # the decisions predict makes
            s = _top_label_signs(s, indicator.shape[1])
        return self._joint_loss(indicator.shape[1]).score(y, s) / 100.0

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()         # type: ignore[misc]  # BaseEstimator's, next in the MRO
        tags.input_tags.sparse = True
        tags.target_tags.multi_output = True
        return tags


class MultiLabelStructSVM(_MultiLabelMixin, ClassifierMixin, BaseEstimator):
    """One structural SVM for many labels: a micro-averaged measure as one structured loss over every
    (document, label) decision, or the mean of the labels' losses, with one feature budget shared by
    all labels (see :mod:`structfs.multilabel`).

    Parameters
    ----------
    loss : str or structfs.losses.Loss, default="f1"
        The binary loss, applied to all decisions pooled (``average="micro"``) or to each label
        (``"macro"``).
    average : {"micro", "macro"}, default="micro"
    C : float, default=1000
        svm_perf's trade-off, for the joint problem's loss term.
    budget : int or None, default=None
        At most this many input features used by the labels together (None: no budget).
    bias : float, default=1.0
        Value of the intercept feature, which all labels share.
    loss_params : dict or None
        Extra parameters of the loss (e.g. ``{"beta": 2}`` for "fbeta").
    tol, max_iter, max_outer : as StructSVM's.

    Attributes
    ----------
    coef_ : ndarray (n_labels, n_features)
    intercept_ : ndarray (n_labels,)
    classes_ : the labels: 0..L-1 for an indicator matrix, the class names for a 1-D ``y``
    single_label_ : bool
        Whether ``y`` was a 1-D class vector: ``predict`` then marks each row's top-scoring label only.
    selected_features_ : sorted indices of the input features any label uses
    objective_, lower_bound_, gap_, n_iter_ : the joint problem's, as StructSVM's
    estimator_ : the StructSVM fitted on the joint problem's rows

    Examples
    --------
    >>> from sklearn.datasets import make_multilabel_classification
    >>> from structfs import MultiLabelStructSVM
    >>> X, Y = make_multilabel_classification(200, n_features=30, n_classes=4, random_state=0)
    >>> model = MultiLabelStructSVM(C=10, budget=8).fit(X, Y)
    >>> model.predict(X).shape, len(model.selected_features_) <= 8
    ((200, 4), True)
    """

    # Over 8 parameters: scikit-learn's convention, every setting a keyword that __init__ only stores.
    def __init__(self, loss: str | Loss = "f1", average: str = "micro", C: float = _defaults.C,
                 budget: int | None = None, bias: float = _defaults.BIAS, loss_params: dict[str, Any] | None = None,
                 tol: float = _defaults.TOL, max_iter: int = _defaults.MAX_ITER,
                 max_outer: int = _defaults.MAX_OUTER) -> None:
        self.loss = loss
        self.average = average
        self.C = C
        self.budget = budget
        self.bias = bias
        self.loss_params = loss_params
        self.tol = tol
        self.max_iter = max_iter
        self.max_outer = max_outer

    @keeps_state_on_failure
    def fit(self, X: MatrixLike, Y: ArrayLike) -> Self:
        """Fit on X (n_samples, n_features), dense or sparse, and Y an (n_samples, n_labels) 0/1 matrix or
        a 1-D class vector (its one-hot form)."""
        self._joint_loss(1)                 # checks average before any work
        budget = _check_budget(self.budget)
        X, y = self._prepare(X, Y)
        n_labels, m = len(self.classes_), X.shape[1]
        loss = self._joint_loss(n_labels)
        settings: dict[str, Any] = dict(loss=loss, C=self.C, bias=self.bias, tol=self.tol, max_iter=self.max_iter)
        if budget is not None and budget < m:
            per_round = max(1, budget // 5)
            joint = StructSVM(budget=per_round, groups=feature_groups(m, n_labels), max_outer=budget // per_round,
                              refit=self.C, **settings)
        else:
            joint = StructSVM(**settings)
        self.estimator_ = joint.fit(expand(X, n_labels), y)
        return self._read_weights(joint, m)


class MultiLabelStructSVMCV(_MultiLabelMixin, ClassifierMixin, BaseEstimator):
    """MultiLabelStructSVM with C and the shared budget chosen by cross-validation over documents
    (every fold holds all of a document's labels), by StructSVMCV on the joint problem's rows: the
    same grid, halving, selection rule and cut.

    Parameters
    ----------
    loss, average, bias, loss_params : as MultiLabelStructSVM's.
    max_features : int or None, default=None
        At most this many input features used by the labels together; the budgets of the grid are
        StructSVMCV's under that cap. None: its default budgets, and the unbudgeted model.
    Cs : sequence of float or None, default=None
        As StructSVMCV's (None: its default grid, per example of the joint problem).
    cv : int, default=3
        Folds over documents.
    n_jobs, verbose : as StructSVMCV's.

    Attributes
    ----------
    As MultiLabelStructSVM's (without ``estimator_``), and ``C_``, ``budget_`` (the input features of the
    chosen budgeted candidate; None: the unbudgeted one was chosen), ``cv_results_`` and ``best_score_``
    of the search on the joint problem, and ``search_``, that StructSVMCV: the fitted model is its
    refitted one, read per label.

    Examples
    --------
    >>> from sklearn.datasets import make_multilabel_classification
    >>> from structfs import MultiLabelStructSVMCV
    >>> X, Y = make_multilabel_classification(150, n_features=20, n_classes=3, random_state=0)
    >>> model = MultiLabelStructSVMCV(max_features=10).fit(X, Y)
    >>> len(model.selected_features_) <= 10
    True
    """

    # Over 8 parameters: scikit-learn's convention, every setting a keyword that __init__ only stores.
    def __init__(self, loss: str | Loss = "f1", average: str = "micro", max_features: int | None = None,
                 Cs: Sequence[float] | None = None, cv: int = 3, bias: float = _defaults.BIAS,
                 loss_params: dict[str, Any] | None = None, n_jobs: int | None = None, verbose: int = 0) -> None:
        self.loss = loss
        self.average = average
        self.max_features = max_features
        self.Cs = Cs
        self.cv = cv
        self.bias = bias
        self.loss_params = loss_params
        self.n_jobs = n_jobs
        self.verbose = verbose

    def _document_folds(self, Y01: np.ndarray, n_labels: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """StratifiedKFold over documents (by their rarest label), each fold's rows for every label."""
        from sklearn.model_selection import StratifiedKFold

        n = Y01.shape[0]
        folds = check_positive_int(self.cv, "cv (folds over documents)", low=2)
        frequency = Y01.sum(axis=0)
        rarest = np.where(Y01.any(axis=1), np.argmin(np.where(Y01 == 1, frequency, np.inf), axis=1), -1)
        counts = np.unique(rarest, return_counts=True)[1]
        splitter = StratifiedKFold(folds, shuffle=True, random_state=0)
        strata = rarest if counts.min() >= folds else np.zeros(n)

        def rows(documents: np.ndarray) -> np.ndarray:      # every label's decision of each document, in order
            return (np.sort(documents)[:, None] * n_labels + np.arange(n_labels)).ravel()

        return [(rows(tr), rows(te)) for tr, te in splitter.split(np.zeros((n, 1)), strata)]

    @keeps_state_on_failure
    def fit(self, X: MatrixLike, Y: ArrayLike) -> Self:
        """As MultiLabelStructSVM.fit, choosing C and the budget first."""
        from .model_selection import StructSVMCV, default_budgets

        self._joint_loss(1)
        max_features = _check_budget(self.max_features, "max_features")
        X, y = self._prepare(X, Y)
        Y01 = y.reshape(-1, len(self.classes_))
        n_labels, m = len(self.classes_), X.shape[1]
        loss = self._joint_loss(n_labels)
        # the budgets count groups, one per input feature; the cap counts columns, L per input feature
        search = StructSVMCV(loss=loss, Cs=self.Cs, cv=self._document_folds(Y01, n_labels),
                             max_features=None if max_features is None else max_features * n_labels,
                             budgets=None if max_features is None else default_budgets(max_features),
                             groups=feature_groups(m, n_labels), bias=self.bias, n_jobs=self.n_jobs,
                             verbose=self.verbose,
                             scoring=TopLabelScorer(loss, n_labels) if self.single_label_ else None)
        search.fit(expand(X, n_labels), y)
        self.search_ = search
        self.C_ = search.C_
        self.cv_results_ = search.cv_results_
        self.best_score_ = search.best_score_
        self._read_weights(search, m)
        self.budget_ = None if search.budget_ is None else int(self.selected_features_.shape[0])
        return self
