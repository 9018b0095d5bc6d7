"""What a hostile user tries: rows read twice, huge values, partial writes, tie order, half-failed
refits, copied shard directories, malformed files. Each test failed on the code before its fix."""
import itertools
import json
import os
import resource
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import dump_svmlight_file, load_svmlight_file
from sklearn.exceptions import NotFittedError

from structfs import StructSVM, StructSVMCV, load_model, metrics, save_model
from structfs.cli import main
from structfs.mil import MILESClassifier
from structfs.shards import ShardedMatrix, svmlight_to_shards, write_shards


def _problem(n=120, m=8, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, m))
    return X, np.where(X[:, 0] + 0.5 * X[:, 1] > 0.6, 1, -1)


# -- 1. converting a file never reads a row twice ------------------------------------------------------
def test_a_line_longer_than_a_shard_is_read_once(tmp_path):
    source = tmp_path / "a.svm"
    source.write_text("1 1:1 2:1 3:1\n-1 1:-1\n")
    X = svmlight_to_shards(source, tmp_path / "a.sh", shard_bytes=4)
    assert X.shape == (2, 3)
    assert np.array_equal(X.y, [1.0, -1.0])


@settings(max_examples=30, deadline=None)
@given(shard_bytes=st.integers(1, 400), seed=st.integers(0, 1000))
def test_any_shard_size_converts_to_the_same_rows(tmp_path_factory, shard_bytes, seed):
    rng = np.random.default_rng(seed)
    X = sp.random(30, 12, density=rng.uniform(0.05, 0.9), random_state=seed, format="csr")
    y = np.where(rng.random(30) < 0.4, 1, -1)
    root = tmp_path_factory.mktemp("conv")
    dump_svmlight_file(X, y, str(root / "x.svm"), zero_based=False)
    shards = svmlight_to_shards(root / "x.svm", root / "d", shard_bytes=shard_bytes)
    ref, ref_y = load_svmlight_file(str(root / "x.svm"), zero_based=False)
    assert shards.shape[0] == 30 and np.array_equal(shards.y, ref_y)
    w = rng.normal(size=ref.shape[1])
    assert np.allclose(shards.dot(np.arange(ref.shape[1]), w), ref @ w)


# -- 2. values whose squares overflow are refused before any work ----------------------------------------
def test_huge_values_are_refused_up_front(tmp_path):
    X, y = _problem()
    X[3, 1] = 1e160
    for estimator in (StructSVM(), StructSVM(budget=2), StructSVMCV()):
        with pytest.raises(ValueError, match="magnitude 1e\\+160.*[Ss]cale"):
            estimator.fit(X, y)
    bags = [X[i:i + 3] for i in range(0, 60, 3)]
    with pytest.raises(ValueError, match="bag 1 .*magnitude"):
        MILESClassifier().fit(bags, np.arange(20) % 2)
    source = tmp_path / "h.svm"
    source.write_text("1 1:1e160 2:3e159\n-1 1:-2e160\n1 1:5e159 2:1e160\n-1 2:-1e160\n")
    assert main(["train", str(source), str(tmp_path / "m.json")]) == 1
    assert not (tmp_path / "m.json").exists()


# -- 3. writes are atomic ----------------------------------------------------------------------------
def _run_with_file_limit(args, limit_bytes):
    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))
    return subprocess.run([sys.executable, "-m", "structfs", *args], preexec_fn=limit, capture_output=True,
                          text=True, timeout=300)


@pytest.mark.slow
def test_a_write_cut_short_leaves_the_previous_file(tmp_path):
    X, y = _problem(n=3000)
    dump_svmlight_file(X, y, str(tmp_path / "big.svm"), zero_based=False)
    dump_svmlight_file(X[:50], y[:50], str(tmp_path / "small.svm"), zero_based=False)
    assert main(["train", "-v", "0", str(tmp_path / "small.svm"), str(tmp_path / "m.json")]) == 0
    (tmp_path / "prev.txt").write_text("previous predictions\n")
    result = _run_with_file_limit(["predict", str(tmp_path / "big.svm"), str(tmp_path / "m.json"),
                                   str(tmp_path / "prev.txt")], 8192)
    assert result.returncode != 0 and result.stderr.count("\n") == 1
    assert (tmp_path / "prev.txt").read_text() == "previous predictions\n"
    before = (tmp_path / "m.json").read_text()
    result = _run_with_file_limit(["train", "-v", "0", "-B", "2", "--max-outer", "1", str(tmp_path / "small.svm"),
                                   str(tmp_path / "m.json")], 16)
    assert result.returncode != 0
    assert (tmp_path / "m.json").read_text() == before
    assert sorted(os.listdir(tmp_path)) == ["big.svm", "m.json", "prev.txt", "small.svm"]   # no temporary left


