"""StructSVM: the scikit-learn estimator over the structured learner in :mod:`structfs.solvers`."""
from __future__ import annotations

import inspect
import warnings
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_array, check_is_fitted, validate_data

if TYPE_CHECKING:
    from numpy.typing import ArrayLike
    from typing_extensions import Self

from . import _defaults
from ._interrupt import interrupts_allowed
from ._validation import MAX_ABS_VALUE, MatrixLike, check_magnitude, is_dask_array, keeps_state_on_failure
from .losses import Loss, on_rows
from .losses.weighted import check_frequency_weights
from .problem import Problem, problem_of
from .solvers.data import is_row_blocks
from .solvers.interactions import check_pair_scoring, expand, pair_products, split_weights


def sparse_row_nonzeros(row: Any) -> tuple[np.ndarray, np.ndarray]:
    """(sorted unique indices, values) of the nonzeros of a sparse (1, m) row, from a canonicalised
    copy (the model's own coef_ is not touched); nothing of size m is built."""
    row = sp.csr_matrix(row, copy=True)
    row.sum_duplicates()
    row.eliminate_zeros()
    return row.indices.astype(np.int64), row.data


def _dot_sparse_row(X: Any, row: Any) -> np.ndarray:
    """X @ w for w a sparse (1, m) row, touching only X's entries and w's nonzeros: scipy's product
    (or column indexing) would build an index of all m columns -- 17 GB for hashed features in 2^31."""
    idx, values = sparse_row_nonzeros(row)
    if idx.size == 0:
        return np.zeros(X.shape[0])
    if not sp.issparse(X):
        return np.asarray(X)[:, idx] @ values
    X = X.tocoo()
    at = np.minimum(np.searchsorted(idx, X.col), idx.size - 1)
    weight = np.where(idx[at] == X.col, values[at], 0.0)
    return np.bincount(X.row, weights=X.data * weight, minlength=X.shape[0])


def _row_blocks_of_dask(X: Any) -> Any:
    """A dask array as row blocks on the current dask.distributed client (structfs.cluster); else X."""
    if not is_dask_array(X):
        return X
    from .cluster import DaskRowBlocks  # dask is optional: imported only for dask input

    return DaskRowBlocks.from_dask_array(X)


def nonzero_weights(w: Any) -> tuple[np.ndarray, np.ndarray]:
    """(sorted indices, values) of the nonzeros of weights as the solver returns them (an ndarray or
    a (1, m) CSR row)."""
    if sp.issparse(w):
        return sparse_row_nonzeros(w)
    idx = np.flatnonzero(w)
    return idx, w[idx]


def linear_attributes(w: Any) -> tuple[Any, np.ndarray]:
    """(coef_, selected_features_) of a linear model from the solver's weights: an ndarray (m,), or the
    (1, m) CSR row (sorted, no zeros) it returns for index spaces above ``solvers.data.MAX_DENSE_WEIGHTS``."""
    if sp.issparse(w):
        return w, w.indices.astype(np.int64)
    return w[None, :], np.flatnonzero(w)


def set_fitted_weights(model: Any, w: Any, intercept: float, classes: ArrayLike, n_features: int, pairs: Any = None,
                       groups: np.ndarray | None = None) -> Any:
    """The one place where a binary linear model's weights become its fitted attributes (a fit, a point
    of a search's path, a model file): ``coef_`` and ``selected_features_`` from ``w`` (as
    :func:`linear_attributes` takes it), ``intercept_`` from the float ``intercept``, ``classes_``,
    ``n_features_in_``; ``interactions_`` and ``interaction_coef_`` from ``pairs`` ((p, 2) feature
    pairs, their p weights; None: a linear model, and earlier ones are removed); ``selected_groups_``
    from the checked ``groups`` of the features (None: removed). Returns ``model``."""
    model.coef_, model.selected_features_ = linear_attributes(w)
    model.intercept_ = np.array([float(intercept)])
    model.classes_ = np.asarray(classes)
    model.n_features_in_ = int(n_features)
    fitted = {"interactions_": None if pairs is None else pairs[0],
              "interaction_coef_": None if pairs is None else pairs[1],
              "selected_groups_": None if groups is None else np.unique(groups[model.selected_features_])}
    for name, value in fitted.items():
        if value is not None:
            setattr(model, name, value)
        elif hasattr(model, name):
            delattr(model, name)
    return model


class NoFeaturesWarning(UserWarning):
    """A fit ended with no feature: every example gets the same score (model selection, which falls back
    to another loss then, filters this category)."""


def positive_class(classes: np.ndarray, pos_label: Any) -> Any:
    """The class a loss measures: ``pos_label``, or ``classes[1]`` when it is None (scikit-learn's
    convention); ValueError listing the classes for a label that is not one of them."""
    if pos_label is None:
        return classes[1]
    if not np.any(classes == pos_label):
        raise ValueError(f"pos_label={pos_label!r} is not a class of y; the classes are {classes.tolist()}.")
    return classes[np.flatnonzero(classes == pos_label)[0]]


