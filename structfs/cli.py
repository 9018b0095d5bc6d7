"""The ``structfs`` command line: train / predict / evaluate / path / demo.

SVMperf users find svm_perf_learn's options where they mean the same (-c, -l, --b, --p, -e, -v);
errors are one line on stderr and a non-zero exit, never a traceback.
"""
import argparse
import sys
import time

import numpy as np

from . import __version__


class CLIError(Exception):
    """An error reported to the user as one line (exit status 1)."""


def _demo(args):
    from sklearn.model_selection import train_test_split
    from sklearn.svm import LinearSVC

    from .datasets import load_digits_imbalanced
    from .estimators import StructSVM
    from .metrics import f1

    X, y = load_digits_imbalanced()
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.5, random_state=0, stratify=y)
    print(f"structfs {__version__} demo: scikit-learn's digits, ten one-vs-rest problems (about 1:9), "
          f"{X.shape[1]} pixel features, {len(y_tr)} train / {len(y_te)} test images")
    print("StructSVM(loss='f1', C=%g) with budgets %s against LinearSVC (hinge, C=1)" % (args.C, args.budgets))
    rows = []
    header = ["digit"] + [f"F1 B={b}" for b in args.budgets] + ["F1 LinearSVC"]
    feats = {b: [] for b in args.budgets}
    t0 = time.perf_counter()
    for digit in range(10):
        ytr, yte = (y_tr == digit).astype(int), (y_te == digit).astype(int)
        row = [str(digit)]
        for b in args.budgets:
            clf = StructSVM(loss="f1", C=args.C, budget=b).fit(X_tr, ytr)
            row.append(f"{f1(yte, clf.decision_function(X_te)):.1f}")
            feats[b].append(len(clf.selected_features_))
        svc = LinearSVC(C=1.0).fit(X_tr, ytr)
        row.append(f"{f1(yte, svc.decision_function(X_te)):.1f}")
        rows.append(row)
    means = ["macro"] + [f"{np.mean([float(r[i + 1]) for r in rows]):.1f}" for i in range(len(args.budgets) + 1)]
    nfeat = ["#features"] + [f"{np.mean(feats[b]):.1f}" for b in args.budgets] + [str(X.shape[1])]
    _print_table(header, rows + [means, nfeat])
    print(f"{time.perf_counter() - t0:.1f} s for {10 * (len(args.budgets) + 1)} fits")
    if args.plot:
        try:
            from .plotting import plot_budget_path
        except ImportError as exc:  # matplotlib is an optional extra
            print(f"(no plot: {exc}; pip install 'structfs[plot]')")
            return 0
        path = plot_budget_path([np.mean(feats[b]) for b in args.budgets],
                                [float(m) for m in means[1:-1]], baselines={"LinearSVC": float(means[-1])},
                                ylabel="macro-F1 (%)", out=args.plot, title="digits one-vs-rest")
        print(f"plot written to {path}")
    return 0


def _print_table(header, rows):
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    print("  ".join(h.rjust(w) for h, w in zip(header, widths)))
    for r in rows:
        print("  ".join(str(c).rjust(w) for c, w in zip(r, widths)))


def build_parser():
    parser = argparse.ArgumentParser(prog="structfs", description="Sparse linear classifiers optimising "
                                     "F1, Prec@k, PRBEP, ROC-AUC... under a feature budget.")
    parser.add_argument("--version", action="version", version=f"structfs {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = sub.add_parser("demo", help="train on scikit-learn's bundled digits and compare with LinearSVC")
    demo.add_argument("-c", dest="C", type=float, default=100.0, help="C as in svm_perf_learn (default 100)")
    demo.add_argument("--budgets", type=int, nargs="+", default=[4, 16], help="feature budgets B to try")
    demo.add_argument("--plot", default="structfs-demo.png", help="PNG to write ('' for none)")
    demo.set_defaults(func=_demo)
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return args.func(args)
    except (CLIError, ValueError, TypeError, OSError) as exc:
        print(f"structfs {args.command}: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
