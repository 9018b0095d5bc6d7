"""R8 one-vs-rest, loss F1: StructSVM without budget (SVMperf's problem) and the budget path.

    python -m benchmarks.r8 [--data DIR] [--C 1000 10000] [--budgets 2 5 10 20 50 100 200] [--budget-C 10000]
    python -m benchmarks.r8 --C 1000 --budgets --losses prec@k rec@k     # svm_perf's codes 4 and 5

TF-IDF (sublinear_tf, min_df=2) fitted on the training texts (10,684 features); eight topics, each
against the rest; macro-F1 (percent) on the test split. Fit seconds exclude vectorising; numba's
kernels are loaded once before timing (a fresh process pays ~0.3 s for that on its first fit).
"""
import argparse
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_extraction.text import TfidfVectorizer

from structfs import StructSVM
from structfs.datasets import load_r8
from structfs.metrics import f1, prbep


def fit_topics(Xtr, ytr, Xte, yte, loss="f1", **params):
    rows = []
    for topic in sorted(set(ytr)):
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            clf = StructSVM(loss=loss, **params).fit(Xtr, (ytr == topic).astype(int))
        seconds = time.perf_counter() - t0
        scores = clf.decision_function(Xte)
        rows.append(dict(topic=topic, f1=f1((yte == topic).astype(int), scores),
                         prbep=prbep((yte == topic).astype(int), scores),
                         objective=clf.objective_, lower=clf.lower_bound_, planes=clf.n_iter_,
                         groups=clf.n_outer_, features=len(clf.selected_features_), seconds=seconds))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=None, help="data directory (default: $STRUCTFS_DATA)")
    parser.add_argument("--C", type=float, nargs="*", default=[1000.0, 10000.0])
    parser.add_argument("--budgets", type=int, nargs="*", default=[2, 5, 10, 20, 50, 100, 200])
    parser.add_argument("--budget-C", type=float, default=10000.0)
    parser.add_argument("--refit", type=float, default=None, help="StructSVM(refit=...) for the budget path")
    parser.add_argument("--max-outer", type=int, nargs="*", default=[30],
                        help="StructSVM(max_outer=...) for the budget path (features <= max_outer * B); "
                             "several values print one row per (B, max_outer)")
    parser.add_argument("--outer-tol", type=float, default=None,
                        help="StructSVM(outer_tol=...) for the budget path: FGM's stall rule (default: off)")
    parser.add_argument("--losses", nargs="*", default=["f1"],
                        help="losses of the unbudgeted tables (e.g. prec@k rec@k: svm_perf's -l 4 and -l 5)")
    args = parser.parse_args()
    xtr, ytr, xte, yte = load_r8(args.data)
    vec = TfidfVectorizer(sublinear_tf=True, min_df=2)
    Xtr, Xte = vec.fit_transform(xtr), vec.transform(xte)
    print(f"R8: {Xtr.shape[0]} train x {Xtr.shape[1]} features, {Xte.shape[0]} test")
    StructSVM(C=1.0).fit(Xtr[:200], (ytr[:200] == "earn").astype(int))     # load numba kernels
    for loss in args.losses:
        for C in args.C:
            rows = fit_topics(Xtr, ytr, Xte, yte, loss=loss, C=C)
            print(f"\n### loss={loss}, budget=None, C={C:g}\n")
            print("| topic | F1 | PRBEP | objective | lower bound | planes | seconds |")
            print("|---|---|---|---|---|---|---|")
            for r in rows:
                print(f"| {r['topic']} | {r['f1']:.2f} | {r['prbep']:.2f} | {r['objective']:.2f} | {r['lower']:.2f} | "
                      f"{r['planes']} | {r['seconds']:.2f} |")
            print(f"| **macro / total** | **{np.mean([r['f1'] for r in rows]):.2f}** | "
                  f"**{np.mean([r['prbep'] for r in rows]):.2f}** | | | {sum(r['planes'] for r in rows)} | "
                  f"**{sum(r['seconds'] for r in rows):.2f}** |", flush=True)
    if args.budgets:
        print(f"\n### budget path, C={args.budget_C:g}, refit={args.refit}, outer_tol={args.outer_tol}\n")
        print("| B | max_outer | features per topic | macro-F1 | seconds (8 fits) |")
        print("|---|---|---|---|---|")
        for B in args.budgets:
            for max_outer in args.max_outer:
                rows = fit_topics(Xtr, ytr, Xte, yte, C=args.budget_C, budget=B, refit=args.refit,
                                  max_outer=max_outer, outer_tol=args.outer_tol)
                print(f"| {B} | {max_outer} | {np.mean([r['features'] for r in rows]):.1f} | "
                      f"{np.mean([r['f1'] for r in rows]):.2f} | {sum(r['seconds'] for r in rows):.1f} |", flush=True)


if __name__ == "__main__":
    main()
