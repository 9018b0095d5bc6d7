"""Seconds per oracle call of a user's ContingencyLoss against the built-in F1 oracle, same scores.

    python -m benchmarks.user_losses [--n 100000] [--repeat 5] [--grid]
    python -m benchmarks.user_losses --fits

Three user losses, written as a researcher would: 1 - MCC with NumPy operations, the same with `if`
(scalars only), and 1 - G-mean. Scores are drawn three ways: standard normal (as benchmarks.oracles),
"trained" (class mean +-1 plus unit noise) and "margin" (most examples beyond the margin). Columns:
the first call of a fresh loss object (it compiles fn and verifies that Delta is monotone on this
(P, N) grid, once), then the best of ``--repeat`` later calls and its ratio to F1's. ``--grid`` adds
the exhaustive search over every table (the oracle where Delta is not monotone). ``--fits`` prints
instead one ``StructSVM(C=100)`` fit on ``make_classification(2000, 20)`` with 5% and 50% positives:
loss "f1" against the numpy MCC loss, by branch and bound and over every table (seconds, objective),
and the same fit with the compiled loop switched off (the Python driver).
"""
import argparse
import time

import numpy as np

from structfs.losses import ContingencyLoss, get_loss

from .oracles import best_time


def mcc_numpy(a, b, c, d):
    den = np.sqrt(1.0 * (a + b) * (a + c) * (b + d) * (c + d))
    return 50.0 * (1.0 - np.where(den > 0, (a * d - b * c) / np.where(den > 0, den, 1.0), 0.0))


def mcc_scalar(a, b, c, d):
    den = (1.0 * (a + b) * (a + c) * (b + d) * (c + d)) ** 0.5
    if den == 0:
        return 50.0
    return 50.0 * (1.0 - (a * d - b * c) / den)


def gmean(a, b, c, d):
    return 100.0 * (1.0 - np.sqrt(a / np.maximum(a + c, 1) * d / np.maximum(b + d, 1)))


USER_LOSSES = [("mcc (numpy)", mcc_numpy), ("mcc (if)", mcc_scalar), ("g-mean", gmean)]


def scores(kind, y, rng):
    sign = np.where(y > 0, 1.0, -1.0)
    if kind == "normal":
        return rng.normal(size=y.shape[0])
    if kind == "trained":
        return sign + rng.normal(size=y.shape[0])
    return sign * (1.0 + rng.exponential(size=y.shape[0])) + 0.5 * rng.normal(size=y.shape[0])


def _fit_seconds(loss, X, y, python_loop=False):
    """(seconds, model) of a ``StructSVM(C=100)`` fit, the best of five after a warm-up fit; ``python_loop``: with the
    compiled loop switched off, as every loss without a compiled oracle ran before it took Python oracles."""
    import warnings

    from structfs import StructSVM
    from structfs.solvers import compiled_loop

    compiled = compiled_loop.compiled_inner_solve
    if python_loop:
        compiled_loop.compiled_inner_solve = lambda *args: None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            StructSVM(loss=loss, C=100).fit(X[:200], y[:200])        # compile, warm
            seconds = []
            for _ in range(5):
                start = time.perf_counter()
                model = StructSVM(loss=loss, C=100).fit(X, y)
                seconds.append(time.perf_counter() - start)
        return min(seconds), model
    finally:
        compiled_loop.compiled_inner_solve = compiled


def fits():
    from sklearn.datasets import make_classification

    print("| positives | loss | seconds | the same in the Python driver, s | objective | planes |")
    print("|---|---|---|---|---|---|")
    for weight in (0.95, 0.5):
        X, y = make_classification(2000, 20, weights=[weight], random_state=0)
        for name, loss in (("f1", "f1"), ("mcc (numpy)", ContingencyLoss(mcc_numpy)),
                           ("mcc, every table", ContingencyLoss(mcc_numpy, monotone=False))):
            seconds, model = _fit_seconds(loss, X, y)
            in_python, _ = _fit_seconds(loss, X, y, python_loop=True)
            print(f"| {1 - weight:.0%} | {name} | {seconds:.3f} | {in_python:.3f} | {model.objective_:.4f} | "
                  f"{model.n_iter_} |", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--grid", action="store_true", help="also time the search over every table")
    parser.add_argument("--fits", action="store_true", help="time whole fits at n = 2,000 instead")
    args = parser.parse_args()
    if args.fits:
        fits()
        return
    rng = np.random.default_rng(0)
    f1 = get_loss("f1")
    header = ["positives", "scores", "f1 s"]
    for name, _ in USER_LOSSES:
        header += [f"{name} first s", f"{name} s (x f1)"]
    if args.grid:
        header += ["mcc every table s (x f1)"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for frac in (0.05, 0.5):
        y = np.where(rng.random(args.n) < frac, 1.0, -1.0)
        for kind in ("normal", "trained", "margin"):
            s = scores(kind, y, rng)
            f1.most_violated(y, s)
            t_f1 = best_time(lambda y=y, s=s: f1.most_violated(y, s), args.repeat)
            row = [f"{frac:.0%}", kind, f"{t_f1:.2e}"]
            for _, fn in USER_LOSSES:
                loss = ContingencyLoss(fn)
                t_first = best_time(lambda loss=loss, y=y, s=s: loss.most_violated(y, s), 1)
                t = best_time(lambda loss=loss, y=y, s=s: loss.most_violated(y, s), args.repeat)
                row += [f"{t_first:.2f}", f"{t:.2e} ({t / t_f1:.1f}x)"]
            if args.grid:
                loss = ContingencyLoss(mcc_numpy, monotone=False)
                loss.most_violated(y[:100], s[:100])
                t = best_time(lambda loss=loss, y=y, s=s: loss.most_violated(y, s), 1)
                row.append(f"{t:.2f} ({t / t_f1:.0f}x)")
            print("| " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    main()
