"""Out-of-core data (structfs.shards): the same model as in memory, and every damaged shard refused
with its name."""
import json
import os

import numpy as np
import pytest
import scipy.sparse as sp

from structfs import StructSVM
from structfs._files import sha256_of_file
from structfs.shards import ShardedMatrix, ShardWriter, is_shard_directory, svmlight_to_shards, write_shards


def _problem(n=300, m=60, seed=0, informative=4, unused=(7, 31, 59)):
    """Sparse data with some columns that never occur (the shards store them compactly)."""
    rng = np.random.default_rng(seed)
    X = sp.random(n, m, density=0.15, random_state=seed, format="csr")
    keep = np.ones(m)
    keep[list(unused)] = 0.0
    X = (X @ sp.diags(keep)).tocsr()
    X.eliminate_zeros()
    w = np.zeros(m)
    w[:informative] = 3.0
    z = X @ w + 0.1 * rng.normal(size=n)
    return X, np.where(z > np.quantile(z, 0.8), 1, -1)


@pytest.mark.parametrize("loss", ["error", "f1"])
def test_fit_on_shards_equals_the_in_memory_fit(tmp_path, loss):
    X, y = _problem()
    shards = write_shards(X, y, tmp_path / "d", rows_per_shard=70)       # 5 shards, the last one short
    assert shards.shape == X.shape and shards.n_shards == 5 and shards.nnz == X.nnz
    assert np.array_equal(shards.y, y)
    params = dict(loss=loss, C=100.0, budget=3, max_outer=5, refit=300.0)
    ref = StructSVM(**params).fit(X, y)
    disk = StructSVM(**params).fit(shards, shards.y)
    assert np.array_equal(disk.selected_features_, ref.selected_features_)
    assert disk.objective_ == pytest.approx(ref.objective_, rel=1e-9)
    assert np.allclose(disk.coef_, ref.coef_, rtol=1e-9, atol=1e-12)
    assert np.allclose(disk.decision_function(shards), ref.decision_function(X), rtol=1e-9, atol=1e-12)
    assert np.array_equal(disk.predict(shards), ref.predict(X))
    assert shards.passes > 0


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_products_match_scipy(tmp_path, dtype):
    X, y = _problem(seed=1)
    X = X.astype(dtype)
    shards = write_shards(X, y, tmp_path / "d", rows_per_shard=64)
    assert shards.dtype == dtype
    compact = shards.compacted()
    columns = shards.occurring_columns()
    Xc = X[:, columns]
    assert compact.shape == Xc.shape
    v = np.random.default_rng(0).normal(size=X.shape[0])
    assert np.allclose(compact.rmatvec(v), Xc.T @ v)
    w = np.random.default_rng(1).normal(size=Xc.shape[1])
    assert np.allclose(compact.matvec(w), Xc @ w)
    cols = np.array([0, 5, 17, Xc.shape[1] - 1])
    assert (compact.take_columns(cols) != Xc[:, cols]).nnz == 0
    with pytest.raises(ValueError, match="compact"):
        shards.rmatvec(v)


def test_unbudgeted_fit_on_shards_is_refused(tmp_path):
    X, y = _problem()
    shards = write_shards(X, y, tmp_path / "d")
    with pytest.raises(ValueError, match="budget"):
        StructSVM().fit(shards, shards.y)
    with pytest.raises(ValueError, match="labels"):
        StructSVM(budget=2).fit(shards, shards.y[:-1])


def test_svmlight_conversion_streams_in_pieces(tmp_path):
    from sklearn.datasets import dump_svmlight_file

    X, y = _problem(seed=2)
    source = tmp_path / "train.dat"
    dump_svmlight_file(X, y, str(source), zero_based=False)
    shards = svmlight_to_shards(source, tmp_path / "d", shard_bytes=2000)
    assert shards.n_shards > 3 and is_shard_directory(tmp_path / "d")
    compact = shards.compacted()
    columns = shards.occurring_columns()
    # the file's largest index is the index space (SVMlight files do not say how many features there are)
    assert shards.shape == (X.shape[0], columns[-1] + 1)
    dense = compact.take_columns(np.arange(compact.shape[1])).toarray()
    assert np.allclose(dense, X[:, columns].toarray())
    assert np.array_equal(shards.y, y)


