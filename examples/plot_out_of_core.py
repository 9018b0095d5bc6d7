"""
Training from disk: data larger than memory
===========================================

A budgeted model only ever needs the selected columns in memory: the rest of the data is read in
passes. :func:`structfs.shards.write_shards` (or ``structfs shard`` on SVMlight files) writes a
*shard directory*; :class:`structfs.shards.ShardedMatrix` opens it and every estimator with a budget
trains on it as on an in-memory matrix, with the same result.
"""

# %%
import tempfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from structfs import StructSVM
from structfs.shards import ShardedMatrix, write_shards

rng = np.random.default_rng(0)
n, m, per_row = 20_000, 50_000, 25          # sparse binary rows, 25 active columns each
columns = rng.integers(0, m, size=(n, per_row))
X = sp.csr_matrix((np.ones(n * per_row), columns.ravel(), np.arange(0, n * per_row + 1, per_row)), shape=(n, m))
X.sum_duplicates()
X.data[:] = 1.0
informative = rng.choice(m, 10, replace=False)
y = np.where(np.asarray(X[:, informative].sum(axis=1)).ravel() + 0.3 * rng.standard_normal(n) > 0.5, 1, 0)
print(f"{n} rows, {m} columns, {X.nnz} nonzeros, {y.mean():.1%} positive")

# %%
# Write it as shards of 5,000 rows each, and open it.
folder = Path(tempfile.mkdtemp()) / "shards"
write_shards(X, y, folder, rows_per_shard=5_000)
X_disk = ShardedMatrix(folder)
print(f"{X_disk.shape}, {len(list(folder.iterdir()))} files on disk")

# %%
# The same model from disk and from memory:
params = dict(loss="f1", C=100.0, budget=5, max_outer=4)
from_disk = StructSVM(**params).fit(X_disk, X_disk.y)
in_memory = StructSVM(**params).fit(X, y)
print("same features:", np.array_equal(from_disk.selected_features_, in_memory.selected_features_))
print("same objective:", np.isclose(from_disk.objective_, in_memory.objective_, rtol=1e-6))
print("informative columns found:", np.isin(informative, from_disk.selected_features_).sum(), "of 10")
