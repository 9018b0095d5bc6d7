"""Successive halving against the full grid: the same searches, the same splits, quality and time.

    python -m benchmarks.halving text [--splits 5]                      # R8 (uncapped and max_features=100), SMS
    python -m benchmarks.halving mil [--splits 5] [--datasets musk1 ...]
    python -m benchmarks.halving floor [--splits 5]                     # R8, SMS, R8 capped: the least any search pays
    python -m benchmarks.halving mil-floor [--splits 5] [--datasets musk1 ...]       # the same for MIL
    python -m benchmarks.halving rungs [--splits 5] [--datasets musk1 ...]  # R8 capped, MIL: seconds by rung

Each problem is searched twice by ``StructSVMCV`` at its defaults, with ``halving_factor=3`` (the
default) and ``halving_factor=None`` (every path to its end, the search before halving), and, in the
same run, by the alternative a user would pick: for text, tuned-threshold logistic regression
(``TunedThresholdClassifierCV(LogisticRegressionCV(Cs=6, cv=3, scoring="f1", class_weight="balanced",
solver="liblinear"), scoring="f1", cv=3)``; with ``max_features=100`` the L1-LinearSVC grid of 5 C x 3
folds); for MIL, ``MILESClassifier()`` against MILES + L1-SVM with the same inner CV as
MILESClassifier's search: 3 kernel widths x 4 C x 3 folds (``benchmarks.mil.miles_width_search``). Test F1
in percent, the paired difference halving - full grid with its standard error, and total seconds with
their ratios. No time includes loading structfs's compiled kernels from numba's cache: they are loaded
before the first timed fit (for MIL, each method first fits a data set's first split once, untimed).

``floor`` times, in one run with the alternative, what any search over the default grid pays at least:
the candidate the search chose -- its fits on the three folds at the search's ranking precision
(``tol`` 0.1) and the final model on all the data as the search refits it -- and the fold fits of the one other
candidate that was cheapest in the search, as a search that compared the winner with a single other
candidate, knowing both in advance, would. Its ratio to the alternative is a lower bound on the
search's. Its last row is R8 under ``max_features=100`` against the L1-LinearSVC grid, where every cell
is budgeted: the chosen cell's fold paths as far as the search ran them and the cheapest other
fitted cell's (their fit times in ``cv_results_``), plus the final model. ``mil-floor`` does the same
for ``MILESClassifier()``: the chosen (kernel width, C, budget) cell's fold paths and the cheapest
other cell's, plus the final model fitted again on the embedding at the chosen width.

``rungs`` splits the default search's seconds on R8 under ``max_features=100`` and on the MIL sets by
successive halving's rungs -- the fold paths' time (``FoldPath.advance``, timed from outside) by the
number of path points each run was asked for, every budget's first rung together -- and the rest (the
search's own work between paths, the cut, the final model), each against the alternative timed in the
same run. Whatever the later rungs cost, the search costs at least its first rung plus the rest.
"""
import argparse
import time
import warnings

import numpy as np
from sklearn.base import clone
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.model_selection import GridSearchCV, StratifiedShuffleSplit
from sklearn.svm import LinearSVC

from benchmarks.mil import DATASETS, load_splits, miles_width_search, paired, set_name
from structfs import StructSVM, StructSVMCV
from structfs.datasets import get_data_home, load_r8, load_sms_spam
from structfs.metrics import f1
from structfs.mil import MIL_BUDGETS, SIGMA_FACTORS, MILESClassifier, MILESEmbedding
from structfs.model_selection._grid import data_bias, grid_unit, squared_norms
from structfs.model_selection._path import ranking_tol


def _f1(est, X, y):
    return f1(np.where(y > 0, 1, -1), est.decision_function(X)) if hasattr(est, "decision_function") else \
        100 * _f1_labels(y, est.predict(X))


def _f1_labels(y, pred):
    tp = np.sum((pred == 1) & (y == 1))
    return 2 * tp / max(np.sum(pred == 1) + np.sum(y == 1), 1)


def _timed(est, X, y):
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
    return est, time.perf_counter() - t0


def _alternative(capped):
    if capped:
        return GridSearchCV(LinearSVC(penalty="l1", dual=False, class_weight="balanced", random_state=0),
                            {"C": [0.01, 0.1, 1.0, 10.0, 100.0]}, scoring="f1", cv=3)
    from sklearn.linear_model import LogisticRegressionCV
    from sklearn.model_selection import TunedThresholdClassifierCV

    return TunedThresholdClassifierCV(LogisticRegressionCV(Cs=6, cv=3, scoring="f1", class_weight="balanced",
                                                           solver="liblinear"), scoring="f1", cv=3)


