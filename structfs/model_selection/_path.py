"""One (fold, C, budget) task of a search: a feature-generation path fitted on the training part and
every point of it scored on the validation part."""
from __future__ import annotations

import functools
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from ..estimators import LinearModel
from ..losses import Loss, on_rows
from ..losses.base import cut_value, untied_cuts
from ..solvers import PathRefitter, Solver, penalty_for
from ..solvers.data import SolverData, weights_in
from ..solvers.interactions import expand, split_weights
from ._scoring import _LossScorer

# The debiasing refits and the unbudgeted fits of a fold only rank candidates: svm_perf's default
# precision (-e 0.1) is enough for that (an unbudgeted R8 fold fit: 3-4x faster than at 0.01); 0.3
# lost 1-3.6 test F1 on three MIL sets (docs/model_selection.md, "Debiasing").
RANKING_TOL = 0.1


def ranking_tol(tol: float) -> float:
    """The precision of a fold's unbudgeted fits and debiasing refits for a search at ``tol``."""
    return max(tol, RANKING_TOL)


def take_rows(X: Any, idx: np.ndarray) -> Any:
    """Rows ``idx`` of X (sparse or array-like)."""
    return X[idx] if sp.issparse(X) else np.asarray(X)[idx]



@dataclass(frozen=True)
class Fold:
    """One fold of a search: its training and validation rows, the features it may use (MIL: the
    instances of its training bags; None: all), the value of its bias feature and, for a fit with
    sample weights or query ids, those of its training and validation rows."""

    train: np.ndarray
    test: np.ndarray
    columns: np.ndarray | None = None
    bias: float = 1.0
    train_weight: np.ndarray | None = None
    test_weight: np.ndarray | None = None
    train_qid: np.ndarray | None = None
    test_qid: np.ndarray | None = None


def score_on(scorer: Callable[..., float], model: Any, X: Any, y: np.ndarray, sample_weight: np.ndarray | None = None,
             qid: np.ndarray | None = None, decisions: np.ndarray | None = None) -> float:
    """``scorer(model, X, y)``, with ``sample_weight`` where there are weights (scikit-learn's scorers and
    structfs's take it) and ``qid`` where there are query ids (the loss's own measure takes it).
    ``decisions``: the model's decision values on X where the caller has them, which the loss's own
    measure scores instead of computing them again (other scorers get the model)."""
    if decisions is not None and isinstance(scorer, _LossScorer):
        return scorer.of_decisions(model.classes_, decisions, y, sample_weight, qid)
    if qid is not None:
        return scorer(model, X, y, qid=qid)
    if sample_weight is None:
        return scorer(model, X, y)
    return scorer(model, X, y, sample_weight=sample_weight)


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
    loss: Loss
    scorer: Callable[..., float]
    solver: Solver
    debias: bool = True
    n_iter_no_change: int | None = None
    threshold_loss: Loss | None = None
    cut_X: Any = None
    groups: np.ndarray | None = None        # every feature's group label: budgets count groups (StructSVM's groups)
    interactions: bool = False   # budgeted paths also select products of feature pairs (StructSVM's interactions)
    keep_decisions: bool = False  # keep every point's decision values on the validation rows (the cut by CV)


def fold_path(X: Any, y: np.ndarray, fold: Fold, C: float, budget: int | None, scoring: PathScoring, carry: Any = None,
              fold_data: FoldData | None = None) -> tuple[Any, ...]:
    """Fit one (C, budget) cell on ``fold.train`` and score every point of its path on ``fold.test``:
    :class:`FoldPath` run to ``scoring.solver.max_outer`` points.

    ``carry`` (unbudgeted cells): a list of cutting planes (coef, delta) of an earlier fit on the same
    fold, which start this fit's working set -- a plane is a valid cut at any C -- and which is then
    replaced by this fit's planes (see :func:`unbudgeted_chain`). ``fold_data``: the fold's
    :class:`FoldData`, when shared with other cells.

    Returns (scores, n_features, seconds, certified, decisions): one score and feature count per path
    point (a single point without budget), whether every solve of the task ended with its certificate
    (False: one ran out of ``max_iter`` planes and its points were scored on an approximate
    solution), and with ``scoring.keep_decisions`` every point's decision values on the validation rows
    (else None). The solves do not warn each: the search reports uncertified candidates once
    (``StructSVMCV._refit_best``).
    """
    task = FoldPath(X, y, fold, C, budget, scoring, carry, fold_data)
    return task.advance(scoring.solver.max_outer)


