"""F1 on imbalanced text: Reuters R8, TF-IDF, one-vs-rest, budget path against LinearSVC and L1-LinearSVC,
and StructSVMCV choosing C and the sparsity by cross-validation (what to use on new data).

    python examples/text_f1_r8.py [DATA_DIR] [--quick] [--plot r8-path.png]

DATA_DIR is the shared datasets folder (default: $STRUCTFS_DATA).
"""
import argparse
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.svm import LinearSVC

from structfs import OneVsRestStructSVM, StructSVM, StructSVMCV
from structfs.datasets import load_r8
from structfs.metrics import f1


def macro_f1(model, X, y):
    scores = model.decision_function(X)
    return np.mean([f1((y == c).astype(int), scores[:, j]) for j, c in enumerate(model.classes_)])


def n_features(model):
    coefs = [e.coef_[0] for e in model.estimators_] if hasattr(model, "estimators_") else list(model.coef_)
    return np.mean([np.count_nonzero(c) for c in coefs])


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("data", nargs="?", default=None)
    parser.add_argument("--quick", action="store_true", help="two budgets and a 1,500-document subset (CI)")
    parser.add_argument("--plot", default=None)
    args = parser.parse_args()
    xtr, ytr, xte, yte = load_r8(args.data)
    if args.quick:
        xtr, ytr = xtr[:1500], ytr[:1500]
    vec = TfidfVectorizer(sublinear_tf=True, min_df=2)
    Xtr, Xte = vec.fit_transform(xtr), vec.transform(xte)
    budgets = [2, 10] if args.quick else [2, 5, 10, 20, 50]
    svc = LinearSVC(C=1.0).fit(Xtr, ytr)
    l1 = LinearSVC(penalty="l1", dual=False, C=10.0).fit(Xtr, ytr)
    print(f"LinearSVC      macro-F1 {macro_f1(svc, Xte, yte):6.2f}  features {n_features(svc):8.1f}")
    print(f"L1-LinearSVC   macro-F1 {macro_f1(l1, Xte, yte):6.2f}  features {n_features(l1):8.1f}")
    path = []
    for B in budgets:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            model = OneVsRestStructSVM(estimator=StructSVM(loss="f1", C=1e4, budget=B), n_jobs=2).fit(Xtr, ytr)
        path.append((n_features(model), macro_f1(model, Xte, yte)))
        print(f"StructSVM B={B:<4d} macro-F1 {path[-1][1]:6.2f}  features {path[-1][0]:8.1f}")
    # at most 100 features per topic, C and the number of feature groups by 3-fold CV (--quick: a short path)
    cv = StructSVMCV(loss="f1", max_features=100, **({"max_outer": 4} if args.quick else {}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model = OneVsRestStructSVM(estimator=cv, n_jobs=2).fit(Xtr, ytr)
    print(f"StructSVMCV    macro-F1 {macro_f1(model, Xte, yte):6.2f}  features {n_features(model):8.1f}")
    if args.plot:
        from structfs.plotting import plot_budget_path
        plot_budget_path(*zip(*path), baselines={"LinearSVC": macro_f1(svc, Xte, yte),
                                                 "L1-LinearSVC": (n_features(l1), macro_f1(l1, Xte, yte))},
                         ylabel="macro-F1 (%)", out=args.plot, title="R8, one-vs-rest")
        print("plot written to", args.plot)


if __name__ == "__main__":
    main()
