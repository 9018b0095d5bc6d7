"""Successive halving against the full grid on one MIL set, paired over its splits: F1 and seconds of
``MILESClassifier()`` at its defaults and of the same search with ``halving_factor=None``.

    python -m benchmarks.halving_corel [--data corel_historical] [--splits 3]
"""
import argparse
import time
import warnings

import numpy as np

from benchmarks.mil import load_splits
from structfs.datasets import get_data_home
from structfs.metrics import f1
from structfs.mil import MILESClassifier


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default="corel_historical")
    parser.add_argument("--splits", type=int, default=3)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    res = {"default (halving)": [], "full grid": []}
    for tr, te, ytr, yte in load_splits(get_data_home(None), args.data, args.splits):
        for label in res:
            model = MILESClassifier()
            if label == "full grid":
                model = MILESClassifier(estimator=model._resolve_estimator().set_params(halving_factor=None))
            t0 = time.perf_counter()
            model.fit(tr, ytr)
            res[label].append((f1(yte, model.decision_function(te)), time.perf_counter() - t0))
    d = np.array([a[0] - b[0] for a, b in zip(*res.values())])
    print(f"| search | {args.data}: F1 per split | mean F1 | seconds per split |\n|---|---|---|---|")
    for label, rows in res.items():
        print(f"| {label} | {', '.join(f'{r[0]:.1f}' for r in rows)} | {np.mean([r[0] for r in rows]):.2f} | "
              f"{np.mean([r[1] for r in rows]):.1f} |")
    print(f"\ndefault - full grid: {d.mean():+.2f} ± {d.std(ddof=1) / np.sqrt(len(d)):.2f} F1")


if __name__ == "__main__":
    main()