def _problem_rows(problems, capped):
    """{method: [(F1, seconds)]} over the (Xtr, ytr, Xte, yte) ``problems``."""
    rows = {"halving": [], "full grid": [], "alternative": []}
    for Xtr, ytr, Xte, yte in problems:
        params = {"max_features": 100} if capped else {}
        for name, est in (("halving", StructSVMCV(**params)), ("full grid", StructSVMCV(halving_factor=None, **params)),
                          ("alternative", _alternative(capped))):
            est, seconds = _timed(est, Xtr, ytr)
            rows[name].append((_f1(est, Xte, yte), seconds))
    return rows


def _print(label, rows, alternative):
    h, g, a = (np.array(rows[k], dtype=float) for k in ("halving", "full grid", "alternative"))
    print(f"| {label} | {h[:, 0].mean():.2f} | {g[:, 0].mean():.2f} | {paired(h[:, 0], g[:, 0], 2)} "
          f"| {h[:, 1].sum():.1f} | {g[:, 1].sum():.1f} | {alternative} {a[:, 0].mean():.2f}, {a[:, 1].sum():.1f} s "
          f"| {h[:, 1].sum() / g[:, 1].sum():.2f} | {h[:, 1].sum() / a[:, 1].sum():.2f} |", flush=True)


def run_text(splits):
    print("| problem | F1, halving | F1, full grid | halving − full, paired | s, halving | s, full grid "
          "| alternative: F1, s | halving / full | halving / alternative |")
    print("|---|---|---|---|---|---|---|---|---|")
    topics = _r8_topics()
    _print("R8, 8 topics", _problem_rows(topics, capped=False), "tuned-threshold LR")
    _print("R8, 8 topics, max_features=100", _problem_rows(topics, capped=True), "L1-LinearSVC grid")
    _print(f"SMS spam, {splits} splits", _problem_rows(_sms_problems(splits), capped=False), "tuned-threshold LR")


def _r8_topics():
    """(X_train, y_train, X_test, y_test) of R8's eight topics one-vs-rest (TF-IDF on the training
    documents), after loading numba's compiled kernels so that no timing includes it."""
    StructSVM(C=1.0, budget=5).fit(np.eye(4)[[0, 1, 2, 3, 0, 1]], [0, 1, 0, 1, 0, 1])
    xtr, ytr, xte, yte = load_r8(None)
    vec = TfidfVectorizer(sublinear_tf=True, min_df=2)
    Xtr, Xte = vec.fit_transform(xtr), vec.transform(xte)
    return [(Xtr, (ytr == t).astype(int), Xte, (yte == t).astype(int)) for t in sorted(set(ytr))]


def _sms_problems(splits):
    """(X_train, y_train, X_test, y_test) of SMS spam over ``splits`` stratified 70/30 splits, TF-IDF
    fitted on each training part."""
    texts, labels = load_sms_spam(None)
    texts, y = np.asarray(texts, dtype=object), (np.asarray(labels) == "spam").astype(int)
    problems = []
    for tr, te in StratifiedShuffleSplit(n_splits=splits, test_size=0.3, random_state=0).split(texts, y):
        vec = TfidfVectorizer(sublinear_tf=True, min_df=2)
        problems.append((vec.fit_transform(texts[tr]), y[tr], vec.transform(texts[te]), y[te]))
    return problems


def _fold_fits(search, X, y, C_per_unit, norms):
    """Fit ``search``'s final estimator at C = ``C_per_unit`` per grid unit on each of its folds, as the
    search scales C and the bias feature to a fold, at the ranking precision (``tol`` 0.1)."""
    tol = ranking_tol(search._problem().solver.tol)
    for train, _ in search._folds(y):
        fold = norms[train]
        model = clone(search.estimator_).set_params(C=C_per_unit * grid_unit(fold),
                                                    bias=data_bias(search.bias, fold), tol=tol)
        _timed(model, X[train], y[train])


def _floor(search, X, y):
    """Seconds of the least a search over the default grid pays once it has chosen ``search``'s
    candidate: that candidate's fold fits and its final model on all of X at ``tol``, plus the fold
    fits of one other candidate to compare it with (the unbudgeted one of another C that was fitted
    fastest in the search). Unbudgeted winners only (the text problems' winners are)."""
    norms = squared_norms(X)
    unit = grid_unit(norms)
    table = search.cv_results_
    others = [(t, C) for C, B, t in zip(table["param_C"], table["param_budget"], table["mean_fit_time"])
              if B is None and C != search.C_]
    t0 = time.perf_counter()
    _fold_fits(search, X, y, search.C_ / unit, norms)
    _timed(clone(search.estimator_), X, y)
    _fold_fits(search, X, y, min(others)[1] / unit, norms)
    return time.perf_counter() - t0


