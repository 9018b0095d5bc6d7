"""Second-order feature selection (``interactions=True``): planted pairs, digits, and scale.

    python -m benchmarks.interactions planted [--splits 3]     # (a) m = 10^4 sparse binary features
    python -m benchmarks.interactions digits [--splits 10]     # (b) 3 vs 8 and 4 vs 9
    python -m benchmarks.interactions scale [--rows 1000000] [--noise 0.05]   # (c) 10^6 x 10^6, 30 a row

(a) Rows of 20 random words out of m = 10,000 (5e7 candidate pairs), plus 10 planted words each
present in 30% of the rows; the label is positive where one of 5 planted pairs is present (38%
positives), 2% of labels flipped. 4,000 training and 4,000 test rows per seed. ``StructSVMCV`` at its
defaults, linear and with ``interactions=True``; ``PolynomialFeatures(interaction_only=True)`` (all 5e7
products, sparse; the columns that occur in training kept) + L1-LinearSVC with C from 5 values by 3-fold
CV on F1. Test F1 in percent, how
many planted pairs the model holds, features (words + pairs), seconds.

(b) scikit-learn's digits (pixels / 16), seeded stratified 50/50 splits: ``StructSVMCV(loss="f1",
interactions=True, max_features=50)`` against the linear ``StructSVMCV(loss="f1", max_features=50)``
at the same count, and against linear models on all 64 pixels (``StructSVMCV(budgets=[None])`` and
LinearSVC with C by the same CV). Test error and F1 in percent (± standard error over the splits;
an error of 1% is about 2 of the ~180 test images), and the paired difference of the test error
against the linear StructSVMCV on all 64 pixels.

(c) 10^6 rows x 10^6 features, 30 random features a row (about 4.5e8 pair occurrences, 5e11
candidate pairs), the label given by 3 planted pairs of frequent features, a fraction ``--noise`` of the
labels flipped (without noise the fit certifies its optimum after 3 groups; with it, it generates all
10); ``StructSVM(loss="f1", budget=10, interactions=True, max_outer=10)``: seconds, peak resident
memory, pairs found.
"""
import argparse
import resource
import time
import warnings

import numpy as np
import scipy.sparse as sp

from structfs import StructSVM, StructSVMCV
from structfs.metrics import f1


def planted_words(n, m=10_000, n_pairs=5, words=20, frequency=0.3, noise=0.02, seed=0):
    """(X, y, pairs): binary rows of ``words`` random words plus planted ones; y = 1 where a planted pair is on."""
    rng = np.random.default_rng(seed)
    background = sp.csr_matrix((np.ones(n * words), (np.repeat(np.arange(n), words), rng.integers(0, m, n * words))),
                               shape=(n, m))
    pairs = rng.choice(m, 2 * n_pairs, replace=False).reshape(n_pairs, 2)
    rows, which = np.nonzero(rng.random((n, 2 * n_pairs)) < frequency)
    planted = sp.csr_matrix((np.ones(rows.size), (rows, pairs.ravel()[which])), shape=(n, m))
    X = ((background + planted) > 0).astype(np.float64).tocsr()
    X.sort_indices()
    on = np.zeros(n, dtype=bool)
    for j, k in pairs:
        on |= X[:, j].multiply(X[:, k]).toarray().ravel() > 0
    y = on.astype(int)
    flip = rng.random(n) < noise
    y[flip] = 1 - y[flip]
    return X, y, np.sort(pairs, axis=1)


def _f1(y, scores):
    return f1(np.where(y > 0, 1, -1), scores)


def _found(model, pairs):
    held = {tuple(p) for p in getattr(model, "interactions_", np.zeros((0, 2), int)).tolist()}
    return sum(tuple(p) in held for p in pairs.tolist())


def _n_features(model):
    return len(model.selected_features_) + len(getattr(model, "interaction_coef_", ()))


