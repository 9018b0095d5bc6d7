"""The notice of a first compilation: said once, on stderr, for structfs's own kernels only; and the kernels
that the wheel carries, compiled when it is built."""
import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path
from types import SimpleNamespace

import numba
import pytest

from structfs import _jit


def test_a_structfs_compilation_is_announced_once(capsys, monkeypatch):
    monkeypatch.setattr(_jit._CompileNotice, "announced", False)
    notice = _jit._CompileNotice()
    other = numba.njit(lambda x: x)                       # not structfs's: no notice
    notice.on_start(SimpleNamespace(data={"dispatcher": other}))
    assert capsys.readouterr().err == ""
    ours = SimpleNamespace(data={"dispatcher": _jit.sort_in_place})
    notice.on_start(ours)
    notice.on_start(ours)
    err = capsys.readouterr().err
    assert err.count("compiling its numba kernels") == 1 and "structfs compile" in err


def test_another_librarys_kernel_without_a_module_is_passed_over(capsys, monkeypatch):
    """Some libraries' kernels (skglm's) have ``__module__`` None: the notice must not raise on them."""
    monkeypatch.setattr(_jit._CompileNotice, "announced", False)

    def kernel(x):
        return x

    kernel.__module__ = None
    _jit._CompileNotice().on_start(SimpleNamespace(data={"dispatcher": numba.njit(kernel)}))
    assert capsys.readouterr().err == ""


def test_an_object_mode_block_is_not_news(capsys, monkeypatch):
    monkeypatch.setattr(_jit._CompileNotice, "announced", False)
    _jit._CompileNotice().on_start(SimpleNamespace(data={"dispatcher": object()}))
    assert capsys.readouterr().err == ""


@pytest.mark.slow
def test_the_wheel_carries_the_compiled_kernels_and_a_first_fit_compiles_nothing(tmp_path):
    """`pip wheel` of the repository compiles the kernels into the wheel (setup.py's build hook); a new
    process that imports structfs from the unpacked wheel -- new paths, new file times, no numba cache
    elsewhere -- fits on sparse and dense data, with budgets over features and over groups (the Python
    driver's masters), without compiling anything (no notice on stderr)."""
    root = Path(__file__).resolve().parents[1]
    wheels, site = tmp_path / "wheels", tmp_path / "site"
    environment = {key: value for key, value in os.environ.items() if key not in ("NUMBA_CACHE_DIR", "PYTHONPATH")}
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(root)],
                   check=True, env=environment, capture_output=True, timeout=1800)
    (wheel,) = wheels.glob("structfs-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        assert any(name.startswith("structfs/solvers/__pycache__/compiled_loop._loop-") and name.endswith(".nbi")
                   for name in names)
        archive.extractall(site)
    fit = textwrap.dedent("""
        import numpy as np, scipy.sparse as sp, structfs
        from structfs import StructSVM
        assert structfs.__file__.startswith(SITE), structfs.__file__
        rng = np.random.default_rng(0)
        X = rng.normal(size=(400, 30)); y = (X[:, 0] + rng.normal(size=400) > 1).astype(int)
        for data in (X, sp.csr_matrix(X)):
            StructSVM(loss="f1", C=10.0).fit(data, y)
            StructSVM(loss="f1", C=10.0, budget=3).fit(data, y)
            StructSVM(loss="f1", C=10.0, budget=2, groups=np.repeat(np.arange(15), 2)).fit(data, y)
    """).replace("SITE", repr(str(site)))
    out = subprocess.run([sys.executable, "-c", fit], env={**environment, "PYTHONPATH": str(site)}, cwd=tmp_path,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert "compiling" not in out.stderr, out.stderr


def _package(root, files):
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text))


def test_the_cache_key_covers_the_files_a_kernel_can_come_from(tmp_path):
    """sources_stamp: the kernel files and the package's files they import from, transitively (a constant
    read at compile time is frozen into the machine code as a callee is); not the other files."""
    _package(tmp_path, {
        "__init__.py": "",
        "kernels.py": "from ._jit import njit\nfrom .helpers import SCALE\nfrom .. import outside\n",
        "_jit.py": "njit = None\n",
        "helpers.py": "from . import constants\nSCALE = 2.0\n",
        "constants.py": "TOL = 1e-9\n",
        "estimators.py": "from .kernels import compute\n",
        "sub/__init__.py": "",
        "sub/more.py": "from ..constants import TOL  # njit\n",
    })
    stamp = _jit.sources_stamp(tmp_path)
    assert _jit.sources_stamp(tmp_path) == stamp                       # deterministic
    (tmp_path / "estimators.py").write_text("from .kernels import compute\n# edited\n")
    assert _jit.sources_stamp(tmp_path) == stamp                       # no kernel's machine code comes from it
    for name in ("kernels.py", "helpers.py", "constants.py", "sub/more.py", "_jit.py"):
        before = _jit.sources_stamp(tmp_path)
        (tmp_path / name).write_text((tmp_path / name).read_text() + "# edited\n")
        assert _jit.sources_stamp(tmp_path) != before, name


def test_structfs_kernels_are_cached_under_the_package_stamp():
    from structfs.solvers.data import compressed_dot

    cache_file = compressed_dot._cache._cache_file
    assert cache_file._source_stamp == _jit.sources_stamp(Path(_jit.__file__).resolve().parent)


@pytest.mark.slow
def test_a_callee_changed_in_another_file_recompiles_its_callers(tmp_path):
    """A source checkout updated in place where only a callee's file changed: numba keys a kernel's cache on
    its own file, so the caller's cached machine code, which holds the old callee, used to be loaded. A
    copy of the package compiles compiled_loop._times (which calls data.py's compressed_dot_blocks) into
    its cache; data.py is then edited to double the product, and a new process must see it."""
    import shutil

    source = Path(_jit.__file__).resolve().parent
    shutil.copytree(source, tmp_path / "structfs", ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc"))
    environment = {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, "PYTHONPATH": str(tmp_path),
                   "NUMBA_CACHE_DIR": str(tmp_path / "numba_cache")}
    product = textwrap.dedent("""
        import numpy as np, scipy.sparse as sp, structfs
        from structfs.solvers.compiled_loop import _times
        assert structfs.__file__.startswith(ROOT), structfs.__file__
        X = sp.csr_matrix(np.array([[1.0, 2.0], [0.0, 3.0]]))
        rows = (X.indptr.astype(np.int64), X.indices.astype(np.int64), X.data)
        print(_times(rows, np.zeros((0, 0)), np.array([1.0, 1.0]), 1).tolist())
    """).replace("ROOT", repr(str(tmp_path)))

    def run():
        out = subprocess.run([sys.executable, "-c", product], env=environment, cwd=tmp_path, capture_output=True,
                             text=True, timeout=600)
        assert out.returncode == 0, out.stderr
        return out.stdout.strip()

    assert run() == "[3.0, 3.0]"
    data_py = tmp_path / "structfs" / "solvers" / "data.py"
    text = data_py.read_text()
    old = "        return compressed_dot(indptr, indices, data, v)\n"
    assert text.count(old) == 1
    data_py.write_text(text.replace(old, "        return 2.0 * compressed_dot(indptr, indices, data, v)\n"))
    assert run() == "[6.0, 6.0]"
