"""The search's results: per-candidate tables, the path-smoothed choice, scikit-learn's cv_results_."""
from __future__ import annotations

from typing import Any

import numpy as np

# A search's candidate table: per-candidate lists (C, budget, n_groups, scores, ...) and a few search-wide
# entries (selection, test_rows, settings)
Table = dict[str, Any]

# C steps a search takes (C_PATIENCE + 1 values of C) before it judges from the last step's gain whether a
# larger C can still help (past_the_peak for the unbudgeted chain, losing_and_not_closing for the race)
C_PATIENCE = 2


def grid_results(cells: list[tuple[float, int | None, int]], outputs: list[Any], n_folds: int) -> Table:
    """cv_results_-style dict over (C, budget, n_groups) candidates from the per-(fold, cell) paths; a
    cell is (C, budget, version of the data), the version listed as ``setting``.

    A fold whose path ended earlier (its generation converged) keeps its last point for longer paths; a
    fold on which a cell never ran (``outputs`` None: the race dropped it, see :func:`race_budgeted`)
    scores NaN.
    ``certified``: every fold's fit of the candidate's cell ended with its certificate. ``decisions``
    (where the paths kept them): every fold's decision values on its validation rows.
    """
    out: Table = {k: [] for k in ("C", "budget", "setting", "n_groups", "scores", "n_features", "fit_time",
                                  "certified")}
    if any(r is not None and r[4] is not None for r in outputs):
        out["decisions"] = []
    for c, cell in enumerate(cells):
        all_runs = [outputs[f * len(cells) + c] for f in range(n_folds)]
        runs = [r for r in all_runs if r is not None]
        if not runs:                   # a cell no fold ran (larger C past the peak, see past_the_peak)
            runs = [(np.full(1, np.nan), np.full(1, np.nan), 0.0, True, None)]
        length = max(r[0].shape[0] for r in runs)
        for k in range(length):
            out["C"].append(cell[0])
            out["budget"].append(cell[1])
            out["n_groups"].append(k + 1 if cell[1] is not None else None)
            out["scores"].append([np.nan if r is None else r[0][min(k, r[0].shape[0] - 1)] for r in all_runs])
            out["n_features"].append(np.mean([r[1][min(k, r[1].shape[0] - 1)] for r in runs]))
            out["fit_time"].append(np.mean([r[2] for r in runs]))
            out["certified"].append(all(r[3] for r in runs))
            out["setting"].append(cell[2])
            if "decisions" in out:
                out["decisions"].append([None if r is None else r[4][min(k, len(r[4]) - 1)] for r in all_runs])
    return out


def race_budgeted(outputs: list[Any], cells: list[tuple[Any, ...]], n_folds: int, reference: int | None = None
                  ) -> list[int]:
    """The cells worth running on every fold, of those racing against the ``reference`` budget's cells
    (None: the unbudgeted cells; under a cap, the budget whose path reaches it within the first rung, see
    ``StructSVMCV._race_reference``): positions in ``cells`` ((C, budget, ...)) whose path on the first
    fold reached, at its best point, the first-fold score of the best reference cell (by its best
    path-smoothed mean over the folds) at that cell's best point, minus that point's standard deviation
    over the folds.

    ``outputs[f * len(cells) + c]``: cell c's path on fold f (its scores first), present for every
    reference cell on every fold and for every racing cell on fold 0. The comparison is paired -- the
    same fold's training and validation rows -- and the margin is one fold's noise, so that a racing
    cell is dropped only when the reference beats it by more than the folds disagree with each other: on
    text, where no sparse model is as good, the budgeted paths then cost one fold instead of all; where
    irrelevant features abound and a sparse model is far better, every budgeted cell runs on."""
    bar = _race_bar(outputs, cells, n_folds, reference)
    return [c for c, cell in enumerate(cells) if cell[1] != reference and outputs[c] is not None
            and np.max(outputs[c][0]) >= bar]


def _race_bar(outputs: list[Any], cells: list[tuple[Any, ...]], n_folds: int, reference: int | None) -> float:
    """The first-fold score a racing cell must reach to run on (:func:`race_budgeted`)."""
    ones = [c for c, cell in enumerate(cells) if cell[1] == reference and outputs[c] is not None]
    points = [_best_point(outputs, len(cells), n_folds, c) for c in ones]
    best = int(np.argmax([value for _, value in points]))
    k, runs = points[best][0], [outputs[f * len(cells) + ones[best]][0] for f in range(n_folds)]
    scores = np.array([r[min(k, r.shape[0] - 1)] for r in runs])       # every fold's, at that point
    return float(scores[0] - scores.std(ddof=1))