def _budgeted_floor(search, X, y):
    """The same for a search whose cells are all budgeted (``max_features``): the chosen cell's fold
    paths and the cheapest other fitted cell's, from the search's own fit times (a cell's paths as far as
    halving ran them), and the final model fitted again."""
    return _two_cells(search, ("param_C", "param_budget")) + _timed(clone(search.estimator_), X, y)[1]


def _two_cells(search, params):
    """Seconds of the chosen cell's fold paths and the cheapest other fitted cell's (a cell: the values
    of ``params`` in ``cv_results_``), from the search's own fit times (one per cell, for all its points;
    0 for a C the C steps skipped)."""
    table = search.cv_results_
    cells = {}
    for i, key in enumerate(zip(*(table[p] for p in params))):
        cells[key] = table["mean_fit_time"][i]
    chosen = tuple(table[p][search.best_index_] for p in params)
    folds = sum(key.startswith("split") and key.endswith("_test_score") for key in table)
    return folds * (cells[chosen] + min(t for key, t in cells.items() if key != chosen and t > 0))


def _floor_header(what, searched_by, alternative):
    print(f"| {what} | {searched_by}, s | floor: the chosen and one other candidate, s | {alternative}, s "
          f"| search / {alternative} | floor / {alternative} |")
    print("|---|---|---|---|---|---|")


def _floor_row(label, search, floor, alternative):
    print(f"| {label} | {search:.1f} | {floor:.1f} | {alternative:.1f} | {search / alternative:.2f} "
          f"| {floor / alternative:.2f} |", flush=True)


def run_floor(splits):
    _floor_header("problem", "StructSVMCV", "alternative")
    problems = [("R8, 8 topics", [(X, y) for X, y, _, _ in _r8_topics()])]
    problems.append((f"SMS spam, {splits} splits", [(X, y) for X, y, _, _ in _sms_problems(splits)]))
    for label, data in problems:
        search = floor = alternative = 0.0
        for X, y in data:
            est, seconds = _timed(StructSVMCV(), X, y)
            search += seconds
            floor += _floor(est, X, y) if est.budget_ is None else np.nan
            alternative += _timed(_alternative(False), X, y)[1]
        _floor_row(label, search, floor, alternative)
    search = floor = alternative = 0.0
    for X, y, _, _ in _r8_topics():         # against the L1-LinearSVC grid, every cell budgeted
        est, seconds = _timed(StructSVMCV(max_features=100), X, y)
        search += seconds
        floor += _budgeted_floor(est, X, y)
        alternative += _timed(_alternative(True), X, y)[1]
    _floor_row("R8, 8 topics, max_features=100 (against the L1-LinearSVC grid)", search, floor, alternative)


def _mil_floor(clf, bags, y):
    """Seconds of the least a ``MILESClassifier`` search pays once it has chosen ``clf``'s candidate (see
    the module's docstring): its fold paths and the cheapest other cell's, from the search's own fit
    times, and the final model fitted again at the chosen width."""
    search = clf.estimator_
    paths = _two_cells(search, ("param_sigma", "param_C", "param_budget"))
    embedding = MILESEmbedding().fit(bags)
    embedding.sigma_ = clf.sigma_
    final = _timed(clone(search.estimator_), embedding.transform(bags), y)[1]
    return paths + final


def run_mil_floor(splits, datasets):
    _floor_header("data set", "MILESClassifier()", "MILES + L1-SVM")
    data = get_data_home(None)
    for name in datasets:
        search = floor = alternative = 0.0
        problems = list(load_splits(data, name, splits))
        MILESClassifier().fit(problems[0][0], problems[0][2])      # the kernels loaded from numba's cache, untimed
        for tr, _, y_tr, _ in problems:
            clf, seconds = _timed(MILESClassifier(), tr, y_tr)
            search += seconds
            floor += _mil_floor(clf, tr, y_tr)
            t0 = time.perf_counter()
            miles_width_search(tr, y_tr, SIGMA_FACTORS)
            alternative += time.perf_counter() - t0
        _floor_row(set_name(name), search, floor, alternative)