def test_save_model_failing_midway_keeps_the_old_model(tmp_path, monkeypatch):
    X, y = _problem()
    model = StructSVM(C=10.0).fit(X, y)
    save_model(model, tmp_path / "m.json")
    before = (tmp_path / "m.json").read_bytes()

    def full_disk(fd):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(OSError, match="No space"):
        save_model(StructSVM(C=99.0).fit(X, y), tmp_path / "m.json")
    assert (tmp_path / "m.json").read_bytes() == before and os.listdir(tmp_path) == ["m.json"]


# -- 4. ranking measures do not depend on the order of tied scores --------------------------------------
def test_tied_scores_give_the_same_measure_in_any_order():
    assert metrics.prbep([1, -1], [0, 0]) == metrics.prbep([-1, 1], [0, 0]) == 50.0
    assert metrics.precision_at_k([1, -1, -1], [0, 0, 0], k=1) == pytest.approx(100 / 3)


@settings(max_examples=200, deadline=None)
@given(labels=st.lists(st.booleans(), min_size=2, max_size=7), levels=st.integers(1, 3), data=st.data())
def test_top_k_measures_average_every_order_of_the_ties(labels, levels, data):
    y = np.where(labels, 1, -1)
    if not (y > 0).any():
        y[0] = 1
    s = np.array(data.draw(st.lists(st.integers(0, levels), min_size=len(y), max_size=len(y))), dtype=float)
    k = data.draw(st.integers(1, len(y)))
    brute = []                  # every order of the examples, the measure with ties broken by position
    for perm in itertools.permutations(range(len(y))):
        order = sorted(perm, key=lambda i: -s[i])           # stable: ties in the permutation's order
        brute.append(np.mean(y[order[:k]] > 0) * 100)
    assert metrics.precision_at_k(y, s, k=k) == pytest.approx(np.mean(brute))
    perm = np.random.default_rng(len(y)).permutation(len(y))
    assert metrics.prbep(y[perm], s[perm]) == pytest.approx(metrics.prbep(y, s))


# -- 5. a failed or interrupted fit leaves the estimator as it was --------------------------------------
def test_a_failed_refit_keeps_the_old_model():
    X, y = _problem()
    est = StructSVM(C=10.0).fit(X, y)
    before = est.predict(X[:5]).copy()
    with pytest.raises(ValueError):
        est.set_params(loss="prec@k", loss_params={"k": 10 ** 6}).fit(X, np.where(y > 0, "spam", "ham"))
    assert np.array_equal(est.classes_, [-1, 1]) and np.array_equal(est.predict(X[:5]), before)


def test_an_interrupted_first_fit_is_not_fitted(monkeypatch):
    from structfs.solvers import Solver

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(Solver, "path", interrupted)
    X, y = _problem()
    est = StructSVM()
    with pytest.raises(KeyboardInterrupt):
        est.fit(X, y)
    with pytest.raises(NotFittedError):
        est.predict(X)


# -- 6. shard directories: integrity by content ----------------------------------------------------------
@pytest.fixture
def shard_dir(tmp_path):
    X, y = _problem(n=300)
    write_shards(sp.csr_matrix(X), y, tmp_path / "d", rows_per_shard=100)
    return tmp_path / "d", X


@pytest.mark.parametrize("how", ["cp", "tar", "rsync"])
def test_a_copied_shard_directory_stays_valid(shard_dir, tmp_path, how):
    path, X = shard_dir
    copy = tmp_path / "copy"
    if how == "cp":
        subprocess.run(["cp", "-r", str(path), str(copy)], check=True)
    elif how == "tar":
        with tarfile.open(tmp_path / "d.tar", "w") as tar:
            tar.add(path, arcname="copy")
        with tarfile.open(tmp_path / "d.tar") as tar:
            tar.extractall(tmp_path, filter="data")
    else:
        if shutil.which("rsync") is None:
            pytest.skip("rsync is not installed")
        subprocess.run(["rsync", "-a", f"{path}/", str(copy)], check=True)
    w = np.arange(X.shape[1], dtype=float)
    assert np.allclose(ShardedMatrix(copy).dot(np.arange(X.shape[1]), w), X @ w)


