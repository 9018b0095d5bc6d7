"""Model selection at the defaults against baselines that choose their C by the same cross-validation.

    python -m benchmarks.cv r8  [--data DIR] [--loss prbep]     # 8 one-vs-rest topics, fixed split
    python -m benchmarks.cv sms [--splits 20] [--loss prbep]    # seeded stratified 70/30 splits
    python -m benchmarks.cv mil [--splits 20] [--datasets musk1 ...]   # a name, or the path of a MIL CSV

Text: TF-IDF (sublinear_tf, min_df=2) fitted on the training texts. (a) ``StructSVMCV(loss="f1")`` at its
defaults (R8: ``max_features=100``, or ``--max-features 0`` for none); (b)
``LinearSVC(class_weight="balanced")`` and
(c) L1-``LinearSVC`` (balanced), each with C from {0.01, 0.1, 1, 10, 100} by 3-fold stratified CV on F1.
``--loss L``: (a) is ``StructSVMCV(loss=L)``, and every method is cross-validated and tested on L's own
measure (what ``StructSVMCV``'s default scoring is) instead of F1.
MIL: (a) ``MILESClassifier()`` at its defaults (``--max-instances K``: ``MILESClassifier(max_instances=K)``);
(b) MILES + L1-SVM: the default embedding,
L1-``LinearSVC`` (balanced) with C from {0.1, 1, 10} by 3-fold CV (benchmarks/mil.py's baseline); ``--loss L``:
(a) is ``MILESClassifier(loss=L)`` and (b)'s C and both tests use L's measure.
F1 in percent on the test part; features/instances with a nonzero weight; fit seconds (vectorising and
embedding included for MIL). Over several splits: mean (std) and the paired difference (a) - (x) with
its standard error.
"""
import argparse
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.model_selection import GridSearchCV, StratifiedShuffleSplit
from sklearn.svm import LinearSVC

from benchmarks.mil import DATASETS, load_splits, miles_baseline, paired, set_name
from structfs import StructSVM, StructSVMCV
from structfs.datasets import get_data_home, load_r8, load_sms_spam
from structfs.losses import get_loss
from structfs.mil import MILESClassifier, MILESEmbedding
from structfs.model_selection import check_scoring

LINEAR_CS = {"C": [0.01, 0.1, 1.0, 10.0, 100.0]}


def in_percent(loss):
    """StructSVMCV's default scorer for ``loss`` (its own measure on scikit-learn's 0-1 scale), in percent
    as the tables print it."""
    scorer = check_scoring(None, get_loss(loss))
    return lambda estimator, X, y: 100.0 * scorer(estimator, X, y)


def linear_baselines(Xtr, ytr, scoring="f1"):
    """(b) LinearSVC and (c) L1-LinearSVC, balanced, C by 3-fold CV on ``scoring`` (F1):
    {name: (estimator, seconds)}."""
    out = {}
    for name, svc in (("LinearSVC", LinearSVC(class_weight="balanced")),
                      ("L1-LinearSVC", LinearSVC(penalty="l1", dual=False, class_weight="balanced", random_state=0))):
        t0 = time.perf_counter()
        est = GridSearchCV(svc, LINEAR_CS, scoring=scoring, cv=3).fit(Xtr, ytr).best_estimator_
        out[name] = (est, time.perf_counter() - t0)
    return out


def text_split(Xtr, ytr, Xte, yte, loss="f1", **cv_params):
    """One binary text problem: {method: (test measure, features, seconds)}, the CV estimator's choice
    and the mean seconds of one fold's fit (path and refits) per C of its grid. The measure is the
    loss's own (F1 for "f1"), for the CV of every method and on the test part."""
    measure = in_percent(loss)                            # StructSVMCV's default scoring for this loss
    t0 = time.perf_counter()
    cv = StructSVMCV(loss=loss, **cv_params).fit(Xtr, ytr)
    rows = {"StructSVMCV": (measure(cv, Xte, yte), len(cv.selected_features_), time.perf_counter() - t0)}
    for name, (est, seconds) in linear_baselines(Xtr, ytr, measure).items():
        rows[name] = (measure(est, Xte, yte), int(np.count_nonzero(est.coef_)), seconds)
    r = cv.cv_results_
    cell_seconds = {C: float(r["mean_fit_time"][r["param_C"] == C].max()) for C in np.unique(r["param_C"])}
    return rows, (cv.C_, cv.budget_, cv.n_groups_), cell_seconds