class FoldData:
    """A fold's training and validation parts as all its paths use them, built once per fold: the
    rows (and MIL's columns) of each part, the labels, the training part as the solvers see it
    (:class:`SolverData`, built on first use), and the fold's loss and threshold loss (weighted by the
    training rows' weights, if any). A search's cells on one fold share it."""

    def __init__(self, X: Any, y: np.ndarray, fold: Fold, scoring: PathScoring) -> None:
        self.X_tr, self.X_te = take_rows(X, fold.train), take_rows(X, fold.test)
        X_cut = None
        if scoring.cut_X is not None and scoring.threshold_loss is not None:
            X_cut = take_rows(scoring.cut_X, fold.train)
        if fold.columns is not None:
            self.X_tr, self.X_te = self.X_tr[:, fold.columns], self.X_te[:, fold.columns]
            X_cut = None if X_cut is None else X_cut[:, fold.columns]
        self.X_cut = self.X_tr if X_cut is None else X_cut
        self.y_pm = np.where(y[fold.train] == scoring.classes[1], 1.0, -1.0)
        self.y_test = y[fold.test]
        self.loss = on_rows(scoring.loss, fold.train_weight, fold.train_qid)
        # a per-query measure has no one best cut: the fallback's models then keep theirs
        self.threshold_loss = None if fold.train_qid is not None else on_rows(scoring.threshold_loss,
                                                                                fold.train_weight)
        self.loss.validate(self.y_pm)
        # the cutting planes of the fold's last unbudgeted fit, where its chain over C continues
        self.chain_planes: list[Any] = []

    @functools.cached_property
    def solver_data(self) -> SolverData:
        return SolverData(self.X_tr)


class FoldPath:
    """One (fold, C, budget) task of a search that can be paused and resumed: :meth:`advance` runs the
    path to a number of points and scores them; called again with a larger number it continues where
    it stopped. Successive halving's surviving candidates continue their paths this way instead of
    starting them over (the points are the same: a path's first points do not depend on its length).
    ``fold_data``: the fold's :class:`FoldData` when the caller shares it between cells."""

    def __init__(self, X: Any, y: np.ndarray, fold: Fold, C: float, budget: int | None, scoring: PathScoring,
                 carry: Any = None, fold_data: FoldData | None = None) -> None:
        t0 = time.perf_counter()
        self.fold, self.scoring, self.carry = fold, scoring, carry
        solver = scoring.solver
        fold_data = FoldData(X, y, fold, scoring) if fold_data is None else fold_data
        loss = self.loss = fold_data.loss
        self.threshold_loss = fold_data.threshold_loss
        self.X_tr, self.X_te, self.X_cut = fold_data.X_tr, fold_data.X_te, fold_data.X_cut
        self.y_pm, self.y_test = fold_data.y_pm, fold_data.y_test
        self.m = m = self.X_tr.shape[1]
        groups = scoring.groups if scoring.groups is None or fold.columns is None else scoring.groups[fold.columns]
        penalty = penalty_for(budget, groups).restricted(m, solver.max_features)
        ranking = replace(solver, tol=ranking_tol(solver.tol))
        self.data, self.inputs, prepared = self.X_tr, None, fold_data.solver_data
        if scoring.interactions and budget is not None:      # the budget counts features and their products
            self.data, self.inputs = expand(self.X_tr)
            prepared = self.data
            penalty = penalty_for(budget).restricted(self.data.shape[1], solver.max_features)
        self.refitter = None
        if scoring.debias and penalty.budget is not None:
            self.refitter = PathRefitter(prepared, self.y_pm, loss, C, fold.bias, ranking)
        self.scores: list[float] = []
        self.n_features: list[int] = []
        self.decisions: list[np.ndarray] = []
        self.path = (solver if penalty.budget is not None else ranking).path(prepared, self.y_pm, loss, C, penalty,
                                                                              fold.bias, history=False)
        self.warm = carry is not None and penalty.budget is None
        if self.warm:
            self.path.add_planes(carry)
        self._points = iter(self.path)
        self.done = False             # the path ended on its own (its last point, an early stop)
        self._setup = time.perf_counter() - t0

    def advance(self, n_points: int) -> tuple[Any, ...]:
        """Run the path to at most ``n_points`` points in all; (scores, n_features, seconds, certified,
        decisions) of every point so far (as :func:`fold_path`'s), ``seconds`` those of this call."""
        t0 = time.perf_counter() - self._setup
        self._setup = 0.0
        scoring, fold = self.scoring, self.fold
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)      # counted in `certified` instead
            while not self.done and len(self.scores) < n_points:
                point = next(self._points, None)
                if point is None:
                    self.done = True
                    break
                cols, w, w_b = point
                if self.refitter is not None:   # the budget selects the features, the unbudgeted problem weighs them
                    cols, w, w_b = self.refitter.refit(cols[w != 0])
                if self.data is self.X_tr:
                    w = weights_in(np.asarray(cols, dtype=np.int64), np.asarray(w, dtype=float), self.m)
                    model = LinearModel.from_weights(w, fold.bias * w_b, scoring.classes)
                else:                      # a point on the expansion's columns: features and pairs
                    linear, pairs, pair_w = split_weights(cols, w, self.inputs, self.m, self.data.n_inputs)
                    model = LinearModel.from_weights(linear, fold.bias * w_b, scoring.classes, pairs, pair_w)
                if self.threshold_loss is not None:
                    cut_at_best(model, self.threshold_loss, self.y_pm, self.X_cut)
                decisions = model.decision_function(self.X_te) if scoring.keep_decisions else None
                if decisions is not None:
                    self.decisions.append(decisions)
                self.scores.append(score_on(scoring.scorer, model, self.X_te, self.y_test, fold.test_weight,
                                            fold.test_qid, decisions))
                self.n_features.append(int(model.selected_features_.shape[0])
                                       + len(getattr(model, "interaction_coef_", ())))
                patience = scoring.n_iter_no_change
                if patience is not None and len(self.scores) - 1 - int(np.argmax(self.scores)) >= patience:
                    self.done = True
        certified = self.path.certified() and (self.refitter is None or self.refitter.uncertified == 0)
        if self.warm:
            self.carry[:] = self.path.planes()
        return (np.array(self.scores, dtype=float), np.array(self.n_features), time.perf_counter() - t0,
                certified, list(self.decisions) if scoring.keep_decisions else None)


