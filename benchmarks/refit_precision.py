"""The final model's precision: ``StructSVMCV()`` (the refit solved as its candidate was in the folds)
against ``StructSVMCV(tol=0.01)`` (the refit at 0.01), the same choice and fold fits.

    python -m benchmarks.refit_precision [--sms-splits 20]

R8's eight topics one-vs-rest and SMS spam over stratified 70/30 splits, as in ``benchmarks.halving text``
(TF-IDF on each training part). Test F1 in percent, the paired difference default - 0.01 with its
standard error, the seconds of both searches and their ratio, and how many problems chose the same
candidate; the two fits of a problem run one after the other.
"""
import argparse

import numpy as np

from benchmarks.halving import _f1, _r8_topics, _sms_problems, _timed
from benchmarks.mil import paired
from structfs import StructSVMCV


def _row(label, problems):
    rows = []
    for Xtr, ytr, Xte, yte in problems:
        default, s_default = _timed(StructSVMCV(), Xtr, ytr)
        fine, s_fine = _timed(StructSVMCV(tol=0.01), Xtr, ytr)
        same = (default.C_, default.budget_) == (fine.C_, fine.budget_)
        rows.append((_f1(default, Xte, yte), _f1(fine, Xte, yte), s_default, s_fine, same))
    r = np.array(rows, dtype=float)
    print(f"| {label} | {r[:, 0].mean():.2f} | {r[:, 1].mean():.2f} | {paired(r[:, 0], r[:, 1], 2)} "
          f"| {r[:, 2].sum():.1f} | {r[:, 3].sum():.1f} | {r[:, 2].sum() / r[:, 3].sum():.2f} "
          f"| {int(r[:, 4].sum())} of {len(r)} |", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sms-splits", type=int, default=20)
    args = parser.parse_args()
    print("| data | test F1, default (tol=None) | tol=0.01 | default − 0.01, paired | s, default | s, 0.01 "
          "| seconds, default / 0.01 | same candidate |")
    print("|---|---|---|---|---|---|---|---|")
    _row("R8, 8 topics", _r8_topics())
    _row(f"SMS spam, {args.sms_splits} splits", _sms_problems(args.sms_splits))


if __name__ == "__main__":
    main()
