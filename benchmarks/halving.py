"""Successive halving against the full grid: the same searches, the same splits, quality and time.

    python -m benchmarks.halving text [--splits 5]                      # R8 (uncapped and max_features=100), SMS
    python -m benchmarks.halving mil [--splits 5] [--datasets musk1 ...]
    python -m benchmarks.halving floor [--splits 5]                     # R8, SMS: the chosen candidate alone

Each problem is searched twice by ``StructSVMCV`` at its defaults, with ``halving_factor=3`` (the
default) and ``halving_factor=None`` (every path to its end, the search before halving), and, in the
same run, by the alternative a user would pick: for text, tuned-threshold logistic regression
(``TunedThresholdClassifierCV(LogisticRegressionCV(Cs=6, cv=3, scoring="f1", class_weight="balanced",
solver="liblinear"), scoring="f1", cv=3)``; with ``max_features=100`` the L1-LinearSVC grid of 5 C x 3
folds); for MIL, ``MILESClassifier()`` against MILES + L1-SVM with the same inner CV as
MILESClassifier's search: 3 kernel widths x 4 C x 3 folds (``benchmarks.mil.miles_width_search``). Test F1
in percent, the paired difference halving - full grid with its standard error, and total seconds with
their ratios.

``floor`` times, in one run with the alternative, what any search over the default grid pays at least:
the candidate the search chose, fitted alone -- its fits on the three folds at the search's ranking
precision (``tol`` 0.1) and the final model on all the data at ``tol`` -- as a search that knew the
winner in advance would. Its ratio to the alternative is a lower bound on the search's.
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
from structfs.mil import MIL_BUDGETS, SIGMA_FACTORS, MILESClassifier
from structfs.model_selection._grid import data_bias, grid_unit, squared_norms


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
    StructSVM(C=1.0, budget=5).fit(np.eye(4)[[0, 1, 2, 3, 0, 1]], [0, 1, 0, 1, 0, 1])      # numba kernels loaded
    xtr, ytr, xte, yte = load_r8(None)
    vec = TfidfVectorizer(sublinear_tf=True, min_df=2)
    Xtr, Xte = vec.fit_transform(xtr), vec.transform(xte)
    topics = [(Xtr, (ytr == t).astype(int), Xte, (yte == t).astype(int)) for t in sorted(set(ytr))]
    _print("R8, 8 topics", _problem_rows(topics, capped=False), "tuned-threshold LR")
    _print("R8, 8 topics, max_features=100", _problem_rows(topics, capped=True), "L1-LinearSVC grid")
    texts, labels = load_sms_spam(None)
    texts, y = np.asarray(texts, dtype=object), (np.asarray(labels) == "spam").astype(int)
    problems = []
    for tr, te in StratifiedShuffleSplit(n_splits=splits, test_size=0.3, random_state=0).split(texts, y):
        vec = TfidfVectorizer(sublinear_tf=True, min_df=2)
        problems.append((vec.fit_transform(texts[tr]), y[tr], vec.transform(texts[te]), y[te]))
    _print(f"SMS spam, {splits} splits", _problem_rows(problems, capped=False), "tuned-threshold LR")


def _chosen_alone(search, X, y):
    """Seconds to fit ``search``'s chosen candidate alone: on each of its folds at the ranking precision
    (C and the bias feature of the fold, as the search scales them), then on all of X at ``tol``."""
    norms = squared_norms(X)
    c = search.C_ / grid_unit(norms)                    # the default grid's C per unit of the data
    t0 = time.perf_counter()
    for train, _ in search.folds(y):
        fold = norms[train]
        model = clone(search.estimator_).set_params(C=c * grid_unit(fold), bias=data_bias(search.bias, fold),
                                                    tol=max(search.tol, 0.1))
        _timed(model, X[train], y[train])
    _timed(clone(search.estimator_), X, y)
    return time.perf_counter() - t0


def run_floor(splits):
    print("| problem | StructSVMCV, s | chosen candidate alone, s | alternative, s | search / alternative "
          "| chosen alone / alternative |")
    print("|---|---|---|---|---|---|")
    StructSVM(C=1.0, budget=5).fit(np.eye(4)[[0, 1, 2, 3, 0, 1]], [0, 1, 0, 1, 0, 1])      # numba kernels loaded
    xtr, ytr, _, _ = load_r8(None)
    Xtr = TfidfVectorizer(sublinear_tf=True, min_df=2).fit_transform(xtr)
    problems = [("R8, 8 topics", [(Xtr, (ytr == t).astype(int)) for t in sorted(set(ytr))])]
    texts, labels = load_sms_spam(None)
    texts, y = np.asarray(texts, dtype=object), (np.asarray(labels) == "spam").astype(int)
    sms = [(TfidfVectorizer(sublinear_tf=True, min_df=2).fit_transform(texts[tr]), y[tr])
           for tr, _ in StratifiedShuffleSplit(n_splits=splits, test_size=0.3, random_state=0).split(texts, y)]
    problems.append((f"SMS spam, {splits} splits", sms))
    for label, data in problems:
        search = alone = alternative = 0.0
        for X, y in data:
            est, seconds = _timed(StructSVMCV(), X, y)
            search += seconds
            alone += _chosen_alone(est, X, y)
            alternative += _timed(_alternative(False), X, y)[1]
        print(f"| {label} | {search:.1f} | {alone:.1f} | {alternative:.1f} | {search / alternative:.2f} "
              f"| {alone / alternative:.2f} |", flush=True)


def run_mil(splits, datasets):
    print("| data set | F1, halving | F1, full grid | halving − full, paired | s, halving | s, full grid "
          "| MILES + L1-SVM: F1, s | halving / full | halving / MILES + L1-SVM |")
    print("|---|---|---|---|---|---|---|---|---|")
    data = get_data_home(None)
    for name in datasets:
        rows = {"halving": [], "full grid": [], "alternative": []}
        for tr, te, y_tr, y_te in load_splits(data, name, splits):
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", choices=["text", "mil", "floor"])
    parser.add_argument("--splits", type=int, default=5)
    parser.add_argument("--datasets", nargs="+", default=DATASETS)
    args = parser.parse_args()
    if args.part == "text":
        run_text(args.splits)
    elif args.part == "floor":
        run_floor(args.splits)
    else:
        run_mil(args.splits, args.datasets)


if __name__ == "__main__":
    main()
