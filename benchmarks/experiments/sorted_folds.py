"""Do unshuffled inner folds hurt when the training data arrive sorted by class?  (issue 10, eleventh session)

    python benchmarks/experiments/sorted_folds.py original|sorted [--shuffle]

StructSVMCV's ``cv=3`` is scikit-learn's StratifiedKFold without shuffling (as LogisticRegressionCV's).
If a user's training set arrives sorted by class (a multi-class corpus read folder by folder), each
one-vs-rest problem's negatives are then split into blocks of other classes: a validation fold holds
negatives of classes its training folds never saw. This script runs the R8 benchmark of
benchmarks/cv.py (``StructSVMCV(loss="f1", max_features=100)`` per topic) on the training set as
stored (chronological) or sorted by topic, with ``cv=3`` or a seeded shuffled StratifiedKFold.
"""
import argparse
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.model_selection import StratifiedKFold

from structfs import StructSVMCV
from structfs.datasets import load_r8
from structfs.metrics import f1


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("order", choices=["original", "sorted"])
    parser.add_argument("--shuffle", action="store_true", help="StratifiedKFold(3, shuffle=True, random_state=0)")
    args = parser.parse_args()
    warnings.simplefilter("ignore", ConvergenceWarning)
    xtr, ytr, xte, yte = load_r8()
    if args.order == "sorted":
        order = np.argsort(ytr, kind="stable")
        xtr, ytr = [xtr[i] for i in order], ytr[order]
    vec = TfidfVectorizer(sublinear_tf=True, min_df=2)
    Xtr, Xte = vec.fit_transform(xtr), vec.transform(xte)
    cv = StratifiedKFold(3, shuffle=True, random_state=0) if args.shuffle else 3
    scores, t0 = [], time.perf_counter()
    for topic in sorted(set(ytr)):
        est = StructSVMCV(loss="f1", max_features=100, cv=cv).fit(Xtr, (ytr == topic).astype(int))
        scores.append(f1((yte == topic).astype(int), est.decision_function(Xte)))
        print(f"{topic}: F1 {scores[-1]:.2f} (C {est.C_:.0f}, B {est.budget_}, groups {est.n_groups_}, "
              f"{len(est.selected_features_)} features)", flush=True)
    print(f"{args.order}, {'shuffled' if args.shuffle else 'unshuffled'} folds: macro-F1 {np.mean(scores):.2f} "
          f"({time.perf_counter() - t0:.1f} s)")


if __name__ == "__main__":
    main()