class LinearBinaryMixin:
    """``decision_function``/``predict`` of a fitted binary linear model (``coef_``, ``intercept_``,
    ``classes_``) and its scikit-learn tags: shared by StructSVM and StructSVMCV."""

    coef_: Any
    intercept_: np.ndarray
    classes_: np.ndarray
    n_features_in_: int
    interaction_coef_: np.ndarray

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()         # type: ignore[misc]  # BaseEstimator's, next in the MRO
        tags.classifier_tags.multi_class = False
        tags.input_tags.sparse = True
        return tags

    def decision_function(self, X: MatrixLike) -> np.ndarray:
        """Decision values ``X @ coef_[0] + intercept_[0]`` (n_samples,); X dense, scipy.sparse, a
        shard directory's matrix or row blocks on a cluster."""
        check_is_fitted(self)
        X = _row_blocks_of_dask(X)
        if is_row_blocks(X):              # data on disk or on a cluster: one pass over its blocks
            if X.shape[1] != self.n_features_in_:
                raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__} is expecting "
                                 f"{self.n_features_in_} features as input.")
            linear = X.dot(*sparse_row_nonzeros(self.coef_))   # dense or sparse coef_
        else:
            X = validate_data(self, X, accept_sparse=True, dtype=[np.float64, np.float32], reset=False)
            dense = not sp.issparse(self.coef_)
            linear = np.asarray(X @ self.coef_[0]).ravel() if dense else _dot_sparse_row(X, self.coef_)
        pairs = getattr(self, "interactions_", None)
        if pairs is not None and pairs.shape[0]:     # + sum of interaction_coef_ * x_j * x_k
            linear = linear + np.asarray(pair_products(X, pairs) @ self.interaction_coef_).ravel()
        return linear + self.intercept_[0]

    def densify(self) -> Self:
        """``coef_`` as an ndarray (1, n_features), as scikit-learn's ``densify``; returns self."""
        check_is_fitted(self)
        if sp.issparse(self.coef_):
            self.coef_ = self.coef_.toarray()
        return self

    def sparsify(self) -> Self:
        """``coef_`` as a (1, n_features) CSR row, as scikit-learn's ``sparsify``; returns self."""
        check_is_fitted(self)
        if not sp.issparse(self.coef_):
            self.coef_ = sp.csr_matrix(self.coef_)
        return self

    def predict(self, X: MatrixLike) -> np.ndarray:
        """``classes_[1]`` where the decision value is > 0, else ``classes_[0]``.

        The contingency losses ("f1", "fbeta", "error", ...) learn this threshold: their optimum is
        the labelling by its sign. The ranking losses ("auc", "ap", "pauc", and "prec@k", "rec@k",
        "prbep", which rank the top k) learn an order only, so 0 is an arbitrary cut for them: use
        ``decision_function``, or move the cut with
        ``structfs.model_selection.best_threshold(get_loss("f1"), y, scores)`` on held-out scores (or
        scikit-learn's ``TunedThresholdClassifierCV``). There is no ``predict_proba``: the scores are
        margins, not probabilities (wrap the model in ``CalibratedClassifierCV`` for those).
        """
        scores = self.decision_function(X)
        return self.classes_[(scores > 0).astype(int)]


class LinearModel(LinearBinaryMixin, ClassifierMixin, BaseEstimator):
    """A fitted binary linear model given by its weights: what scorers need of one point of a sparsity
    path, without fitting an estimator. Build it with :meth:`from_weights`."""

    @classmethod
    def from_weights(cls, w: Any, intercept: float, classes: ArrayLike, interactions: np.ndarray | None = None,
                     interaction_coef: np.ndarray | None = None) -> LinearModel:
        """The model with weights ``w`` (as :func:`linear_attributes` takes them), the intercept, and
        optionally ``interactions`` (p, 2) with their weights ``interaction_coef``."""
        pairs = None if interactions is None else (interactions, interaction_coef)
        n_features = w.shape[1] if sp.issparse(w) else w.shape[0]
        return set_fitted_weights(cls(), w, intercept, classes, n_features, pairs)

    def decision_function(self, X: MatrixLike) -> np.ndarray:
        """As StructSVM's. The validation parts a search scores every path point on are in-memory float
        matrices of the right width, checked once by the search: they skip scikit-learn's input
        validation (about 1 ms a call, more than scoring a small fold)."""
        trusted = (isinstance(X, np.ndarray) or sp.issparse(X)) and X.ndim == 2 and X.dtype == np.float64
        if trusted and X.shape[1] == self.n_features_in_ and not sp.issparse(self.coef_) \
                and getattr(self, "interactions_", None) is None:
            return np.asarray(X @ self.coef_[0]).ravel() + self.intercept_[0]
        return super().decision_function(X)

    def fit(self, X: MatrixLike, y: ArrayLike) -> Self:
        raise TypeError("LinearModel holds given weights (LinearModel.from_weights) and is not fitted; use "
                        "StructSVM to learn them.")


