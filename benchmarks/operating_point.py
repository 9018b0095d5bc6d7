"""Precision at recall >= r: structfs's operating-point loss against what a user runs today.

    python -m benchmarks.operating_point [--recall 0.9] [--splits 5]

On R8's eight topics (one-vs-rest, TF-IDF) and SMS spam (stratified 70/30 splits), three models cut at
recall >= r, each scored by its test precision and test recall at that cut:

* ``StructSVMCV(loss="prec@rec", loss_params={"recall": r})`` (its cut: the best admissible operating
  point of the chosen candidate's out-of-fold scores);
* ``TunedThresholdClassifierCV(LogisticRegressionCV(Cs=6, cv=3, class_weight="balanced",
  solver="liblinear"), scoring=<precision if recall >= r else 0>, cv=3)``: the threshold that gives the
  best out-of-fold precision among those that keep recall >= r;
* ``StructSVMCV(loss="f1")`` with its cut moved to the best admissible operating point of the
  out-of-fold scores of its chosen model (3 folds; those fits are not timed).

Prints one row per problem set (means over problems), the paired difference of test precision
prec@rec - tuned LR with its standard error, and the seconds of each.
"""
import argparse
import warnings

import numpy as np
from sklearn.base import clone
from sklearn.linear_model import LogisticRegressionCV
from sklearn.metrics import make_scorer, precision_score, recall_score
from sklearn.model_selection import TunedThresholdClassifierCV, cross_val_predict

from benchmarks.halving import _r8_topics, _sms_problems, _timed
from structfs import StructSVMCV
from structfs.losses import get_loss


def _precision_if_recall(recall):
    def score(y, predicted):
        if recall_score(y, predicted, zero_division=0) < recall:
            return 0.0
        return precision_score(y, predicted, zero_division=0)
    return make_scorer(score)


def _test_point(y, predicted):
    return (100 * precision_score(y, predicted, zero_division=0), 100 * recall_score(y, predicted, zero_division=0))


def run(problems, recall):
    rows = []
    loss = get_loss("prec@rec", recall=recall)
    for Xtr, ytr, Xte, yte in problems:
        row = []
        model, seconds = _timed(StructSVMCV(loss="prec@rec", loss_params={"recall": recall}), Xtr, ytr)
        row += [*_test_point(yte, model.predict(Xte)), seconds]
        lr = TunedThresholdClassifierCV(LogisticRegressionCV(Cs=6, cv=3, class_weight="balanced", solver="liblinear"),
                                        scoring=_precision_if_recall(recall), cv=3)
        lr, seconds = _timed(lr, Xtr, ytr)
        row += [*_test_point(yte, lr.predict(Xte)), seconds]
        f1, seconds = _timed(StructSVMCV(loss="f1"), Xtr, ytr)
        y_pm = np.where(ytr == 1, 1.0, -1.0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out_of_fold = cross_val_predict(clone(f1.estimator_), Xtr, ytr, cv=3, method="decision_function")
        cut = loss.best_cut(y_pm, out_of_fold)
        row += [*_test_point(yte, (f1.decision_function(Xte) > cut).astype(int)), seconds]
        rows.append(row)
    return np.array(rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--recall", type=float, default=0.9)
    parser.add_argument("--splits", type=int, default=5)
    args = parser.parse_args()
    print(f"| problems | n | prec@rec: precision / recall / s | tuned LR: precision / recall / s | "
          f"F1 model cut at recall {args.recall:g}: precision / recall / s | precision, prec@rec - LR |")
    print("|---|---|---|---|---|---|")
    for name, problems in (("R8 topics", _r8_topics()), ("SMS spam", _sms_problems(args.splits))):
        rows = run(problems, args.recall)
        mean = rows.mean(axis=0)
        d = rows[:, 0] - rows[:, 3]
        cells = [f"{mean[i]:.1f} / {mean[i + 1]:.1f} / {mean[i + 2]:.1f}" for i in (0, 3, 6)]
        se = d.std(ddof=1) / np.sqrt(len(d))
        print(f"| {name} | {len(rows)} | {' | '.join(cells)} | {d.mean():+.2f} ± {se:.2f} |", flush=True)
        for r in rows:
            print("  per problem: " + ", ".join(f"{v:.1f}" for v in r), flush=True)


if __name__ == "__main__":
    main()
