"""The fallback's ranking models on text: intercept 0 against the best training cut of F1.

    python benchmarks/experiments/fallback_threshold.py [topics ...]

When every candidate of an F1 search is the zero model, StructSVMCV searches again with the ranking loss
"auc", scored by F1. A ranking loss learns no threshold (its intercept is 0), so on features that are
not centred -- TF-IDF -- predictions at 0 fall anywhere. R8 topics never trigger the fallback, so it is
run here directly (``max_features=100``, StructSVMCV's default grid): (a) the search as the fourteenth
session shipped it, ``StructSVMCV(loss="auc", scoring="f1")``; (b) the same with every model's intercept
moved to the best cut of F1 on its training scores (``threshold_loss``, what the fallback does now).
Test F1, features, and the fraction of test documents predicted positive against the true fraction.
"""
import sys
import time

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer

from structfs import StructSVMCV
from structfs.datasets import load_r8
from structfs.losses import get_loss
from structfs.metrics import f1


def main():
    xtr, ytr, xte, yte = load_r8(None)
    vec = TfidfVectorizer(sublinear_tf=True, min_df=2)
    Xtr, Xte = vec.fit_transform(xtr), vec.transform(xte)
    topics = sys.argv[1:] or sorted(set(ytr))
    print("| topic | test positives | (a) intercept 0: F1 | features | predicted positive | (b) best training cut: F1 "
          "| features | predicted positive | s (a) / (b) |")
    print("|---|---|---|---|---|---|---|---|---|")
    rows = []
    for topic in topics:
        y, y_test = (ytr == topic).astype(int), np.where(yte == topic, 1.0, -1.0)
        row = []
        for threshold_loss in (None, get_loss("f1")):
            t0 = time.perf_counter()
            est = StructSVMCV(loss="auc", scoring="f1", max_features=100)
            est._check_params()
            classes = np.unique(y)
            folds = est._folds(Xtr, y)
            est.refit_best(Xtr, y, est.search(Xtr, y, classes, folds, threshold_loss=threshold_loss), threshold_loss)
            s = est.decision_function(Xte)
            row.append((f1(y_test, s), len(est.selected_features_), float(np.mean(s > 0)), time.perf_counter() - t0))
        rows.append(row)
        (fa, na, pa, sa), (fb, nb, pb, sb) = row
        print(f"| {topic} | {np.mean(y_test > 0):.3f} | {fa:.2f} | {na} | {pa:.3f} | {fb:.2f} | {nb} | {pb:.3f} | "
              f"{sa:.1f} / {sb:.1f} |", flush=True)
    diff = np.array([r[1][0] - r[0][0] for r in rows])
    print(f"| macro | | {np.mean([r[0][0] for r in rows]):.2f} | | | {np.mean([r[1][0] for r in rows]):.2f} | | | "
          f"(b) − (a) {diff.mean():+.2f} ± {diff.std(ddof=1) / np.sqrt(len(diff)):.2f} |")


if __name__ == "__main__":
    main()
