"""Would a decision threshold chosen on the inner folds help the defaults?  (issue 10, eleventh session)

    python benchmarks/experiments/threshold_cv.py r8
    python benchmarks/experiments/threshold_cv.py sms --splits 5
    python benchmarks/experiments/threshold_cv.py mil --splits 10 [--datasets musk1 ...]

The F1 model's threshold is learned on its training data, where the margin is optimistic; on new data
the positives' scores fall and recall drops. The selection already scores every path point on each
fold's validation part, so the F1-best threshold of the chosen candidate on each validation fold costs
a sort. This script fits the estimator at its defaults while recording, for every fold path, the
validation decision values of each point (by wrapping ``fold_path``; the library is not changed), then
reports the test F1 of the refitted model as it is and with its decision values shifted by the mean
(or median) of the chosen candidate's per-fold best thresholds. Paired over problems: mean ± SE.
"""
import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.model_selection import StratifiedShuffleSplit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from mil import DATASETS, load_splits  # noqa: E402
from selection import _paired  # noqa: E402

import structfs.model_selection as ms  # noqa: E402
from structfs import StructSVMCV  # noqa: E402
from structfs.datasets import get_data_home, load_r8, load_sms_spam  # noqa: E402
from structfs.metrics import f1  # noqa: E402
from structfs.mil import MILESClassifier  # noqa: E402

RECORD = []          # one entry per fold_path call, in the (sequential) order of the search
_fold_path = ms.fold_path


def recording_fold_path(X, y, classes, train, test, loss, C, budget, scorer, *args, **kwargs):
    values = []

    def recording_scorer(est, X_te, y_te):
        values.append(est.decision_function(X_te))
        return scorer(est, X_te, y_te)

    out = _fold_path(X, y, classes, train, test, loss, C, budget, recording_scorer, *args, **kwargs)
    RECORD.append((np.where(y[test] == classes[1], 1, -1), values))
    return out


ms.fold_path = recording_fold_path


def best_threshold(y, s):
    """The threshold t maximising F1 of sign(s - t) on (y, s); among equal F1, the t nearest 0."""
    order = np.argsort(-s, kind="stable")
    s_sorted, pos = s[order], (y[order] > 0)
    P = pos.sum()
    tp = np.cumsum(pos)
    k = np.arange(1, s.shape[0] + 1)
    f = 2.0 * tp / (k + P)
    # cuts only between distinct scores: after position k-1 where s_sorted[k-1] > s_sorted[k]
    valid = np.append(s_sorted[:-1] > s_sorted[1:], True)
    nxt = np.append(s_sorted[1:], s_sorted[-1] - 1.0)
    t = (s_sorted + nxt) / 2.0
    f = np.where(valid, f, -1.0)
    best = f.max()
    cand = np.flatnonzero(f >= best - 1e-12)
    return float(t[cand[np.argmin(np.abs(t[cand]))]])


def chosen_thresholds(est, record, n_folds=3, n_sigmas=1, sigma_index=0):
    """Per-fold best thresholds of the chosen candidate, from the records of the search (for MIL,
    ``n_sigmas`` searches in a row; the chosen sigma's is ``sigma_index``)."""
    n_cells = len(record) // (n_folds * n_sigmas)          # fold_path calls per (sigma, fold)
    r = est.cv_results_
    budgets = list(dict.fromkeys(r["param_budget"]))
    Cs = list(dict.fromkeys(r["param_C"]))
    cell = Cs.index(est.C_) * len(budgets) + budgets.index(est.budget_)
    k = 0 if est.n_groups_ is None else est.n_groups_ - 1
    out = []
    for f in range(n_folds):
        y_val, values = record[sigma_index * n_folds * n_cells + f * n_cells + cell]
        s = values[min(k, len(values) - 1)]
        out.append(best_threshold(y_val, s))
    return np.array(out)


def evaluate(scores_te, y_te, thresholds):
    base = f1(y_te, scores_te)
    return base, f1(y_te, scores_te - thresholds.mean()), f1(y_te, scores_te - np.median(thresholds))


