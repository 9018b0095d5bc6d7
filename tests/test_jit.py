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
