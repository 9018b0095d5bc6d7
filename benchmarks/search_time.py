"""Where the time of one search goes: the fold paths (search), the cut chosen on out-of-fold decision
values (threshold) and the model refitted on all the data (refit), summed over the problems, with
tuned-threshold logistic regression (as ``benchmarks.halving`` defines it) timed in the same run.

    python -m benchmarks.search_time [--splits 5]       # R8 (8 topics) and SMS spam
"""
import argparse
import time
from contextlib import contextmanager

from benchmarks.halving import _alternative, _r8_topics, _sms_problems, _timed
from structfs import StructSVMCV
from structfs.model_selection import _search


@contextmanager
def _clocked(owner, name, totals, key):
    """Add the time of every call of ``owner.name`` to ``totals[key]`` inside the block."""
    original = getattr(owner, name)

    def timed(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            totals[key] += time.perf_counter() - t0

    setattr(owner, name, timed)
    try:
        yield
    finally:
        setattr(owner, name, original)


def _parts(problems):
    totals = {"search": 0.0, "threshold": 0.0, "refit": 0.0, "total": 0.0, "LR": 0.0}
    with _clocked(StructSVMCV, "_search", totals, "search"), \
            _clocked(StructSVMCV, "_refit_best", totals, "refit"), \
            _clocked(_search, "rescore_at_cv_cuts", totals, "threshold"):
        for Xtr, ytr, _, _ in problems:
            totals["total"] += _timed(StructSVMCV(loss="f1"), Xtr, ytr)[1]
    for Xtr, ytr, _, _ in problems:
        totals["LR"] += _timed(_alternative(False), Xtr, ytr)[1]
    totals["search"] -= totals["threshold"]          # the rescoring runs inside the search
    return totals


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--splits", type=int, default=5)
    args = parser.parse_args()
    print("| problems | search, s | threshold, s | refit, s | StructSVMCV fit, s | tuned-threshold LR, s | ratio |")
    print("|---|---|---|---|---|---|---|")
    for name, problems in (("R8, 8 topics", _r8_topics()), (f"SMS spam, {args.splits} splits",
                                                            _sms_problems(args.splits))):
        t = _parts(problems)
        print(f"| {name} | {t['search']:.1f} | {t['threshold']:.2f} | {t['refit']:.1f} | {t['total']:.1f} | "
              f"{t['LR']:.1f} | {t['total'] / t['LR']:.2f} |", flush=True)



if __name__ == "__main__":
    main()