def losing_and_not_closing(outputs: list[Any], cells: list[tuple[Any, ...]], n_folds: int,
                           done: list[int], reference: int | None = None) -> bool:
    """Whether the racing cells ``done`` (positions in ``cells``, in increasing C, at least C_PATIENCE
    + 1 of them, run on the first fold) all fall short of the race's bar, by more than their last C step
    gained: the race then runs no larger C. A step up the log-spaced C grid gains a budgeted path less
    the nearer it comes to the top of its regularisation path (where it falls, it gains nothing), so a
    path that a step as large as its last would still leave short of the bar is losing for good; a
    budgeted path at a larger C is the most expensive of the race (its restricted problems take the
    most planes). Where a sparse model competes (above the bar, or closing on it) every C runs."""
    if len(done) <= C_PATIENCE:
        return False
    bests = [float(np.max(outputs[c][0])) for c in done]
    bar = _race_bar(outputs, cells, n_folds, reference)
    return max(bests) < bar and _one_more_step(bests) < bar


def _fold_mean(outputs: list[Any], n_cells: int, n_folds: int, c: int) -> np.ndarray:
    """Cell c's mean validation score over the folds at every point of its paths as far as they have run
    (a fold whose path ended keeps its last point, as in :func:`grid_results`)."""
    runs = [outputs[f * n_cells + c][0] for f in range(n_folds)]
    length = max(r.shape[0] for r in runs)
    return np.mean([np.concatenate((r, np.repeat(r[-1:], length - r.shape[0]))) for r in runs], axis=0)


def _best_point(outputs: list[Any], n_cells: int, n_folds: int, c: int) -> tuple[int, float]:
    """(index, score) of cell c's best path-smoothed mean validation score over the folds, on its paths
    as far as they have run (an unbudgeted cell's one point: its mean as such, as smoothing would only
    add round-off)."""
    mean = _fold_mean(outputs, n_cells, n_folds, c)
    if mean.shape[0] == 1:
        return 0, float(mean[0])
    smoothed = _smoothed(mean)
    k = int(np.argmax(smoothed))
    return k, float(smoothed[k])


def past_the_peak(outputs: list[Any], cells: list[tuple[Any, ...]], n_folds: int,
                  done: list[int]) -> bool:
    """Whether the cells ``done`` (positions in ``cells``, of one budget, in increasing C, run on every
    fold) have passed the peak of the cross-validated score: the last C is not the best so far, and a
    step as large as its last (none where it fell) would not reach the best. A step up the log-spaced C
    grid gains less the nearer it comes to the top of the regularisation path, so a larger C would not
    be the best, and would change the choice (the one-standard-error rule picks the smallest C within
    the noise of the best) still less: the search fits no larger C. At least C_PATIENCE + 1 C run
    first. A cell's score is its best path-smoothed mean over the folds so far (an unbudgeted cell's
    one point; a budgeted path's as far as successive halving has run it, :func:`cell_best`)."""
    if len(done) <= C_PATIENCE:
        return False
    means = [cell_best(outputs, len(cells), n_folds, c) for c in done]
    return _one_more_step(means) <= max(means[:-1])


def cell_best(outputs: list[Any], n_cells: int, n_folds: int, c: int) -> float:
    """Cell c's best path-smoothed mean validation score over the folds, on its paths as far as they
    have run (a fold whose path ended keeps its last point, as in :func:`grid_results`; an unbudgeted
    cell's one point is its score)."""
    return _best_point(outputs, n_cells, n_folds, c)[1]


def _smoothed(path: np.ndarray) -> np.ndarray:
    """One path's scores averaged over a window of three lengths, the ends repeating their value."""
    padded = np.concatenate((path[:1], path, path[-1:]))
    return (padded[:-2] + padded[1:-1] + padded[2:]) / 3.0


def _one_more_step(scores: list[float]) -> float:
    """The score a C step as large as the last would reach from the last of ``scores`` (in increasing C):
    the last plus the last step's gain, or the last where it fell -- the bound both C-step rules
    (:func:`losing_and_not_closing`, :func:`past_the_peak`) take a larger C to be held to."""
    return scores[-1] + max(scores[-1] - scores[-2], 0.0)


