"""A new user's first problems: StructSVMCV at its defaults on data no default was chosen on.

    python -m benchmarks.new_data [--problems digits3 digits3-minmax cancer-std dense-20k] [--c-times-n 0.3 1]

The dev sets are text (TF-IDF rows of unit norm) and MILES similarities; a user's first try is often
scikit-learn's own dense data. Each problem: a stratified 70/30 split (seed 0), (a)
``StructSVMCV(loss="f1")`` at its defaults against (b) ``LinearSVC(class_weight="balanced")`` and (c)
L1-``LinearSVC`` with C by the same 3-fold CV (benchmarks/cv.py's baselines). Test F1 in percent,
features with a nonzero weight, fit seconds, the ConvergenceWarnings the search raised, the CV's
choice, and the mean seconds of one fold's fit per C of the grid (the largest over budgets).
``--c-times-n``: (a) with an explicit grid ``Cs=[f * n for f in ...]``, n the training examples (the
remedy docs/model_selection.md gives for dense data; explicit C values are not rescaled to each fold).
"""
import argparse
import warnings

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits, make_classification
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import f1_score
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import MinMaxScaler, StandardScaler

from benchmarks.cv import linear_baselines
from benchmarks.unscaled import timed_fit
from structfs import StructSVMCV


def problems():
    digits = load_digits()
    cancer = load_breast_cancer()
    return {
        "digits3": lambda: (digits.data, (digits.target == 3).astype(int)),           # pixels 0..16
        "digits3-minmax": lambda: (MinMaxScaler().fit_transform(digits.data), (digits.target == 3).astype(int)),
        # scaled on all rows for brevity: the split's test part leaks into the scaler's mean only
        "cancer-std": lambda: (StandardScaler().fit_transform(cancer.data), cancer.target),
        "dense-20k": lambda: make_classification(20_000, 200, n_informative=20, weights=[0.95], flip_y=0.02,
                                                 random_state=0),
        # fewer informative columns: the F1 loss's structural optimum is w = 0 at every C (the fallback)
        "dense-5k": lambda: make_classification(5_000, 100, n_informative=10, weights=[0.9], flip_y=0.02,
                                                random_state=0),
        # 1% positives (21 in training), no flipped labels: the F1 objective is flat near w = 0, so 1% solves
        # stopped at the zero model
        "dense-1pct": lambda: make_classification(3_000, 50, n_informative=5, weights=[0.99], flip_y=0,
                                                  random_state=2),
        # the same with columns min-max scaled to [0, 1] (scaled on all rows, as cancer-std): not centred, so
        # a ranking model's intercept 0 (the fallback's) sits nowhere near the classes' scores
        "dense-5k-minmax": lambda: _minmax(*make_classification(5_000, 100, n_informative=10, weights=[0.9],
                                                                flip_y=0.02, random_state=0)),
    }


def _minmax(X, y):
    return MinMaxScaler().fit_transform(X), y


def run(name, X, y, c_times_n=None, seed=0):
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, stratify=y, random_state=seed)
    Cs = None if c_times_n is None else [f * Xtr.shape[0] for f in c_times_n]
    cv, seconds, n_warnings = timed_fit(StructSVMCV(loss="f1", Cs=Cs), Xtr, ytr, ConvergenceWarning)
    r = cv.cv_results_
    per_C = {C: float(r["mean_fit_time"][r["param_C"] == C].max()) for C in np.unique(r["param_C"])}
    row = [f"{100 * f1_score(yte, cv.predict(Xte)):.2f}", str(len(cv.selected_features_)), f"{seconds:.1f}",
           str(n_warnings), f"C/n={cv.C_ / Xtr.shape[0]:.3g}, B={cv.budget_}, groups={cv.n_groups_}"
           + ("" if cv.loss_.name == "f1" else f", loss={cv.loss_.name}")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)        # liblinear's, on raw pixels
        baselines = linear_baselines(Xtr, ytr)
    for est, secs in baselines.values():
        row += [f"{100 * f1_score(yte, est.predict(Xte)):.2f}", str(int(np.count_nonzero(est.coef_))), f"{secs:.1f}"]
    r2 = float(np.mean(np.sum(np.asarray(Xtr) ** 2, axis=1)))
    split = '' if seed == 0 else f' (split {seed})'
    print(f"| {name}{split} | {Xtr.shape[0]} x {Xtr.shape[1]}, {100 * ytr.mean():.1f}% pos, mean ||x||² {r2:.3g} | "
          + " | ".join(row) + " | " + ", ".join(f"{s:.1f}" for s in per_C.values()) + " |", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    make = problems()
    parser.add_argument("--problems", nargs="+", default=list(make), choices=list(make))
    parser.add_argument("--splits", type=int, default=1, help="seeded 70/30 splits, a row each (default 1)")
    parser.add_argument("--c-times-n", type=float, nargs="+", default=None,
                        help="(a) with Cs = these multiples of the training n (default: StructSVMCV's grid)")
    args = parser.parse_args()
    print("| problem | training data | (a) F1 | (a) features | (a) s | (a) warnings | (a) choice | (b) F1 "
          "| (b) features "
          "| (b) s | (c) F1 | (c) features | (c) s | (a) s per fold fit, per C of its grid |")
    print("|---" * 14 + "|")
    for name in args.problems:
        for seed in range(args.splits):
            run(name, *make[name](), c_times_n=args.c_times_n, seed=seed)


if __name__ == "__main__":
    main()