class StructSVM(LinearBinaryMixin, ClassifierMixin, BaseEstimator):
    """Linear classifier trained on a multivariate loss, optionally under a feature budget.

    Solves SVMperf's 1-slack structural SVM (``budget=None``) or the budget-constrained problem of
    Mao & Tsang (FS^Delta_multi) with at most ``budget`` features in each group (the objective of
    :mod:`structfs.solvers.objective`).

    Parameters
    ----------
    loss : str or structfs.losses.Loss, default="f1"
        "error", "f1", "fbeta", "prec@k", "rec@k", "prbep", "auc", "ap", "pauc", or a loss object.
    C : float, default=1000.0
        Trade-off of the loss, with exactly the meaning of ``svm_perf_learn -c``. For the error loss
        it equals scikit-learn's ``LinearSVC(loss="hinge", C=C * 100 / n_samples)``. As for any SVM,
        scale the features first (columns of order one): on raw columns of size 1e3 the same C
        regularises 1e6 times less and the cutting planes need many more iterations.
    budget : int or None, default=None
        B, the feature budget: the regulariser is the squared B-support norm (d in [0,1]^m,
        sum(d) <= B). None, or B >= n_features, is the plain (SVMperf) problem.
    groups : array-like of int, shape (n_features,), or None, default=None
        A group label (a non-negative integer) for every feature: the budget then counts groups -- at
        most ``budget`` whole groups in each generated group, the regulariser the B-support norm of the
        groups' norms (FGM's group selection). Groups come from the data's structure: the bins of one
        histogram, the one-hot columns of one categorical variable, the expansion of one input feature.
        Needs a budget; ``max_features`` still counts features, and holds whole groups only.
    interactions : bool, default=False
        Also select products x_j * x_k (j < k) of two features, never forming the n x m^2 matrix of
        all of them: each generated group holds the ``budget`` columns -- features or products --
        with the largest scores, the products' found from the rows of X (work of the order of the
        sum over rows of their nonzeros squared). The selected pairs are ``interactions_``, their
        weights ``interaction_coef_``; ``coef_`` keeps the features' own weights and
        ``max_features`` counts both. Needs a budget; not with ``groups``. Dense X is scored with an
        m x m matrix (refused above 1 GiB: pass it sparse). Squares are not candidates.
    bias : float, default=1.0
        Value of the constant feature appended to every example (SVMperf's ``--b``); 0 for none.
        Its weight is regularised like the others but never counts against the budget or a group.
    loss_params : dict or None
        Extra parameters of a named loss, e.g. ``{"beta": 2}`` or ``{"k": 10}``.
    tol : float, default=0.01
        SVMperf's ``-e``: stop once the slack is provably within ``tol`` (percent) of optimal, i.e.
        ``objective_ - lower_bound_ <= C * tol``. SVMperf's default is 0.1; 0.01 gives a lower
        objective than SVMperf at about the same cost thanks to the stabilised cutting planes.
    outer_tol : float or None, default=None
        With a budget, FGM's relative-change rule: also stop generating feature groups once the
        restricted problem's optimum changes by less than this (relative) for two groups in a row.
        Off by default: it compares solves made to 1% and stopped fits early on solver noise. By
        default generation stops at a certificate (gap <= C * tol, or no unselected group violating
        the optimality condition by more than C * tol) or at the caps ``max_outer``/``max_features``;
        ``stop_`` says which.
    max_iter : int, default=2000
        Maximum number of cutting planes in all.
    max_outer : int, default=30
        Maximum number of feature groups generated (budgeted problem). As each group holds at most
        ``budget`` features, at most ``max_outer * budget`` features are selected: stopping the
        feature generation early (as FGM does) is the practical knob for sparsity and time; the
        optimum of the budgeted problem itself usually spreads over many groups.
    max_features : int or None, default=None
        Hard cap on the number of selected features (needs a budget). The weights live on the union
        of the generated groups' columns, so feature generation stops once that union holds
        ``max_features`` columns (the last group trimmed to its most violated new ones; with ``groups``,
        to its most violated whole groups that fit, so that no group is cut in part) and the
        restricted problem is solved on them: no truncation, no refit. Raise ``max_outer`` to at least
        ``max_features / budget`` for the cap, rather than ``max_outer``, to be what stops the fit.
    refit : float or None, default=None
        Debiasing for budgeted models: the B-support norm shrinks the weights it keeps; with
        ``refit=C2`` the unbudgeted problem (C = C2) is re-solved on the selected features only and
        its weights are returned. ``objective_`` is then the budgeted problem's objective at those
        weights (no longer its minimum; ``lower_bound_`` stays a valid bound).
    master_solver : {"ipm", "ecos"}, default="ipm"
        Solver of the restricted master QCQP when several feature groups are active: a dense
        interior-point method on the K x K Gram matrices (ECOS is its fallback), or ECOS directly on
        the cone program. Both return the same optimum; "ipm" is several times faster.
    pos_label : int, float, str or None, default=None
        The class whose F1, precision, recall... the loss measures (scikit-learn's meaning); None:
        ``classes_[1]``, the larger label. The fitted model keeps scikit-learn's orientation whatever
        the positive class: ``decision_function`` > 0 predicts ``classes_[1]``, so with
        ``pos_label=classes_[0]`` high scores mean the other class.
    verbose : int, default=0
        1: a line every 10 planes and a summary; 2: a line per plane.

    Attributes
    ----------
    coef_ : ndarray (1, n_features); a scipy.sparse CSR row (1, n_features) when n_features exceeds
        2^24 (hashed feature spaces; a dense row would be O(index space)), as after scikit-learn's
        ``sparsify()``. ``densify()`` / ``sparsify()`` convert.
    intercept_ : ndarray (1,), equal to ``bias * w_b``; for the operating-point losses ("prec@rec",
        "rec@prec", "tpr@fpr"), which are fitted as rankings without the bias feature, minus the cut of
        the training scores at their best operating point that meets the constraint
    classes_ : ndarray (2,), ``classes_[1]`` is the positive class
    selected_features_ : ndarray, sorted indices of the nonzero coefficients
    selected_groups_ : ndarray, sorted labels of the groups holding them (only with ``groups``)
    interactions_ : ndarray (n_pairs, 2), the selected pairs (j, k), j < k, sorted (only with
        ``interactions``); the decision function adds ``interaction_coef_[p] * x_j * x_k``
    interaction_coef_ : ndarray (n_pairs,), the pairs' weights (only with ``interactions``)
    objective_ : float, primal objective (:func:`structfs.solvers.primal_objective`) at the returned weights
    lower_bound_ : float, a proven lower bound on the optimal objective
    gap_ : float, ``objective_ - lower_bound_`` (bounds the true suboptimality)
    n_iter_ : int, cutting planes generated
    n_outer_ : int, feature groups generated
    stop_ : str, why feature generation ended (budget only): "gap", "optimal", "max_outer",
        "max_features", "stall" (``outer_tol``) or "max_iter"; "" without a budget
    history_ : list of dict, one record per plane (outer, iteration, objective, lower_bound, gap,
        planes, features, seconds)
    converged_ : bool, whether the fit is certified: 0 <= ``gap_`` <= C * ``tol``. A budgeted fit cut by
        ``max_outer`` or ``max_features`` solves the problem restricted to the groups it generated, and
        its gap to the whole budgeted problem may be larger: False then, without a warning (the path
        ended where asked). Where feature generation's optimality test stopped the fit but the gap is
        more than ten times C * ``tol`` (or the bound exceeds the objective), a ConvergenceWarning says
        to scale the features.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.preprocessing import StandardScaler
    >>> from structfs import StructSVM
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> X = StandardScaler().fit_transform(X)
    >>> svm = StructSVM(loss="f1", C=100.0, budget=2, max_outer=3).fit(X, y)
    >>> len(svm.selected_features_) <= 6, svm.stop_      # at most 3 groups of 2 features
    (True, 'max_outer')
    """

    _parameter_constraints: dict = {
        "loss": [str, Loss],
        "C": [Interval(Real, 0, np.inf, closed="neither")],
        "budget": [Interval(Integral, 1, None, closed="left"), None],
        "groups": ["array-like", None],
        "interactions": ["boolean"],
        "bias": [Interval(Real, 0, np.inf, closed="left")],
        "loss_params": [dict, None],
        "tol": [Interval(Real, 0, np.inf, closed="neither")],
        "outer_tol": [Interval(Real, 0, np.inf, closed="neither"), None],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "max_outer": [Interval(Integral, 1, None, closed="left")],
        "max_features": [Interval(Integral, 1, None, closed="left"), None],
        "refit": [Interval(Real, 0, np.inf, closed="neither"), None],
        "master_solver": [StrOptions({"ipm", "ecos"})],
        "pos_label": [Real, str, None],
        "verbose": ["verbose"],
    }

    # Over 8 parameters: scikit-learn's convention, every setting a keyword that __init__ only stores.
    def __init__(self, loss: str | Loss = "f1", C: float = _defaults.C, budget: int | None = None,
                 groups: ArrayLike | None = None, interactions: bool = False, bias: float = _defaults.BIAS,
                 loss_params: dict[str, Any] | None = None, tol: float = _defaults.TOL,
                 outer_tol: float | None = None, max_iter: int = _defaults.MAX_ITER,
                 max_outer: int = _defaults.MAX_OUTER, max_features: int | None = None, refit: float | None = None,
                 master_solver: str = _defaults.MASTER_SOLVER, pos_label: Any = None, verbose: int = 0) -> None:
        self.loss = loss
        self.C = C
        self.budget = budget
        self.groups = groups
        self.interactions = interactions
        self.bias = bias
        self.loss_params = loss_params
        self.tol = tol
        self.outer_tol = outer_tol
        self.max_iter = max_iter
        self.max_outer = max_outer
        self.max_features = max_features
        self.refit = refit
        self.master_solver = master_solver
        self.pos_label = pos_label
        self.verbose = verbose

    def _problem(self) -> Problem:
        """What fit solves, from the parameters (:func:`~structfs.problem.problem_of`, which holds the rules
        that tie them together; each parameter alone is checked by ``_parameter_constraints``)."""
        return problem_of(self.get_params(deep=False))

    @keeps_state_on_failure
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: MatrixLike, y: ArrayLike, sample_weight: ArrayLike | None = None,
            qid: ArrayLike | None = None) -> Self:
        """Fit on X (n_samples, n_features), dense or any scipy.sparse format, or a
        :class:`structfs.shards.ShardedMatrix` on disk, a :class:`structfs.cluster.DaskRowBlocks` or a dask
        array on a cluster (with a budget; a dask array runs on the current dask.distributed client),
        and two-class y.

        ``sample_weight`` (in memory only): example i counts as ``sample_weight[i]`` copies of itself, in
        the loss's table and in Psi (0 drops it), exactly as if it were repeated; whole numbers, except
        for ``loss="error"``, which takes any non-negative weights (see
        :class:`structfs.losses.SampleWeighted`, which says why).

        ``qid`` (in memory only): each example's query id; the loss is then taken on each query's
        examples and averaged over the queries -- mean ROC area, mean average precision, the retrieval
        measures (see :class:`structfs.losses.PerQuery`). One intercept serves every query, so losses
        that set the model's cut at an operating point do not take ``qid``."""
        problem = self._problem()
        loss, C, bias = problem.loss, problem.C, problem.bias
        X, y, weights, queries, groups = self._checked_data(X, y, sample_weight, qid, problem)
        positive = positive_class(self.classes_, problem.pos_label)
        # the loss measures the positive class; the fitted model keeps scikit-learn's orientation
        # (decision_function > 0 predicts classes_[1]), so its signs flip where the positive class is classes_[0]
        sign = 1.0 if positive == self.classes_[1] else -1.0
        fit_loss = on_rows(loss, weights, queries)
        y_pm = fit_loss.validate(np.where(y == positive, 1.0, -1.0))
        data, inputs = expand(X) if problem.interactions else (X, None)
        if loss.ranks_only:                  # fitted as a ranking, cut below at the operating point
            bias = 0.0
        path = problem.solver.path(data, y_pm, fit_loss, C, problem.penalty(groups), bias)
        for _ in path:
            pass
        result = path.result()
        if problem.refit is not None:
            result = path.debiased(result, problem.refit)
        self.loss_ = loss
        self._set_weights(result, sign, bias, groups, problem.interactions, inputs, data, X.shape[1])
        if loss.ranks_only:
            self.intercept_ = np.array([-sign * fit_loss.best_cut(y_pm, sign * self.decision_function(X))])
        self._set_certificate(result, problem)
        return self

    def _checked_data(self, X: Any, y: Any, sample_weight: Any, qid: Any, problem: Problem) -> tuple[Any, np.ndarray,
                      np.ndarray | None, np.ndarray | None, np.ndarray | None]:
        """X, y, the weights, query ids and groups checked for a fit (``classes_`` set), before any work."""
        X = _row_blocks_of_dask(X)
        if is_dask_array(y):
            y = y.compute()
        if is_row_blocks(X):                # structfs.shards.ShardedMatrix, structfs.cluster.DaskRowBlocks
            if sample_weight is not None or qid is not None:
                raise ValueError("sample_weight and qid are supported for data in memory only, not for "
                                 f"{type(X).__name__}.")
            y = self._check_row_blocks(X, y)
        else:
            X, y = validate_data(self, X, y, accept_sparse=["csr", "csc", "coo", "lil", "dok", "bsr", "dia"],
                                 dtype=[np.float64, np.float32], ensure_all_finite=True)
            check_magnitude(X)
        check_classification_targets(y)        # "Unknown label type" for continuous targets
        self.classes_ = np.unique(y)
        if self.classes_.shape[0] == 1:
            raise ValueError(f"y has a single class ({self.classes_[0]!r}): one class only, but StructSVM "
                             "needs examples of two classes.")
        if self.classes_.shape[0] != 2:
            raise ValueError(f"Only binary classification is supported; y has {self.classes_.shape[0]} "
                             "classes. Wrap it as OneVsRestClassifier(StructSVM(...)) or use "
                             "structfs.OneVsRestStructSVM for more than two classes.")
        weights = check_sample_weight(sample_weight, X.shape[0], problem.loss)
        queries = check_query_ids(qid, X.shape[0], problem.loss, weights)
        if weights is not None:
            check_weighted_classes(weights, y, self.classes_)
        groups = check_groups(problem.groups, X.shape[1])
        if problem.interactions:
            check_pair_scoring(X)
            if X.shape[1] < 2:
                raise ValueError(f"interactions=True needs at least two features to pair; X has {X.shape[1]}.")
            if not is_row_blocks(X):
                # a pair's value x_j x_k is squared in the Gram matrices: |x| <= 1e75 keeps that finite
                check_magnitude(X, limit=MAX_ABS_VALUE ** 0.75, why="overflow once paired (interactions=True "
                                "squares the products x_j x_k)")
        return X, y, weights, queries, groups

    def _set_weights(self, result: Any, sign: float, bias: float, groups: np.ndarray | None, interactions: bool,
                     inputs: Any, data: Any, n_features: int) -> None:
        """The fitted weights from the solver's ``result`` (its signs flipped by ``sign``); with
        ``interactions``, of the expansion ``data`` of X's columns ``inputs``."""
        pairs = None
        if interactions:
            cols, values = nonzero_weights(result.w)
            w, *pairs = split_weights(cols, sign * values, inputs, n_features, data.n_inputs)
        else:
            w = sign * result.w if sign < 0 else result.w
        set_fitted_weights(self, w, sign * bias * result.w_b, self.classes_, n_features, pairs, groups)

    def _set_certificate(self, result: Any, problem: Problem) -> None:
        """objective_, lower_bound_, gap_, the iteration counts and converged_; the warnings of a certificate
        that does not hold and of the zero model."""
        self.objective_ = result.objective
        self.lower_bound_ = result.lower_bound
        self.gap_ = result.objective - result.lower_bound
        self.n_iter_ = result.n_iter
        self.n_outer_ = result.n_outer
        self.stop_ = result.stop
        self.history_ = result.history
        # converged_ is the certificate, nothing less: the gap within C tol (tol as svm_perf's -e)
        C = problem.C
        allowed = C * problem.solver.tol
        self.converged_ = bool(result.converged and -1e-9 * abs(self.objective_) <= self.gap_ <= allowed * (1 + 1e-9))
        trusted_stop = result.stop in ("optimal", "gap") and problem.refit is None   # a debiased model is no optimum
        false_bound = self.gap_ < -1e-9 * abs(self.objective_)
        if false_bound or (trusted_stop and self.gap_ > 10 * allowed):
            warnings.warn(f"The fit's certificate does not hold: objective {self.objective_:.6g}, lower bound "
                          f"{self.lower_bound_:.6g} (gap {self.gap_:.3g}, asked at most {allowed:.3g}), so the model "
                          "may be far from optimal. Features of very different scales do this: scale them (e.g. "
                          "sklearn.preprocessing.StandardScaler or MaxAbsScaler).", ConvergenceWarning, stacklevel=5)
        if false_bound:
            # A bound above the objective is round-off of a Gram matrix of huge entries (features of scale
            # 1e18 give planes' products of 1e36, and cancellation errors of 1e20): reported is the one
            # bound that always holds, 0 (the objective is a sum of squares and C times a slack).
            self.lower_bound_, self.gap_ = 0.0, self.objective_
        if self.selected_features_.shape[0] == 0 and not getattr(self, "interaction_coef_", np.zeros(0)).size:
            warnings.warn(f"The fitted model has no features: on these data the {self.loss_.name!r} loss's structural "
                          f"SVM at C={C:.4g} has its optimum at w = 0 (objective {self.objective_:.6g}, lower bound "
                          f"{self.lower_bound_:.6g}), so every example gets the same score and the same class. "
                          "On noisy, imbalanced data every w may leave some labeling (for the F-measures: one "
                          "without true positives) at the slack of w = 0, whatever C; the ranking loss "
                          "loss='auc' rarely has this trivial optimum (StructSVMCV falls back to it).",
                          NoFeaturesWarning, stacklevel=5)

    def _check_row_blocks(self, X: Any, y: Any) -> np.ndarray:
        """y checked against row-block data (which validated itself when opened); n_features_in_ set.
        (Such data need a budget: the solver says so before any work.)"""
        from sklearn.utils.validation import column_or_1d

        y = column_or_1d(y, warn=True)
        if y.shape[0] != X.shape[0]:
            raise ValueError(f"y has {y.shape[0]} labels but X ({type(X).__name__}) has {X.shape[0]} rows.")
        self.n_features_in_ = X.shape[1]
        if hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        return y


    def score(self, X: MatrixLike, y: ArrayLike, sample_weight: ArrayLike | None = None,
              qid: ArrayLike | None = None) -> float:
        """The loss's own measure of this model on X, y, on scikit-learn's 0-1 scale, for the class
        ``pos_label``: F1 of the predictions for ``loss="f1"``, the ROC area of ``decision_function`` for
        ``"auc"``, and so on -- what the model was trained for and what ``StructSVMCV`` scores by. Not
        accuracy (``sklearn.metrics.accuracy_score(y, model.predict(X))`` gives that, and
        ``get_loss("error")`` trains for it). ``sample_weight`` weighs the examples and ``qid`` averages
        the measure over queries, as in :meth:`fit`."""
        check_is_fitted(self)
        y = np.asarray(y)
        positive = positive_class(self.classes_, self.pos_label)
        scores = self.decision_function(X)
        if y.shape != scores.shape:
            raise ValueError(f"y has shape {y.shape} but X has {scores.shape[0]} rows.")
        weights = check_sample_weight(sample_weight, scores.shape[0], self.loss_)
        queries = check_query_ids(qid, scores.shape[0], self.loss_, weights)
        y_pm = np.where(y == positive, 1.0, -1.0)
        oriented = scores if positive == self.classes_[1] else -scores
        return on_rows(self.loss_, weights, queries).score(y_pm, oriented) / 100.0


