"""The bias feature's value beside StructSVMCV's scaled grid: the rows' RMS norm (shipped) or 1.

    python benchmarks/experiments/bias_scale.py dense 5 digits3 digits8 cancer-raw ...
    python benchmarks/experiments/bias_scale.py mil 10 musk1 musk2 elephant birds_brown_creeper
    python benchmarks/experiments/bias_scale.py sms-binary 5 sms
    python benchmarks/experiments/bias_scale.py mil-scaled-grid 10 musk1 elephant

``dense``: scikit-learn's problems of benchmarks/scale_c.py (``name*a`` multiplies X by a), the same
seeded 70/30 splits; (a) ``StructSVMCV(loss="f1")`` as shipped (constant feature bias * sqrt(s), s the
rows' mean squared norm) against (b) the same with the constant 1 (the library before the seventeenth
session). ``mil``: benchmarks/mil.py's splits; (a) ``MILESClassifier()`` as shipped (per-example grid,
constant 1) against (b) the same estimator with the constant at the embedding's RMS norm.
``mil-scaled-grid``: a user's ``MILESClassifier(estimator=StructSVMCV(budgets=[5]))`` (scale_C left True:
the grid divided by the embedding's mean squared norm), (a) as shipped against (b) the constant 1.
``sms-binary``: SMS spam as binary word counts (``CountVectorizer(min_df=2, binary=True)``: rows of norm
sqrt(#distinct words), not TF-IDF's 1), benchmarks/cv.py's sms splits, (a) and (b) as ``dense``. Test F1,
paired difference (a) - (b) with its standard error, features, fit seconds.

The variants are scratch subclasses: (b) of ``dense`` replaces ``data_bias`` while it searches and
refits (in this process: no n_jobs).
"""
import contextlib
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.metrics import f1_score
from sklearn.model_selection import StratifiedShuffleSplit, train_test_split

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))        # benchmarks/
from mil import load_splits, set_name  # noqa: E402
from scale_c import problems  # noqa: E402

import structfs.model_selection as model_selection  # noqa: E402
from structfs import StructSVMCV  # noqa: E402
from structfs.datasets import get_data_home, load_sms_spam  # noqa: E402
from structfs.mil import MIL_BUDGETS, MILESClassifier  # noqa: E402


class _BiasVariantCV(StructSVMCV):
    """StructSVMCV whose search and refit run inside ``self._variant(X)`` (a context manager)."""
    def search(self, X, *args, **kwargs):
        with self._variant(X):
            return super().search(X, *args, **kwargs)

    def refit_best(self, X, *args, **kwargs):
        with self._variant(X):
            return super().refit_best(X, *args, **kwargs)


class ConstantBiasCV(_BiasVariantCV):
    """The library before: the constant feature stays ``bias`` whatever the rows' norm."""
    @contextlib.contextmanager
    def _variant(self, X):
        shipped = model_selection.data_bias
        model_selection.data_bias = lambda bias, norms: bias
        try:
            yield
        finally:
            model_selection.data_bias = shipped


class EmbeddingScaledBiasCV(_BiasVariantCV):
    """The constant at the RMS norm of the data it is given (all columns), with any grid."""
    @contextlib.contextmanager
    def _variant(self, X):
        unscaled = self.bias
        self.bias = model_selection.data_bias(unscaled, model_selection.squared_norms(X))
        try:
            yield
        finally:
            self.bias = unscaled


def timed(fit):
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = fit()
    return model, time.perf_counter() - t0


def dense_runs(name, splits):
    base, _, factor = name.partition("*")
    X, y = problems()[base]()
    X = X * float(factor or 1.0)
    for seed in range(splits):
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, stratify=y, random_state=seed)
        row = []
        for make in (StructSVMCV, ConstantBiasCV):
            model, seconds = timed(lambda: make(loss="f1").fit(Xtr, ytr))
            row.append((100 * f1_score(yte, model.predict(Xte)), len(model.selected_features_), seconds))
        yield row


def sms_binary_runs(name, splits):
    texts, labels = load_sms_spam(get_data_home(None))
    texts, y = np.asarray(texts, dtype=object), (np.asarray(labels) == "spam").astype(int)
    for train, test in StratifiedShuffleSplit(n_splits=splits, test_size=0.3, random_state=0).split(texts, y):
        vectorizer = CountVectorizer(min_df=2, binary=True)
        Xtr, Xte = vectorizer.fit_transform(texts[train]), vectorizer.transform(texts[test])
        row = []
        for make in (StructSVMCV, ConstantBiasCV):
            model, seconds = timed(lambda: make(loss="f1").fit(Xtr, y[train]))
            row.append((100 * f1_score(y[test], model.predict(Xte)), len(model.selected_features_), seconds))
        yield row


def mil_runs(name, splits, estimators=None):
    estimators = estimators or (lambda: None, lambda: EmbeddingScaledBiasCV(budgets=list(MIL_BUDGETS), scale_C=False))
    for tr, te, ytr, yte in load_splits(get_data_home(None), name, splits):
        row = []
        for estimator in (make() for make in estimators):
            model, seconds = timed(lambda: MILESClassifier(estimator=estimator).fit(tr, ytr))
            row.append((100 * f1_score(yte, model.predict(te), pos_label=model.classes_[1]),
                        len(model.selected_instances_), seconds))
        yield row


def mil_scaled_grid_runs(name, splits):
    return mil_runs(name, splits, (lambda: StructSVMCV(budgets=list(MIL_BUDGETS)),
                                   lambda: ConstantBiasCV(budgets=list(MIL_BUDGETS))))


def main():
    mode, splits, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    runs = {"dense": dense_runs, "mil": mil_runs, "mil-scaled-grid": mil_scaled_grid_runs,
            "sms-binary": sms_binary_runs}[mode]
    print("| problem | (a) F1 | (b) F1 | (a) − (b) | features (a) / (b) | s (a) / (b) |")
    print("|---|---|---|---|---|---|")
    for name in names:
        rows = np.array(list(runs(name, splits)))          # split x variant x (F1, features, seconds)
        diff = rows[:, 0, 0] - rows[:, 1, 0]
        se = diff.std(ddof=1) / np.sqrt(len(diff))
        mean = rows.mean(axis=0)
        print(f"| {set_name(name)} | {mean[0, 0]:.2f} | {mean[1, 0]:.2f} | {diff.mean():+.2f} ± {se:.2f} | "
              f"{mean[0, 1]:.1f} / {mean[1, 1]:.1f} | {mean[0, 2]:.1f} / {mean[1, 2]:.1f} |", flush=True)


if __name__ == "__main__":
    main()