def run_mil(splits, datasets):
    print("| data set | F1, halving | F1, full grid | halving − full, paired | s, halving | s, full grid "
          "| MILES + L1-SVM: F1, s | halving / full | halving / MILES + L1-SVM |")
    print("|---|---|---|---|---|---|---|---|---|")
    data = get_data_home(None)
    for name in datasets:
        rows = {"halving": [], "full grid": [], "alternative": []}
        problems = list(load_splits(data, name, splits))
        # the compiled kernels loaded from numba's cache and liblinear's first call, untimed, as in mil-floor:
        # each method's first fit of the run would otherwise carry them
        MILESClassifier().fit(problems[0][0], problems[0][2])
        miles_width_search(problems[0][0], problems[0][2], SIGMA_FACTORS)
        for tr, te, y_tr, y_te in problems:
            for key, clf in (("halving", MILESClassifier()),
                             ("full grid", MILESClassifier(estimator=StructSVMCV(budgets=list(MIL_BUDGETS),
                                                                                 scale_C=False, halving_factor=None)))):
                clf, seconds = _timed(clf, tr, y_tr)
                rows[key].append((_f1(clf, te, y_te), seconds))
            t0 = time.perf_counter()
            emb, l1 = miles_width_search(tr, y_tr, SIGMA_FACTORS)
            seconds = time.perf_counter() - t0
            rows["alternative"].append((100 * _f1_labels(y_te, l1.predict(emb.transform(te))), seconds))
        _print(set_name(name), rows, "")


def _rung_seconds(fit, by_rung):
    """Seconds of ``fit()``, adding into ``by_rung`` ({rung: seconds}) the fold paths' time by the rung
    each run went to -- a rung named by the points its paths were asked for, every path's first run
    (the first rung of every budget) as 1 -- by timing ``FoldPath.advance`` (serial searches run every
    budgeted path through it)."""
    import weakref

    from structfs.model_selection import _path

    advance, started = _path.FoldPath.advance, weakref.WeakSet()

    def timed(task, n_points):
        t0 = time.perf_counter()
        out = advance(task, n_points)
        rung = n_points if task in started else 1
        started.add(task)
        by_rung[rung] = by_rung.get(rung, 0.0) + time.perf_counter() - t0
        return out

    _path.FoldPath.advance = timed
    try:
        t0 = time.perf_counter()
        fit()
        return time.perf_counter() - t0
    finally:
        _path.FoldPath.advance = advance


def _rung_row(label, total, by_rung, alternative):
    first = by_rung.pop(1, 0.0)
    later = sum(by_rung.values())
    rest = total - first - later
    print(f"| {label} | {total:.1f} | {first:.1f} | {later:.1f} | {rest:.1f} | {alternative:.1f} "
          f"| {total / alternative:.2f} | {first / alternative:.2f} | {(first + rest) / alternative:.2f} |",
          flush=True)


def run_rungs(splits, datasets):
    print("| problem | search, s | first rung, s | later rungs, s | rest, s | alternative, s | search / alternative "
          "| first rung / alternative | first rung and rest / alternative |")
    print("|---|---|---|---|---|---|---|---|---|")
    total, rungs, alternative = 0.0, {}, 0.0
    for X, y, _, _ in _r8_topics():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            total += _rung_seconds(lambda X=X, y=y: StructSVMCV(max_features=100).fit(X, y), rungs)
        alternative += _timed(_alternative(True), X, y)[1]
    _rung_row("R8, 8 topics, max_features=100 (L1-LinearSVC grid)", total, rungs, alternative)
    data = get_data_home(None)
    for name in datasets:
        problems = list(load_splits(data, name, splits))
        MILESClassifier().fit(problems[0][0], problems[0][2])      # untimed, as in mil
        miles_width_search(problems[0][0], problems[0][2], SIGMA_FACTORS)
        total, rungs, alternative = 0.0, {}, 0.0
        for tr, _, y_tr, _ in problems:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                total += _rung_seconds(lambda tr=tr, y_tr=y_tr: MILESClassifier().fit(tr, y_tr), rungs)
            t0 = time.perf_counter()
            miles_width_search(tr, y_tr, SIGMA_FACTORS)
            alternative += time.perf_counter() - t0
        _rung_row(f"{set_name(name)} (MILES + L1-SVM)", total, rungs, alternative)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", choices=["text", "mil", "floor", "mil-floor", "rungs"])
    parser.add_argument("--splits", type=int, default=5)
    parser.add_argument("--datasets", nargs="+", default=DATASETS)
    args = parser.parse_args()
    if args.part == "text":
        run_text(args.splits)
    elif args.part == "floor":
        run_floor(args.splits)
    elif args.part == "mil-floor":
        run_mil_floor(args.splits, args.datasets)
    elif args.part == "rungs":
        run_rungs(args.splits, args.datasets)
    else:
        run_mil(args.splits, args.datasets)


if __name__ == "__main__":
    main()
