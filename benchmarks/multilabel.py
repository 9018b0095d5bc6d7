"""Many labels: the joint model against one-vs-rest, and one shared budget against per-label budgets.

    python -m benchmarks.multilabel [--problems synthetic r8] [--max-features 100]
    python -m benchmarks.multilabel --one-fit          # R8: one joint fit against eight binary fits

Problems: ``make_multilabel_classification(3000, n_features=1000, n_classes=10, n_labels=2,
allow_unlabeled=False, sparse=True, random_state=0)`` (counts, TF-IDF-scaled rows; 2,000 training
documents), and R8 as one 8-class problem (TF-IDF, its own split; a class vector, one-hot). Models, each
with its settings chosen by its own cross-validation:

* ``MultiLabelStructSVMCV()`` (micro-F1, one structured loss over all decisions) and, with
  ``--max-features B``, ``MultiLabelStructSVMCV(max_features=B)`` and ``MultiLabelStructSVMCV(
  average="macro", max_features=B)`` (B words shared by all labels);
* ``OneVsRestClassifier(StructSVMCV())`` (today's route) and, with B, ``StructSVMCV(max_features=B)`` per
  label (up to L B distinct words);
* ``OneVsRestClassifier(TunedThresholdClassifierCV(LogisticRegression(solver="liblinear"),
  scoring="f1", cv=3))``;
* ``OneVsRestClassifier(GridSearchCV(LinearSVC(penalty="l1", dual=False), {"C": 5 values}, scoring="f1",
  cv=3))``.

Prints micro- and macro-F1 (percent, test split), the number of distinct input features used and the
seconds of each fit, then the joint micro-F1 model's difference in micro-F1 to one-vs-rest
``StructSVMCV()`` with its bootstrap standard error over the test documents (paired: the same
documents). R8 as 8 classes is given to every model as its class vector, and each predicts one class
per document (scikit-learn's one-vs-rest its largest decision value, the joint model its top label):
micro-F1 is then the accuracy. The synthetic labels are an indicator matrix: every label is cut.
"""
import argparse
import time
import warnings

import numpy as np
from sklearn.datasets import make_multilabel_classification
from sklearn.feature_extraction.text import TfidfTransformer, TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import f1_score
from sklearn.model_selection import GridSearchCV, TunedThresholdClassifierCV
from sklearn.multiclass import OneVsRestClassifier
from sklearn.svm import LinearSVC

from structfs import MultiLabelStructSVMCV, StructSVMCV
from structfs.datasets import load_r8


def synthetic():
    X, Y = make_multilabel_classification(3000, n_features=1000, n_classes=10, n_labels=2, allow_unlabeled=False,
                                          sparse=True, random_state=0)
    X = TfidfTransformer(sublinear_tf=True).fit_transform(X)
    return X[:2000], Y[:2000], X[2000:], Y[2000:]


def r8():
    xtr, ytr, xte, yte = load_r8(None)
    vec = TfidfVectorizer(sublinear_tf=True, min_df=2)
    classes = np.unique(ytr)
    one_hot = np.asarray(yte)[:, None] == classes[None, :]
    return vec.fit_transform(xtr), np.asarray(ytr), vec.transform(xte), one_hot.astype(int)


def _features_used(model):
    if hasattr(model, "selected_features_"):              # the joint model
        return len(model.selected_features_)
    coefs = []
    for est in model.estimators_:
        inner = getattr(est, "best_estimator_", None) or est
        coef = inner.coef_ if hasattr(inner, "coef_") else inner.estimator_.coef_
        coefs.append(np.asarray(coef.toarray() if hasattr(coef, "toarray") else coef).ravel())
    return int(np.count_nonzero(np.any(np.array(coefs) != 0, axis=0)))


def models(max_features):
    out = [("joint micro-F1 (MultiLabelStructSVMCV)", MultiLabelStructSVMCV()),
           ("one-vs-rest StructSVMCV()", OneVsRestClassifier(StructSVMCV()))]
    if max_features:
        out += [(f"joint, {max_features} shared words", MultiLabelStructSVMCV(max_features=max_features)),
                (f"joint macro-F1, {max_features} shared words",
                 MultiLabelStructSVMCV(average="macro", max_features=max_features)),
                (f"one-vs-rest StructSVMCV(max_features={max_features})",
                 OneVsRestClassifier(StructSVMCV(max_features=max_features)))]
    out += [("one-vs-rest tuned-threshold LR", OneVsRestClassifier(TunedThresholdClassifierCV(
                LogisticRegression(solver="liblinear"), scoring="f1", cv=3))),
            ("one-vs-rest L1-LinearSVC grid", OneVsRestClassifier(GridSearchCV(
                LinearSVC(penalty="l1", dual=False, random_state=0), {"C": [0.1, 0.3, 1.0, 3.0, 10.0]}, scoring="f1",
                cv=3)))]
    return out


