"""Seconds per most-violated-output oracle call against np.sort on the same n.

    python -m benchmarks.oracles [--sizes 1000 10000 100000 1000000] [--repeat 5]

Prints a Markdown table: n, positive share, np.sort seconds, then each built-in's seconds and its
ratio to the sort (the target at n = 1e6 is every built-in within 10x the sort).
"""
import argparse
import time

import numpy as np

from structfs.losses import get_loss

LOSSES = [("error", {}), ("f1", {}), ("fbeta", {"beta": 2.0}), ("prec@k", {"k_frac": 0.5}),
          ("rec@k", {"k_frac": 2.0}), ("prbep", {}), ("auc", {}), ("ap", {}), ("pauc", {"beta": 0.1})]


def best_time(fn, repeat):
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10**3, 10**4, 10**5, 10**6])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    header = ["n", "pos", "np.sort s"] + [f"{name} s (x sort)" for name, _ in LOSSES]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for n in args.sizes:
        for frac in (0.01, 0.2):
            y = np.where(rng.random(n) < frac, 1.0, -1.0)
            s = rng.normal(size=n)
            t_sort = best_time(lambda s=s: np.sort(s), args.repeat)
            row = [f"{n:,}", f"{frac:.0%}", f"{t_sort:.2e}"]
            for name, params in LOSSES:
                loss = get_loss(name, **params)
                loss.most_violated(y, s)  # warm-up (numba compilation, caches)
                t = best_time(lambda loss=loss, y=y, s=s: loss.most_violated(y, s), args.repeat)
                row.append(f"{t:.2e} ({t / t_sort:.1f}x)")
            print("| " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    main()