def text_problem(Xtr, ytr, Xte, yte, **params):
    RECORD.clear()
    cv = StructSVMCV(loss="f1", **params).fit(Xtr, ytr)
    th = chosen_thresholds(cv, RECORD)
    return evaluate(cv.decision_function(Xte), yte, th), th, (cv.C_, cv.budget_, cv.n_groups_)


def report(name, rows):
    rows = np.array(rows)
    print(f"| {name} | {rows[:, 0].mean():.2f} | {rows[:, 1].mean():.2f} | {rows[:, 2].mean():.2f} | "
          f"{_paired(rows[:, 1] - rows[:, 0])} | {_paired(rows[:, 2] - rows[:, 0])} |", flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("what", choices=["r8", "sms", "mil"])
    p.add_argument("--splits", type=int, default=10)
    p.add_argument("--datasets", nargs="+", default=DATASETS)
    p.add_argument("--ngrams", type=int, default=1)
    args = p.parse_args()
    warnings.simplefilter("ignore", ConvergenceWarning)
    head = "| problem | F1 as fitted | F1, mean threshold | F1, median threshold | mean − fitted | median − fitted |"
    if args.what == "r8":
        xtr, ytr, xte, yte = load_r8()
        vec = TfidfVectorizer(sublinear_tf=True, min_df=2, ngram_range=(1, args.ngrams))
        Xtr, Xte = vec.fit_transform(xtr), vec.transform(xte)
        rows = []
        for topic in sorted(set(ytr)):
            res, th, choice = text_problem(Xtr, (ytr == topic).astype(int), Xte, (yte == topic).astype(int),
                                           max_features=100)
            rows.append(res)
            print(f"  {topic}: {res[0]:.2f} -> {res[1]:.2f} / {res[2]:.2f}; thresholds {np.round(th, 3)}; {choice}",
                  flush=True)
        print(head + "\n|---|---|---|---|---|---|")
        report("R8 (8 topics)", rows)
    elif args.what == "sms":
        texts, labels = load_sms_spam()
        texts = np.asarray(texts, dtype=object)
        y = (np.asarray(labels) == "spam").astype(int)
        rows = []
        for i, (tr, te) in enumerate(StratifiedShuffleSplit(n_splits=args.splits, test_size=0.3,
                                                            random_state=0).split(texts, y)):
            vec = TfidfVectorizer(sublinear_tf=True, min_df=2)
            res, th, choice = text_problem(vec.fit_transform(texts[tr]), y[tr], vec.transform(texts[te]), y[te])
            rows.append(res)
            print(f"  split {i}: {res[0]:.2f} -> {res[1]:.2f} / {res[2]:.2f}; thresholds {np.round(th, 3)}; "
                  f"{choice}", flush=True)
        print(head + "\n|---|---|---|---|---|---|")
        report(f"SMS ({args.splits} splits)", rows)
    else:
        data = get_data_home(None)
        table = []
        for name in args.datasets:
            rows = []
            for i, (tr, te, y_tr, y_te) in enumerate(load_splits(data, name, args.splits)):
                RECORD.clear()
                clf = MILESClassifier().fit(tr, y_tr)
                est = clf.estimator_
                sigmas = list(dict.fromkeys(est.cv_results_["param_sigma"]))
                th = chosen_thresholds(est, RECORD, n_sigmas=len(sigmas),
                                       sigma_index=sigmas.index(clf.embedding_.sigma_))
                res = evaluate(clf.decision_function(te), y_te, th)
                rows.append(res)
                print(f"  {name} {i}: {res[0]:.2f} -> {res[1]:.2f} / {res[2]:.2f}; thresholds {np.round(th, 3)}",
                      flush=True)
            table.append((name, rows))
        print(head + "\n|---|---|---|---|---|---|")
        for name, rows in table:
            report(f"{name} ({args.splits} splits)", rows)


if __name__ == "__main__":
    main()
