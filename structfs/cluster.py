"""One binary problem on a Dask cluster: the rows in blocks held by the workers.

The solver touches X only through a few products (:mod:`structfs.solvers.data`): X' v over every
column once per generated group, the selected columns in memory, X w for predictions. Here each is a
set of tasks, one per row block, on the block's worker; the client gathers the (sparse) results, and
the oracle runs on the client's n scores. So the model is the in-memory one, up to the order in which
the blocks' partial sums are added.

Blocks loaded from a shard directory (:meth:`DaskRowBlocks.from_shards`) are tasks themselves, which
Dask loads again elsewhere when their worker is lost (tests/test_cluster.py kills one); a block that cannot be
recomputed (scattered from memory, :meth:`DaskRowBlocks.from_matrix`) or a failing task ends the fit
with a RuntimeError naming the block -- never a model from part of the data.

Needs ``dask[distributed]`` (an optional dependency: ``pip install structfs[dask]``).
"""
from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from ._validation import check_magnitude
from .shards import ShardedMatrix
from .solvers.data import RowBlocks, occurring_columns, select_columns, sorted_unique

__all__ = ["DaskRowBlocks"]


class DaskRowBlocks(RowBlocks):
    """An (n_samples, n_features) matrix whose row blocks live on the workers of a Dask ``client``.

    Build it with :meth:`from_shards` (each worker reads its blocks from a shard directory on a disk
    all workers see), :meth:`from_dask_array` (a dask array's row chunks, computed on the workers) or
    :meth:`from_matrix` (an in-memory matrix split and scattered). Pass it to
    ``StructSVM(budget=B).fit(X, y)`` like any matrix; StructSVM wraps a dask array itself.
    """

    def __init__(self, client: Any, blocks: list[Any], rows: list[tuple[int, int]], n_features: int,
                 columns: np.ndarray | None, _compact: bool = False, _passes: list[int] | None = None) -> None:
        self.client, self.blocks, self.rows = client, blocks, rows
        self.n_features = int(n_features)
        self.columns = columns                    # compact -> original indices (None: identity)
        self.n_columns = self.n_features if columns is None else columns.shape[0]
        self.compact = _compact
        self.shape = (int(rows[-1][1]) if rows else 0, self.n_columns if _compact else self.n_features)
        self._passes = [0] if _passes is None else _passes

    @property
    def passes(self) -> int:
        """Passes over the data so far (tasks on every block), by this matrix and its compact view."""
        return self._passes[0]

    @classmethod
    def from_shards(cls, path: Any, client: Any) -> DaskRowBlocks:
        """Each shard of the directory ``path`` becomes a block, loaded into its worker's memory."""
        X = ShardedMatrix(path)                   # validates the directory before any task
        starts = np.cumsum([0] + [s["n_rows"] for s in X.meta["shards"]])
        blocks = [client.submit(_load_shard, X.path, i, pure=False) for i in range(X.n_shards)]
        return cls(client, blocks, list(zip(starts[:-1], starts[1:])), X.shape[1], X.occurring_columns())

    @classmethod
    def from_matrix(cls, X: Any, client: Any, n_blocks: int | None = None) -> DaskRowBlocks:
        """An in-memory sparse or dense X in ``n_blocks`` row blocks (default: one per worker),
        renumbered to its occurring columns and scattered to the workers."""
        X = sp.csr_matrix(X, dtype=np.float64)
        if n_blocks is None:
            n_blocks = max(1, len(client.scheduler_info()["workers"]))
        columns = occurring_columns(X)
        compact = X if columns is None else select_columns(X, columns)
        edges = np.linspace(0, X.shape[0], n_blocks + 1).astype(int)
        rows = [(a, b) for a, b in zip(edges[:-1], edges[1:]) if b > a]
        blocks = [client.scatter(compact[a:b], hash=False) for a, b in rows]
        return cls(client, blocks, rows, X.shape[1], columns)

    @classmethod
    def from_dask_array(cls, X: Any, client: Any = None) -> DaskRowBlocks:
        """Each row chunk of the 2-D dask array ``X`` (NumPy or scipy.sparse chunks) becomes a block,
        computed on the workers of ``client`` (default: the current ``dask.distributed`` client) and
        renumbered there to the columns that occur. The blocks are tasks of X's graph, so Dask
        recomputes one whose worker is lost. Chunks are checked (finite, numeric) before any fit:
        ValueError naming the chunk's rows."""
        import dask

        if getattr(X, "ndim", None) != 2 or not hasattr(X, "to_delayed"):
            raise ValueError(f"X must be a 2-D dask array, got {type(X).__name__} with ndim "
                             f"{getattr(X, 'ndim', None)}.")
        if np.dtype(X.dtype).kind not in "biuf":
            raise ValueError(f"X must hold numbers, got dtype {X.dtype}.")
        client = _default_client(client)
        if X.numblocks[1] > 1:                   # a block holds whole rows
            X = X.rechunk({1: -1})
        if any(np.isnan(c) for c in X.chunks[0]):
            X = X.compute_chunk_sizes()
        starts = np.cumsum((0,) + tuple(int(c) for c in X.chunks[0]))
        rows = list(zip(starts[:-1].tolist(), starts[1:].tolist()))
        raw = client.compute([dask.delayed(_csr_block)(part, a, b) for part, (a, b)
                              in zip(X.to_delayed().ravel(), rows)])
        occurring = client.gather([client.submit(_block_occurring, block, pure=False) for block in raw],
                                  errors="raise")
        found = sorted_unique(np.concatenate(occurring)) if occurring else np.zeros(0, dtype=np.int64)
        columns = None if found.shape[0] == X.shape[1] else found.astype(np.int64)
        if columns is None:
            blocks = raw
        else:                                     # renumbered where the block is; raw blocks are freed
            shared = client.scatter(columns, broadcast=True, hash=False)
            blocks = [client.submit(select_columns, block, shared, pure=False) for block in raw]
        return cls(client, blocks, rows, X.shape[1], columns)

    def _run(self, fn: Any, *per_block: Any) -> list[Any]:
        """fn(block, *args_for_that_block) on every block's worker; the results in block order."""
        futures = [self.client.submit(fn, b, *(args[i] for args in per_block), pure=False)
                   for i, b in enumerate(self.blocks)]
        out = []
        for i, future in enumerate(futures):
            try:
                out.append(future.result())
            except Exception as exc:               # a lost block or a failed task: no partial model
                raise RuntimeError(f"row block {i} (rows {self.rows[i][0]}-{self.rows[i][1]}) failed on the "
                                   f"cluster: {type(exc).__name__}: {exc}") from exc
        self._passes[0] += 1
        return out

    # -- the interface of structfs.solvers.data -----------------------------------------------
    def occurring_columns(self) -> np.ndarray | None:
        """Original indices of the columns that occur (the blocks' numbering), None when all do."""
        return None if self.compact else self.columns

    def compacted(self) -> DaskRowBlocks:
        """The view in the blocks' own (compact) numbering, which the products use."""
        if self.compact or self.columns is None:
            return self
        return DaskRowBlocks(self.client, self.blocks, self.rows, self.n_features, self.columns, True, self._passes)

    def rmatvec(self, v: np.ndarray) -> np.ndarray:
        v = np.asarray(v, dtype=np.float64)
        out = np.zeros(self.n_columns)
        for cols, values in self._run(_block_rmatvec, [v[a:b] for a, b in self.rows]):
            out[cols] += values
        return out

    def matvec(self, w: np.ndarray) -> np.ndarray:
        """X w; only w's nonzeros travel to the workers (w spans every column, the model a few)."""
        w = np.asarray(w, dtype=np.float64)
        nonzero = np.flatnonzero(w)
        return np.concatenate(self._run(_block_matvec, [(nonzero, w[nonzero])] * len(self.blocks)))

    def take_columns(self, cols: np.ndarray) -> Any:
        cols = np.asarray(cols, dtype=np.int64)
        parts = self._run(_block_columns, [cols] * len(self.blocks))
        return sp.vstack(parts, format="csc") if parts else sp.csc_matrix((0, cols.shape[0]))

    def __repr__(self) -> str:
        return f"DaskRowBlocks({self.shape[0]} x {self.shape[1]} in {len(self.blocks)} blocks)"


