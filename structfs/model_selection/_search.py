"""StructSVMCV: C, budget and the number of feature groups chosen by cross-validation.

With a budget, feature generation adds one group of at most B features per outer iteration and solves
the restricted problem again: the model after each group is a point on a sparsity path, obtained at
the cost of one fit (``Solver.path``). So each (C, budget) cell of the grid costs one fit per fold,
and every length of the path is scored on the fold's validation part without refitting. The chosen
(C, budget, number of groups) is then fitted once on all the data.
"""
from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import scipy.sparse as sp
from sklearn import config_context
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context, clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import check_cv
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import validate_data

from .. import _defaults
from .._interrupt import check_interrupt, interruptible
from .._validation import MatrixLike, check_magnitude, keeps_state_on_failure
from ..estimators import (
    LinearBinaryMixin,
    NoFeaturesWarning,
    StructSVM,
    check_groups,
    check_query_ids,
    check_sample_weight,
    check_weighted_classes,
    positive_class,
)
from ..losses import Loss, get_loss, on_rows
from ..solvers.interactions import check_pair_scoring
from ._data import MatrixData, SearchData
from ._grid import data_bias, grid_unit, squared_norms
from ._path import (
    Fold,
    FoldData,
    FoldPath,
    PathScoring,
    best_threshold,
    chain_from,
    cut_at_best,
    fold_path,
    ranking_tol,
    rescore_at_cv_cuts,
    same_rate_cut,
    score_on,
    take_rows,
    unbudgeted_chain,
)
from ._problem import SearchProblem, search_problem
from ._results import (
    C_PATIENCE,
    Table,
    best_candidate,
    cv_results,
    grid_results,
    losing_and_not_closing,
    past_the_peak,
    path_smoothed_scores,
    race_budgeted,
)
from ._scoring import check_scoring

if TYPE_CHECKING:
    from numpy.typing import ArrayLike
    from typing_extensions import Self

# When every candidate is the zero model, or the refitted model is (the loss's structural optimum is w = 0:
# F-measures on noisy, imbalanced data, or with few positives), the search is run again with this ranking
# loss, scored by the same measure, each model's intercept moved to the best cut of the loss's measure on
# its training scores (docs/model_selection.md, "When the loss's optimum is the zero model").
FALLBACK_LOSS = "auc"
# The second training loss an operating-point loss's search tries (StructSVMCV._best_training_loss).
SURROGATE_LOSS = "f1"




def _as_list(function: Callable[..., Any], *args: Any) -> list[Any]:
    return [function(*args)]


# A search's cell: (C, budget, version of the data); a fold path's task: (fold, C in the fold's unit, budget,
# version)
_Cell = tuple[float, int | None, int]
_Task = tuple[int, float, int | None, int]


@dataclass(frozen=True)
class _Version:
    """One version of a search's data (SearchData.settings): its matrix, its folds (Fold, whose bias and
    columns follow it) and how its paths are scored (PathScoring, whose cut_X follows it)."""
    X: Any
    folds: list[Fold]
    scoring: PathScoring


# Successive halving's first rung: every budgeted fold path runs to this many groups (the patience of
# the default early stop, so that a path can have ended on its own by then).
HALVING_FIRST_RUNG = 5
# _race_reference's answer for a grid without a reference to race against
_NO_RACE: Any = object()
# A serial search keeps its budgeted fold paths between rungs while their training rows add up to at
# most this many (each holds its cutting planes, K x n doubles: at K = 50, 0.8 GB at this bound).
RESUME_MAX_ROWS = 2_000_000


class _Progress:
    """The search's progress: a tqdm bar of the fold paths done (verbose >= 1), a line per fold path
    (verbose >= 2); nothing at verbose 0."""

    def __init__(self, total: int, verbose: int) -> None:
        self.verbose, self.bar = verbose, None
        if verbose:
            import sys

            from tqdm.auto import tqdm

            self.bar = tqdm(total=total, desc="StructSVMCV fold paths", unit="path", file=sys.stderr)

    def __enter__(self) -> _Progress:
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.bar is not None:
            if exc[0] is None and self.bar.n < self.bar.total:   # halving ended paths before the plan
                self.bar.total = self.bar.n
                self.bar.refresh()
            self.bar.close()

    def drop(self, paths: int) -> None:
        """The plan shrank: ``paths`` fold paths will not run (the race dropped their cells)."""
        if self.bar is not None and paths:
            self.bar.total -= paths
            self.bar.refresh()

    def __call__(self, task: _Task, out: Any) -> None:
        if self.bar is None:
            return
        if self.verbose >= 2:
            import sys

            f, C, B, _ = task
            scores, n_features, seconds = out[:3]
            best = int(np.argmax(scores))
            self.bar.write(f"[structfs] fold {f}, C {C:.4g}, budget {B}: best validation score {scores[best]:.4f} "
                           f"after {best + 1} group(s), {n_features[best]} features, {seconds:.2f} s", file=sys.stderr)
        self.bar.update(1)


