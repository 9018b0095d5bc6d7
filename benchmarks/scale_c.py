"""StructSVMCV's default C grid per example (scale_C=False) or per unit squared norm (scale_C=True).

    python -m benchmarks.scale_c [--splits 5] [--problems digits3 ...]

svm_perf's C multiplies an average loss, so the default grid is C = c * n; a feature scale a moves the
optimum's trade-off by a^2, so the same c regularises raw pixels (mean squared norm ~3,850) thousands
of times less than min-max scaled ones. scale_C=True divides the grid by the training rows' mean
squared norm s (SVMlight's default C = 1 / mean(x'x)) and sets the bias feature to sqrt(s); on text
with unit-norm rows nothing changes.
Each problem (scikit-learn's own data, none used to choose a default): K seeded stratified 70/30
splits; ``StructSVMCV(loss="f1")`` with scale_C True and False; test F1, paired difference True -
False with its standard error, features, fit seconds, ConvergenceWarnings raised by the search; and,
for reference, LinearSVC / L1-LinearSVC (balanced, C by the same 3-fold CV; benchmarks/cv.py).
"""
import argparse
import warnings

import numpy as np
from sklearn.datasets import load_breast_cancer, load_digits, load_wine
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import f1_score
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from benchmarks.cv import linear_baselines
from benchmarks.new_data import problems as new_data_problems
from benchmarks.unscaled import timed_fit
from structfs import StructSVMCV


def problems():
    digits, cancer, wine = load_digits(), load_breast_cancer(), load_wine()
    shared = new_data_problems()
    # scaled on all rows for brevity: a split's test part leaks into the scaler's statistics only
    return {
        "digits3": shared["digits3"],                                                 # pixels 0..16
        "digits8": lambda: (digits.data, (digits.target == 8).astype(int)),
        "digits3-minmax": shared["digits3-minmax"],
        "cancer-std": shared["cancer-std"],
        "cancer-raw": lambda: (cancer.data, cancer.target),                           # columns 1e-3 .. 4e3
        "wine1-std": lambda: (StandardScaler().fit_transform(wine.data), (wine.target == 1).astype(int)),
        "dense-5k": shared["dense-5k"],
    }


def fit_both(Xtr, ytr, Xte, yte):
    """{scale_C: (F1, features, seconds, warnings)} and the baselines' F1."""
    out = {}
    for scale_C in (True, False):
        est, seconds, n_warn = timed_fit(StructSVMCV(loss="f1", scale_C=scale_C), Xtr, ytr, ConvergenceWarning)
        out[scale_C] = (100 * f1_score(yte, est.predict(Xte)), len(est.selected_features_), seconds, n_warn)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)        # liblinear's, on raw columns
        for name, (est, _) in linear_baselines(Xtr, ytr).items():
            out[name] = 100 * f1_score(yte, est.predict(Xte))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    make = problems()
    parser.add_argument("--problems", nargs="+", default=list(make), choices=list(make))
    parser.add_argument("--splits", type=int, default=5)
    args = parser.parse_args()
    print("| problem | training data | F1, scale_C=True | F1, False | True − False | features True / False | "
          "s True / False | warnings True / False | LinearSVC F1 | L1-LinearSVC F1 |")
    print("|---" * 10 + "|")
    for name in args.problems:
        X, y = make[name]()
        runs = []
        for seed in range(args.splits):
            Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, stratify=y, random_state=seed)
            runs.append(fit_both(Xtr, ytr, Xte, yte))
        on, off = np.array([r[True] for r in runs]), np.array([r[False] for r in runs])
        diff = on[:, 0] - off[:, 0]
        se = diff.std(ddof=1) / np.sqrt(len(diff)) if len(diff) > 1 else float("nan")
        r2 = float(np.mean(np.sum(np.asarray(X, dtype=float) ** 2, axis=1)))
        print(f"| {name} | {Xtr.shape[0]} x {X.shape[1]}, {100 * y.mean():.1f}% pos, mean ‖x‖² {r2:.3g} | "
              f"{on[:, 0].mean():.2f} | {off[:, 0].mean():.2f} | {diff.mean():+.2f} ± {se:.2f} | "
              f"{on[:, 1].mean():.1f} / {off[:, 1].mean():.1f} | {on[:, 2].mean():.1f} / {off[:, 2].mean():.1f} | "
              f"{int(on[:, 3].sum())} / {int(off[:, 3].sum())} | "
              f"{np.mean([r['LinearSVC'] for r in runs]):.2f} | {np.mean([r['L1-LinearSVC'] for r in runs]):.2f} |",
              flush=True)


if __name__ == "__main__":
    main()
