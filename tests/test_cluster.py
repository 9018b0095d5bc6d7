"""One binary problem on a Dask cluster (structfs.cluster): the in-memory model, and no model from
part of the data."""
import numpy as np
import pytest
import scipy.sparse as sp

from structfs import StructSVM
from structfs.shards import write_shards

distributed = pytest.importorskip("distributed")


def _problem(n=400, m=50, seed=3):
    rng = np.random.default_rng(seed)
    X = sp.random(n, m, density=0.2, random_state=seed, format="csr")
    X = (X @ sp.diags(np.r_[np.ones(m - 5), np.zeros(5)])).tocsr()      # five columns never occur
    X.eliminate_zeros()
    w = np.zeros(m)
    w[[2, 11, 19]] = 3.0
    z = X @ w + 0.1 * rng.normal(size=n)
    return X, np.where(z > np.quantile(z, 0.75), 1, -1)


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) \
            as cluster, distributed.Client(cluster) as c:
        yield c


@pytest.mark.slow
@pytest.mark.parametrize("loss", ["error", "f1"])
def test_fit_on_a_local_cluster_equals_the_in_memory_fit(client, tmp_path, loss):
    from structfs.cluster import DaskRowBlocks

    X, y = _problem()
    params = dict(loss=loss, C=100.0, budget=3, max_outer=4)
    ref = StructSVM(**params).fit(X, y)
    write_shards(X, y, tmp_path / "d", rows_per_shard=90)
    for remote in (DaskRowBlocks.from_matrix(X, client), DaskRowBlocks.from_shards(tmp_path / "d", client)):
        assert remote.shape == X.shape
        fitted = StructSVM(**params).fit(remote, y)
        assert remote.passes > 0
        assert np.array_equal(fitted.selected_features_, ref.selected_features_)
        assert fitted.objective_ == pytest.approx(ref.objective_, rel=1e-6)
        assert np.allclose(fitted.decision_function(remote), ref.decision_function(X), rtol=1e-6, atol=1e-9)


@pytest.mark.slow
def test_a_lost_block_ends_the_fit_naming_it(client):
    from structfs.cluster import DaskRowBlocks

    X, y = _problem(seed=4)
    remote = DaskRowBlocks.from_matrix(X, client, n_blocks=3)
    client.cancel(remote.blocks[1])              # as if its worker died: scattered data cannot be recomputed
    with pytest.raises(RuntimeError, match="row block 1"):
        StructSVM(budget=2, max_outer=2).fit(remote, y)


@pytest.mark.slow
def test_a_worker_lost_mid_fit_reloads_its_shards_and_the_model_is_the_same(tmp_path):
    """Blocks loaded from shards are tasks: when a worker dies its blocks are loaded again elsewhere."""
    import os

    from structfs.cluster import DaskRowBlocks

    X, y = _problem(seed=5)
    write_shards(X, y, tmp_path / "d", rows_per_shard=100)
    ref = StructSVM(budget=2, max_outer=3).fit(X, y)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) \
            as cluster, distributed.Client(cluster) as c:
        remote = DaskRowBlocks.from_shards(tmp_path / "d", c)
        distributed.wait(remote.blocks)
        victim = next(iter(c.who_has(remote.blocks[0]).values()))[0]
        with pytest.raises(distributed.comm.core.CommClosedError):
            c.run(os._exit, 1, workers=[victim])      # the worker holding block 0 dies (no reply)
        fitted = StructSVM(budget=2, max_outer=3).fit(remote, y)
    assert np.array_equal(fitted.selected_features_, ref.selected_features_)
    assert fitted.objective_ == pytest.approx(ref.objective_, rel=1e-6)


@pytest.mark.slow
def test_a_dask_array_fits_on_the_current_client_as_in_memory(client):
    """StructSVM takes a dask array (sparse or dense chunks, chunked along columns too) and y as a
    dask array, and runs on the current client: the in-memory model."""
    da = pytest.importorskip("dask.array")
    X, y = _problem(seed=6)
    params = dict(C=100.0, budget=3, max_outer=4)
    ref = StructSVM(**params).fit(X, y)
    for remote in (da.from_array(X, chunks=(90, X.shape[1]), asarray=False),
                   da.from_array(X.toarray(), chunks=(120, 20))):
        fitted = StructSVM(**params).fit(remote, da.from_array(y, chunks=90))
        assert fitted.n_features_in_ == X.shape[1]
        assert np.array_equal(fitted.selected_features_, ref.selected_features_)
        assert fitted.objective_ == pytest.approx(ref.objective_, rel=1e-6)
        assert np.allclose(fitted.decision_function(remote), ref.decision_function(X), rtol=1e-6, atol=1e-9)


@pytest.mark.slow
def test_a_dask_array_with_a_non_finite_chunk_is_refused_naming_its_rows(client):
    da = pytest.importorskip("dask.array")
    X, y = _problem(seed=7)
    dense = X.toarray()
    dense[250, 3] = np.nan
    with pytest.raises(ValueError, match="rows 200-300"):
        StructSVM(budget=2).fit(da.from_array(dense, chunks=(100, X.shape[1])), y)


@pytest.mark.slow
def test_a_damaged_shard_names_its_own_block(client, tmp_path):
    from structfs.cluster import DaskRowBlocks

    X, y = _problem(seed=5)
    write_shards(X, y, tmp_path / "d", rows_per_shard=100)
    target = tmp_path / "d" / "shard-00002.data.npy"
    raw = bytearray(target.read_bytes())
    raw[-1] ^= 0x01                                  # same size: only the checksum tells
    target.write_bytes(bytes(raw))
    remote = DaskRowBlocks.from_shards(tmp_path / "d", client)
    with pytest.raises(RuntimeError, match="row block 2 .*shard-00002.*checksum"):
        StructSVM(budget=2, max_outer=2).fit(remote, y)
