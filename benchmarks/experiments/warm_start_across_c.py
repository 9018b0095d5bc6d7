"""Warm starts across C in StructSVMCV (issue 10.2), an experiment that was measured and not adopted.

    git apply benchmarks/experiments/warm_start_across_C.diff
    python benchmarks/experiments/warm_start_across_c.py money-fx ship acq crude interest
    git checkout structfs/

The patch solves each fold's C values in increasing order, every fit and every debiasing refit
starting from the cutting planes the previous C's ended with (``WARM_START_ACROSS_C``; a plane is a
valid cut at any C). This script fits ``StructSVMCV(loss="f1", max_features=100)`` on R8 topics cold
and warm and prints time, the chosen (C, B, groups), the CV score and the test F1.
"""
import sys
import time

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer

import structfs.model_selection as selection
from structfs import StructSVM, StructSVMCV
from structfs.datasets import load_r8
from structfs.metrics import f1


def main(topics):
    if not hasattr(selection, "WARM_START_ACROSS_C"):
        sys.exit("apply benchmarks/experiments/warm_start_across_C.diff first (see the docstring)")
    xtr, ytr, xte, yte = load_r8()
    vec = TfidfVectorizer(sublinear_tf=True, min_df=2)
    Xtr, Xte = vec.fit_transform(xtr), vec.transform(xte)
    StructSVM(C=1.0, budget=5).fit(Xtr[:300], (np.asarray(ytr[:300]) == "earn").astype(int))   # numba kernels
    print("| topic | start | s | C, B, groups | CV F1 | test F1 | features |\n|---|---|---|---|---|---|---|")
    for topic in topics:
        y, y_test = (np.asarray(ytr) == topic).astype(int), (np.asarray(yte) == topic).astype(int)
        for warm in (False, True):
            selection.WARM_START_ACROSS_C = warm
            t0 = time.perf_counter()
            cv = StructSVMCV(loss="f1", max_features=100).fit(Xtr, y)
            print(f"| {topic} | {'warm' if warm else 'cold'} | {time.perf_counter() - t0:.1f} | {cv.C_:.0f}, "
                  f"{cv.budget_}, {cv.n_groups_} | {cv.best_score_:.2f} | {f1(y_test, cv.decision_function(Xte)):.2f} "
                  f"| {len(cv.selected_features_)} |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or ["money-fx", "ship", "acq", "crude", "interest"])