def test_repeated_cells_are_summed_without_touching_the_callers_matrix(tmp_path):
    X = sp.csr_matrix((np.array([1.0, 2.0, 3.0]), np.array([2, 2, 0]), np.array([0, 2, 3])), shape=(2, 4))
    before = (X.data.copy(), X.indices.copy(), X.indptr.copy())
    writer = ShardWriter(tmp_path / "d")
    writer.append(X, [1, -1])
    shards = writer.close()
    assert all(np.array_equal(a, b) for a, b in zip(before, (X.data, X.indices, X.indptr)))
    assert np.array_equal(shards.compacted().take_columns(np.arange(2)).toarray(), [[0.0, 3.0], [3.0, 0.0]])


def test_an_existing_directory_is_never_overwritten(tmp_path):
    X, y = _problem()
    write_shards(X, y, tmp_path / "d")
    with pytest.raises(ValueError, match="not an empty directory"):
        write_shards(X, y, tmp_path / "d")


def _shards(tmp_path):
    X, y = _problem()
    write_shards(X, y, tmp_path / "d", rows_per_shard=100)
    return tmp_path / "d"


def test_a_truncated_or_missing_shard_is_named(tmp_path):
    path = _shards(tmp_path)
    target = path / "shard-00001.data.npy"
    target.write_bytes(target.read_bytes()[:-16])
    with pytest.raises(ValueError, match="shard-00001.*truncated"):
        ShardedMatrix(path)
    os.remove(target)
    with pytest.raises(ValueError, match="shard-00001.*missing"):
        ShardedMatrix(path)


def test_a_shard_changed_between_passes_is_named(tmp_path):
    path = _shards(tmp_path)
    shards = ShardedMatrix(path).compacted()
    shards.rmatvec(np.ones(shards.shape[0]))
    target = path / "shard-00002.data.npy"
    data = np.load(target)
    np.save(target, data * 2)                  # same size, new contents
    with pytest.raises(ValueError, match="shard-00002.*checksum"):
        shards.rmatvec(np.ones(shards.shape[0]))


