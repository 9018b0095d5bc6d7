"""BLAS threads for one fit: the eight unbudgeted R8 topics (F1 loss) with 1 and 2 BLAS threads
(``Solver(blas_threads=...)``), on a quiet machine and with another process holding a core.

    python -m benchmarks.threads [--data DIR] [--C 1000 10000]
"""
import argparse
import multiprocessing
import time

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer

from structfs.datasets import load_r8
from structfs.losses import get_loss
from structfs.solvers import Solver, SquaredL2


def _busy(seconds):
    end = time.time() + seconds
    while time.time() < end:
        pass


def _fit_all(X, y, C, threads):
    """Seconds for the unbudgeted fits of every topic with ``threads`` BLAS threads."""
    solver, loss, total = Solver.default(blas_threads=threads), get_loss("f1"), 0.0
    for topic in sorted(set(y)):
        t0 = time.perf_counter()
        solver.solve(X, np.where(y == topic, 1.0, -1.0), loss, C, SquaredL2(), 1.0)
        total += time.perf_counter() - t0
    return total


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=None)
    parser.add_argument("--C", type=float, nargs="+", default=[1000.0, 10000.0])
    args = parser.parse_args()
    xtr, ytr, _, _ = load_r8(args.data)
    X, y = TfidfVectorizer(sublinear_tf=True, min_df=2).fit_transform(xtr), np.asarray(ytr)
    _fit_all(X[:300], y[:300], 1.0, 1)                                   # load numba's kernels
    print("| machine | C | 1 BLAS thread, s | 2 BLAS threads, s |")
    print("|---|---|---|---|")
    for state in ("quiet", "a core busy"):
        busy = None
        if state != "quiet":
            busy = multiprocessing.Process(target=_busy, args=(600,), daemon=True)
            busy.start()
        for C in args.C:
            one, two = _fit_all(X, y, C, 1), _fit_all(X, y, C, 2)
            print(f"| {state} | {C:g} | {one:.2f} | {two:.2f} |", flush=True)
        if busy is not None:
            busy.terminate()


if __name__ == "__main__":
    main()