def test_a_one_byte_edit_is_refused(shard_dir):
    path, X = shard_dir
    target = path / "shard-00001.data.npy"
    stamp = os.stat(target)
    raw = bytearray(target.read_bytes())
    raw[-3] ^= 0x01
    target.write_bytes(bytes(raw))
    os.utime(target, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))     # same size, same time
    with pytest.raises(ValueError, match="shard-00001.*checksum"):
        ShardedMatrix(path).dot(np.arange(X.shape[1]), np.ones(X.shape[1]))


# -- 7. one line, never a traceback ----------------------------------------------------------------------
def test_deeply_nested_json_is_one_error(shard_dir, tmp_path):
    nested = "[" * 100_000 + "]" * 100_000
    (tmp_path / "m.json").write_text(nested)
    with pytest.raises(ValueError, match="not a structfs model file"):
        load_model(tmp_path / "m.json")
    path, _ = shard_dir
    (path / "manifest.json").write_text(nested)
    with pytest.raises(ValueError, match="manifest.json is unreadable"):
        ShardedMatrix(path)


@pytest.mark.slow                   # compiles every kernel again (about 30 s)
def test_structfs_imports_where_numba_can_keep_no_cache():
    code = ("import numba.core.caching as c; c.CacheImpl._locator_classes = []\n"
            "import numpy as np, structfs\n"
            "X = np.random.default_rng(0).normal(size=(40, 4)); y = np.where(X[:, 0] > 0, 1, -1)\n"
            "print(structfs.StructSVM(budget=2).fit(X, y).score(X, y))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr


def structfs_root():
    import structfs

    return os.path.dirname(structfs.__file__)


def test_a_corrupt_numba_cache_file_is_compiled_again_with_one_warning(tmp_path):
    """A truncated index or data file in the cache beside the package (as a wheel carries it) is a cache
    miss: the kernel compiles, a warning names the file, and the next process loads the rewritten cache."""
    package = tmp_path / "structfs"
    shutil.copytree(Path(structfs_root()), package, ignore=shutil.ignore_patterns("__pycache__"))
    code = "import numpy as np; from structfs._jit import argsort; print(argsort(np.arange(5.0)[::-1]).tolist())"
    environment = {key: value for key, value in os.environ.items() if key != "NUMBA_CACHE_DIR"}
    environment["PYTHONPATH"] = str(tmp_path)

    def run():
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environment,
                             cwd=tmp_path, timeout=300)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "[4, 3, 2, 1, 0]"
        return out.stderr

    run()                                                  # compiles and fills the cache
    for pattern in ("_jit.argsort-*.nbi", "_jit.argsort-*.nbc"):
        for path in (package / "__pycache__").glob(pattern):
            path.write_bytes(path.read_bytes()[:20])       # truncated
        err = run()
        assert err.count("could not be read") == 1, err
        assert "could not be read" not in run()            # rewritten: loaded again


