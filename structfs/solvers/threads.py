"""The BLAS threads a fit runs with (see :class:`~structfs.solvers.feature_generation.SolverPath`).

``threadpool_limits`` scans the process's loaded libraries on every call (6 ms here): a search makes
one call per fold path and per polish, which cost a MIL search 7% of its time. One
``ThreadpoolController``, made at the first fit (when NumPy's BLAS is loaded), scans once.
"""
from __future__ import annotations

import functools
from typing import Any


@functools.cache
def _controller() -> Any:
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def blas_limited(n_threads: int | None) -> Any:
    """A context in which BLAS runs ``n_threads`` threads."""
    return _controller().limit(limits=n_threads, user_api="blas")
