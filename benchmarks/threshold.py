"""Where should a contingency loss's model cut?  The structural SVM's own cut against the cut chosen on
out-of-fold decision values (``StructSVMCV(threshold="cv")``), paired on the same fits.

    python -m benchmarks.threshold text [--splits 5]       # R8 (8 topics, and max_features=100), SMS spam
    python -m benchmarks.threshold mil [--splits 3] [--datasets ...]
    python -m benchmarks.threshold overlap [--seeds 8]     # make_classification, 5% positives: MCC and F1

Two searches per problem, ``threshold="cv"`` and ``threshold="learned"`` (the cut can change the choice
of candidate too), paired. Text and MIL: test F1 (%); the
overlap problems: test MCC (a ``ContingencyLoss``) and F1 against the same search over the full grid
(``halving_factor=None``) and TunedThresholdClassifierCV(LogisticRegression) tuned for the same measure.
"""
import argparse
import time
import warnings

import numpy as np
from sklearn.metrics import f1_score, make_scorer, matthews_corrcoef

from benchmarks.halving import _r8_topics, _sms_problems
from structfs import StructSVMCV
from structfs.losses import ContingencyLoss


def _paired(d, digits=2):
    d = np.asarray(d, dtype=float)
    se = d.std(ddof=1) / np.sqrt(len(d)) if len(d) > 1 else 0.0
    return f"{d.mean():+.{digits}f} ± {se:.{digits}f}"


def _both(search, X, y, measure):
    """(measure at the cross-validated cut, at the learned cut) of a fitted search on X, y."""
    s = search.decision_function(X)
    return measure(y, (s > 0).astype(int)), measure(y, (s + search.threshold_ > 0).astype(int))


def _report(name, rows):
    rows = np.array(rows)
    print(f"| {name} | {len(rows)} | {rows[:, 0].mean():.2f} | {rows[:, 1].mean():.2f} | "
          f"{_paired(rows[:, 0] - rows[:, 1])} |",
          flush=True)


def run_text(splits):
    def f1(y, p):
        return 100 * f1_score(y, p, zero_division=0)

    print("| problems | n | F1, threshold=\"cv\" | F1, threshold=\"learned\" | difference |\n|---|---|---|---|---|")
    r8 = _r8_topics()
    for name, problems, params in (("R8", r8, {}), ("R8, max_features=100", r8, {"max_features": 100}),
                                   ("SMS spam", _sms_problems(splits), {})):
        rows = []
        for Xtr, ytr, Xte, yte in problems:
            row = []
            for threshold in ("cv", "learned"):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    search = StructSVMCV(loss="f1", threshold=threshold, **params).fit(Xtr, ytr)
                row.append(f1(yte, search.predict(Xte)))
            rows.append(row)
        _report(name, rows)


def run_mil(splits, datasets):
    from benchmarks.mil import load_splits
    from structfs.datasets import get_data_home
    from structfs.metrics import f1
    from structfs.mil import MILESClassifier

    print("| data | splits | F1, threshold=\"cv\" | F1, threshold=\"learned\" | difference |\n|---|---|---|---|---|")
    for name in datasets:
        rows = []
        for tr, te, ytr, yte in load_splits(get_data_home(None), name, splits):
            row = []
            for threshold in ("cv", "learned"):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    model = MILESClassifier().fit(tr, ytr) if threshold == "cv" else MILESClassifier(
                        estimator=MILESClassifier()._resolve_estimator().set_params(threshold="learned")).fit(tr, ytr)
                row.append(f1(yte, model.decision_function(te)))
            rows.append(row)
        _report(name, rows)


def _mcc(a, b, c, d):
    num = a * d - b * c
    den = np.sqrt((a + b) * (a + c) * (d + b) * (d + c))
    return 100.0 * (1.0 - np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0))


def run_overlap(seeds):
    """Each problem drawn with ``random_state`` 0 .. seeds - 1 (first 2,000 rows for training, the rest
    for test): the mean test measure over the draws, the paired differences ours - LR and ours - the same
    search over the full grid (``halving_factor=None``)."""
    from sklearn.datasets import make_classification
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import TunedThresholdClassifierCV

    print("| problem | draws | measure | StructSVMCV, cut by CV | learned cut | full grid | tuned-threshold LR | "
          "ours − full grid, paired | ours − LR, paired | seconds (ours, full grid, LR) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for label, params in (("make_classification(4000, weights=[0.95])", {}),
                          ("same, n_features=40, class_sep=0.8", {"n_features": 40, "class_sep": 0.8})):
        for measure, loss, scorer in (("MCC", ContingencyLoss(_mcc), matthews_corrcoef),
                                      ("F1", "f1", f1_score)):
            rows = []
            for seed in range(seeds):
                X, y = make_classification(4000, weights=[0.95], random_state=seed, **params)
                Xtr, ytr, Xte, yte = X[:2000], y[:2000], X[2000:], y[2000:]
                fits = []
                for halving in ({}, {"halving_factor": None}):
                    t0 = time.perf_counter()
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        fits.append((StructSVMCV(loss=loss, **halving).fit(Xtr, ytr), time.perf_counter() - t0))
                (search, ours), (full, full_time) = fits
                cv_cut, learned = _both(search, Xte, yte, scorer)
                t0 = time.perf_counter()
                lr = TunedThresholdClassifierCV(LogisticRegression(), scoring=make_scorer(scorer)).fit(Xtr, ytr)
                theirs = time.perf_counter() - t0
                rows.append((cv_cut, learned, scorer(yte, full.predict(Xte)), scorer(yte, lr.predict(Xte)), ours,
                             full_time, theirs))
            r = np.array(rows)
            print(f"| {label} | {seeds} | {measure} | {r[:, 0].mean():.3f} | {r[:, 1].mean():.3f} | "
                  f"{r[:, 2].mean():.3f} | {r[:, 3].mean():.3f} | {_paired(r[:, 0] - r[:, 2], 3)} | "
                  f"{_paired(r[:, 0] - r[:, 3], 3)} | {r[:, 4].sum():.1f}, {r[:, 5].sum():.1f}, {r[:, 6].sum():.1f} |",
                  flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("what", choices=["text", "mil", "overlap"])
    parser.add_argument("--splits", type=int, default=None)
    parser.add_argument("--seeds", type=int, default=1, help="overlap: draws of each problem (random_state 0..)")
    parser.add_argument("--datasets", nargs="+", default=["corel_historical", "musk1", "musk2", "elephant",
                                                          "birds_brown_creeper"])
    args = parser.parse_args()
    if args.what == "text":
        run_text(args.splits or 5)
    elif args.what == "mil":
        run_mil(args.splits or 3, args.datasets)
    else:
        run_overlap(args.seeds)


if __name__ == "__main__":
    main()