def test_a_shard_edited_between_passes_keeping_size_and_time_is_named(tmp_path):
    """An edit between two passes of one fit that keeps the file's size and modification time: the
    second pass must not use the new values."""
    path = _shards(tmp_path)
    shards = ShardedMatrix(path).compacted()
    v = np.ones(shards.shape[0])
    first = shards.rmatvec(v)
    assert np.array_equal(shards.rmatvec(v), first)            # unchanged: every pass agrees
    target = path / "shard-00002.data.npy"
    stamp = os.stat(target)
    data = np.load(target)
    np.save(target, data * 2)
    os.utime(target, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    with pytest.raises(ValueError, match="shard-00002.*changed since the previous pass"):
        shards.rmatvec(v)


def _edit_manifest(path, edit, forge_digest=False):
    meta = json.loads((path / "manifest.json").read_text())
    edit(meta)
    if forge_digest:
        from structfs.shards import _digest
        meta["digest"] = _digest(meta)
    (path / "manifest.json").write_text(json.dumps(meta))


@pytest.mark.parametrize("edit, match", [
    (lambda m: m.update(labels=[-1.0, 1.0, 2.0]), "labels"),
    (lambda m: m.update(n_samples=m["n_samples"] + 1), "n_samples"),
    (lambda m: m.update(n_features="60"), "n_features"),
    (lambda m: m["shards"][1].update(name=m["shards"][0]["name"]), "repeated"),
    (lambda m: m.update(version=99), "version"),
    (lambda m: m["shards"][0]["files"].pop("y"), "files"),
])
def test_a_damaged_manifest_is_refused_naming_the_field(tmp_path, edit, match):
    path = _shards(tmp_path)
    _edit_manifest(path, edit)
    with pytest.raises(ValueError, match=match):
        ShardedMatrix(path)


def test_out_of_range_indices_are_named_on_first_read(tmp_path):
    path = _shards(tmp_path)
    target = path / "shard-00000.indices.npy"
    stamp = os.stat(target)
    indices = np.load(target)
    indices[3] = 10 ** 6                       # an index beyond the compact columns
    np.save(target, indices)
    os.utime(target, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    # a manifest rewritten to match (a checksum guards against accidents, not forgery): the arrays are
    # still checked
    _edit_manifest(path, lambda m: m["shards"][0]["files"]["indices"].update(sha256=sha256_of_file(target)),
                   forge_digest=True)
    shards = ShardedMatrix(path).compacted()
    with pytest.raises(ValueError, match="shard-00000.*inconsistent"):
        shards.rmatvec(np.ones(shards.shape[0]))


def test_mixed_label_sets_are_refused_when_writing(tmp_path):
    X, y = _problem()
    writer = ShardWriter(tmp_path / "d")
    writer.append(X[:100], y[:100])
    with pytest.raises(ValueError, match="shard-00001.*labels"):
        writer.append(X[100:], np.where(y[100:] > 0, 1, 0))      # 0/1 after -1/+1


def test_a_failed_conversion_names_the_file_and_leaves_nothing_behind(tmp_path):
    good, zero_based, other_labels = tmp_path / "a.svm", tmp_path / "b.svm", tmp_path / "c.svm"
    good.write_text("1 1:1 3:2\n-1 2:1\n")
    zero_based.write_text("1 0:1 3:2\n-1 2:1\n")
    other_labels.write_text("2 1:1 3:2\n0 2:1\n")
    with pytest.raises(ValueError, match="b.svm.*1-based"):
        svmlight_to_shards([good, zero_based], tmp_path / "d1")
    with pytest.raises(ValueError, match="shard-00001.*c.svm.*labels"):
        svmlight_to_shards([good, other_labels], tmp_path / "d2")
    assert not (tmp_path / "d1").exists() and not (tmp_path / "d2").exists()


def test_an_edited_manifest_is_refused(tmp_path):
    path = _shards(tmp_path)
    _edit_manifest(path, lambda m: m.update(n_features=m["n_features"] + 1))    # consistent, but not written so
    with pytest.raises(ValueError, match="digest"):
        ShardedMatrix(path)


def test_a_group_budget_trains_from_shards_as_in_memory(tmp_path):
    X = sp.random(400, 30, density=0.2, random_state=0, format="csr")
    y = (np.asarray(X[:, 3].todense()).ravel() + np.asarray(X[:, 4].todense()).ravel() > 0.3).astype(int)
    groups = np.repeat(np.arange(10), 3)
    disk = write_shards(X, y, tmp_path / "s", rows_per_shard=100)
    memory = StructSVM(C=100.0, budget=2, groups=groups, max_outer=3).fit(X, y)
    shards = StructSVM(C=100.0, budget=2, groups=groups, max_outer=3).fit(disk, disk.y)
    assert np.array_equal(memory.selected_groups_, shards.selected_groups_)
    assert shards.objective_ == pytest.approx(memory.objective_, rel=1e-9)


@pytest.mark.parametrize("value", ["1e125", "-3e101"])
def test_both_svmlight_readers_refuse_a_value_no_estimator_takes(tmp_path, value):
    """The whole-file reader and the chunked one apply one rule: a value beyond 1e100 is refused by both,
    naming the line (a fuzz run found the first accepting what the second refused)."""
    from structfs.svmlight import load_svmlight

    path = tmp_path / "big.svm"
    path.write_text(f"1 1:0.5\n-1 2:{value}\n")
    with pytest.raises(ValueError, match="line 2: .*beyond 1e\\+100"):
        load_svmlight(path)
    with pytest.raises(ValueError, match="line 2: .*beyond 1e\\+100"):
        svmlight_to_shards(path, tmp_path / "d")


def test_a_row_blocks_subclass_fits_as_the_matrix_it_holds():
    """RowBlocks is the whole contract with the solver: a minimal subclass over an in-memory matrix
    (its own passes, its own compact view) gives the model of the matrix itself, and predicts
    through the default ``dot``."""
    from sklearn.datasets import make_classification

    from structfs import StructSVM
    from structfs.solvers.data import RowBlocks, occurring_columns, select_columns

    class InMemory(RowBlocks):
        def __init__(self, X, compact=False):
            self.X, self.compact, self.shape = sp.csr_matrix(X), compact, X.shape

        def rmatvec(self, v):
            return np.asarray(self.X.T @ v).ravel()

        def matvec(self, w):
            return np.asarray(self.X @ w).ravel()

        def take_columns(self, cols):
            return sp.csc_matrix(self.X[:, cols])

        def occurring_columns(self):
            return None if self.compact else occurring_columns(self.X)

        def compacted(self):
            columns = self.occurring_columns()
            return self if columns is None else InMemory(select_columns(self.X, columns), compact=True)

    X, y = make_classification(150, 12, n_informative=4, random_state=1)
    X[:, 5] = 0.0                                       # a column that never occurs
    on_blocks = StructSVM(budget=3, C=10.0).fit(InMemory(X), y)
    in_memory = StructSVM(budget=3, C=10.0).fit(sp.csr_matrix(X), y)
    assert np.array_equal(on_blocks.selected_features_, in_memory.selected_features_)
    assert abs(on_blocks.objective_ - in_memory.objective_) <= 10.0 * in_memory.tol
    assert np.allclose(on_blocks.decision_function(InMemory(X)), on_blocks.decision_function(X))
