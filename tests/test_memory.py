"""Repeated fits hold no memory: every array the compiled code allocates is freed.

numba's runtime counts its allocations only when ``NUMBA_NRT_STATS=1`` is set before it starts, so
the fits run in a child process. The leak this guards against: an exception raised and caught inside
compiled code (a singular KKT system, an indefinite Newton matrix) leaked the arrays allocated before
it, four per failure, and a long-running search grew without bound.
"""
import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.slow

_CHILD = textwrap.dedent("""
    import gc, os, sys
    import numpy as np
    from numba.core.runtime import rtsys
    from sklearn.datasets import make_classification
    from structfs import StructSVM, StructSVMCV

    X, y = make_classification(300, 20, n_informative=5, random_state=0)
    groups = np.arange(20) // 4
    fits = [lambda: StructSVMCV(cv=3).fit(X, y),
            lambda: StructSVM(loss="f1", budget=2, C=10.0, groups=groups).fit(X, y)]
    for _ in range(2):     # warm: compiled code, caches, the allocator (whose heap steps up ~6 MB once,
        for fit in fits:   # at the second round of fits, and then stays: 6.3 MB after 30 rounds, 6.4 after 200)
            fit()
        gc.collect()

    def live():
        stats = rtsys.get_allocation_stats()
        return stats.alloc - stats.free

    def rss():
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    before, rss_before = live(), rss()
    for _ in range(int(sys.argv[1])):
        for fit in fits:
            fit()
        gc.collect()
    print(live() - before, (rss() - rss_before) / 1e6)
""")


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="reads the resident size from /proc (Linux)")
def test_repeated_fits_free_every_compiled_allocation():
    env = {**os.environ, "NUMBA_NRT_STATS": "1"}
    out = subprocess.run([sys.executable, "-c", _CHILD, "100"], env=env, capture_output=True, text=True,
                         timeout=1200, check=True).stdout.split()
    net_allocations, rss_growth_mb = int(out[0]), float(out[1])
    assert net_allocations == 0
    assert rss_growth_mb <= 5.0