class OneVsRestStructSVM(ClassifierMixin, BaseEstimator):
    """One binary classifier per class (that class against the rest), fitted in parallel through joblib.

    Clones ``estimator`` (a StructSVM, a StructSVMCV, or any binary structfs estimator) for every
    class. ``n_jobs``: parallel fits; ``joblib.parallel_backend("dask")`` runs them on a Dask cluster
    unchanged.

    Parameters
    ----------
    estimator : StructSVM, StructSVMCV or None, default=None
        The binary estimator cloned for every class; None is ``StructSVM()``.
    n_jobs : int or None, default=None
        Parallel fits (joblib).
    loss, C, budget, bias, loss_params, tol, outer_tol, max_iter, max_outer, max_features, refit : deprecated
        Set them on the estimator: ``OneVsRestStructSVM(estimator=StructSVM(C=...))``.
    master_solver, verbose : deprecated
        Likewise.

    Attributes
    ----------
    estimators_ : list of fitted binary estimators, one per class (one for two classes)
    classes_ : ndarray of the class labels
    n_iter_ : ndarray of each estimator's ``n_iter_`` (cutting planes), where they have one

    ``decision_function`` has one column per class and ``predict`` takes the
    largest; with two classes it is a single binary model. Per-class measures are macro-averaged by
    :func:`structfs.metrics` scorers applied column-wise (see the CLI's ``evaluate``).

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from structfs import OneVsRestStructSVM, StructSVM
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = OneVsRestStructSVM(estimator=StructSVM(C=100.0)).fit(X, y)
    >>> clf.predict(X[:3]).tolist()
    [0, 0, 0]
    """

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit", "decision_function"]), None],
        **{name: "no_validation" for name in ("loss", "C", "budget", "bias", "loss_params", "tol", "outer_tol",
                                              "max_iter", "max_outer", "max_features", "refit", "master_solver",
                                              "verbose")},     # deprecated: checked on the estimator they build
        "n_jobs": [Integral, None],
    }

    # Over 8 parameters: scikit-learn's convention, every setting a keyword that __init__ only stores.
    def __init__(self, estimator: BaseEstimator | None = None, loss: Any = None, C: Any = None, budget: Any = None,
                 bias: Any = None, loss_params: Any = None, tol: Any = None, outer_tol: Any = None,
                 max_iter: Any = None, max_outer: Any = None, max_features: Any = None, refit: Any = None,
                 master_solver: Any = None, verbose: Any = None, n_jobs: int | None = None) -> None:
        self.estimator = estimator
        self.loss = loss
        self.C = C
        self.budget = budget
        self.bias = bias
        self.loss_params = loss_params
        self.tol = tol
        self.outer_tol = outer_tol
        self.max_iter = max_iter
        self.max_outer = max_outer
        self.max_features = max_features
        self.refit = refit
        self.master_solver = master_solver
        self.verbose = verbose
        self.n_jobs = n_jobs

    def _mirrored(self) -> dict[str, Any]:
        """The deprecated StructSVM parameters that were set (not None)."""
        params = self.get_params(deep=False)
        return {k: v for k, v in params.items() if k not in ("estimator", "n_jobs") and v is not None}

    def binary_estimator(self) -> Any:
        """An unfitted copy of the binary estimator each class is fitted with: ``estimator``, or a StructSVM of
        the (deprecated) parameters set here."""
        mirrored = self._mirrored()
        if self.estimator is None:
            return StructSVM(**mirrored)
        if mirrored:
            raise ValueError(f"With estimator=... set {', '.join(sorted(mirrored))} on the estimator itself, not on "
                             "OneVsRestStructSVM.")
        from sklearn.base import clone

        return clone(self.estimator)

    def _problem(self) -> Any:
        """The binary estimator, its parameters checked."""
        return check_parameters(self.binary_estimator())

    @keeps_state_on_failure
    @_fit_context(prefer_skip_nested_validation=False)      # the binary estimator's parameters are checked too
    def fit(self, X: MatrixLike, y: ArrayLike, sample_weight: ArrayLike | None = None,
            qid: ArrayLike | None = None) -> Self:
        """Fit one clone of ``estimator`` per class (one for two classes) on X, y; returns self.
        ``sample_weight`` and ``qid`` are passed to each clone's ``fit``."""
        from joblib import Parallel, delayed

        X, y = validate_data(self, X, y, accept_sparse=["csr", "csc", "coo"], dtype=[np.float64, np.float32])
        fit_params = {name: value for name, value in (("sample_weight", sample_weight), ("qid", qid))
                      if value is not None}
        accepted = inspect.signature(self.binary_estimator().fit).parameters
        for name in fit_params:
            if name not in accepted:
                raise ValueError(f"{name} cannot be used: {type(self.binary_estimator()).__name__}.fit takes no "
                                 f"{name}.")
        check_classification_targets(y)
        self.classes_ = np.unique(y)
        if self.classes_.shape[0] < 2:
            raise ValueError("y has a single class: one class only, but training needs two or more classes.")
        mirrored = self._mirrored()
        if mirrored and self.estimator is None:
            named = ", ".join(f"{k}=..." for k in sorted(mirrored))
            warnings.warn(f"OneVsRestStructSVM({named}) is deprecated and will "
                          "be removed: pass OneVsRestStructSVM(estimator=StructSVM(...)) instead.", FutureWarning,
                          stacklevel=4)
        probe = self._problem()                       # bad parameters fail before any fit starts
        n_folds = getattr(probe, "cv", None)
        if isinstance(n_folds, Integral) and not isinstance(n_folds, bool):
            # a cross-validated estimator's folds need every class in each
            labels, counts = np.unique(y, return_counts=True)
            if counts.min() < n_folds:
                rare = labels[np.argmin(counts)].item()
                raise ValueError(f"cv={n_folds} folds is more than the {counts.min()} examples of class {rare!r}: the "
                                 "estimator cross-validates each class against the rest; lower its cv (at least 2) "
                                 "or pass a splitter.")
        targets = [y] if self.classes_.shape[0] == 2 else [(y == c).astype(int) for c in self.classes_]
        with interrupts_allowed(self.n_jobs not in (None, 1)):       # waiting for workers: Ctrl-C raises at once
            self.estimators_ = Parallel(n_jobs=self.n_jobs)(
                delayed(_fit_one)(self.binary_estimator(), X, t, fit_params)
                for t in progress_bar(targets, self.verbose, "classes"))
        if all(hasattr(est, "n_iter_") for est in self.estimators_):
            self.n_iter_ = np.array([est.n_iter_ for est in self.estimators_])     # cutting planes, per class
        return self

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    def decision_function(self, X: MatrixLike) -> np.ndarray:
        """Decision values: (n_samples,) for two classes, else (n_samples, n_classes), a column per class."""
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse=True, dtype=[np.float64, np.float32], reset=False)
        scores = np.column_stack([est.decision_function(X) for est in self.estimators_])
        return scores[:, 0] if self.classes_.shape[0] == 2 else scores

    def predict(self, X: MatrixLike) -> np.ndarray:
        """The class of the largest decision value (two classes: the sign of the single one)."""
        scores = self.decision_function(X)
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(int)]
        return self.classes_[np.argmax(scores, axis=1)]

    def score(self, X: MatrixLike, y: ArrayLike, sample_weight: ArrayLike | None = None,
              qid: ArrayLike | None = None) -> float:
        """The binary estimators' own measure on scikit-learn's 0-1 scale, averaged over the classes: each
        class's estimator ``score`` of its decisions, that class against the rest (for ``loss="f1"``,
        the mean F1 of the one-vs-rest decisions; the macro-F1 of ``predict``, which picks one class
        per example, is ``sklearn.metrics.f1_score(y, model.predict(X), average="macro")``). With two
        classes, the single estimator's score. ``sample_weight`` and ``qid`` are passed to each
        estimator's ``score``."""
        check_is_fitted(self)
        y = np.asarray(y)
        params = {} if qid is None else {"qid": qid}
        if self.classes_.shape[0] == 2:
            return float(self.estimators_[0].score(X, y, sample_weight=sample_weight, **params))
        return float(np.mean([est.score(X, (y == c).astype(int), sample_weight=sample_weight, **params)
                              for est, c in zip(self.estimators_, self.classes_)]))


