"""Compile structfs's numba kernels ahead of the first fit (``structfs compile``).

numba compiles a kernel at its first call and keeps the machine code in its on-disk cache, so only the
first process after installing pays (one to two minutes on two cores); the notice printed then says so. This
module runs the fits that reach the kernels a fit uses -- every built-in loss with and without a budget,
a budget over groups, a small search, and the table search of a user's contingency loss -- on a tiny
problem, so that a first real fit, a demo or a benchmark starts warm.
"""
from __future__ import annotations

import time
import warnings
from typing import Any

import numpy as np
import scipy.sparse as sp

__all__ = ["compile_kernels", "kernels_cached"]


def kernels_cached() -> bool:
    """Whether numba's disk cache holds the compiled inner loop (the bulk of the compilation): False means
    the first fit of this process compiles."""
    from .solvers.compiled_loop import loop_is_cached

    return loop_is_cached()


def _balanced_error(a: Any, b: Any, c: Any, d: Any) -> Any:
    return 50.0 * (c / np.maximum(a + c, 1) + b / np.maximum(b + d, 1))


def compile_kernels() -> float:
    """Run tiny fits that compile (or load from numba's cache) the kernels of the common fits; return
    the seconds it took."""
    from .estimators import StructSVM
    from .losses import LOSSES, ContingencyLoss
    from .model_selection import StructSVMCV

    start = time.perf_counter()
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 12))
    y = (X[:, 0] + 0.5 * rng.normal(size=300) > 1.0).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for data in (X, sp.csr_matrix(X)):            # dense and sparse data reach different kernels
            for loss in LOSSES:
                for budget in (None, 2):
                    StructSVM(loss=loss, C=10.0, budget=budget).fit(data, y)
            # budgets over groups run the Python driver, whose masters (active set, interior point) are their
            # kernels' own entry points rather than the compiled loop's inlined copies; a search reaches them
            # too where the loop hands a master back (a first full-grid MIL search compiled them for 12 s)
            StructSVM(loss="f1", C=10.0, budget=2, groups=np.repeat(np.arange(6), 2)).fit(data, y)
        StructSVMCV(loss="f1", n_jobs=1).fit(X, y)
        StructSVMCV(loss="f1", n_jobs=1).fit(sp.csr_matrix(X), y)
        StructSVM(loss="error", C=10.0).fit(X, y, sample_weight=np.full(y.shape[0], 0.5))   # weighted oracle
        ContingencyLoss(_balanced_error).most_violated(np.where(y > 0, 1.0, -1.0), X[:, 0])
    return time.perf_counter() - start


if __name__ == "__main__":      # the wheel's build hook (setup.py) runs this in the package being built
    compile_kernels()
