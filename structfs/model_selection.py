"""StructSVMCV: C, budget and the number of feature groups chosen by cross-validation.

With a budget, feature generation adds one group of at most B features per outer iteration and solves
the restricted problem again: the model after each group is a point on a sparsity path, obtained at
the cost of one fit (``SolverResult.path``). So each (C, budget) cell of the grid costs one fit per
fold, and every length of the path is scored on the fold's validation part without refitting. The
chosen (C, budget, number of groups) is then fitted once on all the data.
"""
import numbers
import time
import warnings
from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import check_cv
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import validate_data

from . import _defaults
from ._validation import check_magnitude, check_positive_float, check_positive_int, keeps_state_on_failure
from .estimators import NO_FEATURES, LinearBinaryMixin, LinearModel, StructSVM
from .metrics import MEASURES, StructScorer
from .solvers import PathRefitter, Solver, penalty_for
from .solvers.data import weights_in

__all__ = ["StructSVMCV", "DEFAULT_C_PER_SAMPLE", "DEFAULT_BUDGETS", "FALLBACK_LOSS", "budget_under_cap",
           "default_budgets",
           "best_threshold"]

# Chosen on all dev sets together (docs/model_selection.md, "The C grid"). C is svm_perf's, whose loss
# term is an average over the n examples (Delta in percent), so the same regularisation relative to a
# sum of losses -- LinearSVC's C = 100 C / n -- needs C proportional to n: the default grid is C / n,
# and a C chosen on folds of n_f examples is carried to the whole data as the same C / n.
DEFAULT_C_PER_SAMPLE = (0.3, 1.0, 3.0, 10.0)
# B = 5 is the path's step (B = 2 needs 2.5x the groups of B = 5 for the same features; given (2, 5) the
# CV chose 5 in 6 of 8 R8 topics and most musk1 splits). But a path does not grow without end: the optimum
# on the generated groups keeps a number of features set by B and C, and at B = 5 and small C that is
# 10-35 on R8 topics, whatever the number of groups. So the grid
# also holds a candidate that can reach any size: None (no budget; on SMS spam every sparse model was 4
# F1 points below the full one), or under a cap k, where a budget is needed, B = k // MIN_PATH_POINTS
# (see default_budgets; docs/model_selection.md, "The budget grid").
DEFAULT_BUDGETS = (5, None)
# Under a small cap a group of 5 leaves too short a path to choose on (max_features=10: two points).
# The default budget is shrunk so that the path to the cap has at least this many points (see
# budget_under_cap; measured on MIL with max_instances=10 and R8 with max_features=10).
MIN_PATH_POINTS = 5
# When every candidate is the zero model, or the refitted model is (the loss's structural optimum is w = 0:
# F-measures on noisy, imbalanced data, or with few positives), the search is run again with this ranking
# loss, scored by the same measure, each model's intercept moved to the best cut of the loss's measure on
# its training scores (docs/model_selection.md, "When the loss's optimum is the zero model").
FALLBACK_LOSS = "auc"


class _LossScorer:
    """The loss's own measure (``loss.score``, percent, greater is better) as a scorer."""

    def __init__(self, loss):
        self.loss = loss

    def __call__(self, estimator, X, y):
        y_pm = np.where(np.asarray(y) == estimator.classes_[1], 1.0, -1.0)
        return self.loss.score(y_pm, estimator.decision_function(X))


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


def check_grid(values, name, check):
    if values is None or isinstance(values, (str, bytes)) or not np.iterable(values):
        raise ValueError(f"{name} must be a non-empty sequence, got {values!r}.")
    values = list(values)
    if not values:
        raise ValueError(f"{name} is empty; give at least one value.")
    return [check(v, name) for v in values]