def unbudgeted_chain(X: Any, y: np.ndarray, fold: Fold, Cs: list[float], scoring: PathScoring,
                     fold_data: FoldData | None = None) -> list[tuple[Any, ...]]:
    """:func:`fold_path` of the unbudgeted cell at each C of ``Cs`` on one fold, in increasing C, each
    fit starting from the previous one's planes; the outputs in the order of ``Cs``. A fit at C
    warm-started from the planes at the next smaller C needs fewer new ones (R8 "earn", one fold's
    four C: 1.59 -> 0.80 s). A chain continued on the same ``fold_data`` (a search that fits the larger C
    later) starts from the planes where it stopped."""
    out = {}
    fold_data = FoldData(X, y, fold, scoring) if fold_data is None else fold_data
    carry = fold_data.chain_planes
    for C in sorted(Cs):
        out[C] = fold_path(X, y, fold, C, None, scoring, carry, fold_data)
    return [out[C] for C in Cs]


def chain_from(X: Any, y: np.ndarray, fold: Fold, Cs: list[float], scoring: PathScoring,
               planes: Any) -> tuple[list[tuple[Any, ...]], Any]:
    """:func:`unbudgeted_chain` continued from ``planes`` (those of the fold's last unbudgeted fit), with
    the planes where it stopped: (outputs, planes). For a worker process, which keeps no
    :class:`FoldData` between the steps of a search."""
    fold_data = FoldData(X, y, fold, scoring)
    fold_data.chain_planes = list(planes)
    return unbudgeted_chain(X, y, fold, Cs, scoring, fold_data), fold_data.chain_planes


def best_threshold(loss: Loss, y: np.ndarray, s: np.ndarray) -> float:
    """The cut t maximising the contingency ``loss``'s measure of the labeling ``s - t > 0`` (labels
    ``y`` in -1/+1): :meth:`structfs.losses.ContingencyLoss.best_cut`."""
    return loss.best_cut(y, s)


def same_rate_cut(decisions: np.ndarray, cut: float, scores: np.ndarray, decision_weight: np.ndarray | None = None,
                  score_weight: np.ndarray | None = None) -> float:
    """The cut on ``scores`` above which the same (weighted) fraction of examples lies as above ``cut`` in
    ``decisions``, midway between two distinct scores: an operating point chosen on out-of-fold decision
    values, carried to another model by rank. The refitted model is not the folds' models -- it is fitted
    on more rows, at its own scale, with its own features -- so a cut in the folds' units is not one in
    its units (the user guide's "The cut" measures the difference)."""
    above = np.asarray(decisions) > cut
    rate = float(np.average(above, weights=decision_weight))
    order = np.argsort(-scores, kind="stable")
    ranked = scores[order]
    weights = np.ones(ranked.shape[0]) if score_weight is None else np.asarray(score_weight, dtype=float)[order]
    share = np.concatenate(([0.0], np.cumsum(weights))) / weights.sum()      # fraction above the first k
    candidates = np.flatnonzero(untied_cuts(ranked))
    k = int(candidates[np.argmin(np.abs(share[candidates] - rate))])
    return cut_value(ranked, k, beyond=1.0)


