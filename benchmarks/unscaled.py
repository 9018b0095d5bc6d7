"""Features on their raw scale (a demanding user's first try): fit time, planes and F1.

    python -m benchmarks.unscaled [--cv] [--synthetic]

Breast cancer (scikit-learn's copy; 30 columns from 0.001 to 4,254, squared row norms ~1.7e6),
stratified 60/40 split. StructSVM (F1) at C = c * n without and with a budget, on the raw columns and
standardised; with ``--cv`` also StructSVMCV(loss="f1") at its defaults. C multiplies an average loss
against 1/2 ||w||^2, so on raw columns the same C means far less regularisation (C * R^2 grows with
the scale), and the cutting planes need more of them; scaling the features is the cure, as for any SVM.
``--synthetic`` also fits make_classification(500, 30) x 1000 with budget 2 at C = 10 (the hostile probe's
case): seconds, planes, objective, lower bound and whether the fit certified it.
"""
import argparse
import time
import warnings

from sklearn.datasets import load_breast_cancer, make_classification
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from structfs import StructSVM, StructSVMCV
from structfs.metrics import f1


def timed_fit(est, X, y, category=Warning):
    """(fitted est, seconds, warnings of ``category`` raised)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", category)
        t0 = time.perf_counter()
        est.fit(X, y)
        seconds = time.perf_counter() - t0
    return est, seconds, sum(issubclass(w.category, category) for w in caught)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cv", action="store_true", help="also StructSVMCV at its defaults")
    parser.add_argument("--synthetic", action="store_true", help="also make_classification x 1000, budget 2")
    args = parser.parse_args()
    X, y = load_breast_cancer(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.4, random_state=0, stratify=y)
    scaler = StandardScaler().fit(Xtr)
    data = {"raw": (Xtr, Xte), "standardised": (scaler.transform(Xtr), scaler.transform(Xte))}
    n = Xtr.shape[0]
    print("| features | model | s | planes | gap / (C tol) | warnings | test F1 |")
    print("|---|---|---|---|---|---|---|")
    for name, (A, B) in data.items():
        for c in (0.3, 3.0):
            for budget in (None, 5):
                est, seconds, caught = timed_fit(StructSVM(C=c * n, budget=budget), A, ytr)
                print(f"| {name} | StructSVM(C={c:g} n, budget={budget}) | {seconds:.2f} | {est.n_iter_} | "
                      f"{est.gap_ / (est.C * est.tol):.2f} | {caught} | {f1(yte, est.decision_function(B)):.2f} |",
                      flush=True)
        if args.cv:
            est, seconds, caught = timed_fit(StructSVMCV(loss="f1"), A, ytr)
            print(f"| {name} | StructSVMCV(loss='f1') | {seconds:.2f} | | | {caught} | "
                  f"{f1(yte, est.decision_function(B)):.2f} |", flush=True)
    if args.synthetic:
        synthetic()


def synthetic():
    X, y = make_classification(500, 30, random_state=0)
    print("\n| loss | s | planes | objective | lower bound | converged | warnings |")
    print("|---|---|---|---|---|---|---|")
    for loss in ("error", "f1", "auc"):
        est, seconds, caught = timed_fit(StructSVM(loss=loss, budget=2, C=10.0), X * 1000.0, y)
        print(f"| {loss} | {seconds:.1f} | {est.n_iter_} | {est.objective_:.2f} | {est.lower_bound_:.4g} | "
              f"{est.converged_} | {caught} |", flush=True)


if __name__ == "__main__":
    main()