def check_sample_weight(sample_weight: Any, n: int, loss: Loss) -> np.ndarray | None:
    """``sample_weight`` checked against the n rows of X and the loss (see :class:`SampleWeighted`), or None
    where it changes nothing (None, or every weight 1): a ValueError naming it otherwise."""
    if sample_weight is None:
        return None
    if isinstance(sample_weight, Real) and not isinstance(sample_weight, bool):
        weights = np.full(n, float(sample_weight))
    else:
        weights = check_array(sample_weight, ensure_2d=False, dtype=np.float64, input_name="sample_weight")
    if weights.shape != (n,):
        raise ValueError(f"sample_weight must have shape ({n},), one weight per row of X; got {weights.shape}.")
    if weights.size and weights.min() < 0:
        i = int(np.argmin(weights))
        raise ValueError(f"sample_weight must be non-negative; sample_weight[{i}] = {float(weights[i])!r}.")
    if np.all(weights == 1.0):
        return None
    return check_frequency_weights(weights, loss)


def check_weighted_classes(weights: np.ndarray, y: np.ndarray, classes: np.ndarray) -> None:
    """ValueError where ``sample_weight`` is 0 on every example of one of the ``classes``."""
    unweighted = [c for c in classes if not np.any(weights[y == c] > 0)]
    if unweighted:
        raise ValueError(f"sample_weight is 0 for every example of class {unweighted[0].item()!r}: the weighted "
                         "data have one class only, but training needs examples of two classes.")