def _default_client(client: Any) -> Any:
    if client is not None:
        return client
    from distributed import default_client

    try:
        return default_client()
    except ValueError:
        raise ValueError("client is None and no dask.distributed Client is running; start one "
                         "(distributed.Client(...)) or pass client=.") from None


def _csr_block(part: Any, start: int, stop: int) -> Any:
    """A dask array chunk (rows start..stop) as float64 CSR, checked."""
    block = sp.csr_matrix(part, dtype=np.float64)
    if not np.isfinite(block.data).all():
        raise ValueError(f"X's rows {start}-{stop} hold NaN or infinite values; structfs needs finite features.")
    check_magnitude(block, f"X's rows {start}-{stop}")
    block.sum_duplicates()
    return block


def _block_occurring(block: Any) -> np.ndarray:
    return sorted_unique(block.indices)


def _load_shard(path: str, i: int) -> Any:
    shards = ShardedMatrix(path, True)
    _, indptr, indices, data = shards.shard_arrays(i)      # checked as on the client, then copied into memory
    return sp.csr_matrix((np.array(data, dtype=np.float64), np.array(indices), np.array(indptr)),
                         shape=(indptr.shape[0] - 1, shards.n_columns))


def _block_rmatvec(block: Any, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    product = np.asarray(block.T @ v).ravel()
    cols = np.flatnonzero(product)
    return cols, product[cols]


def _block_matvec(block: Any, weights: Any) -> np.ndarray:
    columns, values = weights
    return np.asarray(block[:, columns] @ values).ravel()


def _block_columns(block: Any, cols: np.ndarray) -> Any:
    return sp.csr_matrix(block[:, cols])