def path_smoothed_scores(table: Table) -> np.ndarray:
    """Mean validation score of every candidate averaged with its neighbours on the same path.

    Along one (data version, C, budget) cell's path the candidates differ by one group each, and with few
    validation positives their scores jitter from one length to the next: the best single point is
    mostly the luckiest. Each score is averaged over a window of three path lengths (the ends repeat
    their value), so a length is chosen where the path is good, not where it spiked (replayed on the
    dev sets by ``python -m benchmarks.selection``; the figures are in the user guide's "The choice");
    unbudgeted candidates (one point) are unchanged.
    """
    mean = np.mean(table["scores"], axis=1)
    keys = list(zip(table.get("setting", [None] * len(mean)), table["C"], table["budget"]))
    smoothed = mean.copy()
    start = 0
    while start < len(mean):                  # grid_results lists each cell's path contiguously
        stop = start + 1
        while stop < len(mean) and keys[stop] == keys[start]:
            stop += 1
        smoothed[start:stop] = _smoothed(mean[start:stop])
        start = stop
    return smoothed


def best_candidate(table: Table) -> int:
    """Index of the chosen candidate under the table's ``selection`` rule (default "one_se").

    "best": the best path-smoothed mean score (:func:`path_smoothed_scores`); ties go to fewer features,
    then to the smaller C. "one_se": the same, except that where the best is an unbudgeted candidate at
    its own cut, the smallest C among the unbudgeted candidates at their own cut within one standard
    error of it
    (:func:`within_one_se`) -- C is then the one regularisation strength of one family of models, a
    difference inside the folds' noise decides nothing, and the smaller C is the cheaper and more
    regularised model (the one-standard-error rule of cross-validated lasso paths). Budgeted picks are
    unchanged: there C also sets how many features a path can hold, and a smaller C lost F1 on every
    multiple-instance set. Candidates whose paths successive halving cut short (``pruned``) lost to
    the others at a shorter length and are not chosen.
    """
    score, best = _best_score(table)
    # candidates scored at their own cut; one moved to a cross-validated cut is scored as another
    # procedure (a tuned cut), not as a point of the regularisation path the rule walks down
    own_cut = np.asarray(table.get("cuts", np.zeros(len(score)))) == 0.0
    if table.get("selection", "one_se") == "best" or table["budget"][best] is not None or not own_cut[best]:
        return best
    unbudgeted = np.array([b is None for b in table["budget"]]) & own_cut
    within = np.flatnonzero(within_one_se(table) & unbudgeted)
    return int(within[np.argmin(np.asarray(table["C"], dtype=float)[within])])


def _best_score(table: Table) -> tuple[np.ndarray, int]:
    """(eligible path-smoothed scores, index of the best): -inf for the candidates successive halving cut
    short (unless all were); ties to fewer features, then to the smaller C."""
    score = path_smoothed_scores(table)
    pruned = np.asarray(table.get("pruned", np.zeros(len(score), dtype=bool)), dtype=bool)
    if not pruned.all():
        score = np.where(pruned, -np.inf, score)
    C = np.asarray(table["C"], dtype=float)
    return score, int(np.lexsort((C, np.asarray(table["n_features"], dtype=float), -score))[0])


def within_one_se(table: Table) -> np.ndarray:
    """Boolean mask of the candidates whose path-smoothed score is at least the best one's minus the
    standard error of the best candidate's fold scores (std with ddof=1 over sqrt(folds))."""
    score, best = _best_score(table)
    folds = np.asarray(table["scores"], dtype=float)[best]
    se = folds.std(ddof=1) / np.sqrt(folds.shape[0]) if folds.shape[0] > 1 else 0.0
    return score >= score[best] - se


def cv_results(table: Table) -> dict[str, Any]:
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
        "pruned": np.asarray(table.get("pruned", np.zeros(len(mean), dtype=bool)), dtype=bool),
        # the candidates the one-standard-error rule chooses among (selection="one_se")
        "within_one_se": within_one_se(table),
    }
    for f in range(scores.shape[1]):
        results[f"split{f}_test_score"] = scores[:, f]
    # the parameters of the data's versions (SearchData.settings), chosen by the same CV
    settings = [table["settings"][i] for i in table["setting"]] if "setting" in table else [{}] * len(mean)
    for name in sorted({name for setting in settings for name in setting}):
        results[f"param_{name}"] = np.asarray([setting.get(name) for setting in settings])
        for params, setting in zip(results["params"], settings):
            params[name] = setting.get(name)
    return results