def one_fit(C=1000.0):
    """R8 as 8 classes: ``MultiLabelStructSVM(C=8 C)`` (micro-F1; its loss averages over 8 n decisions) against
    ``StructSVM(C=C)`` for each class against the rest; seconds and cutting planes."""
    from structfs import MultiLabelStructSVM, StructSVM

    Xtr, Ytr, _, _ = r8()
    start = time.perf_counter()
    joint = MultiLabelStructSVM(C=8 * C).fit(Xtr, Ytr)
    seconds = time.perf_counter() - start
    start, planes = time.perf_counter(), []
    for label in np.unique(Ytr):
        planes.append(StructSVM(C=C).fit(Xtr, (Ytr == label).astype(int)).n_iter_)
    binary = time.perf_counter() - start
    print("| model | seconds | cutting planes |\n|---|---|---|")
    print(f"| joint micro-F1, C = {8 * C:g} | {seconds:.1f} | {joint.n_iter_} |")
    print(f"| eight binary F1 fits, C = {C:g} | {binary:.1f} | {sum(planes)} ({', '.join(map(str, planes))}) |")


def _micro_f1_difference(Y, P, Q, draws=2000):
    """(micro-F1 of P - of Q, its bootstrap standard error over the test documents), both in percent: the
    documents resampled with replacement (seeded), the two models' decisions on each draw paired."""
    Y, P, Q = (np.asarray(M, dtype=bool) for M in (Y, P, Q))

    def counts(M):                   # per document: true positives, predicted, actual
        return np.c_[(M & Y).sum(1), M.sum(1), Y.sum(1)].astype(float)

    def f1(c):
        return 200.0 * c[..., 0] / (c[..., 1] + c[..., 2])

    cp, cq = counts(P), counts(Q)
    rng = np.random.default_rng(0)
    draws_idx = rng.integers(0, Y.shape[0], size=(draws, Y.shape[0]))
    diffs = f1(cp[draws_idx].sum(1)) - f1(cq[draws_idx].sum(1))
    return f1(cp.sum(0)) - f1(cq.sum(0)), diffs.std(ddof=1)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--problems", nargs="+", default=["synthetic", "r8"])
    parser.add_argument("--max-features", type=int, default=100)
    parser.add_argument("--only", nargs="+", default=None, help="run only the models whose label contains one of these")
    parser.add_argument("--one-fit", action="store_true", help="R8: one joint fit against eight binary fits, "
                        "at C = 1000 per label, with their numbers of cutting planes")
    args = parser.parse_args()
    if args.one_fit:
        return one_fit()
    print("| problem | model | micro-F1 | macro-F1 | distinct features | seconds |\n|---|---|---|---|---|---|")
    paired = []
    for name in args.problems:
        Xtr, Ytr, Xte, Yte = {"synthetic": synthetic, "r8": r8}[name]()
        predictions = {}
        for label, model in models(args.max_features):
            if args.only and not any(part in label for part in args.only):
                continue
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model.fit(Xtr, Ytr)
            seconds = time.perf_counter() - start
            P = np.asarray(model.predict(Xte))
            if P.ndim == 1:                     # a class per document: its one-hot row
                P = (P[:, None] == np.unique(Ytr)[None, :]).astype(int)
            predictions[label] = P
            print(f"| {name} | {label} | {100 * f1_score(Yte, P, average='micro'):.2f} | "
                  f"{100 * f1_score(Yte, P, average='macro', zero_division=0):.2f} | {_features_used(model)} | "
                  f"{seconds:.1f} |", flush=True)
        joint, ovr = (next((P for label, P in predictions.items() if label.startswith(start)), None)
                      for start in ("joint micro-F1", "one-vs-rest StructSVMCV()"))
        if joint is not None and ovr is not None:
            paired.append((name, *_micro_f1_difference(Yte, joint, ovr)))
    for name, difference, se in paired:
        print(f"{name}: micro-F1, joint - one-vs-rest StructSVMCV(): {difference:+.2f} (bootstrap SE over the test "
              f"documents {se:.2f})")


if __name__ == "__main__":
    main()