def run_planted(splits):
    from sklearn.model_selection import GridSearchCV
    from sklearn.preprocessing import PolynomialFeatures
    from sklearn.svm import LinearSVC

    rows = {}
    for seed in range(splits):
        X, y, pairs = planted_words(8000, seed=seed)
        Xtr, ytr, Xte, yte = X[:4000], y[:4000], X[4000:], y[4000:]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for name, est in (("StructSVMCV, linear", StructSVMCV()),
                              ("StructSVMCV, interactions=True", StructSVMCV(interactions=True))):
                t0 = time.perf_counter()
                est.fit(Xtr, ytr)
                seconds = time.perf_counter() - t0
                rows.setdefault(name, []).append((_f1(yte, est.decision_function(Xte)), _found(est, pairs),
                                                  _n_features(est), seconds))
            t0 = time.perf_counter()
            poly = PolynomialFeatures(degree=2, interaction_only=True, include_bias=False)
            Ptr, Pte = poly.fit_transform(Xtr), poly.transform(Xte)
            # liblinear's coordinate descent visits every one of the 5e7 columns each pass (20+ minutes
            # a fit): keep the columns that occur in training (about 7e5)
            occurring = np.flatnonzero(Ptr.getnnz(axis=0))
            Ptr, Pte = Ptr[:, occurring], Pte[:, occurring]
            grid = GridSearchCV(LinearSVC(penalty="l1", dual=False, class_weight="balanced"),
                                {"C": [0.01, 0.1, 1.0, 10.0, 100.0]}, scoring="f1", cv=3).fit(Ptr, ytr)
            seconds = time.perf_counter() - t0
            w = grid.best_estimator_.coef_.ravel()
            nonzero = np.flatnonzero(w)
            held = _poly_pairs(occurring[nonzero], X.shape[1])
            found = sum(tuple(p) in held for p in pairs.tolist())
            rows.setdefault("PolynomialFeatures + L1-LinearSVC", []).append(
                (100 * _f1_labels(yte, grid.predict(Pte)), found, nonzero.size, seconds))
    print("| method | test F1 | planted pairs held (of 5) | features + pairs | seconds |")
    print("|---|---|---|---|---|")
    for name, values in rows.items():
        v = np.array(values, dtype=float)
        print(f"| {name} | {v[:, 0].mean():.1f} ± {_se(v[:, 0]):.1f} "
              f"| {v[:, 1].mean():.1f} | {v[:, 2].mean():.0f} | {v[:, 3].mean():.1f} |")


def _poly_pairs(columns, m):
    """The pairs (j, k) of PolynomialFeatures(interaction_only=True)'s product columns among ``columns``:
    after the m features come the products j < k, j-major (its powers_ would be a dense 5e7 x 1e4 array)."""
    pairs = set()
    starts = m + np.concatenate(([0], np.cumsum(np.arange(m - 1, 0, -1))))      # first column of each j
    for c in np.asarray(columns)[np.asarray(columns) >= m]:
        j = int(np.searchsorted(starts, c, side="right")) - 1
        pairs.add((j, int(j + 1 + c - starts[j])))
    return pairs


def _f1_labels(y, pred):
    tp = np.sum((pred == 1) & (y == 1))
    return 2 * tp / max(np.sum(pred == 1) + np.sum(y == 1), 1)