def summary(results, methods):
    print("| method | test measure | features | seconds | (a) − method, paired |")
    print("|---|---|---|---|---|")
    a = [r["StructSVMCV"][0] for r in results]
    for m in methods:
        f = [r[m][0] for r in results]
        print(f"| {m} | {np.mean(f):.2f} ({np.std(f):.2f}) | {np.mean([r[m][1] for r in results]):.1f} | "
              f"{np.mean([r[m][2] for r in results]):.1f} | {paired(a, f) if m != 'StructSVMCV' else ''} |")


def run_r8(args):
    xtr, ytr, xte, yte = load_r8(args.data)
    vec = TfidfVectorizer(sublinear_tf=True, min_df=2, ngram_range=(1, args.ngrams))
    Xtr, Xte = vec.fit_transform(xtr), vec.transform(xte)
    print(f"{Xtr.shape[1]} features (word {args.ngrams}-grams); loss {args.loss!r}, scored by its own measure\n")
    StructSVM(C=1.0, budget=5).fit(Xtr[:300], (ytr[:300] == "earn").astype(int))     # load numba kernels
    one_fit = {}
    for topic in sorted(set(ytr)):
        t0 = time.perf_counter()
        StructSVM(budget=5).fit(Xtr, (ytr == topic).astype(int))
        one_fit[topic] = time.perf_counter() - t0
    reference = sum(one_fit.values())
    print(f"One default StructSVM(budget=5) fit of the 8 topics: {reference:.1f} s\n")
    print("| topic | StructSVMCV | features | C, B, groups | s | LinearSVC | features | L1-LinearSVC | features |")
    print("|---|---|---|---|---|---|---|---|---|")
    results, cells = [], {}
    for topic in sorted(set(ytr)):
        rows, choice, cells[topic] = text_split(Xtr, (ytr == topic).astype(int), Xte, (yte == topic).astype(int),
                                                loss=args.loss, max_features=args.max_features or None,
                                                n_jobs=args.jobs,
                                                budgets=args.budgets)
        results.append(rows)
        a, b, c = rows["StructSVMCV"], rows["LinearSVC"], rows["L1-LinearSVC"]
        print(f"| {topic} | {a[0]:.2f} | {a[1]} | {choice[0]:.0f}, {choice[1]}, {choice[2]} | {a[2]:.1f} | "
              f"{b[0]:.2f} | {b[1]} | {c[0]:.2f} | {c[1]} |", flush=True)
    total = sum(r["StructSVMCV"][2] for r in results)
    print(f"\nmacro over topics (std across topics); StructSVMCV total {total:.1f} s = {total / reference:.1f}x "
          "the default fit\n")
    summary(results, ["StructSVMCV", "LinearSVC", "L1-LinearSVC"])
    # where the time goes: every (fold, C) cell is one path fit with its refits
    Cs = sorted(next(iter(cells.values())))
    print("\n| topic | default fit s | " + " | ".join(f"fold fit s, C = {C:.0f}" for C in Cs) + " |")
    print("|---|---|" + "---|" * len(Cs))
    for topic, per_C in cells.items():
        print(f"| {topic} | {one_fit[topic]:.2f} | " + " | ".join(f"{per_C[C]:.2f}" for C in Cs) + " |")


def run_sms(args):
    texts, labels = load_sms_spam(args.data)
    texts = np.asarray(texts, dtype=object)
    y = (np.asarray(labels) == "spam").astype(int)
    splitter = StratifiedShuffleSplit(n_splits=args.splits, test_size=0.3, random_state=0)
    results = []
    print(f"loss {args.loss!r}, scored by its own measure\n")
    print("| split | StructSVMCV | features | C, B, groups | LinearSVC | L1-LinearSVC |")
    print("|---|---|---|---|---|---|")
    for i, (tr, te) in enumerate(splitter.split(texts, y)):
        vec = TfidfVectorizer(sublinear_tf=True, min_df=2)
        Xtr, Xte = vec.fit_transform(texts[tr]), vec.transform(texts[te])
        rows, choice, _ = text_split(Xtr, y[tr], Xte, y[te], loss=args.loss, n_jobs=args.jobs,
                                     max_features=args.sms_max_features, budgets=args.budgets)
        results.append(rows)
        print(f"| {i} | {rows['StructSVMCV'][0]:.2f} | {rows['StructSVMCV'][1]} | {choice[0]:.0f}, {choice[1]}, "
              f"{choice[2]} | {rows['LinearSVC'][0]:.2f} | {rows['L1-LinearSVC'][0]:.2f} |", flush=True)
    print()
    summary(results, ["StructSVMCV", "LinearSVC", "L1-LinearSVC"])


