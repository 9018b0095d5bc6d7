"""numba's ``njit`` with its on-disk cache where one can be kept, and the notice of a first compilation.

``cache=True`` makes numba look for a writable cache directory when a function is decorated, that is
when structfs is imported; where there is none (a read-only installation and no writable home or
``NUMBA_CACHE_DIR``) numba raises, and ``import structfs`` would fail. Here the function is then
compiled without a cache: every process compiles it again, but everything works.

numba keys a kernel's cache on its own file's content only, but the machine code it keeps also holds
every kernel the kernel calls, inlined or linked, and the constants it read, from other files: after an
update that changed only a callee's file (a source checkout pulled in place, an upgrade that left a
caller's file as it was), the caller's stale code would be loaded and run. So every structfs kernel's
cache is keyed on the content of all the files its machine code can come from (:func:`sources_stamp`):
a change to any of them compiles every kernel again.
"""
from __future__ import annotations

import functools
import hashlib
import re
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
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


# `from .module import ...` and `from .. import module, ...` inside the package (also under TYPE_CHECKING:
# a needless dependency only recompiles more often)
_RELATIVE_IMPORT = re.compile(rb"^[ \t]*from[ \t]+(\.+)([\w.]*)[ \t]+import[ \t]+\(?([\w, \t]*)", re.M)


def _imported_files(path: Path, text: bytes, package: dict[Path, bytes]) -> set[Path]:
    """The files of ``package`` (path -> content) that the module ``path``, of content ``text``, imports from."""
    found: set[Path] = set()
    for dots, module, names in _RELATIVE_IMPORT.findall(text):
        base = path.parent
        for _ in range(len(dots) - 1):
            base = base.parent
        if module:
            target = base.joinpath(*module.decode().split("."))
            candidates = [target.with_suffix(".py"), target / "__init__.py"]
        else:
            candidates = [base / f"{name.strip()}.py" for name in names.decode().split(",") if name.strip()]
        found.update(candidate for candidate in candidates if candidate in package)
    return found


def sources_stamp(root: Path) -> str:
    """A digest of the files under ``root`` that a compiled kernel's machine code can come from: those
    that define kernels (they mention ``njit``) and every file of the package they import from,
    transitively -- each file's path relative to ``root`` and its content, in sorted order."""
    package = {path: path.read_bytes() for path in root.rglob("*.py")}     # each file read once
    pending = [path for path, text in package.items() if b"njit" in text]
    files: set[Path] = set()
    while pending:
        path = pending.pop()
        if path not in files:
            files.add(path)
            pending.extend(_imported_files(path, package[path], package))
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + package[path] + b"\0")
    return digest.hexdigest()


@functools.cache
def _package_stamp() -> str:
    return sources_stamp(Path(__file__).resolve().parent)


def _key_on_the_package(dispatcher: Any) -> Any:
    """Key ``dispatcher``'s disk cache on :func:`sources_stamp` of structfs instead of its own file's
    content (numba compares the stamp its index file holds with this one and compiles on a mismatch).
    A numba whose cache has another layout keeps its own key."""
    cache_file: Any = getattr(getattr(dispatcher, "_cache", None), "_cache_file", None)
    if cache_file is not None and hasattr(cache_file, "_source_stamp"):
        try:
            cache_file._source_stamp = _package_stamp()
        except OSError:              # the package's files cannot be read (an archive): numba's own key
            pass
    return dispatcher


def njit(*signature: Any, **options: Any) -> Callable[[_F], _F]:
    """``numba.njit(*signature, **options)``, falling back to no cache where numba finds no place for one,
    compiling where its cache file cannot be read, and with the cache keyed on every file the kernel's
    machine code can come from (the module's docstring)."""
    def decorate(function: _F) -> _F:
        try:
            if not options.get("cache"):
                return numba.njit(*signature, **options)(function)
            # numba compiles the given signatures at once, and caches them under the key it has then: the
            # key is set first, the signatures compiled after (as numba.njit does), no others later
            dispatcher = _tolerate_a_corrupt_cache(_key_on_the_package(numba.njit(**options)(function)))
            signatures = signature[0] if signature else []
            for each in signatures if isinstance(signatures, list) else [signatures]:
                dispatcher.compile(each)
            if signature:
                dispatcher.disable_compile()
            return dispatcher
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
