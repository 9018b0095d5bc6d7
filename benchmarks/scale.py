"""Scale: an FGM-style synthetic problem with a million features.

    python -m benchmarks.scale [--n 10000] [--noise 1000000] [--budget 10] [--C 1000]

n examples; 400 dense informative Gaussian features with weights from U(0,1) and y = sign(X_inf w)
(centred so both classes occur); hidden among ``noise`` sparse Gaussian noise features at density
1e-3 (about 1e7 nonzeros in all); columns shuffled (seeded). Prints fit seconds, peak memory of the
process (ru_maxrss) and the share of informative features among those selected.
"""
import argparse
import resource
import time
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

from structfs import StructSVM


def make_problem(n, n_inf, n_noise, density, seed=0):
    rng = np.random.default_rng(seed)
    X_inf = rng.normal(size=(n, n_inf))
    w = rng.uniform(0, 1, n_inf)
    margin = X_inf @ w
    y = np.where(margin > np.median(margin), 1, -1)
    # Coordinates drawn directly (scipy.sparse.random would permute all n * n_noise cells); the few
    # repeated cells are summed, which leaves the density at 1e-3 to within 0.05%.
    nnz = int(n * n_noise * density)
    noise = sp.csc_matrix((rng.normal(size=nnz), (rng.integers(0, n, nnz), rng.integers(0, n_noise, nnz))),
                          shape=(n, n_noise))
    X = sp.hstack([sp.csc_matrix(X_inf), noise], format="csc")
    perm = rng.permutation(X.shape[1])
    informative = np.zeros(X.shape[1], dtype=bool)
    informative[:n_inf] = True
    return X[:, perm], y, informative[perm]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--informative", type=int, default=400)
    parser.add_argument("--noise", type=int, default=1_000_000)
    parser.add_argument("--density", type=float, default=1e-3)
    parser.add_argument("--budget", type=int, default=10)
    parser.add_argument("--C", type=float, default=1000.0)
    parser.add_argument("--loss", default="f1")
    parser.add_argument("--max-iter", type=int, default=2000)
    parser.add_argument("--max-outer", type=int, default=30)
    args = parser.parse_args()
    t0 = time.perf_counter()
    X, y, informative = make_problem(args.n, args.informative, args.noise, args.density)
    print(f"data: {X.shape[0]} x {X.shape[1]}, {X.nnz:,} nonzeros, built in {time.perf_counter() - t0:.1f} s")
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        clf = StructSVM(loss=args.loss, C=args.C, budget=args.budget, max_iter=args.max_iter,
                        max_outer=args.max_outer).fit(X, y)
    seconds = time.perf_counter() - t0
    peak_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9   # ru_maxrss is in KiB
    sel = clf.selected_features_
    print("| n | features | nnz | B | fit s | peak GB | selected | informative share | train F1 | groups | planes |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    from structfs.metrics import f1
    print(f"| {X.shape[0]:,} | {X.shape[1]:,} | {X.nnz:,} | {args.budget} | {seconds:.1f} | {peak_gb:.2f} "
          f"| {len(sel)} | "
          f"{informative[sel].mean():.2%} | {f1(y, clf.decision_function(X)):.1f} | {clf.n_outer_} | {clf.n_iter_} |")
    for w in caught:
        print("warning:", w.message)


if __name__ == "__main__":
    main()