def test_concurrent_writers_of_one_shard_directory(tmp_path):
    source = tmp_path / "x.svm"
    X, y = _problem(n=2000)
    dump_svmlight_file(X, y, str(source), zero_based=False)
    procs = [subprocess.Popen([sys.executable, "-m", "structfs", "shard", "-v", "0", "--shard-mb", "0.01",
                               str(source), str(tmp_path / "d")], stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    errors = [p.communicate(timeout=300)[1] for p in procs]
    codes = sorted(p.returncode for p in procs)
    assert codes[0] == 0 and all("Traceback" not in e for e in errors)
    assert all(e.count("\n") <= 1 for e in errors)
    assert ShardedMatrix(tmp_path / "d").shape[0] == 2000
    assert [p for p in os.listdir(tmp_path) if p.endswith(".tmp")] == []


# -- 8. the smaller gaps ---------------------------------------------------------------------------------
def test_a_failed_write_shards_leaves_nothing_and_a_retry_works(tmp_path):
    X, y = _problem(n=300)
    X[250, 2] = np.nan                            # in the third block
    with pytest.raises(ValueError, match="finite"):
        write_shards(X, y, tmp_path / "d", rows_per_shard=100)
    assert os.listdir(tmp_path) == []
    X[250, 2] = 0.0
    assert write_shards(X, y, tmp_path / "d", rows_per_shard=100).shape == (300, 8)


def _model_doc(tmp_path):
    X, y = _problem()
    save_model(StructSVM(C=10.0).fit(X, y), tmp_path / "m.json")
    return json.loads((tmp_path / "m.json").read_text())


@pytest.mark.parametrize("edit, match", [
    (lambda d: d.update(classes=[1, 1.0]), "classes"),
    (lambda d: d.update(classes=[1, "1"]), "classes"),
    (lambda d: d["models"][0].update(objective="12"), "objective"),
    (lambda d: d.update(format_version=True), "version"),
    (lambda d: d["models"][0].update(values=[1e308] * len(d["models"][0]["values"])), "values"),
    (lambda d: d["models"][0].update(indices=[2 ** 64] + d["models"][0]["indices"][1:]), "indices"),
    (lambda d: d["params"].update(max_iter=2 ** 70), "max_iter"),
])
def test_model_file_fields_are_checked(tmp_path, edit, match):
    doc = _model_doc(tmp_path)
    edit(doc)
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=match):
        load_model(tmp_path / "bad.json")


def test_a_nested_estimator_class_is_checked(tmp_path):
    from structfs import OneVsRestStructSVM

    X, y = _problem()
    save_model(OneVsRestStructSVM(estimator=StructSVM(C=10.0)).fit(X, np.arange(len(y)) % 3), tmp_path / "m.json")
    doc = json.loads((tmp_path / "m.json").read_text())
    doc["params"]["estimator"]["class"] = "LogisticRegression"
    (tmp_path / "m.json").write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="estimator.class"):
        load_model(tmp_path / "m.json")


def test_model_paths_that_are_not_regular_files_are_refused(tmp_path):
    with pytest.raises(ValueError, match="not a regular file"):
        load_model("/dev/zero")
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(ValueError, match="not a regular file"):
        load_model(tmp_path / "fifo")


def test_cli_options_are_checked_before_the_data_are_read(tmp_path, capsys):
    source = tmp_path / "x.svm"
    source.write_text("1 1:1\n" * 10 + "oops\n")          # would fail to parse, at its end
    assert main(["train", "-c", "-1", str(source), str(tmp_path / "m.json")]) == 1
    assert "'C' parameter" in capsys.readouterr().err
    assert main(["path", str(source), "--plot", str(tmp_path / "missing" / "x.png")]) == 1
    assert "no such directory" in capsys.readouterr().err
    assert main(["shard", "--shard-mb", "1e-9", str(source), str(tmp_path / "d")]) == 1
    assert "--shard-mb must be at least one byte" in capsys.readouterr().err


@pytest.mark.parametrize("text, match", [
    ("1 1:1\n-1 1:2 2:nan\n", "line 2: the value 'nan' of feature 2 is not finite"),
    ("1 1:1\n-1 1:1\n1 2:1 2:3\n", "line 3: feature index 2 after 2"),
    ("1 1:1\n-1 3:1 2:1\n", "line 2: feature index 2 after 3"),
    ("1 1:1\ninf 1:1\n", "line 2: the label 'inf' is not finite"),
])
def test_svmlight_errors_name_the_line(tmp_path, capsys, text, match):
    source = tmp_path / "x.svm"
    source.write_text(text)
    assert main(["train", str(source), str(tmp_path / "m.json")]) == 1
    assert match in capsys.readouterr().err
    with pytest.raises(ValueError, match=match):
        svmlight_to_shards(source, tmp_path / "d", shard_bytes=3)


def test_a_budget_covering_every_feature_on_shards_says_so(shard_dir):
    path, X = shard_dir
    shards = ShardedMatrix(path)
    with pytest.raises(ValueError, match="budget=8 \\(covering all 8 features\\)"):
        StructSVM(budget=8).fit(shards, shards.y)


def test_atomically_written_files_get_the_usual_permissions(tmp_path):
    X, y = _problem()
    save_model(StructSVM(C=10.0).fit(X, y), tmp_path / "m.json")
    (tmp_path / "plain").write_text("x")
    assert os.stat(tmp_path / "m.json").st_mode & 0o777 == os.stat(tmp_path / "plain").st_mode & 0o777