def run_mil(args):
    data = get_data_home(args.data)
    measure = in_percent(args.loss)                        # F1 by default; --loss L: L's own measure
    name_of = {"f1": "F1", "error": "accuracy"}.get(args.loss, args.loss)      # the measure's name
    if args.loss != "f1":
        print(f"loss {args.loss!r}: (a) MILESClassifier(loss={args.loss!r}), (b)'s C by CV on its measure; "
              "both tested on it\n")
    print(f"| data set | (a) {name_of} | (a) #inst | (a) s | (b) {name_of} | (b) #inst | (b) s | (a) − (b) "
          "| (a) #inst − (b) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in args.datasets:
        res = {k: {"f1": [], "n": [], "s": []} for k in "ab"}
        for tr, te, y_tr, y_te in load_splits(data, name, args.splits):
            t0 = time.perf_counter()
            emb = MILESEmbedding().fit(tr)
            l1 = miles_baseline(emb.transform(tr), y_tr, measure)
            res["b"]["s"].append(time.perf_counter() - t0)
            res["b"]["f1"].append(measure(l1, emb.transform(te), y_te))
            res["b"]["n"].append(np.count_nonzero(l1.best_estimator_.coef_))
            t0 = time.perf_counter()
            clf = MILESClassifier(loss=args.loss, max_instances=args.max_instances).fit(tr, y_tr)
            res["a"]["s"].append(time.perf_counter() - t0)
            res["a"]["f1"].append(measure(clf, te, y_te))
            res["a"]["n"].append(len(clf.selected_instances_))
            if args.verbose:
                e = clf.estimator_
                print(f"  {set_name(name)}: (a) {res['a']['f1'][-1]:.1f} with {res['a']['n'][-1]} "
                      f"(C {e.C_:.0f}, B {e.budget_}, "
                      f"groups {e.n_groups_}, sigma {clf.embedding_.sigma_:.2f}); (b) {res['b']['f1'][-1]:.1f} "
                      f"with {res['b']['n'][-1]}", flush=True)
        cells = [f"{np.mean(res[k][m]):.1f} ({np.std(res[k][m]):.1f})" for k in "ab" for m in ("f1", "n", "s")]
        cells += [paired(res["a"]["f1"], res["b"]["f1"]), paired(res["a"]["n"], res["b"]["n"])]
        print(f"| {set_name(name)} | " + " | ".join(cells) + " |", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["r8", "sms", "mil"])
    parser.add_argument("--data", default=None, help="data directory (default: $STRUCTFS_DATA)")
    parser.add_argument("--splits", type=int, default=20)
    parser.add_argument("--datasets", nargs="+", default=DATASETS)
    parser.add_argument("--loss", default="f1",
                        help="StructSVMCV's (mil: MILESClassifier's) loss; every method is cross-validated and tested "
                             "on its measure")
    parser.add_argument("--jobs", type=int, default=None, help="StructSVMCV(n_jobs=...) (default: its default)")
    parser.add_argument("--ngrams", type=int, default=1,
                        help="r8: word n-grams up to this length (2: 62,156 features, 5.8x the default's, like the "
                             "issue's held-out text set; nothing is tuned on it)")
    parser.add_argument("--max-features", type=int, default=100,
                        help="r8: StructSVMCV's max_features (default 100, the issue's setting; 0: None, the "
                             "estimator's default, whose grid then also holds the unbudgeted problem)")
    parser.add_argument("--sms-max-features", type=int, default=None,
                        help="sms: StructSVMCV's max_features (default None, the estimator's default)")
    parser.add_argument("--budgets", type=lambda v: None if v == "none" else int(v), nargs="+", default=None,
                        help="r8, sms: StructSVMCV's budgets ('none': no budget) instead of its default grid")
    parser.add_argument("--max-instances", type=int, default=None,
                        help="mil: (a) is MILESClassifier(max_instances=K), the hard cap outside checks also call")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        {"r8": run_r8, "sms": run_sms, "mil": run_mil}[args.what](args)


if __name__ == "__main__":
    main()
