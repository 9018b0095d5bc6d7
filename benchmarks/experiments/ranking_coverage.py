"""Do the ranking losses fall behind under a feature cap on small R8 topics for lack of coverage?

    python benchmarks/experiments/ranking_coverage.py [--losses ap pauc prbep] [--topics ship trade interest]

The hypothesis tested: a sparse linear model scores every document that contains none of its selected
words alike (the intercept); F1 only asks on which side of the cut such a document falls, but a ranking
measure (AP, partial AUC, PRBEP) ranks it, and a positive among hundreds of tied negatives would cost
it. (Refuted on R8: the uncovered documents are negatives; RESULTS.md, eighteenth session.) For each
(topic, loss): ``StructSVMCV(loss=L, max_features=100)`` at its defaults
and the CV'd L1-``LinearSVC`` of benchmarks/cv.py (C by 3-fold CV on L's measure); the test measure,
the features, and the share of test positives and of test negatives that contain none of the model's
features (their score is the intercept: one tie).
"""
import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))        # benchmarks/
from cv import linear_baselines  # noqa: E402

from structfs import StructSVMCV  # noqa: E402
from structfs.datasets import get_data_home, load_r8  # noqa: E402
from structfs.losses import get_loss  # noqa: E402
from structfs.model_selection import check_scoring  # noqa: E402


def uncovered(X, features, y):
    """Shares (percent) of the positive and of the negative rows of X without any of ``features``."""
    hit = np.asarray(X[:, features].getnnz(axis=1) > 0) if len(features) else np.zeros(X.shape[0], bool)
    return 100 * np.mean(~hit[y == 1]), 100 * np.mean(~hit[y == 0])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--losses", nargs="+", default=["ap", "pauc", "prbep"])
    parser.add_argument("--topics", nargs="+", default=["ship", "trade", "interest"])
    args = parser.parse_args()
    xtr, ytr, xte, yte = load_r8(get_data_home(None))
    vec = TfidfVectorizer(sublinear_tf=True, min_df=2)
    Xtr, Xte = vec.fit_transform(xtr), vec.transform(xte)
    print("| topic | loss | StructSVMCV (cap 100) | features | test positives / negatives uncovered (%) | "
          "L1-LinearSVC | features | uncovered (%) |")
    print("|---|---|---|---|---|---|---|---|")
    for topic in args.topics:
        y_tr, y_te = (ytr == topic).astype(int), (yte == topic).astype(int)
        for name in args.losses:
            measure = check_scoring(None, get_loss(name))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cv = StructSVMCV(loss=name, max_features=100).fit(Xtr, y_tr)
                l1 = linear_baselines(Xtr, y_tr, measure)["L1-LinearSVC"][0]
            l1_features = np.flatnonzero(l1.coef_[0])
            ours = uncovered(Xte, cv.selected_features_, y_te)
            theirs = uncovered(Xte, l1_features, y_te)
            print(f"| {topic} | {name} | {measure(cv, Xte, y_te):.2f} | {len(cv.selected_features_)} | "
                  f"{ours[0]:.1f} / {ours[1]:.1f} | {measure(l1, Xte, y_te):.2f} | {len(l1_features)} | "
                  f"{theirs[0]:.1f} / {theirs[1]:.1f} |", flush=True)


if __name__ == "__main__":
    main()