def rescore_at_cv_cuts(table: dict[str, Any], y_pm: np.ndarray, test_rows: Sequence[np.ndarray], loss: Loss,
                       sample_weight: np.ndarray | None = None, memo: dict[Any, Any] | None = None) -> dict[str, Any]:
    """Move each candidate of ``table`` to a cut chosen on out-of-fold decision values where that beats
    its own cut by more than the folds' noise, in place.

    ``table["decisions"][i][f]``: candidate i's decision values on fold f's validation rows
    ``test_rows[f]``; ``y_pm``: all labels in -1/+1; ``sample_weight``: all rows' weights (None: none).
    Whether moving the cut pays is measured honestly: fold f is scored at the cut of the contingency
    ``loss``'s measure on the other folds' decision values (a cut chosen on the rows it is scored on
    would be optimistic), against its score at the candidate's own cut (``table["scores"]``). Where the
    mean gain over the folds exceeds its standard error the candidate moves -- its scores are those
    honest ones, and its cut (``table["cuts"]``) that of all folds' decision values pooled, the one the
    refitted model gets; elsewhere it keeps its own cut (0). Where the structural SVM's cut is good
    (text) moving it gains nothing; where the classes overlap the structural SVM's cut predicts almost
    no positives and the gain is many standard errors. ``memo`` (a dict kept across calls): the answers
    for candidates whose decision values are the very arrays of an earlier call (successive halving
    rescores its table at every rung, where only the paths run on have new points)."""
    def on(rows: np.ndarray) -> Loss:
        return on_rows(loss, None if sample_weight is None else sample_weight[rows])

    table["cuts"] = []
    pooled = np.concatenate(test_rows)
    for i, per_fold in enumerate(table["decisions"]):
        if any(s is None for s in per_fold):          # a cell the race ran on one fold only: not chosen
            table["cuts"].append(0.0)
            continue
        key = tuple(id(s) for s in per_fold)
        known = None if memo is None else memo.get(key)
        if known is None or any(a is not b for a, b in zip(known[0], per_fold)):
            known = (per_fold, *_cv_cut(per_fold, table["scores"][i], test_rows, y_pm, pooled, on))
            if memo is not None:
                memo[key] = known          # holds the arrays, so that their ids are not reused
        _, moved, cut = known
        table["cuts"].append(cut)
        if moved is not None:
            table["scores"][i] = list(moved)
    return table


def _cv_cut(per_fold: list[np.ndarray], own: Any, test_rows: Sequence[np.ndarray], y_pm: np.ndarray,
            pooled: np.ndarray, on: Callable[[np.ndarray], Loss]) -> tuple[list[float] | None, float]:
    """(the folds' scores at cuts chosen on the other folds, the pooled cut) for a candidate whose fold
    decision values are ``per_fold`` and own-cut scores ``own``, where moving its cut gains more than
    the gain's standard error over the folds; else (None, 0.0)."""
    moved = []
    for f, (rows, s) in enumerate(zip(test_rows, per_fold)):
        others = [g for g in range(len(test_rows)) if g != f]
        elsewhere = np.concatenate([test_rows[g] for g in others])
        cut = best_threshold(on(elsewhere), y_pm[elsewhere], np.concatenate([per_fold[g] for g in others]))
        moved.append(on(rows).score(y_pm[rows], s - cut) / 100.0)
    gain = np.asarray(moved) - np.asarray(own, dtype=float)
    noise = gain.std(ddof=1) / np.sqrt(gain.shape[0]) if gain.shape[0] > 1 else 0.0
    if gain.mean() > noise:
        return moved, best_threshold(on(pooled), y_pm[pooled], np.concatenate(per_fold))
    return None, 0.0


def cut_at_best(model: Any, loss: Loss, y: np.ndarray, X: Any, sign: float = 1.0) -> None:
    """Move a fitted linear model's intercept so that it predicts positive above the best cut of the
    contingency ``loss``'s measure on its own scores of X (labels ``y`` in -1/+1; ``sign`` -1 where the
    model's decision values rank the negative class high, its positive class being ``classes_[0]``)."""
    model.intercept_ = model.intercept_ - sign * best_threshold(loss, y, sign * model.decision_function(X))