class StructSVMCV(LinearBinaryMixin, ClassifierMixin, BaseEstimator):
    """StructSVM with C, budget and the number of feature groups chosen by cross-validation.

    Each (C, budget) cell is fitted once per fold; with a budget every point of its feature-generation
    path (one more group of at most B features per point) is scored on the fold's validation part, so
    the sparsity is chosen without a fit per candidate. The best candidate (mean validation score,
    averaged with its two neighbours on the same path -- ``smoothed_test_score``, see
    :func:`path_smoothed_scores`; ties to fewer features, then smaller C) is refitted on all the data
    with ``max_outer`` set to its number of groups.

    Parameters
    ----------
    loss : str or structfs.losses.Loss, default="f1"
        As StructSVM's.
    Cs : sequence of float or None, default=None
        Candidate C values (svm_perf's meaning). None: C = c * n / s for c in ``DEFAULT_C_PER_SAMPLE`` =
        (0.3, 1, 3, 10), n the number of training examples and s their mean squared norm (of the fold
        while cross-validating, of all the data for the refit): svm_perf's loss term is an average, so
        a fixed trade-off against a sum of losses (LinearSVC's C = 100 C / n) scales C with n, and
        dividing by s (SVMlight's default C = 1 / mean(x'x)) makes the grid blind to the features'
        scale. On text with unit-norm rows s = 1. The c were chosen on all dev sets, the division by s
        on scikit-learn's dense data.
    scale_C : bool, default=True
        Divide the default grid by the mean squared norm s (see ``Cs``) and set the bias feature to
        ``bias`` * sqrt(s) (``bias_``; of the fold while cross-validating): the problem on X / sqrt(s)
        with the constant feature ``bias``, so that the search, the model and its predictions do
        not change when X is multiplied by a constant (a fixed bias of 1 beside rows of large norm
        over-regularises the intercept; the user guide's "The C grid" has the figures). False: C = c * n and the
        bias feature ``bias``. Ignored with explicit
        ``Cs``. MILESClassifier's default estimator sets it False (its similarities'
        squared norms count the pool's near instances, and the per-example grid was better there).
    budgets : sequence of (int or None) or None, default=None
        Candidate budgets; None in the sequence is the unbudgeted (SVMperf) problem, a single path
        point. None: ``DEFAULT_BUDGETS`` = (5, None); with ``max_features`` k, (min(5, k // 5), k // 5)
        (at least 1; :func:`default_budgets`): the path over the number of groups selects the sparsity
        in steps of B, but it holds at most a number of features set by B and C (10-35 at B = 5 and
        small C on R8), so the grid also has a candidate that can reach any size -- the unbudgeted
        problem (for data where no sparse model is as good: SMS spam), or under a cap, where a budget
        is needed, the group of k // 5 (the cap in five groups). Under a small cap the groups shrink
        so that the path to it has five points (k = 10: (2,)).
    cv : int, cross-validation generator or iterable, default=3
        As scikit-learn's ``check_cv`` for classifiers: an int is a StratifiedKFold (no shuffling).
    scoring : str, callable or None, default=None
        None: the loss's own measure (F1 for "f1", accuracy for "error", ...) on scikit-learn's 0-1
        scale; a structfs measure name, a scikit-learn scorer name, or a callable
        ``scorer(estimator, X, y)``. :meth:`score` uses it too.
    max_features : int or None, default=None
        Hard cap on the selected features of every candidate (StructSVM's ``max_features``); needs
        budgets (None is then not allowed among them).
    groups : array-like of int, shape (n_features,), or None, default=None
        A group label for every feature (as StructSVM's ``groups``): every budget of the grid then
        counts groups; the unbudgeted candidate (None) is the plain problem. ``selected_groups_`` holds
        the chosen model's groups.
    interactions : bool, default=False
        Every budgeted candidate also selects products of feature pairs (as StructSVM's
        ``interactions``); the unbudgeted candidate (None) is the plain linear problem.
        ``interactions_`` and ``interaction_coef_`` hold the chosen model's pairs.
    bias, loss_params, max_iter, max_outer, master_solver : as StructSVM's
        ``max_outer`` bounds the path length (groups) of every cell.
    tol : float or None, default=None
        Precision of the slack (StructSVM's ``tol``). Inside the folds the unbudgeted candidates and the
        debiasing refits are solved to svm_perf's default precision (``tol`` 0.1, or ``tol`` if
        coarser): they only rank candidates; the budgeted paths' restricted solves to ``tol``. The
        final model is solved to ``tol``. None: as its candidate was in the folds, so that the model
        returned is the kind of model the cross-validation scored -- an unbudgeted one to 0.1, a
        budgeted one's path to StructSVM's default 0.01 (coarser restricted solves pick other
        features); the folds as at ``tol=0.01``. Against a final model at 0.01: the same test F1 on
        R8 and SMS spam in 0.80-0.85 of the time (the user guide's "The final model's precision").
    n_iter_no_change : int or None, default=5
        Early stopping along each fold's path: once the validation score has not improved for this
        many groups, that path ends (a fold whose path ended early keeps its last point for longer
        paths). None: every path runs to ``max_outer`` (or its own convergence).
    halving_factor : int or None, default=3
        Successive halving over the candidates' path lengths (scikit-learn's ``HalvingGridSearchCV``
        with the number of groups as the resource): every fold path first runs to
        ``HALVING_FIRST_RUNG`` groups; the best 1/factor of the (C, budget) candidates by their
        path-smoothed score so far continue to factor times as many groups, and so on up to
        ``max_outer``; in a search over versions of the data (``fit_data``, MILESClassifier's kernel
        widths) each version's best cell continues too, so that versions are compared on whole paths.
        A path that ends on its own (early stop, certificate) is complete at any rung; unbudgeted
        candidates are one fit and always complete. A candidate cut short is not chosen
        (``cv_results_["pruned"]``; its scores are those of its shortened path). Where the grid holds
        unbudgeted cells beside budgeted ones, the budgeted paths first run on the first fold only, and
        only those within one fold's noise of the best unbudgeted cell there run on the others (the
        others score NaN on them; the user guide's "Successive halving"). Under ``max_features`` k the
        largest budget B plays the unbudgeted cells' part when five groups of it reach the cap (B >= k / 5
        without ``groups``: the default grid's k // 5): its paths run to the cap on every fold, and the
        finer budgets race against them. The unbudgeted cells (the race's reference cells) are fitted
        in increasing C, on every fold in step, until the cross-validated score has passed its peak (the
        last C not the best, and a step gaining as much as its last would not reach the best; from the
        third C on); the larger C are not fitted (NaN scores, pruned). None: every path runs to its end, on
        every fold, at every C.
    debias : bool, default=True
        Score and return budgeted models debiased: the budget selects the features, and the weights
        are those of the unbudgeted problem on them at the same C (StructSVM's ``refit=C``). The
        B-support norm shrinks the weights it keeps (the user guide's "Debiasing" measures the gain). The
        refits along a path share their cutting planes; inside the folds they are solved to
        svm_perf's default precision (``tol`` 0.1, or ``tol`` if coarser), the final model's as ``tol``
        says.
    selection : {"one_se", "best"}, default="one_se"
        How the candidate is chosen from the cross-validated scores. "best": the best path-smoothed
        score. "one_se": the same, but where the best is unbudgeted (at its own cut; see ``threshold``),
        the smallest C among the unbudgeted candidates at their own cut within one standard error of it
        (the best candidate's fold scores' std over sqrt(folds); ``cv_results_["within_one_se"]``) -- a
        difference inside the folds' noise decides nothing, and the smaller C is the more regularised and
        cheaper model. Budgeted picks are the
        best score's under both rules (there C also sets how many features a path holds, and smaller C
        lost F1 on every multiple-instance set). The user guide's model-selection page has the figures.
    threshold : {"cv", "learned"}, default="cv"
        Where a contingency loss's model cuts (F1, F_beta, error, Prec@k..., a ``ContingencyLoss``).
        "cv": the intercept is moved to the best cut of the loss's measure on the chosen candidate's
        out-of-fold decision values (every training row scored by the fold model that did not train on
        it; ``threshold_`` is the shift), as scikit-learn's ``TunedThresholdClassifierCV`` does, where
        that beats the candidate's own cut by more than the folds' noise and the refitted model's
        training scores agree -- the structural SVM's own cut is optimal for its objective, not for the
        measure, and where the classes overlap it predicts almost no positives. "learned": the
        structural SVM's own cut. The default rests on the user guide's model-selection page.
    pos_label : as StructSVM's
        The class the loss (and the default scoring) measures; the search and the refitted model use it.
    n_jobs : int or None, default=None
        (fold, C, budget) fits run in parallel through joblib.
    verbose : int or bool, default=0
        1: a progress bar of the search (fold paths done of all, elapsed, remaining; tqdm, in a terminal
        or a notebook) and the refitted model's one-line summary; 2: also a line per fold path and the
        refit's solver log (StructSVM's ``verbose=1``). 0: silent.

    Attributes
    ----------
    C_, budget_, n_groups_ : the chosen candidate (``n_groups_`` None without a budget)
    bias_ : float, the refitted model's bias feature (``bias``, times the rows' RMS norm with ``scale_C``)
    best_score_ : float, its mean validation score (unsmoothed; 0-1 for the structfs measures)
    threshold_ : float, how far the refitted model's cut was moved (``threshold="cv"``; 0 otherwise):
        its decision function is the learned one minus ``threshold_``
    cv_results_ : dict of arrays, one entry per (C, budget, n_groups) candidate, like GridSearchCV's
        (``params``, ``mean_test_score``, ``std_test_score``, ``smoothed_test_score``, ``rank_test_score``
        -- the order of the smoothed score, which the choice follows --, ``splitK_test_score``,
        ``mean_n_features``, ``mean_fit_time``, ``certified``: False where a fold's fit ran out of
        ``max_iter`` planes without its certificate -- the search then warns once, not per fit)
    estimator_ : StructSVM refitted on all the data
    coef_, intercept_, classes_, selected_features_, objective_, lower_bound_, gap_, n_iter_, n_outer_, loss_ :
        those of ``estimator_``. ``loss_`` is the loss the model was trained on: ``loss``, or
        ``FALLBACK_LOSS`` ("auc") when every candidate of the search, or the model refitted on all the
        data, was the zero model (the loss's structural optimum is w = 0: F-measures on noisy,
        imbalanced data, or with few positives; see :meth:`_search_and_refit`); the search then
        warns and runs again with that ranking loss, scored by the same measure, and since a ranking
        loss learns no threshold, every model's ``intercept_`` is moved to the best cut of ``loss``'s
        measure on its training scores (:func:`best_threshold`)

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from structfs import StructSVMCV
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> clf = make_pipeline(StandardScaler(), StructSVMCV(loss="f1", max_features=10)).fit(X, y)
    >>> search = clf[-1]
    >>> len(search.selected_features_) <= 10, 0.0 <= search.best_score_ <= 1.0
    (True, True)
    """

    _parameter_constraints: dict = {
        **{name: StructSVM._parameter_constraints[name]          # shared with the model it refits
           for name in ("loss", "groups", "interactions", "max_features", "bias", "loss_params", "max_iter",
                        "max_outer", "master_solver", "pos_label", "verbose")},
        "tol": [*StructSVM._parameter_constraints["tol"], None],
        "Cs": ["array-like", None],
        "scale_C": ["boolean"],
        "budgets": ["array-like", None],
        "cv": ["cv_object"],
        "scoring": [str, callable, None],
        "n_iter_no_change": [Interval(numbers.Integral, 1, None, closed="left"), None],
        "halving_factor": [Interval(numbers.Integral, 2, None, closed="left"), None],
        "debias": ["boolean"],
        "selection": [StrOptions({"one_se", "best"})],
        "threshold": [StrOptions({"cv", "learned"})],
        "n_jobs": [numbers.Integral, None],
    }

    # Over 8 parameters: scikit-learn's convention, every setting a keyword that __init__ only stores.
    def __init__(self, loss: str | Loss = "f1", Cs: Iterable[float] | None = None, scale_C: bool = True,
                 budgets: Iterable[int | None] | None = None, cv: int | Any = 3,
                 scoring: str | Callable | None = None, max_features: int | None = None,
                 groups: ArrayLike | None = None, interactions: bool = False, bias: float = _defaults.BIAS,
                 loss_params: dict[str, Any] | None = None, tol: float | None = None,
                 max_iter: int = _defaults.MAX_ITER, max_outer: int = _defaults.MAX_OUTER,
                 n_iter_no_change: int | None = 5, halving_factor: int | None = 3, debias: bool = True,
                 selection: str = "one_se", threshold: str = "cv", master_solver: str = _defaults.MASTER_SOLVER,
                 pos_label: Any = None, n_jobs: int | None = None, verbose: int = 0) -> None:
        self.loss = loss
        self.Cs = Cs
        self.scale_C = scale_C
        self.budgets = budgets
        self.cv = cv
        self.scoring = scoring
        self.max_features = max_features
        self.groups = groups
        self.interactions = interactions
        self.bias = bias
        self.loss_params = loss_params
        self.tol = tol
        self.max_iter = max_iter
        self.max_outer = max_outer
        self.n_iter_no_change = n_iter_no_change
        self.halving_factor = halving_factor
        self.debias = debias
        self.selection = selection
        self.threshold = threshold
        self.master_solver = master_solver
        self.pos_label = pos_label
        self.n_jobs = n_jobs
        self.verbose = verbose

    def _estimator(self, **params: Any) -> StructSVM:
        budgeted = params.get("budget") is not None       # no budget: no groups to count, no pairs to select
        return StructSVM(loss=self.loss, groups=self.groups if budgeted else None,
                         interactions=bool(self.interactions) and budgeted, bias=self.bias,
                         loss_params=self.loss_params, max_iter=self.max_iter, max_outer=self.max_outer,
                         max_features=self.max_features, master_solver=self.master_solver, pos_label=self.pos_label,
                         **params)

    def _final_tol(self, fold_tol: float, budgeted: bool) -> float:
        """The final model's ``tol``: the one given, or (None) the precision its candidate had in the folds,
        whose fits ran at ``fold_tol`` (the unbudgeted ones at :func:`ranking_tol` of it)."""
        if self.tol is not None:
            return float(self.tol)
        return fold_tol if budgeted else ranking_tol(fold_tol)

    def _problem(self) -> SearchProblem:
        """What the search solves, from the parameters (:func:`search_problem`, which holds the rules that
        tie them together; each parameter alone is checked by ``_parameter_constraints``)."""
        return search_problem(self.get_params(deep=False))

    def _path_scoring(self, problem: SearchProblem, classes: np.ndarray, *, threshold_loss: Loss | None = None,
                      cut_X: Any = None, per_query: bool = False) -> PathScoring:
        """How this search fits and scores each fold's path (:class:`PathScoring`, for :func:`fold_path`):
        its loss, measure, solver settings, debiasing and early stop (``per_query``: a search over query
        ids, whose measure has no one cut to choose)."""
        loss = problem.loss
        # kept with any scoring: the cut by CV serves the loss's own measure, and an operating-point search's
        # F1-trained candidates (scored by the operating point) are cut at it out of fold
        keep_decisions = self.threshold == "cv" and loss.is_contingency and threshold_loss is None and not per_query
        return PathScoring(classes, loss, problem.scorer, problem.solver, self.debias, self.n_iter_no_change,
                           threshold_loss, cut_X, problem.groups, bool(self.interactions), keep_decisions)

    def _scales_to_data(self) -> bool:
        """Whether the default grid's C and the bias feature follow the data's scale (``scale_C``)."""
        return self.Cs is None and self.scale_C

    def _folds(self, y: np.ndarray, qid: np.ndarray | None = None) -> list[tuple[np.ndarray, np.ndarray]]:
        """The (train, test) index pairs of ``cv`` on labels ``y`` (stratified for a number of folds), as
        :meth:`fit` uses them; ValueError when a class has fewer examples than folds. With query ids
        ``qid`` a number of folds splits by query (``GroupKFold``), and a splitter gets them as groups."""
        if qid is not None:
            from sklearn.model_selection import GroupKFold

            if isinstance(self.cv, numbers.Integral):
                if self.cv > np.unique(qid).shape[0]:
                    raise ValueError(f"cv={self.cv} folds is more than the {np.unique(qid).shape[0]} queries (qid); "
                                     "lower cv or pass a splitter.")
                return list(GroupKFold(self.cv).split(np.zeros((len(y), 1)), y, groups=qid))
            return list(check_cv(self.cv, y, classifier=True).split(np.zeros((len(y), 1)), y, groups=qid))
        if isinstance(self.cv, numbers.Integral):
            smallest = np.unique(y, return_counts=True)[1].min()
            if self.cv > smallest:
                raise ValueError(f"cv={self.cv} folds is more than the {smallest} examples of the smallest class; "
                                 "lower cv or pass a splitter.")
        return list(check_cv(self.cv, y, classifier=True).split(np.zeros((len(y), 1)), y))

    # Over 8 parameters: beside the problem, the data and the folds, the rows' weights and query ids, and the
    # data source's per-fold columns and cut (SearchData), keywords all.
    def _search(self, problem: SearchProblem, Xs: list[Any], y: np.ndarray, classes: np.ndarray,
                folds: list[tuple[np.ndarray, np.ndarray]], *,
                columns: list[np.ndarray] | None = None, threshold_loss: Loss | None = None,
                cut_Xs: list[Any] | None = None, sample_weight: np.ndarray | None = None,
                qid: np.ndarray | None = None) -> Table:
        """The per-candidate table over this estimator's grid and the versions ``Xs`` of the data (one
        search: one successive halving over every (version, C, budget) cell; ``table["setting"]`` gives
        each candidate's version) on given folds (``columns[f]`` restricts fold f's features;
        ``threshold_loss``, ``cut_Xs`` (one per version): see :func:`fold_path`; ``sample_weight``,
        ``qid``: checked weights or query ids of the rows, or None)."""
        loss, Cs, budgets = problem.loss, problem.Cs, problem.budgets
        positive = positive_class(np.asarray(classes), self.pos_label)
        classes = np.array([c for c in classes if c != positive] + [positive])     # the fold models measure it
        bias = 0.0 if loss.ranks_only else float(self.bias)      # as StructSVM fits such a loss
        per_sample = self.Cs is None          # the default grid is C per (unit-norm) example: see grid_unit
        w = sample_weight
        versions, cells, table_cells, fold_units = [], [], [], []
        for v, X in enumerate(Xs):
            biases = [bias] * len(folds)
            if not per_sample:
                units, unit = [1.0] * len(folds), 1.0
            elif not self._scales_to_data():
                units = [float(len(train) if w is None else np.sum(w[train])) for train, _ in folds]
                unit = float(X.shape[0] if w is None else np.sum(w))
            else:                             # one pass over X; a fold restricted to columns needs its own
                norms = squared_norms(X)
                fold_norms = [norms[train] if columns is None else squared_norms(take_rows(X, train), columns[f])
                              for f, (train, _) in enumerate(folds)]
                fold_w = [None if w is None else w[train] for train, _ in folds]
                units = [grid_unit(fold, fw) for fold, fw in zip(fold_norms, fold_w)]
                unit = grid_unit(norms, w)
                biases = [data_bias(bias, fold, fw) for fold, fw in zip(fold_norms, fold_w)]
            fold_tasks = [Fold(train, test, None if columns is None else columns[f], biases[f],
                               None if w is None else w[train], None if w is None else w[test],
                               None if qid is None else qid[train], None if qid is None else qid[test])
                          for f, (train, test) in enumerate(folds)]
            scoring = self._path_scoring(problem, classes, threshold_loss=threshold_loss,
                                         cut_X=None if cut_Xs is None else cut_Xs[v], per_query=qid is not None)
            versions.append(_Version(X, fold_tasks, scoring))
            cells += [(C, B, v) for C in Cs for B in budgets]
            table_cells += [(C * unit, B, v) for C in Cs for B in budgets]
            fold_units.append(units)
        # task i = f * len(cells) + c: cell c on fold f, its C in its version's unit on that fold
        tasks = [(f, C * fold_units[v][f], B, v) for f in range(len(folds)) for C, B, v in cells]
        memo: dict[Any, Any] = {}      # the cuts by CV of path points already rescored (rescore_at_cv_cuts)
        outputs, pruned = self._halving(versions, y, tasks, cells, table_cells, memo)
        table = self._scored(grid_results(table_cells, outputs, len(folds)), y, versions[0].folds,
                             versions[0].scoring, memo)
        cut = {table_cells[c] for c in pruned}
        table["pruned"] = [key in cut for key in zip(table["C"], table["budget"], table["setting"])]
        table["selection"] = self.selection
        table["test_rows"] = tuple(test for _, test in folds)       # a tuple: one per fold, not per candidate
        return table

    # Over 80 lines: the rungs, the race of the budgeted cells and the C steps all decide on the same state
    # (outputs, pending tasks, live cells, kept paths) between two batches of fold paths; apart they
    # would hand all of it back and forth.
    def _halving(self, versions: list[_Version], y: np.ndarray, tasks: list[_Task], cells: list[_Cell],
                 table_cells: list[_Cell], memo: dict[Any, Any]) -> tuple[list[Any], set[int]]:
        """Run the fold paths ``tasks`` (fold, C, B, version) -- cell c of fold f at f * len(cells) + c --
        by successive halving (``halving_factor``; None: each once, to its end) over the cells of every
        version of the data together; (outputs, pruned cells). ``memo``: the rescored cuts kept across
        its rungs (:func:`rescore_at_cv_cuts`).

        A rung r lets a path of budget B run to r * B_min / B groups (B_min: the grid's smallest
        budget), so that paths of different budgets are compared at about the same number of features;
        the race's reference budget under a cap (:meth:`_race_reference`) runs to the cap from the first
        rung on, as an unbudgeted cell holds every feature."""
        from joblib import Parallel

        solver, n_folds = versions[0].scoring.solver, len(versions[0].folds)
        max_outer = solver.max_outer
        smallest = min((cell[1] for cell in cells if cell[1] is not None), default=1)
        groups = versions[0].scoring.groups       # a budget counts groups, the cap columns
        width = 1.0 if groups is None else groups.shape[0] / np.unique(groups).shape[0]
        reference = self._race_reference({cell[1] for cell in cells}, solver.max_features, width)

        def length(rung: int, B: int | None) -> int:
            if B is None:
                return max_outer
            # the race's reference runs to the cap from the first rung on (see _race_reference)
            to_cap = math.ceil(cast(int, solver.max_features) / (B * width)) if B == reference else 1
            return min(max_outer, max(to_cap, -(-rung * smallest // B)))

        def capped(c: int, rung: int) -> bool:
            return cells[c][1] is not None and any(
                outputs[f * len(cells) + c][0].shape[0] >= length(rung, cells[c][1]) for f in range(n_folds))

        outputs: list[Any] = [None] * len(tasks)
        pending, alive, pruned = list(range(len(tasks))), list(range(len(cells))), set()
        # Budgeted cells the ladders' C steps did not fit count as candidates that lost at the first rung:
        # halving keeps 1 / halving_factor of the cells it would have had, not of those left (the steps
        # drop what halving would have dropped, not a survivor's place). The race's own drops do not
        # count: halving works on the cells that passed it, as before the ladders.
        stepped_over = 0

        def c_step(waiting: list[int], past_peak: bool, folds: range, counted: bool = False) -> tuple[list[int],
                                                                                                  list[int]]:
            """(cells still waiting, tasks to run): the larger C ``waiting`` (in increasing C) all pruned
            when ``past_peak``, else the next one run on ``folds``; ``counted``: pruned budgeted cells
            count as lost at the first rung (``stepped_over``)."""
            nonlocal alive, stepped_over
            if past_peak:
                pruned.update(waiting)
                if counted:
                    stepped_over += sum(cells[c][1] is not None for c in waiting)
                alive = [c for c in alive if c not in waiting]
                progress.drop(n_folds * len(waiting))
                return [], []
            return waiting[1:], [f * len(cells) + waiting[0] for f in folds]

        rung = max_outer if self.halving_factor is None else min(HALVING_FIRST_RUNG, max_outer)
        # The race: with halving, where the grid holds a reference (the unbudgeted cells, one fit each; under
        # a cap the budget that reaches it within the first rung: _race_reference) beside finer budgets, the
        # finer cells first run on the first fold only; those whose best point there falls short of the
        # best reference cell on the same fold by more than its spread over the folds never run on the
        # others (race_budgeted).
        racing = self.halving_factor is not None and n_folds > 1 and reference is not _NO_RACE and \
            len({cell[1] == reference for cell in cells}) == 2
        if racing:
            pending = [i for i in pending if tasks[i][2] == reference or tasks[i][0] == 0]
        # Each version of the data has its own ladders over C (below), the race's and the C steps'.
        def by_C(ladder: Iterable[int]) -> list[int]:
            return sorted(ladder, key=lambda c: cells[c][0])

        # The race's C steps: on each version, its budgeted cells beyond the first C_PATIENCE + 1 (in
        # increasing C) wait, and each runs on the first fold only while those before it have not all lost
        # the race by more than their last C step gained (losing_and_not_closing).
        raced_ladders = [by_C(c for c, (_, B, v) in enumerate(cells) if v == version and B != reference)
                         for version in range(len(versions))] if racing else []
        race_held = [ladder[C_PATIENCE + 1:] for ladder in raced_ladders]
        waiting_cells = {c for waiting in race_held for c in waiting}
        # The C steps: with halving, the cells of each ladder over C -- each version's unbudgeted cells (the
        # race's reference cells where it runs), and where no race runs each budget's cells -- beyond the
        # first C_PATIENCE + 1 (in increasing C) wait, and each runs on every fold (a budgeted one to the
        # first rung) only while the last C is the best so far or closing on it by its last step
        # (past_the_peak); the larger C past the peak are not fitted.
        budgets = sorted({int(cell[1]) for cell in cells if cell[1] is not None})
        ladders = [by_C(c for c, (_, B, v) in enumerate(cells) if v == version and B == budget)
                   for version in range(len(versions))
                   for budget in ([reference] if racing else [None, *budgets])]
        held = [ladder[C_PATIENCE + 1:] if self.halving_factor is not None else [] for ladder in ladders]
        waiting_cells |= {c for waiting in held for c in waiting}
        pending = [i for i in pending if i % len(cells) not in waiting_cells]
        # Serial searches keep their budgeted paths between rungs and continue them (FoldPath); parallel
        # ones start a survivor's path over in a worker. Kept paths hold their planes (K x n each), so
        # only while the training rows of all of them stay under RESUME_MAX_ROWS.
        budgeted_rows = sum(len(versions[v].folds[f].train) for f, _, B, v in tasks if B is not None)
        live: dict[int, FoldPath] | None = {} if self.n_jobs in (None, 1) and budgeted_rows <= RESUME_MAX_ROWS else None
        # (fold, version) -> FoldData, shared by its cells (serial searches, as live)
        shared: dict[tuple[int, int], FoldData] = {}
        # (fold, version) -> its unbudgeted chain's last planes (searches without live)
        chain_planes: dict[tuple[int, int], Any] = {}
        with self._progress(self._planned_paths(tasks, len(cells), rung, max_outer)) as progress:
            while pending:
                # a fold's unbudgeted cells of one version run as one job, over C, each fit warm-started
                # (unbudgeted_chain)
                chains: dict[tuple[int, int], list[int]] = {}
                for i in pending:
                    if tasks[i][2] is None:
                        chains.setdefault((tasks[i][0], tasks[i][3]), []).append(i)
                jobs = [[i] for i in pending if tasks[i][2] is not None] + list(chains.values())
                if live is None:
                    results = Parallel(n_jobs=self.n_jobs, return_as="generator")(
                        self._job(versions[tasks[job[0]][3]], y, [tasks[i] for i in job],
                                  length(rung, tasks[job[0]][2]), chain_planes.get(tasks[job[0]][::3], []))
                        for job in jobs)
                else:
                    results = (self._resumed(live, shared, versions, y, tasks, job, length(rung, tasks[job[0]][2]))
                               for job in jobs)
                # a parallel search waits for its workers in Python: there Ctrl-C raises at once
                for job, result in zip(jobs, interruptible(results, live is None)):
                    check_interrupt()
                    if live is None and tasks[job[0]][2] is None:        # a chain, with its last planes
                        result, chain_planes[tasks[job[0]][::3]] = result
                    for i, out in zip(job, result):
                        if outputs[i] is not None:        # a longer run of the same path: its time adds up
                            out = (*out[:2], out[2] + outputs[i][2], *out[3:])
                        outputs[i] = out
                        progress(tasks[i], out)
                follow: list[int] = []
                first_fold: list[int] = []
                for k, waiting in enumerate(held):     # each ladder's next C on every fold, or none
                    if waiting:
                        done = past_the_peak(outputs, cells, n_folds, [c for c in ladders[k] if c not in waiting])
                        held[k], more = c_step(waiting, done, range(n_folds), counted=True)
                        follow += more
                for k, waiting in enumerate(race_held):   # each version's next raced C on the first fold, or none
                    if waiting:
                        ran = [c for c in raced_ladders[k] if c not in waiting]
                        race_held[k], more = c_step(waiting, losing_and_not_closing(outputs, cells, n_folds, ran,
                                                                                    reference), range(1))
                        first_fold += more
                follow += first_fold
                if racing and not first_fold:
                    racing = False
                    kept = race_budgeted(outputs, cells, n_folds, reference)
                    raced = [c for ladder in raced_ladders for c in ladder if outputs[c] is not None]
                    pruned |= {c for c in raced if c not in kept}
                    alive = [c for c in alive if cells[c][1] == reference or c in kept]
                    follow += [f * len(cells) + c for f in range(1, n_folds) for c in kept]
                    progress.drop((n_folds - 1) * (len(raced) - len(kept)))
                if follow:
                    pending = follow
                    continue
                if rung >= max_outer:
                    break
                scored = self._scored(grid_results(table_cells, outputs, n_folds), y, versions[0].folds,
                                      versions[0].scoring, memo)
                survivors = self._survivors(scored, table_cells, alive, len(alive) + stepped_over)
                stepped_over = 0
                pruned |= {c for c in set(alive) - set(survivors) if capped(c, rung)}
                pending = [f * len(cells) + c for f in range(n_folds) for c in survivors if capped(c, rung)]
                if live is not None:               # the pruned candidates' paths are not continued
                    continued = set(pending)
                    live = {i: task for i, task in live.items() if i in continued}
                alive = survivors
                rung = min(rung * cast(int, self.halving_factor), max_outer)
        return outputs, pruned

    def _scored(self, table: Table, y: np.ndarray, fold_tasks: list[Fold], scoring: PathScoring,
                memo: dict[Any, Any] | None = None) -> Table:
        """The table with every candidate scored at the cut the refitted model will get
        (:func:`rescore_at_cv_cuts`; ``threshold="cv"``, the loss's own measure as the scoring, a
        contingency loss), so that a candidate is chosen for its direction, not for where its own cut
        happens to fall."""
        if scoring.keep_decisions and self.scoring is None:
            y_pm = np.where(np.asarray(y) == scoring.classes[1], 1.0, -1.0)
            weights = None
            if fold_tasks[0].test_weight is not None:         # every validation row's weight
                weights = np.zeros(y_pm.shape[0])
                for fold in fold_tasks:
                    weights[fold.test] = fold.test_weight
            rescore_at_cv_cuts(table, y_pm, [fold.test for fold in fold_tasks], scoring.loss, weights, memo)
        return table

    @staticmethod
    def _job(version: _Version, y: np.ndarray, tasks: list[_Task], max_outer: int, planes: Any) -> Any:
        """A delayed call giving the outputs of ``tasks`` (one fold of one version of the data): one
        budgeted path run to ``max_outer`` groups, or the fold's unbudgeted cells as a warm-started chain
        continued from ``planes``, with the planes where it stopped (:func:`chain_from`)."""
        from joblib import delayed

        f, C, B, _ = tasks[0]
        X, fold, scoring = version.X, version.folds[f], version.scoring
        if B is None:
            return delayed(chain_from)(X, y, fold, [task[1] for task in tasks], scoring, planes)
        return delayed(_as_list)(fold_path, X, y, fold, C, B,
                                 replace(scoring, solver=replace(scoring.solver, max_outer=max_outer)))

    @staticmethod
    def _resumed(live: dict[int, FoldPath], shared: dict[tuple[int, int], FoldData], versions: list[_Version],
                 y: np.ndarray, tasks: list[_Task], job: list[int], max_outer: int) -> list[Any]:
        """The outputs of ``job`` (as :meth:`_job`'s) in this process, continuing a budgeted path kept in
        ``live`` (task index -> FoldPath) from an earlier rung; every cell of a fold of a version uses its
        :class:`FoldData` kept in ``shared`` ((fold, version) -> FoldData)."""
        f, C, B, v = tasks[job[0]]
        X, fold, scoring = versions[v].X, versions[v].folds[f], versions[v].scoring
        fold_data = shared.get((f, v))
        if fold_data is None:
            fold_data = shared[f, v] = FoldData(X, y, fold, scoring)
        if B is None:
            return unbudgeted_chain(X, y, fold, [tasks[i][1] for i in job], scoring, fold_data)
        task = live.get(job[0])
        if task is None:
            task = live[job[0]] = FoldPath(X, y, fold, C, B, scoring, fold_data=fold_data)
        return [task.advance(max_outer)]

    @staticmethod
    def _race_reference(budgets: set[int | None], max_features: int | None, width: float = 1.0) -> Any:
        """The budget the race measures the grid's others against (:func:`race_budgeted`): None (the
        unbudgeted cells) where the grid holds it; under a cap of k columns, the largest budget B if its
        path reaches the cap within the first rung (B * width * HALVING_FIRST_RUNG >= k, ``width`` the
        columns a group holds on average, 1 without groups: the default grid's k // 5, which stands in for
        the unbudgeted cell there, see :func:`default_budgets`) and a finer budget is there to race; else
        ``_NO_RACE``. Such a path holds every sparsity up to the cap after the first rung, as the
        unbudgeted fit holds the model with every feature."""
        if None in budgets:
            return None
        numbers = [int(B) for B in budgets if B is not None]
        if max_features is None or len(numbers) < 2:
            return _NO_RACE
        return max(numbers) if max(numbers) * width * HALVING_FIRST_RUNG >= max_features else _NO_RACE

    def _survivors(self, table: Table, cells: list[_Cell], alive: list[int], of: int) -> list[int]:
        """The best ``of / halving_factor`` (at most all) of the candidates ``alive`` (positions in
        ``cells``) by the best path-smoothed score of their path so far, and the best of each version of
        the data among ``alive`` where none of its cells is among them; ``of``: how many candidates the
        rung had, those the C steps did not fit counted among them.

        A version is another embedding of the data (MILESClassifier's kernel widths), whose paths rise at
        a rate of their own: at a rung every path has the same number of groups, but one version's may
        have peaked where another's is still rising, so a version is not dropped on paths cut short. Its
        best cell runs on to the last rung, and the versions are compared there on whole paths; within a
        version the cells are ranked at the rung as before (the user guide's "Versions of the data in one
        halving")."""
        smoothed = path_smoothed_scores(table)
        best: dict[_Cell, float] = {}
        for key, score in zip(zip(table["C"], table["budget"], table["setting"]), smoothed):
            best[key] = max(best.get(key, -np.inf), score)
        ranked = sorted(alive, key=lambda c: -best.get(cells[c], -np.inf))      # a path may have no point
        kept = ranked[:-(-of // cast(int, self.halving_factor))]
        versions = {cells[c][2] for c in kept}
        for c in ranked:                   # in rank order: the first cell of a version not kept is its best
            if cells[c][2] not in versions:
                kept.append(c)
                versions.add(cells[c][2])
        return sorted(kept)

    def _planned_paths(self, tasks: list[_Task], n_cells: int, rung: int,
                       max_outer: int) -> int:
        """The fold-path runs successive halving makes at most, known before it starts: every task at the
        first rung, then the budgeted tasks of the surviving 1 / halving_factor of the cells at each later
        rung (fewer where paths end on their own: the bar then closes at what was run)."""
        n_folds = len(tasks) // n_cells
        budgeted = sum(task[2] is not None for task in tasks[:n_cells])
        total, alive = len(tasks), n_cells
        while self.halving_factor is not None and rung < max_outer:
            alive = -(-alive // self.halving_factor)
            total += n_folds * min(alive, budgeted)
            rung = min(rung * self.halving_factor, max_outer)
        return total

    def _progress(self, total: int) -> _Progress:
        """A context giving ``progress(task, output)`` for each finished fold path: a progress bar of
        ``total`` (verbose >= 1) and a line per fold path (verbose >= 2)."""
        return _Progress(total, self.verbose)

    @keeps_state_on_failure
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: MatrixLike, y: ArrayLike, sample_weight: ArrayLike | None = None,
            qid: ArrayLike | None = None) -> Self:
        """Cross-validate the grid, then fit the best candidate on all of X, y. ``sample_weight``: example
        i counts as that many copies of itself in every fold fit, validation score, cut and the refit
        (see :meth:`StructSVM.fit`). ``qid``: each example's query id; the folds then split by query,
        every fit and validation score takes the loss averaged over queries, and the model keeps the
        cut it learned (one cut cannot be each query's best)."""
        problem = self._problem()
        loss = problem.loss
        X, y = validate_data(self, X, y, accept_sparse=["csr", "csc", "coo"], dtype=[np.float64, np.float32],
                             ensure_all_finite=True)
        weights = check_sample_weight(sample_weight, X.shape[0], loss)
        queries = check_query_ids(qid, X.shape[0], loss, weights)
        if queries is not None and self.scoring is not None:
            raise ValueError("qid needs scoring=None: the loss's own measure is the one averaged over queries.")
        check_magnitude(X)
        check_classification_targets(y)
        classes = np.unique(y)
        if classes.shape[0] == 1:
            raise ValueError(f"y has a single class ({classes[0]!r}): one class only, but StructSVMCV needs "
                             "examples of two classes.")
        if classes.shape[0] != 2:
            raise ValueError(f"Only binary classification is supported; y has {classes.shape[0]} classes. Wrap it "
                             "as OneVsRestClassifier(StructSVMCV(...)) or OneVsRestStructSVM for more.")
        if sp.issparse(X):
            X = sp.csr_matrix(X)
        check_groups(self.groups, X.shape[1])
        if self.interactions:
            check_pair_scoring(X)
        labels = np.asarray(y)
        if weights is not None:
            check_weighted_classes(weights, labels, classes)
        return self._fit_on(problem, MatrixData(X), labels, self._folds(labels, queries), weights, queries)

    @keeps_state_on_failure
    @_fit_context(prefer_skip_nested_validation=True)
    def fit_data(self, data: SearchData, y: ArrayLike) -> Self:
        """Cross-validate the grid on the versions of a :class:`SearchData` source's matrix (chosen as C
        is, reported as ``param_<name>`` in ``cv_results_``) with its columns per fold, then fit the best
        candidate on all the rows of its version. MILESClassifier searches its kernel widths so."""
        problem = self._problem()               # bad parameters fail before any work
        labels = np.asarray(y)
        check_classification_targets(labels)
        classes = np.unique(labels)
        if classes.shape[0] != 2:
            raise ValueError(f"y must hold examples of two classes; it has {classes.shape[0]}.")
        return self._fit_on(problem, data, labels, self._folds(labels))

    def _fit_on(self, problem: SearchProblem, data: SearchData, y: np.ndarray,
                folds: list[tuple[np.ndarray, np.ndarray]], sample_weight: np.ndarray | None = None,
                qid: np.ndarray | None = None) -> Self:
        """Search on ``data``'s versions over ``folds`` and refit; the fitted attributes (the fallback's,
        ``loss_`` among them, where it took over) on this estimator."""
        fitted = self._search_and_refit(problem, data, y, folds, sample_weight, qid)
        for name, value in vars(fitted).items():
            if name.endswith("_") and not name.startswith("_"):
                setattr(self, name, value)
        return self

    def _search_data(self, problem: SearchProblem, data: SearchData, y: np.ndarray, classes: np.ndarray,
                     folds: list[tuple[np.ndarray, np.ndarray]], threshold_loss: Loss | None = None,
                     sample_weight: np.ndarray | None = None, qid: np.ndarray | None = None) -> Table:
        """The candidate table of one search over every version of ``data`` (see :meth:`_search`):
        candidate i was searched on version ``table["settings"][table["setting"][i]]``."""
        cut_Xs = None if threshold_loss is None else [data.cut_X(setting) for setting in data.settings]
        table = self._search(problem, [data.X(setting) for setting in data.settings], y, classes, folds,
                             columns=data.fold_columns(folds), threshold_loss=threshold_loss, cut_Xs=cut_Xs,
                             sample_weight=sample_weight, qid=qid)
        table["settings"] = tuple(data.settings)
        return table

    def _search_and_refit(self, problem: SearchProblem, data: SearchData, y: np.ndarray,
                          folds: list[tuple[np.ndarray, np.ndarray]], sample_weight: np.ndarray | None = None,
                          qid: np.ndarray | None = None) -> StructSVMCV:
        """Search, refit the best candidate, and fall back to a ranking loss where the loss gives the zero
        model; returns the fitted estimator (this one, or the fallback copy). ``sample_weight``, ``qid``:
        the rows' checked weights or query ids, or None.

        The fallback: when every candidate is the zero model, or the model refitted on all the data is,
        the loss's structural SVM has its optimum at w = 0 on these data (F-measures on noisy,
        imbalanced data or few positives: every w leaves a labeling without true positives whose slack
        is 100%; w = 0 is optimal at one C iff at every C, since the regulariser's gradient vanishes
        there). Rather than a constant classifier, this warns and searches again with a copy of this
        estimator with ``FALLBACK_LOSS``, a ranking loss without such a trivial optimum, scored by this
        estimator's measure; ``loss_`` of the returned model says which loss it was trained on. A
        ranking loss learns no threshold (its intercept is 0 wherever the classes' scores lie), so
        every model of that search has its intercept moved to the best cut of this estimator's loss's
        measure on its training scores (``threshold_loss``, for a contingency loss).
        """
        loss = problem.loss
        classes = np.unique(y)

        def search(estimator: StructSVMCV, its_problem: SearchProblem, threshold_loss: Loss | None) -> Table:
            return estimator._search_data(its_problem, data, y, classes, folds, threshold_loss, sample_weight, qid)

        if loss.ranks_only and self.scoring is None:
            return self._best_training_loss(search, problem, data, y, sample_weight)
        can_fall_back = loss.name != FALLBACK_LOSS
        table = search(self, problem, None)
        if np.any(table["n_features"]):
            with warnings.catch_warnings():
                if can_fall_back:                 # a featureless model falls back below rather than warn
                    warnings.simplefilter("ignore", NoFeaturesWarning)
                self._refit_best(problem, data, y, table, sample_weight=sample_weight, qid=qid)
            if self.selected_features_.size > 0 or not can_fall_back:
                return self
            what = "The model refitted on all the data was the zero model"
        elif not can_fall_back:
            return self._refit_best(problem, data, y, table, sample_weight=sample_weight, qid=qid)  # it warns
        else:
            what = "Every candidate of the search was the zero model"
        warnings.warn(f"{what}: on these data the {loss.name!r} loss's structural SVM has its optimum at w = 0. "
                      f"Searching again with loss={FALLBACK_LOSS!r} (a ranking loss without that trivial "
                      "optimum), scored by the same measure, each model's threshold the best cut of the measure "
                      "on its training scores; loss_ is the loss of the returned model.", UserWarning, stacklevel=6)
        fallback = clone(self).set_params(loss=FALLBACK_LOSS, loss_params=None,
                                          scoring=problem.scorer)
        fallback_problem = fallback._problem()
        threshold_loss = loss if loss.is_contingency and qid is None else None
        table = search(fallback, fallback_problem, threshold_loss)
        return fallback._refit_best(fallback_problem, data, y, table, threshold_loss, sample_weight=sample_weight,
                                    qid=qid)

    def _best_training_loss(self, search: Callable[[StructSVMCV, SearchProblem, Loss | None], Table],
                            problem: SearchProblem, data: SearchData, y: np.ndarray,
                            sample_weight: np.ndarray | None = None) -> StructSVMCV:
        """An operating-point ``loss``: search with it and with ``SURROGATE_LOSS`` as the training loss,
        both scored by the operating point's measure on the same folds, and return the refitted model
        whose search scored higher (``loss_`` says which), cut at its out-of-fold operating point.

        The operating-point loss's constraints see only labelings that already keep the constrained
        rate, and on text it learns a worse ranking than F1 does (R8, precision at recall 0.9: 69.9
        against 90.0 for the F1 model cut at the operating point); which training loss ranks better is
        a choice for the data, so it is made like C's, by the measure the user asked for."""
        loss = problem.loss
        own = search(self, problem, None)
        surrogate = clone(self).set_params(loss=SURROGATE_LOSS, loss_params=None,
                                           scoring=check_scoring(None, loss, self.pos_label))
        surrogate_problem = surrogate._problem()
        other = search(surrogate, surrogate_problem, None)
        # compared by their chosen candidates' scores (_refit_best's best_score_), so that only the winner
        # is refitted
        if _chosen_score(other) > _chosen_score(own):
            return surrogate._refit_best(surrogate_problem, data, y, other, operating_point=loss,
                                         sample_weight=sample_weight)
        return self._refit_best(problem, data, y, own, sample_weight=sample_weight)

    def score(self, X: MatrixLike, y: ArrayLike, sample_weight: ArrayLike | None = None,
              qid: ArrayLike | None = None) -> float:
        """The search's measure (``scoring``; default: the loss's own, e.g. F1 for "f1") of the refitted
        model on X, y, on scikit-learn's 0-1 scale -- as ``LogisticRegressionCV.score`` uses its
        ``scoring``; ``sample_weight`` weighs the examples and ``qid`` averages over queries as in
        :meth:`fit`."""
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self)
        scorer = check_scoring(self.scoring, get_loss(self.loss, **(self.loss_params or {})), self.pos_label)
        y = np.asarray(y)
        n = y.shape[0]
        weights = check_sample_weight(sample_weight, n, self.loss_)
        return score_on(scorer, self, X, y, weights, check_query_ids(qid, n, self.loss_, weights))

    def _refit_best(self, problem: SearchProblem, data: SearchData, y: np.ndarray, table: Table,
                    threshold_loss: Loss | None = None,
                    operating_point: Loss | None = None, sample_weight: np.ndarray | None = None,
                    qid: np.ndarray | None = None) -> StructSVMCV:
        """Set the cross-validation results from ``table`` and fit its best candidate on its version of
        ``data``'s matrix and y (``threshold_loss``: its intercept moved to that loss's best cut on the
        scores of that version's ``cut_X``; see :func:`fold_path`; ``operating_point``: an
        operating-point loss whose cut on the candidate's out-of-fold scores the model gets, as its own
        loss's when that is one; ``sample_weight``, ``qid``: the rows' checked weights or query ids, or
        None)."""
        w = sample_weight
        best = self._set_results(table)
        setting = table["settings"][table["setting"][best]]
        X = data.X(setting)
        max_outer = self.max_outer if self.n_groups_ is None else self.n_groups_
        refit = self.C_ if self.debias and self.budget_ is not None else None
        # the refit's solver log only from verbose 2: at 1 the bar and the one-line summary say enough
        self.estimator_ = self._estimator(C=self.C_, budget=self.budget_, refit=refit,
                                          tol=self._final_tol(problem.solver.tol, self.budget_ is not None),
                                          verbose=max(int(self.verbose) - 1, 0))
        bias = float(self.bias)              # validated by the search
        self.bias_ = data_bias(bias, squared_norms(X), w) if self._scales_to_data() else bias
        with config_context(assume_finite=True):        # X was checked by this search's fit
            self.estimator_.set_params(bias=self.bias_, max_outer=max_outer).fit(X, y, sample_weight=w, qid=qid)
        positive = positive_class(self.estimator_.classes_, self.pos_label)
        y_pm = np.where(np.asarray(y) == positive, 1.0, -1.0)
        sign = 1.0 if positive == self.estimator_.classes_[1] else -1.0     # the refitted model's orientation
        self.threshold_ = 0.0
        loss = problem.loss
        point = operating_point or (loss if loss.ranks_only else None)

        def training_X() -> Any:           # the matrix whose training scores set or check a cut
            scored = data.cut_X(setting)
            return X if scored is None else scored

        if threshold_loss is not None:
            cut_at_best(self.estimator_, on_rows(threshold_loss, w), y_pm, training_X(), sign)
        elif "decisions" in table and point is not None:
            self._cut_at_operating_point(table, best, point, loss.ranks_only, y_pm, sign, w)
        elif "decisions" in table and self.estimator_.selected_features_.size:
            self._cut_by_measure(table, best, loss, training_X(), y_pm, sign, w)
        self._copy_fitted()
        if self.verbose:
            self._report_choice(table, best)
        return self

    def _set_results(self, table: Table) -> int:
        """``cv_results_``, ``best_index_``, ``best_score_`` and the chosen C_, budget_, n_groups_ from a
        search table (one warning if some of its fold fits ran out of cutting planes); returns the index."""
        best = best_candidate(table)
        self.cv_results_ = cv_results(table)
        uncertified = ~self.cv_results_["certified"]
        if uncertified.any():          # one warning for the search, not one per fold fit
            Cs = ", ".join(f"{C:.4g}" for C in np.unique(self.cv_results_["param_C"][uncertified]))
            warnings.warn(f"{int(uncertified.sum())} of {uncertified.size} candidates were scored on fold fits that "
                          f"ran out of max_iter={self.max_iter} cutting planes without their certificate (C = {Cs}); "
                          "their validation scores are approximate. Raise max_iter (or tol), or leave those C out "
                          "of Cs.", ConvergenceWarning, stacklevel=8)
        self.best_index_ = best
        self.best_score_ = float(np.mean(table["scores"][best]))
        self.C_, self.budget_, self.n_groups_ = table["C"][best], table["budget"][best], table["n_groups"][best]
        return best

    def _cut_at_operating_point(self, table: Table, best: int, point: Loss, ranks_only: bool, y_pm: np.ndarray,
                                sign: float, w: np.ndarray | None) -> None:
        """The refitted model cut where ``point`` is best on the candidate's out-of-fold scores
        (``ranks_only``: the search's loss is a ranking loss, fitted without the bias feature).

        The cut on the training scores is optimistic (text is separable there: asked for recall 0.9, R8
        topics got 0.50 on test); the out-of-fold cut is not, and the folds' models share the refitted
        one's scale (same C and loss)."""
        rows = np.concatenate(table["test_rows"])
        cut = best_threshold(on_rows(point, None if w is None else w[rows]), y_pm[rows],
                             np.concatenate(table["decisions"][best]))
        self.threshold_ = cut
        if ranks_only:                         # fitted without the bias feature: its intercept was a cut
            self.estimator_.intercept_ = np.array([-sign * cut])
        else:                                  # the folds' decisions hold their learned intercepts too
            self.estimator_.intercept_ = self.estimator_.intercept_ - sign * cut

    def _cut_by_measure(self, table: Table, best: int, loss: Loss, X: Any, y_pm: np.ndarray, sign: float,
                        w: np.ndarray | None) -> None:
        """The refitted model cut where the loss's measure is best on the chosen candidate's out-of-fold
        decision values, carried to it by rank, where its own training scores agree; those are its scores
        of ``X``, the search data's ``cut_X`` where it has one (MIL: each training bag without its own
        instances, whose similarity 1 inflates its scores as no new bag's are)."""
        rows = np.concatenate(table["test_rows"])
        decisions = np.concatenate(table["decisions"][best])
        if "cuts" in table:
            cut = table["cuts"][best]
        else:
            cut = best_threshold(on_rows(loss, None if w is None else w[rows]), y_pm[rows], decisions)
        # The folds' models are not the refitted one: their cut is carried to it by rank (the same
        # fraction predicted positive, see same_rate_cut), and a cut that rescued degenerate fold models
        # can wreck a refitted model whose own cut is good (R8 "grain": a shift of 11 cost 4 F1), so it is
        # kept only where the refitted model's own training scores agree that it is no worse there.
        own = sign * self.estimator_.decision_function(X)
        if cut != 0.0:
            cut = same_rate_cut(decisions, cut, own, None if w is None else w[rows], w)
        if cut != 0.0 and on_rows(loss, w).score(y_pm, own - cut) >= on_rows(loss, w).score(y_pm, own):
            self.threshold_ = cut
            self.estimator_.intercept_ = self.estimator_.intercept_ - sign * cut

    def _copy_fitted(self) -> None:
        """The refitted model's fitted attributes on the search, as a fitted StructSVM's."""
        for name in ("classes_", "coef_", "intercept_", "selected_features_", "objective_", "lower_bound_", "gap_",
                     "n_iter_", "n_outer_", "stop_", "loss_"):
            setattr(self, name, getattr(self.estimator_, name))
        for name in ("interactions_", "interaction_coef_"):      # a linear candidate has none
            if hasattr(self.estimator_, name):
                setattr(self, name, getattr(self.estimator_, name))
            elif hasattr(self, name):
                delattr(self, name)
        if self.groups is not None:
            self.selected_groups_ = np.unique(np.asarray(self.groups)[self.selected_features_])

    def _report_choice(self, table: Table, best: int) -> None:
        """The ``verbose`` summary: what was chosen, by which rule."""
        import sys

        groups = "" if self.n_groups_ is None else f", {self.n_groups_} group(s)"
        best_score_pick = int(self.cv_results_["rank_test_score"].argmin())
        rule = ("the best cross-validated score" if best == best_score_pick else
                f"the one-standard-error rule: the smallest C of the unbudgeted candidates within one SE "
                f"of the best score (C = {self.cv_results_['param_C'][best_score_pick]:.4g})")
        print(f"[structfs] StructSVMCV chose C = {self.C_:.4g}, budget = {self.budget_}{groups} by {rule} "
              f"(cross-validated score {self.best_score_:.4f} of {len(table['C'])} candidates); the refitted "
              f"model uses {len(self.selected_features_)} features", file=sys.stderr)


def _chosen_score(table: Table) -> float:
    """The mean validation score of the candidate a search table's rule chooses (what ``_refit_best`` sets
    as ``best_score_``)."""
    return float(np.mean(table["scores"][best_candidate(table)]))
