"""Group selection against feature-level selection and group lasso, on features with real groups.

    python -m benchmarks.groups [--splits 5] [--max-features 30]      # (c) needs: pip install skglm

scikit-learn's digits, 3 vs 8 and 4 vs 9 (the mnist38 setting of FGM's paper), pixels / 16, each pixel
expanded by the additive chi-squared feature map (``AdditiveChi2Sampler(sample_steps=2)``: three
columns per pixel, a group each, from ``structfs.preprocessing.expansion_groups``). Seeded stratified
50/50 splits. (a) ``StructSVMCV(loss="f1", groups=pixel, max_features=K)``: the budget counts pixels;
(b) ``StructSVMCV(loss="f1", max_features=K)``: the budget counts columns; (c) group lasso: skglm's
logistic loss with a group-L2 penalty (``LogisticGroup`` + ``WeightedGroupL2`` + ``GroupBCD``), alpha
from a grid of 8 by the same 3-fold CV on F1; (d) ``LinearSVC(class_weight="balanced")`` on every
column, C by the same CV. Test F1 in percent, pixels and columns with a nonzero weight, fit seconds;
mean over the splits.
"""
import argparse
import time
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.datasets import load_digits
from sklearn.exceptions import ConvergenceWarning
from sklearn.kernel_approximation import AdditiveChi2Sampler
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.svm import LinearSVC

from structfs import StructSVMCV
from structfs.metrics import f1
from structfs.preprocessing import expansion_groups


class GroupLassoLogistic(ClassifierMixin, BaseEstimator):
    """skglm's group-lasso logistic regression on 0/1 labels (skglm's datafit wants -1/+1)."""

    def __init__(self, alpha=0.01, groups=None):
        self.alpha = alpha
        self.groups = groups

    def fit(self, X, y):
        from skglm import GeneralizedLinearEstimator
        from skglm.datafits import LogisticGroup
        from skglm.penalties import WeightedGroupL2
        from skglm.solvers import GroupBCD
        from skglm.utils.data import grp_converter

        live = np.flatnonzero(np.abs(X).sum(axis=0) > 0)       # skglm divides by each group's Lipschitz constant
        groups = np.unique(self.groups[live], return_inverse=True)[1]
        X_live = X[:, live]
        order = np.argsort(groups, kind="stable")               # skglm's groups are lists of columns
        sizes = np.bincount(groups)
        grp_indices, grp_ptr = grp_converter([list(order[s:e]) for s, e in
                                              zip(np.r_[0, np.cumsum(sizes)[:-1]], np.cumsum(sizes))], len(live))
        self.classes_ = np.unique(y)
        model = GeneralizedLinearEstimator(LogisticGroup(grp_ptr, grp_indices),
                                           WeightedGroupL2(self.alpha, np.sqrt(sizes).astype(float), grp_ptr,
                                                           grp_indices), GroupBCD(fit_intercept=True, tol=1e-6))
        model.fit(X_live, np.where(y == self.classes_[1], 1.0, -1.0))
        self.coef_ = np.zeros((1, X.shape[1]))
        self.coef_[0, live] = model.coef_.ravel()
        self.intercept_ = float(np.ravel(model.intercept_)[0])
        return self

    def decision_function(self, X):
        return X @ self.coef_[0] + self.intercept_

    def predict(self, X):
        return self.classes_[(self.decision_function(X) > 0).astype(int)]


def run(pair, split, max_features):
    digits = load_digits()
    keep = np.isin(digits.target, pair)
    X, y = digits.data[keep] / 16.0, (digits.target[keep] == pair[1]).astype(int)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.5, stratify=y, random_state=split)
    expander = AdditiveChi2Sampler(sample_steps=2).fit(X_tr)
    Z_tr, Z_te = expander.transform(X_tr), expander.transform(X_te)
    groups = expansion_groups(expander, X_tr)
    methods = {
        "(a) StructSVMCV, budget in pixels": lambda: StructSVMCV(loss="f1", groups=groups, max_features=max_features),
        "(b) StructSVMCV, budget in columns": lambda: StructSVMCV(loss="f1", max_features=max_features),
        "(c) group lasso (skglm), alpha by CV": lambda: GridSearchCV(
            GroupLassoLogistic(groups=groups), {"alpha": list(np.geomspace(1e-3, 0.1, 8))}, scoring="f1", cv=3),
        "(d) LinearSVC, every column": lambda: GridSearchCV(
            LinearSVC(class_weight="balanced"), {"C": [0.01, 0.1, 1, 10, 100]}, scoring="f1", cv=3),
    }
    rows = {}
    for name, make in methods.items():
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = make().fit(Z_tr, y_tr)
        seconds = time.perf_counter() - t0
        est = getattr(model, "best_estimator_", model)
        used = np.flatnonzero(np.asarray(est.coef_).ravel())
        rows[name] = (f1(y_te, model.decision_function(Z_te)), len(np.unique(groups[used])), len(used), seconds)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--splits", type=int, default=5)
    parser.add_argument("--max-features", type=int, default=30)
    args = parser.parse_args()
    for pair in [(3, 8), (4, 9)]:
        results = [run(pair, split, args.max_features) for split in range(args.splits)]
        print(f"\ndigits {pair[0]} vs {pair[1]}, {args.splits} splits, max_features={args.max_features}:\n")
        print("| method | test F1 | pixels | columns | seconds |")
        print("|---|---|---|---|---|")
        for name in results[0]:
            values = np.array([r[name] for r in results])
            f1s = values[:, 0]
            print(f"| {name} | {f1s.mean():.2f} ± {f1s.std(ddof=1) / np.sqrt(len(f1s)) if len(f1s) > 1 else 0:.2f} | "
                  f"{values[:, 1].mean():.1f} | {values[:, 2].mean():.1f} | {values[:, 3].mean():.1f} |", flush=True)


if __name__ == "__main__":
    main()
