"""Out of core: a kddb-shaped synthetic problem written to disk in shards, trained from disk.

    python -m benchmarks.out_of_core generate DIR [--n 2000000] [--features 30000000] [--per-row 30]
    python -m benchmarks.out_of_core fit DIR [--loss error] [--budget 10] [--max-outer 10] [--in-memory]

``generate`` writes DIR (structfs.shards) one row block at a time, seeded: each row holds ``--per-row``
nonzeros, 5 of them among 100 informative columns (weights +-U(0.5, 1.5)) and the rest uniformly
among all ``--features`` indices (sparse noise, most columns never occur); y = +1 for the top 30% of
the informative margin plus Gaussian noise. Only one block is in memory at a time.

``fit`` trains StructSVM(C=1000, budget=B, max_outer, loss) on the ShardedMatrix and prints fit time,
peak resident memory of the process (ru_maxrss), passes over the data, planes, seconds per plane, the
oracle's share of the time and the share of informative columns among the selected ones.
``--in-memory`` loads the shards into one CSR matrix first (for comparison on sizes that fit);
``--dask W`` fits on a dask.distributed LocalCluster of W worker processes that load the shards
(structfs.cluster.DaskRowBlocks; peak RSS is then the client's, the workers hold the data).
"""
import argparse
import resource
import time

import numpy as np
import scipy.sparse as sp

N_INFORMATIVE, INFORMATIVE_PER_ROW, POSITIVE_SHARE = 100, 5, 0.3


def generate(path, n, m, per_row, rows_per_shard, seed=0):
    from structfs.shards import ShardWriter

    rng = np.random.default_rng(seed)
    informative = np.sort(rng.choice(m, N_INFORMATIVE, replace=False))
    w = rng.uniform(0.5, 1.5, N_INFORMATIVE) * rng.choice([-1.0, 1.0], N_INFORMATIVE)
    threshold = None
    writer = ShardWriter(path, n_features=m)
    for start in range(0, n, rows_per_shard):
        r = min(rows_per_shard, n - start)
        which = rng.integers(0, N_INFORMATIVE, size=(r, INFORMATIVE_PER_ROW))
        values = rng.normal(size=(r, INFORMATIVE_PER_ROW))
        margin = (values * w[which]).sum(axis=1) + 0.3 * rng.normal(size=r)
        if threshold is None:          # fixed from the first block, so every block uses the same rule
            threshold = np.quantile(margin, 1 - POSITIVE_SHARE)
        y = np.where(margin > threshold, 1.0, -1.0)
        cols = np.hstack([informative[which], rng.integers(0, m, size=(r, per_row - INFORMATIVE_PER_ROW))])
        data = np.hstack([values, rng.normal(size=(r, per_row - INFORMATIVE_PER_ROW))])
        order = np.argsort(cols, axis=1, kind="stable")
        block = sp.csr_matrix((np.take_along_axis(data, order, 1).ravel(), np.take_along_axis(cols, order, 1).ravel(),
                               np.arange(0, r * per_row + 1, per_row)), shape=(r, m))
        writer.append(block, y)        # repeated cells in a row (rare) are summed
    writer.close()
    np.save(f"{path}/informative.npy", informative)


def timed(loss):
    """The loss object with its oracle timed (for the oracle's share of the fit): (loss, clock)."""
    clock = {"seconds": 0.0, "calls": 0}
    oracle = loss.oracle

    def timed_oracle(y, s):
        t0 = time.perf_counter()
        out = oracle(y, s)
        clock["seconds"] += time.perf_counter() - t0
        clock["calls"] += 1
        return out

    loss.oracle = timed_oracle
    # the solvers call a compiled oracle from compiled code, where no Python clock reaches it: the loss is
    # called through its Python oracle instead (the same answers; a few microseconds a call more)
    loss.jit_oracle = None
    return loss, clock


def fit(args):
    from structfs import StructSVM
    from structfs.losses import get_loss
    from structfs.shards import ShardedMatrix

    X = ShardedMatrix(args.dir)
    y = X.y
    informative = np.load(f"{args.dir}/informative.npy")
    if args.in_memory:
        parts = []
        compact, columns = X.compacted(), X.occurring_columns()
        for i in range(compact.n_shards):
            _, indptr, indices, data = compact._load(i)
            parts.append(sp.csr_matrix((np.array(data), columns[indices] if columns is not None else np.array(indices),
                                        np.array(indptr)), shape=(indptr.shape[0] - 1, X.shape[1])))
        X = sp.vstack(parts, format="csr")
    cluster = None
    if args.dask:
        from dask.distributed import Client, LocalCluster

        from structfs.cluster import DaskRowBlocks

        cluster = LocalCluster(n_workers=args.dask, threads_per_worker=1, processes=True, dashboard_address=None,
                               memory_limit=0)
        X = DaskRowBlocks.from_shards(args.dir, Client(cluster))
    loss, clock = timed(get_loss(args.loss))
    clf = StructSVM(loss=loss, C=args.C, budget=args.budget, max_outer=args.max_outer)
    t0 = time.perf_counter()
    clf.fit(X, y)
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9   # ru_maxrss is in KiB
    sel = clf.selected_features_
    passes = getattr(X, "passes", "-")
    print("| rows | index space | nonzeros | where | loss | B | groups | fit s | peak RSS GB (10^9 B) | passes "
          "| planes | "
          "s per plane | oracle share | selected | informative share |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    nnz = ShardedMatrix(args.dir).nnz
    where = f"Dask, {args.dask} workers" if args.dask else "memory" if args.in_memory else "disk"
    print(f"| {X.shape[0]:,} | {X.shape[1]:,} | {nnz:,} | {where} | {args.loss} | "
          f"{args.budget} | {clf.n_outer_} | {seconds:.1f} | {peak:.2f} | {passes} | {clf.n_iter_} | "
          f"{seconds / max(clf.n_iter_, 1):.3f} | {clock['seconds'] / seconds:.0%} | {len(sel)} | "
          f"{np.isin(sel, informative).mean():.0%} |")
    print(f"objective {clf.objective_:.8g}, stop {clf.stop_}, most live planes "
          f"{max(rec['planes'] for rec in clf.history_)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["generate", "fit"])
    parser.add_argument("dir")
    parser.add_argument("--n", type=int, default=2_000_000)
    parser.add_argument("--features", type=int, default=30_000_000)
    parser.add_argument("--per-row", type=int, default=30)
    parser.add_argument("--rows-per-shard", type=int, default=250_000)
    parser.add_argument("--loss", default="error")
    parser.add_argument("--C", type=float, default=1000.0)
    parser.add_argument("--budget", type=int, default=10)
    parser.add_argument("--max-outer", type=int, default=10)
    parser.add_argument("--in-memory", action="store_true")
    parser.add_argument("--dask", type=int, default=0, help="fit on a LocalCluster of this many worker processes")
    args = parser.parse_args()
    if args.command == "generate":
        t0 = time.perf_counter()
        generate(args.dir, args.n, args.features, args.per_row, args.rows_per_shard)
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9
        print(f"wrote {args.n:,} rows x {args.features:,} indices to {args.dir} in {time.perf_counter() - t0:.0f} s "
              f"(peak RSS {peak:.2f} GB)")
    else:
        fit(args)


if __name__ == "__main__":
    main()
