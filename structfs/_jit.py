"""numba's ``njit`` with its on-disk cache where one can be kept.

``cache=True`` makes numba look for a writable cache directory when a function is decorated, that is
when structfs is imported; where there is none (a read-only installation and no writable home or
``NUMBA_CACHE_DIR``) numba raises, and ``import structfs`` would fail. Here the function is then
compiled without a cache: every process compiles it again, but everything works.
"""
import numba


def njit(*signature, **options):
    """``numba.njit(*signature, **options)``, falling back to no cache where numba finds no place for one."""
    def decorate(function):
        try:
            return numba.njit(*signature, **options)(function)
        except RuntimeError:
            if not options.get("cache"):
                raise
            return numba.njit(*signature, **{**options, "cache": False})(function)
    return decorate