def budget_under_cap(budget, max_features):
    """A default budget under the cap ``max_features``: at most max_features / MIN_PATH_POINTS (at least
    1), so that feature generation reaches the cap in MIN_PATH_POINTS groups or more; unchanged
    without a cap or for caps of 25 and more."""
    if budget is None or max_features is None:
        return budget
    return max(1, min(budget, max_features // MIN_PATH_POINTS))


def default_budgets(max_features):
    """StructSVMCV's default budgets: ``DEFAULT_BUDGETS`` without a cap. Under a cap k each is shrunk
    by :func:`budget_under_cap`, and None (no budget, which a cap excludes) becomes the largest group
    that still leaves a path of MIN_PATH_POINTS points to the cap, k // MIN_PATH_POINTS: the candidate
    whose path can reach the cap (k = 100: (5, 20); k = 25: (5,); k = 10: (2,))."""
    if max_features is None:
        return list(DEFAULT_BUDGETS)
    shrunk = (budget_under_cap(max_features if b is None else b, max_features) for b in DEFAULT_BUDGETS)
    return sorted(set(shrunk))


def _check_budget(value, name):
    return None if value is None else check_positive_int(value, name)


def _rows(X, idx):
    return X[idx] if sp.issparse(X) else np.asarray(X)[idx]


def squared_norms(X, columns=None):
    """Squared norm of every row of X (over ``columns`` only, if given)."""
    if columns is not None:
        X = X[:, columns]
    if sp.issparse(X):
        return np.asarray(X.multiply(X).sum(axis=1), dtype=float).ravel()
    return np.einsum("ij,ij->i", X, X)


def _mean_squared_norm(norms):
    """The rows' mean squared norm (``norms``, one per row); data of norm zero count as norm one."""
    mean = float(np.mean(norms))
    return mean if mean > 0 else 1.0


def grid_unit(norms):
    """What the default grid's C / n is per with ``scale_C``: the number of rows over their mean squared
    norm (``norms``, one per row) -- SVMlight's default C = 1 / mean(x'x), which makes the grid invariant
    to a rescaling of the features."""
    return len(norms) / _mean_squared_norm(norms)


def data_bias(bias, norms):
    """The bias feature's value with ``scale_C``: ``bias`` times the rows' root mean squared norm, the
    constant feature on the scale of the others. With the grid's C / s this makes the whole problem
    (and the model's predictions) invariant to a rescaling of X: it is the problem on X / RMS norm with
    the constant feature ``bias``. A fixed bias of 1 beside rows of norm ~62 (raw pixels, s ~ 3,850)
    regularises the intercept ~3,850 times more than the weights, and that cost F1 on raw data."""
    return float(bias * np.sqrt(_mean_squared_norm(norms)))


@dataclass(frozen=True)
class Fold:
    """One fold of a search: its training and validation rows, the features it may use (MIL: the
    instances of its training bags; None: all) and the value of its bias feature."""

    train: np.ndarray
    test: np.ndarray
    columns: np.ndarray = None
    bias: float = 1.0


@dataclass(frozen=True)
class PathScoring:
    """How every (fold, C, budget) path of a search is fitted and scored.

    ``solver``: the settings of the fits. ``debias``: every point is refitted without budget on its
    features at the same C (StructSVM's ``refit=C``), sharing cutting planes along the path.
    ``n_iter_no_change``: stop a path once its validation score has not improved for that many
    groups. ``threshold_loss``: each point's intercept is moved to the best cut of that loss's measure
    on the fold's training scores (:func:`best_threshold`; the fallback's ranking models learn no
    threshold), computed on the rows of ``cut_X`` (default X; MIL passes its embedding with each
    training bag's own instances left out, whose scores are not inflated by a bag's similarity 1 to
    itself).
    """

    classes: np.ndarray
    loss: object
    scorer: object
    solver: Solver
    debias: bool = True
    n_iter_no_change: int = None
    threshold_loss: object = None
    cut_X: object = None


def fold_path(X, y, fold, C, budget, scoring):
    """Fit one (C, budget) cell on ``fold.train`` and score every point of its path on ``fold.test``.

    Returns (scores, n_features, seconds, certified): one score and feature count per path point (a
    single point without budget), and whether every solve of the task ended with its certificate
    (False: one ran out of ``max_iter`` planes and its points were scored on an approximate
    solution). The solves do not warn each: the search reports uncertified candidates once
    (:meth:`StructSVMCV.refit_best`).
    """
    t0 = time.perf_counter()
    classes, loss, solver = scoring.classes, scoring.loss, scoring.solver
    X_tr, X_te = _rows(X, fold.train), _rows(X, fold.test)
    X_cut = None
    if scoring.cut_X is not None and scoring.threshold_loss is not None:
        X_cut = _rows(scoring.cut_X, fold.train)
    if fold.columns is not None:
        X_tr, X_te = X_tr[:, fold.columns], X_te[:, fold.columns]
        X_cut = None if X_cut is None else X_cut[:, fold.columns]
    y_pm = np.where(y[fold.train] == classes[1], 1.0, -1.0)
    loss.validate(y_pm)
    m = X_tr.shape[1]
    penalty = penalty_for(budget).restricted(m, solver.max_features)
    # The debiasing refits and the unbudgeted fits of a fold only rank candidates: svm_perf's default
    # precision (-e 0.1) is enough for that (an unbudgeted R8 fold fit: 3-4x faster than at 0.01).
    ranking = replace(solver, tol=max(solver.tol, 0.1))
    refitter = None
    if scoring.debias and penalty.budget is not None:
        refitter = PathRefitter(X_tr, y_pm, loss, C, fold.bias, ranking)
    scores, n_features = [], []
    path = (solver if penalty.budget is not None else ranking).path(X_tr, y_pm, loss, C, penalty, fold.bias)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)      # counted in `certified` instead
        for cols, w, w_b in path:
            if refitter is not None:   # the budget selects the features, the unbudgeted problem weighs them
                cols, w, w_b = refitter.refit(cols[w != 0])
            point = LinearModel.from_weights(weights_in(np.asarray(cols, dtype=np.int64), np.asarray(w, dtype=float),
                                                        m), fold.bias * w_b, classes)
            if scoring.threshold_loss is not None:
                _cut_at_best(point, scoring.threshold_loss, y_pm, X_tr if X_cut is None else X_cut)
            scores.append(scoring.scorer(point, X_te, y[fold.test]))
            n_features.append(int(point.selected_features_.shape[0]))
            patience = scoring.n_iter_no_change
            if patience is not None and len(scores) - 1 - int(np.argmax(scores)) >= patience:
                break
    certified = path.certified() and (refitter is None or refitter.uncertified == 0)
    return np.array(scores, dtype=float), np.array(n_features), time.perf_counter() - t0, certified


def best_threshold(loss, y, s):
    """The cut t maximising the contingency ``loss``'s measure of the labeling ``s - t > 0`` (labels
    ``y`` in -1/+1): every cut between two distinct scores is tried (the loss's Delta on the tables of
    all of them at once, O(n log n)); t is the midpoint of the gap, ties go to the fewest positives."""
    order = np.argsort(-s, kind="stable")
    ranked, positive = s[order], y[order] > 0
    a = np.concatenate(([0], np.cumsum(positive)))              # cut after the k highest scores
    b = np.arange(ranked.shape[0] + 1) - a
    P, N = a[-1], b[-1]
    mask = loss._feasible_mask(a, b, P, N)
    delta = np.array(loss._delta_table(a, b, P - a, N - b, mask), dtype=float)
    admissible = np.ones(a.shape[0], dtype=bool) if mask is None else mask.copy()
    admissible[1:-1] &= ranked[:-1] > ranked[1:]                 # no cut inside a tie
    if not admissible.any():
        return 0.0
    k = int(np.flatnonzero(admissible)[np.argmin(delta[admissible])])
    above = ranked[k - 1] if k > 0 else ranked[0] + 2.0
    below = ranked[k] if k < ranked.shape[0] else ranked[-1] - 2.0
    return float((above + below) / 2.0)


def _cut_at_best(model, loss, y, X):
    """Move a fitted linear model's intercept so that it predicts positive above the best cut of the
    contingency ``loss``'s measure on its own scores of X (labels ``y`` in -1/+1)."""
    model.intercept_ = model.intercept_ - best_threshold(loss, y, model.decision_function(X))


def grid_results(cells, outputs, n_folds):
    """cv_results_-style dict over (C, budget, n_groups) candidates from the per-(fold, cell) paths.

    A fold whose path ended earlier (its generation converged) keeps its last point for longer paths.
    ``certified``: every fold's fit of the candidate's cell ended with its certificate.
    """
    out = {k: [] for k in ("C", "budget", "n_groups", "scores", "n_features", "fit_time", "certified")}
    for c, cell in enumerate(cells):
        runs = [outputs[f * len(cells) + c] for f in range(n_folds)]
        length = max(r[0].shape[0] for r in runs)
        for k in range(length):
            out["C"].append(cell[0])
            out["budget"].append(cell[1])
            out["n_groups"].append(k + 1 if cell[1] is not None else None)
            out["scores"].append([r[0][min(k, r[0].shape[0] - 1)] for r in runs])
            out["n_features"].append(np.mean([r[1][min(k, r[1].shape[0] - 1)] for r in runs]))
            out["fit_time"].append(np.mean([r[2] for r in runs]))
            out["certified"].append(all(r[3] for r in runs))
    return out


def path_smoothed_scores(table):
    """Mean validation score of every candidate averaged with its neighbours on the same path.

    Along one (sigma, C, budget) cell's path the candidates differ by one group each, and with few
    validation positives their scores jitter from one length to the next: the best single point is
    mostly the luckiest. Each score is averaged over a window of three path lengths (the ends repeat
    their value), so a length is chosen where the path is good, not where it spiked. Replayed on the
    dev sets (``python -m benchmarks.selection``) it gained 2.8 +- 1.5, 6.0 +- 2.5 and
    0.8 +- 1.5 F1 on musk1, musk2 and elephant over the single best point, and cost 0.6 +- 0.8 on
    birds and 0.3 +- 0.4 on R8 (within a standard error);
    unbudgeted candidates (one point) are unchanged.
    """
    mean = np.mean(table["scores"], axis=1)
    keys = list(zip(table.get("sigma", [None] * len(mean)), table["C"], table["budget"]))
    smoothed = mean.copy()
    start = 0
    while start < len(mean):                  # grid_results lists each cell's path contiguously
        stop = start + 1
        while stop < len(mean) and keys[stop] == keys[start]:
            stop += 1
        path = mean[start:stop]
        padded = np.concatenate((path[:1], path, path[-1:]))
        smoothed[start:stop] = (padded[:-2] + padded[1:-1] + padded[2:]) / 3.0
        start = stop
    return smoothed


def best_candidate(table):
    """Index of the best path-smoothed mean score (:func:`path_smoothed_scores`); ties go to fewer
    features, then to the smaller C."""
    score = path_smoothed_scores(table)
    order = np.lexsort((np.asarray(table["C"], dtype=float), np.asarray(table["n_features"]), -score))
    return int(order[0])


def cv_results(table):
    """The table as scikit-learn's ``cv_results_`` (dict of arrays, one entry per candidate)."""
    scores = np.asarray(table["scores"], dtype=float)
    mean = scores.mean(axis=1)
    smoothed = path_smoothed_scores(table)
    results = {
        "params": [dict(C=c, budget=b, n_groups=k) for c, b, k in zip(table["C"], table["budget"], table["n_groups"])],
        "param_C": np.asarray(table["C"], dtype=float),
        "param_budget": np.asarray(table["budget"], dtype=object),
        "param_n_groups": np.asarray(table["n_groups"], dtype=object),
        "mean_test_score": mean,
        "std_test_score": scores.std(axis=1),
        "smoothed_test_score": smoothed,
        # the selection's order: by the path-smoothed score
        "rank_test_score": (np.argsort(np.argsort(-smoothed, kind="stable"), kind="stable") + 1).astype(np.int32),
        "mean_n_features": np.asarray(table["n_features"], dtype=float),
        "mean_fit_time": np.asarray(table["fit_time"], dtype=float),
        "certified": np.asarray(table["certified"], dtype=bool),
    }
    for f in range(scores.shape[1]):
        results[f"split{f}_test_score"] = scores[:, f]
    if "sigma" in table:                       # MILESClassifier's kernel width, chosen by the same CV
        results["param_sigma"] = np.asarray(table["sigma"], dtype=float)
        for params, sigma in zip(results["params"], table["sigma"]):
            params["sigma"] = sigma
    return results


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
        not change when X is multiplied by a constant (a fixed bias of 1 beside rows of norm 62
        over-regularised the intercept: +5.0 ± 1.1 F1 on raw digits 8-vs-rest). False: C = c * n and the
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
        None: the loss's own measure (F1 for "f1", accuracy for "error", ...); a structfs measure
        name, a scikit-learn scorer name, or a callable ``scorer(estimator, X, y)``.
    max_features : int or None, default=None
        Hard cap on the selected features of every candidate (StructSVM's ``max_features``); needs
        budgets (None is then not allowed among them).
    bias, loss_params, tol, max_iter, max_outer, master_solver : as StructSVM's
        ``max_outer`` bounds the path length (groups) of every cell. Inside the folds the unbudgeted
        candidates and the debiasing refits are solved to svm_perf's default precision (``tol`` 0.1,
        or ``tol`` if coarser): they only rank candidates; the final model is solved to ``tol``.
    n_iter_no_change : int or None, default=5
        Early stopping along each fold's path: once the validation score has not improved for this
        many groups, that path ends (a fold whose path ended early keeps its last point for longer
        paths). None: every path runs to ``max_outer`` (or its own convergence).
    debias : bool, default=True
        Score and return budgeted models debiased: the budget selects the features, and the weights
        are those of the unbudgeted problem on them at the same C (StructSVM's ``refit=C``). The
        B-support norm shrinks the weights it keeps; on R8 debiasing adds 1.5-3 F1 points. The
        refits along a path share their cutting planes; inside the folds they are solved to
        svm_perf's default precision (``tol`` 0.1, or ``tol`` if coarser), the final model to ``tol``.
    n_jobs : int or None, default=None
        (fold, C, budget) fits run in parallel through joblib.
    verbose : int, default=0

    Attributes
    ----------
    C_, budget_, n_groups_ : the chosen candidate (``n_groups_`` None without a budget)
    bias_ : float, the refitted model's bias feature (``bias``, times the rows' RMS norm with ``scale_C``)
    best_score_ : float, its mean validation score (unsmoothed)
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
        imbalanced data, or with few positives; see :meth:`search_and_refit`); the search then
        warns and runs again with that ranking loss, scored by the same measure, and since a ranking
        loss learns no threshold, every model's ``intercept_`` is moved to the best cut of ``loss``'s
        measure on its training scores (:func:`best_threshold`)
    """

    def __init__(self, loss="f1", Cs=None, scale_C=True, budgets=None, cv=3, scoring=None, max_features=None,
                 bias=_defaults.BIAS, loss_params=None, tol=_defaults.TOL, max_iter=_defaults.MAX_ITER,
                 max_outer=_defaults.MAX_OUTER, n_iter_no_change=5, debias=True, master_solver=_defaults.MASTER_SOLVER,
                 n_jobs=None, verbose=0):
        self.loss = loss
        self.Cs = Cs
        self.scale_C = scale_C
        self.budgets = budgets
        self.cv = cv
        self.scoring = scoring
        self.max_features = max_features
        self.bias = bias
        self.loss_params = loss_params
        self.tol = tol
        self.max_iter = max_iter
        self.max_outer = max_outer
        self.n_iter_no_change = n_iter_no_change
        self.debias = debias
        self.master_solver = master_solver
        self.n_jobs = n_jobs
        self.verbose = verbose

    def _estimator(self, **params):
        return StructSVM(loss=self.loss, bias=self.bias, loss_params=self.loss_params, tol=self.tol,
                         max_iter=self.max_iter, max_outer=self.max_outer, max_features=self.max_features,
                         master_solver=self.master_solver, **params)

    def _check_params(self):
        """Validated (loss, Cs, budgets, scorer, solver parameters); ValueError before any fit."""
        Cs = check_grid(DEFAULT_C_PER_SAMPLE if self.Cs is None else self.Cs, "Cs", check_positive_float)
        default = default_budgets(self.max_features)
        budgets = check_grid(default if self.budgets is None else self.budgets, "budgets", _check_budget)
        for name in ("scale_C", "debias"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise ValueError(f"{name} must be True or False, got {getattr(self, name)!r}.")
        if self.n_iter_no_change is not None:
            check_positive_int(self.n_iter_no_change, "n_iter_no_change")
        if self.max_features is not None:
            check_positive_int(self.max_features, "max_features")
            if None in budgets:
                raise ValueError("budgets contains None (no budget) but max_features needs a budget; drop None "
                                 "or set max_features=None.")
        probe = self._estimator(C=Cs[0], budget=budgets[0])
        loss, _, bias, tol = probe._check_params()      # every shared parameter, as StructSVM checks it
        scorer = check_scoring(self.scoring, loss)
        if self._n_folds() is not None and self._n_folds() < 2:
            raise ValueError(f"cv must be at least 2 folds, got {self.cv}.")
        solver = Solver(tol=tol, max_iter=self.max_iter, max_outer=self.max_outer, max_features=self.max_features,
                        master_solver=self.master_solver)
        return loss, Cs, budgets, scorer, solver, bias

    def _scales_to_data(self):
        """Whether the default grid's C and the bias feature follow the data's scale (``scale_C``)."""
        return self.Cs is None and self.scale_C

    def _n_folds(self):
        """``cv`` when it is a number of folds (not a splitter or an iterable), else None."""
        return self.cv if isinstance(self.cv, numbers.Integral) and not isinstance(self.cv, bool) else None

    def _folds(self, X, y):
        if self._n_folds() is not None:
            smallest = np.unique(y, return_counts=True)[1].min()
            if self.cv > smallest:
                raise ValueError(f"cv={self.cv} folds is more than the {smallest} examples of the smallest class; "
                                 "lower cv or pass a splitter.")
        return list(check_cv(self.cv, y, classifier=True).split(X, y))

    def search(self, X, y, classes, folds, columns=None, threshold_loss=None, cut_X=None):
        """The per-candidate table over this estimator's grid on given folds (``columns[f]``
        restricts fold f's features; ``threshold_loss``, ``cut_X``: see :func:`fold_path`); used by
        :meth:`fit` and by MILESClassifier."""
        from joblib import Parallel, delayed

        loss, Cs, budgets, scorer, solver, bias = self._check_params()
        per_sample = self.Cs is None          # the default grid is C per (unit-norm) example: see grid_unit
        cells = [(C, B) for C in Cs for B in budgets]
        biases = [bias] * len(folds)
        if not per_sample:
            units, unit = [1.0] * len(folds), 1.0
        elif not self._scales_to_data():
            units, unit = [float(len(train)) for train, _ in folds], float(X.shape[0])
        else:                                 # one pass over X; a fold restricted to columns needs its own
            norms = squared_norms(X)
            fold_norms = [norms[train] if columns is None else squared_norms(_rows(X, train), columns[f])
                          for f, (train, _) in enumerate(folds)]
            units = [grid_unit(fold) for fold in fold_norms]
            unit = grid_unit(norms)
            biases = [data_bias(bias, fold) for fold in fold_norms]
        fold_tasks = [Fold(train, test, None if columns is None else columns[f], biases[f])
                      for f, (train, test) in enumerate(folds)]
        scoring = PathScoring(classes, loss, scorer, solver, self.debias, self.n_iter_no_change, threshold_loss,
                              cut_X)
        tasks = [(f, C * units[f], B) for f in range(len(folds)) for C, B in cells]
        outputs = Parallel(n_jobs=self.n_jobs)(
            delayed(fold_path)(X, y, fold_tasks[f], C, B, scoring) for f, C, B in tasks)
        return grid_results([(C * unit, B) for C, B in cells], outputs, len(folds))

    @keeps_state_on_failure
    def fit(self, X, y):
        """Cross-validate the grid, then fit the best candidate on all of X, y."""
        self._check_params()
        X, y = validate_data(self, X, y, accept_sparse=["csr", "csc", "coo"], dtype=[np.float64, np.float32],
                             ensure_all_finite=True)
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
        folds = self._folds(X, y)

        def search(estimator, threshold_loss):
            return estimator.search(X, y, classes, folds, threshold_loss=threshold_loss)

        fitted = self.search_and_refit(search, lambda table: X, y)
        for name, value in vars(fitted).items():        # the fallback's fitted attributes (loss_ among them)
            if name.endswith("_") and not name.startswith("_"):
                setattr(self, name, value)
        return self

    def search_and_refit(self, search, refit_data, y, cut_data=None):
        """Search, refit the best candidate, and fall back to a ranking loss where the loss gives the zero
        model; returns the fitted estimator (this one, or the fallback copy). Used by :meth:`fit` and
        by MILESClassifier.

        ``search(estimator, threshold_loss)`` returns an estimator's candidate table, ``refit_data(table)``
        the X to refit its best candidate on (MILES: the embedding at the chosen width), ``cut_data(table)``
        (default ``refit_data``) the X whose scores set the fallback's cut (MILES: that embedding with
        each bag's own instances left out).

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
        loss = self._check_params()[0]
        can_fall_back = loss.name != FALLBACK_LOSS
        table = search(self, None)
        if np.any(table["n_features"]):
            with warnings.catch_warnings():
                if can_fall_back:                 # a featureless model falls back below rather than warn
                    warnings.filterwarnings("ignore", message=NO_FEATURES, category=UserWarning)
                self.refit_best(refit_data(table), y, table)
            if self.selected_features_.size > 0 or not can_fall_back:
                return self
            what = "The model refitted on all the data was the zero model"
        elif not can_fall_back:
            return self.refit_best(refit_data(table), y, table)        # StructSVM warns
        else:
            what = "Every candidate of the search was the zero model"
        warnings.warn(f"{what}: on these data the {loss.name!r} loss's structural SVM has its optimum at w = 0. "
                      f"Searching again with loss={FALLBACK_LOSS!r} (a ranking loss without that trivial "
                      "optimum), scored by the same measure, each model's threshold the best cut of the measure "
                      "on its training scores; loss_ is the loss of the returned model.", UserWarning, stacklevel=4)
        fallback = clone(self).set_params(loss=FALLBACK_LOSS, loss_params=None,
                                          scoring=check_scoring(self.scoring, loss))
        threshold_loss = loss if loss.is_contingency else None
        table = search(fallback, threshold_loss)
        cut_X = None if cut_data is None or threshold_loss is None else cut_data(table)
        return fallback.refit_best(refit_data(table), y, table, threshold_loss, cut_X)

    def refit_best(self, X, y, table, threshold_loss=None, cut_X=None):
        """Set the cross-validation results from ``table`` and fit its best candidate on X, y
        (``threshold_loss``: its intercept moved to that loss's best cut on the scores of ``cut_X``,
        default X; see :func:`fold_path`)."""
        best = best_candidate(table)
        self.cv_results_ = cv_results(table)
        uncertified = ~self.cv_results_["certified"]
        if uncertified.any():          # one warning for the search, not one per fold fit
            Cs = ", ".join(f"{C:.4g}" for C in np.unique(self.cv_results_["param_C"][uncertified]))
            warnings.warn(f"{int(uncertified.sum())} of {uncertified.size} candidates were scored on fold fits that "
                          f"ran out of max_iter={self.max_iter} cutting planes without their certificate (C = {Cs}); "
                          "their validation scores are approximate. Raise max_iter (or tol), or leave those C out "
                          "of Cs.", ConvergenceWarning, stacklevel=5)
        self.best_index_ = best
        self.best_score_ = float(np.mean(table["scores"][best]))
        self.C_, self.budget_, self.n_groups_ = table["C"][best], table["budget"][best], table["n_groups"][best]
        max_outer = self.max_outer if self.n_groups_ is None else self.n_groups_
        refit = self.C_ if self.debias and self.budget_ is not None else None
        self.estimator_ = self._estimator(C=self.C_, budget=self.budget_, refit=refit, verbose=self.verbose)
        bias = float(self.bias)              # validated by the search
        self.bias_ = data_bias(bias, squared_norms(X)) if self._scales_to_data() else bias
        self.estimator_.set_params(bias=self.bias_, max_outer=max_outer).fit(X, y)
        if threshold_loss is not None:
            y_pm = np.where(np.asarray(y) == self.estimator_.classes_[1], 1.0, -1.0)
            _cut_at_best(self.estimator_, threshold_loss, y_pm, X if cut_X is None else cut_X)
        for name in ("classes_", "coef_", "intercept_", "selected_features_", "objective_", "lower_bound_", "gap_",
                     "n_iter_", "n_outer_", "stop_", "loss_"):
            setattr(self, name, getattr(self.estimator_, name))
        return self
