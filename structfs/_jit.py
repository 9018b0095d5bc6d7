"""numba's ``njit`` with its on-disk cache where one can be kept, and the notice of a first compilation.

``cache=True`` makes numba look for a writable cache directory when a function is decorated, that is
when structfs is imported; where there is none (a read-only installation and no writable home or
``NUMBA_CACHE_DIR``) numba raises, and ``import structfs`` would fail. Here the function is then
compiled without a cache: every process compiles it again, but everything works.
"""
from __future__ import annotations

import sys
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

import numba
import numpy as np
from numba.core import event
from numba.core.registry import CPUDispatcher
from numba.core.types.function_type import CompileResultWAP

_F = TypeVar("_F", bound=Callable[..., Any])

# What the first compilation costs on two cores (``structfs compile`` on an empty cache: 90 s), said in the
# notice so that a user waits knowingly.
COMPILE_MINUTES = "one to two minutes"


class _CompileNotice(event.Listener):
    """Prints one line to stderr when a structfs kernel is compiled rather than loaded from numba's disk
    cache (numba fires ``numba:compile`` on cache misses only): after installing, the first fit would
    otherwise be silent for a minute or more."""

    announced = False

    def on_start(self, ev: Any) -> None:
        if _CompileNotice.announced:
            return
        dispatcher = ev.data.get("dispatcher")
        # object-mode blocks (numba.objmode) are compiled at every process's first call, in no time: not news
        if not isinstance(dispatcher, CPUDispatcher):
            return
        # another library's kernels pass through here too, some with __module__ None (skglm's)
        if (getattr(dispatcher.py_func, "__module__", None) or "").startswith("structfs."):
            _CompileNotice.announced = True
            print(f"structfs: compiling its numba kernels, once after installing ({COMPILE_MINUTES} on 2 cores); "
                  "later runs load them from numba's cache. `structfs compile` does it ahead.",
                  file=sys.stderr, flush=True)

    def on_end(self, ev: Any) -> None:
        pass


event.register("numba:compile", _CompileNotice())


_UNREADABLE: set[str] = set()      # the cache files already reported: reading and then rewriting one must warn once


def _unreadable_cache(path: str, exc: BaseException) -> None:
    if path in _UNREADABLE:
        return
    _UNREADABLE.add(path)
    warnings.warn(f"structfs: numba's cache of a kernel ({path}, or its data file) could not be read "
                  f"({type(exc).__name__}); the kernel is compiled again and its cache rewritten.", UserWarning,
                  stacklevel=3)


def _tolerate_a_corrupt_cache(dispatcher: Any) -> Any:
    """Make ``dispatcher``'s disk cache treat an unreadable index or data file as a missing one: numba
    would raise at the first call (a truncated file, a copy interrupted while a wheel was unpacked), and
    the kernel is compiled instead. Only this dispatcher's cache objects change, not numba's classes."""
    cache: Any = getattr(dispatcher, "_cache", None)
    cache_file: Any = getattr(cache, "_cache_file", None)
    if cache_file is None or not hasattr(cache_file, "_load_index") or not hasattr(cache, "load_overload"):
        return dispatcher
    load_index, load_overload = cache_file._load_index, cache.load_overload

    def tolerant_load_index() -> Any:
        try:
            return load_index()
        except Exception as exc:        # noqa: BLE001 -- any unreadable file is a cache miss
            _unreadable_cache(getattr(cache_file, "_index_path", "?"), exc)
            return {}

    def tolerant_load_overload(*args: Any, **kwargs: Any) -> Any:
        try:
            return load_overload(*args, **kwargs)
        except Exception as exc:        # noqa: BLE001
            _unreadable_cache(getattr(cache_file, "_index_path", "?"), exc)
            return None

    cache_file._load_index, cache.load_overload = tolerant_load_index, tolerant_load_overload
    return dispatcher


def njit(*signature: Any, **options: Any) -> Callable[[_F], _F]:
    """``numba.njit(*signature, **options)``, falling back to no cache where numba finds no place for one,
    and compiling where its cache file cannot be read."""
    def decorate(function: _F) -> _F:
        try:
            return _tolerate_a_corrupt_cache(numba.njit(*signature, **options)(function))
        except RuntimeError:
            if not options.get("cache"):
                raise
            return numba.njit(*signature, **{**options, "cache": False})(function)
    return decorate


# (id(function), id(signature)) -> (function, signature, its first-class value); the entry holds both
# objects, so their ids are not reused. Not functools.cache: that hashes the numba signature, a walk over
# its types, at each of a search's thousands of restricted solves.
_FIRST_CLASS: dict[tuple[int, int], tuple[Any, Any, Any]] = {}


def first_class(function: Any, signature: Any) -> Any:
    """The njit ``function`` compiled for ``signature`` as a first-class function value (numba's
    ``FunctionType``), its address looked up once: compiled code takes oracles and penalties this way, one
    loop for all of them where a dispatcher argument compiles a loop per function, and numba otherwise
    looks the address up at every call (about 1 ms, as much as a small refit's whole loop)."""
    known = _FIRST_CLASS.get((id(function), id(signature)))
    if known is None:
        function.compile(signature)
        known = _FIRST_CLASS[id(function), id(signature)] = (function, signature,
                                                             CompileResultWAP(function.overloads[signature.args]))
    return known[2]


# Above this length compiled code sorts through NumPy (an object-mode block, about a microsecond of
# overhead): numba's own sort took 337 us on 5,485 floats where NumPy's vectorised sort takes 37 us,
# and the compiled oracles sort once per call.
_NUMPY_SORT_FROM = 256


@njit(cache=True)
def sort_in_place(x: np.ndarray) -> None:
    """``x.sort()`` in compiled code, by NumPy's sort for long arrays."""
    if x.shape[0] >= _NUMPY_SORT_FROM:
        with numba.objmode():
            x.sort()
    else:
        x.sort()


@njit(cache=True)
def argsort(x: np.ndarray) -> np.ndarray:
    """``np.argsort(x)`` (quicksort, as NumPy's default) in compiled code, by NumPy for long arrays."""
    if x.shape[0] >= _NUMPY_SORT_FROM:
        with numba.objmode(order="int64[::1]"):
            order = np.argsort(x)
        return order
    return np.argsort(x)