def check_query_ids(qid: Any, n: int, loss: Loss, weights: np.ndarray | None) -> np.ndarray | None:
    """``qid`` checked against the n rows of X and the loss (None stays None): a ValueError naming it
    otherwise."""
    if qid is None:
        return None
    queries = np.asarray(qid)
    if queries.dtype.kind == "O":          # e.g. a pandas column of strings
        if not all(isinstance(q, (str, Integral)) for q in queries.ravel()):
            raise ValueError("qid must hold integer, string or finite float query ids; found other objects.")
        queries = queries.astype(str)
    if queries.shape != (n,):
        raise ValueError(f"qid must have shape ({n},), one query id per row of X; got {queries.shape}.")
    if queries.dtype.kind not in "iuU" and not (queries.dtype.kind == "f" and np.isfinite(queries).all()):
        raise ValueError(f"qid must hold integer, string or finite float query ids; got dtype {queries.dtype}.")
    if loss.ranks_only:
        raise ValueError(f"qid does not combine with the {loss.name!r} loss: its model is cut at an operating point "
                         "of the training data, and one cut cannot hold each query's.")
    if weights is not None:
        raise ValueError("sample_weight and qid together are not supported: pass one of them.")
    return queries


def check_groups(groups: Any, n_features: int) -> np.ndarray | None:
    """``groups`` as an int64 array of one non-negative integer label per feature (None stays None);
    ValueError naming it otherwise."""
    if groups is None:
        return None
    labels = np.asarray(groups)
    if labels.ndim != 1 or labels.shape[0] != n_features:
        raise ValueError(f"groups must give a group label to each of the {n_features} features (an array of "
                         f"length {n_features}); got shape {labels.shape}.")
    if labels.dtype.kind == "f":
        if not np.isfinite(labels).all() or not np.array_equal(labels, np.round(labels)):
            raise ValueError("groups must hold integer labels; found NaN, infinite or fractional values.")
    elif labels.dtype.kind not in "iu":
        raise ValueError(f"groups must hold integer labels, got dtype {labels.dtype}.")
    if labels.size and labels.min() < 0:
        raise ValueError(f"groups must hold non-negative labels; found {labels.min():g}.")
    # labels are int64 (as selected_groups_ returns them): a larger one would wrap or merge with others
    if labels.size and labels.max() >= 2.0 ** 63:
        raise ValueError(f"groups must hold labels below 2**63 (int64); found {labels.max():.6g}. Renumber the "
                         "groups, e.g. np.unique(groups, return_inverse=True)[1].")
    return labels.astype(np.int64)


def check_parameters(estimator: BaseEstimator) -> BaseEstimator:
    """Check an estimator's parameters without fitting it: a ValueError naming the first bad one.

    For callers that must refuse bad settings before reading data (the command line, model files,
    meta-estimators); ``fit`` runs the same checks itself. Returns the estimator."""
    if isinstance(estimator, BaseEstimator) and hasattr(estimator, "_parameter_constraints"):
        estimator._validate_params()
    if hasattr(estimator, "_problem"):
        estimator._problem()
    return estimator


def _fit_one(estimator: Any, X: Any, y: Any, fit_params: dict[str, Any]) -> Any:
    return estimator.fit(X, y, **fit_params)


def progress_bar(items: Any, verbose: int, what: str) -> Any:
    """A tqdm bar over ``items`` when verbose and stderr is a terminal; the items themselves otherwise."""
    import sys

    if not verbose or not sys.stderr.isatty():
        return items
    from tqdm import tqdm

    return tqdm(items, desc=what, file=sys.stderr)
