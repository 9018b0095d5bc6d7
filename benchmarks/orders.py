"""MIL figures over several orders of each bag's instances: how much of a paired difference is round-off.

    python -m benchmarks.orders run OUT.json [--datasets musk1 ...] [--splits 20] [--orders 4]
                                   [--threshold cv|learned] [--full-grid]
    python -m benchmarks.orders orders OUT.json
    python -m benchmarks.orders compare A.json B.json

A bag is a set: a MIL method is the same method whatever order a bag's instances come in, and in exact
arithmetic it gives the same model. In floating point the order of the training pool's columns is the
order of many sums, and where a search's candidates score within round-off of each other it decides
which one is chosen.

``run`` fits ``MILESClassifier()`` (or its default estimator with ``--threshold`` or ``--full-grid``,
i.e. ``halving_factor=None``) on the seeded 60/40 splits of ``benchmarks.mil`` with every training
bag's instances in seeded random orders (order 0: as stored) and writes the test F1 of every (order,
split) and the seconds per order. ``orders`` pairs each order of one file with order 0: the A/A
comparison, what a change of nothing but the order does. ``compare`` pairs two such files split by
split, each split's F1 averaged over the orders both hold, and prints the mean difference ± its
standard error per data set, and the seconds' ratio.

Pools above 2,000 instances (musk2, birds) draw the kernel width's sample of instances by position, so
there an order also changes that sample; on musk1 and elephant only sums are reordered.

To measure another commit, run this file with that checkout on the path
(``PYTHONPATH=/path/to/checkout python benchmarks/orders.py run ...``): it imports structfs and
``benchmarks.mil`` from there.
"""
import argparse
import json
import time
import warnings

import numpy as np

from benchmarks.mil import DATASETS, load_splits, paired
from structfs import StructSVMCV
from structfs.datasets import get_data_home
from structfs.metrics import f1
from structfs.mil import MILESClassifier


def _classifier(threshold, full_grid):
    if threshold is None and not full_grid:
        return MILESClassifier()
    settings = {} if threshold is None else {"threshold": threshold}
    if full_grid:
        settings["halving_factor"] = None
    return MILESClassifier(estimator=StructSVMCV(budgets=(5,), scale_C=False, **settings))


def run(out, datasets, n_splits, n_orders, threshold, full_grid):
    results = {}
    for name in datasets:
        splits = list(load_splits(get_data_home(None), name, n_splits))
        scores, seconds = [], []
        for order in range(n_orders):
            f1s, total = [], 0.0
            for s, (train, test, y_train, y_test) in enumerate(splits):
                if order:
                    rng = np.random.default_rng([order, s])
                    train = [bag[rng.permutation(bag.shape[0])] for bag in train]
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    t0 = time.perf_counter()
                    clf = _classifier(threshold, full_grid).fit(train, y_train)
                    total += time.perf_counter() - t0
                f1s.append(f1(np.where(y_test > 0, 1, -1), clf.decision_function(test)))
            scores.append(f1s)
            seconds.append(total)
            print(f"{name} order {order}: F1 {np.mean(f1s):.2f}, {total:.1f} s", flush=True)
        results[name] = {"f1": scores, "seconds": seconds}
        with open(out, "w") as fh:                # after every data set: a long run keeps what it has
            json.dump(results, fh)


def _load(path):
    with open(path) as fh:
        return json.load(fh)


def _paired_cells(a, b):
    """Two table cells of the per-split differences a - b: mean ± standard error
    (:func:`benchmarks.mil.paired`) and the mean in standard errors."""
    d = np.asarray(a) - np.asarray(b)
    se = d.std(ddof=1) / np.sqrt(d.shape[0])
    return f"{paired(a, b, digits=2)} | {d.mean() / se if se > 0 else 0.0:+.2f}"


def orders(path):
    results = _load(path)
    print("| data set | order | F1 | − order 0 (paired over splits) | in SE | splits changed |")
    print("|---|---|---|---|---|---|")
    for name, result in results.items():
        scores = np.array(result["f1"])
        for order in range(1, scores.shape[0]):
            changed = int(np.count_nonzero(scores[order] != scores[0]))
            print(f"| {name} | {order} | {scores[order].mean():.2f} | {_paired_cells(scores[order], scores[0])} "
                  f"| {changed} of {scores.shape[1]} |")


def compare(a_file, b_file):
    a, b = _load(a_file), _load(b_file)
    print("| data set | orders | A: F1 | B: F1 | A − B (paired over splits) | in SE | A / B seconds |")
    print("|---|---|---|---|---|---|---|")
    for name in a:
        if name not in b:
            continue
        k = min(len(a[name]["f1"]), len(b[name]["f1"]))
        fa, fb = np.array(a[name]["f1"][:k]), np.array(b[name]["f1"][:k])
        ratio = sum(a[name]["seconds"][:k]) / sum(b[name]["seconds"][:k])
        print(f"| {name} | {k} | {fa.mean():.2f} | {fb.mean():.2f} | {_paired_cells(fa.mean(axis=0), fb.mean(axis=0))} "
              f"| {ratio:.2f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="part", required=True)
    p_run = sub.add_parser("run")
    p_run.add_argument("out")
    p_run.add_argument("--datasets", nargs="+", default=DATASETS)
    p_run.add_argument("--splits", type=int, default=20)
    p_run.add_argument("--orders", type=int, default=4)
    p_run.add_argument("--threshold", choices=["cv", "learned"], default=None)
    p_run.add_argument("--full-grid", action="store_true")
    p_orders = sub.add_parser("orders")
    p_orders.add_argument("file")
    p_cmp = sub.add_parser("compare")
    p_cmp.add_argument("a")
    p_cmp.add_argument("b")
    args = parser.parse_args()
    if args.part == "run":
        run(args.out, args.datasets, args.splits, args.orders, args.threshold, args.full_grid)
    elif args.part == "orders":
        orders(args.file)
    else:
        compare(args.a, args.b)


if __name__ == "__main__":
    main()
