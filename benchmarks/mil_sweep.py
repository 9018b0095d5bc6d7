"""MIL: test F1 of MILESClassifier at fixed (C, budget), each capped at the baseline's instance count.

    python -m benchmarks.mil_sweep [--data DIR] [--datasets musk1 ...] [--C 10 100 1000] [--budgets 1 2 5 10]
                                   [--splits 5] [--paired]

The same 5 seeded 60/40 splits and baseline (b) as ``benchmarks/mil.py`` (L1-LinearSVC, balanced,
C from {0.1, 1, 10} by 3-fold inner CV). For every (C, budget), (a) is StructSVM(f1) on the same
embedding with ``max_features`` = (b)'s instance count on the split (``max_outer`` = that count, so
that the cap or FGM's own stall rule ends the generation). No inner model selection: this table shows
how much each setting's test F1 varies between data sets and splits, which is what any selection by
inner cross-validation has to cope with. ``--paired`` prints each cell as the mean per-split
difference (a) − (b) ± its standard error instead.
"""
import argparse
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from benchmarks.mil import (  # benchmarks/mil.py: the same splits and baseline
    DATASETS,
    load_splits,
    miles_baseline,
    paired,
)
from structfs import StructSVM
from structfs.datasets import get_data_home
from structfs.metrics import f1
from structfs.mil import MILESEmbedding


def sweep(name, data, Cs, budgets, n_splits=5):
    base, cells = [], {(C, B): [] for B in budgets for C in Cs}
    for tr, te, y_tr, y_te in load_splits(data, name, n_splits):
        emb = MILESEmbedding().fit(tr)
        Ztr, Zte = emb.transform(tr), emb.transform(te)
        l1 = miles_baseline(Ztr, y_tr)
        cap = max(1, int(np.count_nonzero(l1.best_estimator_.coef_)))
        base.append((f1(y_te, l1.decision_function(Zte)), cap))
        for C, B in cells:
            svm = StructSVM(loss="f1", C=C, budget=B, max_outer=cap, max_features=cap).fit(Ztr, y_tr)
            cells[(C, B)].append((f1(y_te, svm.decision_function(Zte)), len(svm.selected_features_)))
    return np.array(base), {k: np.array(v) for k, v in cells.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=None, help="data directory (default: $STRUCTFS_DATA)")
    parser.add_argument("--datasets", nargs="+", default=DATASETS)
    parser.add_argument("--C", type=float, nargs="+", default=[10.0, 100.0, 1000.0])
    parser.add_argument("--budgets", type=int, nargs="+", default=[1, 2, 5, 10])
    parser.add_argument("--splits", type=int, default=5)
    parser.add_argument("--paired", action="store_true", help="cells: mean (a) - (b) per split ± standard error")
    args = parser.parse_args()
    data = get_data_home(args.data)
    what = "(a) − (b) per split, mean ± standard error" if args.paired else "Mean test F1 (mean #instances)"
    print(f"{what} over {args.splits} splits; (b) = L1-LinearSVC baseline, (a) = F1 at fixed C, B, "
          "capped at (b)'s count; bold: >= (b)")
    header = ["data set", "(b)"] + [f"C={C:g} B={B}" for B in args.budgets for C in args.C]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for name in args.datasets:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            base, cells = sweep(name, data, args.C, args.budgets, args.splits)
        row = [name, f"{base[:, 0].mean():.1f} ({base[:, 1].mean():.0f})"]
        for B in args.budgets:
            for C in args.C:
                v = cells[(C, B)]
                if args.paired:
                    text = paired(v[:, 0], base[:, 0])
                else:
                    text = f"{v[:, 0].mean():.1f} ({v[:, 1].mean():.0f})"
                row.append(f"**{text}**" if v[:, 0].mean() >= base[:, 0].mean() else text)
        print("| " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    main()