def run_digits(splits):
    from sklearn.datasets import load_digits
    from sklearn.model_selection import GridSearchCV, train_test_split
    from sklearn.svm import LinearSVC

    digits = load_digits()
    print("| digits | method | test error | test F1 | features + pairs | error - linear (64 pixels), paired |")
    print("|---|---|---|---|---|---|")
    for a, b in ((3, 8), (4, 9)):
        keep = np.isin(digits.target, (a, b))
        X, y = digits.data[keep] / 16.0, (digits.target[keep] == b).astype(int)
        results = {}
        for seed in range(splits):
            Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.5, stratify=y, random_state=seed)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                models = {
                    "interactions, <= 50 features": StructSVMCV(interactions=True, max_features=50),
                    "linear, <= 50 features": StructSVMCV(max_features=50),
                    "linear StructSVMCV, all 64 pixels": StructSVMCV(budgets=[None]),
                    "LinearSVC, all 64 pixels": GridSearchCV(LinearSVC(class_weight="balanced"),
                                                             {"C": [0.01, 0.1, 1.0, 10.0, 100.0]}, scoring="f1", cv=3),
                }
                for name, est in models.items():
                    est.fit(Xtr, ytr)
                    pred = est.predict(Xte)
                    best = getattr(est, "best_estimator_", est)
                    count = _n_features(best) if hasattr(best, "selected_features_") else X.shape[1]
                    results.setdefault(name, []).append((100 * np.mean(pred != yte), 100 * _f1_labels(yte, pred),
                                                         count))
        reference = np.array(results["linear StructSVMCV, all 64 pixels"], dtype=float)[:, 0]
        for name, values in results.items():
            v = np.array(values, dtype=float)
            diff = v[:, 0] - reference
            print(f"| {a} vs {b} | {name} | {v[:, 0].mean():.2f} ± {_se(v[:, 0]):.2f} | {v[:, 1].mean():.1f} "
                  f"| {v[:, 2].mean():.1f} | {diff.mean():+.2f} ± {_se(diff):.2f} |")


def _se(values):
    return float(np.std(values, ddof=1) / np.sqrt(len(values))) if len(values) > 1 else 0.0


def scale_problem(n, m=1_000_000, words=30, noise=0.0, seed=0):
    """n x m binary rows of ``words`` random features; 6 frequent features, the label where one of 3
    planted pairs of them is on."""
    rng = np.random.default_rng(seed)
    cols = rng.integers(0, m, size=(n, words))
    frequent = rng.choice(m, 6, replace=False)
    on = rng.random((n, 6)) < 0.3
    cols[:, :6] = np.where(on, frequent, cols[:, :6])
    cols.sort(axis=1)
    X = sp.csr_matrix((np.ones(n * words), cols.ravel(), np.arange(0, n * words + 1, words)), shape=(n, m))
    X.sum_duplicates()
    X.data[:] = 1.0
    pairs = np.sort(frequent.reshape(3, 2), axis=1)
    y = np.zeros(n, dtype=int)
    for j, k in pairs:
        y |= (on[:, list(frequent).index(j)] & on[:, list(frequent).index(k)])
    flip = rng.random(n) < noise
    y[flip] = 1 - y[flip]
    return X, y, pairs


def run_scale(rows, noise):
    t0 = time.perf_counter()
    X, y, pairs = scale_problem(rows, noise=noise)
    made = time.perf_counter() - t0
    t0 = time.perf_counter()
    model = StructSVM(loss="f1", C=1000.0, budget=10, interactions=True, max_outer=10).fit(X, y)
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20      # Linux: KiB
    print("| rows x features | nonzeros | label noise | fit seconds | peak memory (GiB) | planted pairs held | groups "
          "| stop |")
    print("|---|---|---|---|---|---|---|---|")
    print(f"| {X.shape[0]:,} x {X.shape[1]:,} | {X.nnz:,} | {noise:.0%} | {seconds:.0f} | {peak:.2f} "
          f"| {_found(model, pairs)} of 3 | {model.n_outer_} | {model.stop_} |")
    print(f"(data generated in {made:.0f} s; F1 on the training rows "
          f"{_f1(y, model.decision_function(X)):.1f}, {_n_features(model)} features + pairs)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", choices=["planted", "digits", "scale"])
    parser.add_argument("--splits", type=int, default=None)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--noise", type=float, default=0.05)
    args = parser.parse_args()
    if args.part == "planted":
        run_planted(args.splits or 3)
    elif args.part == "digits":
        run_digits(args.splits or 10)
    else:
        run_scale(args.rows, args.noise)


if __name__ == "__main__":
    main()
