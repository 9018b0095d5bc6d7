"""Ctrl-C during a fit: recorded while compiled code runs, raised as KeyboardInterrupt between compiled calls.

Python runs a signal's handler at the next bytecode of the main thread. Inside a compiled (numba) call
there is none, except in its object-mode blocks (the long sorts of the oracles), and a
KeyboardInterrupt raised there is swallowed by numba or turned into an unrelated ``TypeError`` or
``ValueError``. So while a fit runs, SIGINT only sets :data:`PENDING`:

* the compiled inner loop polls it once per plane (:func:`interrupt_requested`: Python's own check for
  pending signals, which runs the handler, a few nanoseconds when none is pending) and returns;
* Python code calls :func:`check_interrupt` between compiled calls, which raises KeyboardInterrupt;
* a second Ctrl-C before that raises at once, as Python would.

Parallel fits wait for their workers in Python (:func:`interrupts_allowed`): there Ctrl-C raises at once,
and joblib tears its process pool down. loky's executor-manager thread can then meet a work item the
teardown has already removed and die with a ``KeyError``, which Python prints as a traceback although
the workers are stopped all the same; once Ctrl-C has come during such a wait, that exception of that
thread is not printed (:func:`_pool_teardown_hook`). Every other thread exception is.
Only the main thread's default handler is replaced: a handler of the caller's is left as it is.
"""
from __future__ import annotations

import signal
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic

from ._jit import njit

# 1 once SIGINT arrived during a fit; an array, so that compiled code reads it (it is passed as an argument)
PENDING = np.zeros(1, dtype=np.int64)
# whether SIGINT has come while this process waited on parallel workers (interrupts_allowed)
_WAIT_INTERRUPTED = [False]


@intrinsic
def _check_signals(typingctx: Any) -> Any:
    """``PyErr_CheckSignals()`` called from compiled code (which holds the GIL, as structfs's compiled
    calls do not release it): Python runs the handlers of the signals that arrived, in the main thread;
    -1 where a handler raised, its exception then set. Linked by name, so numba's disk cache keeps it."""
    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        function = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.IntType(32), []),
                                                  "PyErr_CheckSignals")
        return builder.call(function, [])

    return types.int32(), codegen


@intrinsic
def _clear_error(typingctx: Any) -> Any:
    """``PyErr_Clear()`` from compiled code."""
    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        builder.call(cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), []),
                                                    "PyErr_Clear"), [])
        return context.get_dummy_value()

    return types.none(), codegen


@njit(cache=True)
def interrupt_requested(pending: np.ndarray) -> bool:
    """Whether Ctrl-C has come (``pending``: :data:`PENDING`), from compiled code: the pending signals'
    handlers run first. Where one raised (a second Ctrl-C, see :func:`_record`) its exception is
    cleared, since compiled code cannot return with one set, and the Ctrl-C counts as pending: the
    caller's :func:`check_interrupt` raises it on return. Not an empty object-mode block, which also lets
    the handlers run: numba unpickles such a block at every entry (9 us; at a plane each, a tenth of a
    MIL search's time)."""
    # numba's intrinsics take their typing context from numba, not from the caller
    if _check_signals() != 0:            # type: ignore[call-arg]
        _clear_error()
        pending[0] = 1
    return pending[0] != 0


def _record(signum: int, frame: Any) -> None:
    if PENDING[0]:
        PENDING[0] = 0
        raise KeyboardInterrupt
    PENDING[0] = 1


def _raise_in_wait(signum: int, frame: Any) -> None:
    _WAIT_INTERRUPTED[0] = True
    raise KeyboardInterrupt


def _pool_teardown_hook(previous: Any) -> Any:
    """A ``threading.excepthook`` that drops the ``KeyError`` of loky's executor-manager thread once Ctrl-C
    has come during a wait on workers (the pool's teardown race, see the module's docstring) and hands
    every other exception to ``previous``."""
    def hook(args: Any) -> None:
        if not (_WAIT_INTERRUPTED[0] and args.exc_type is KeyError
                and type(args.thread).__name__ == "_ExecutorManagerThread"):
            previous(args)

    hook.structfs_pool_teardown = True      # type: ignore[attr-defined]
    return hook


def check_interrupt() -> None:
    """Raise KeyboardInterrupt if Ctrl-C arrived during the fit (a no-op outside one)."""
    if PENDING[0]:
        PENDING[0] = 0
        raise KeyboardInterrupt


@contextmanager
def deferred_interrupts() -> Iterator[None]:
    """Within: SIGINT sets :data:`PENDING` instead of raising; on leaving, a pending one is raised.
    Nested uses, other threads and handlers other than Python's default leave things as they are."""
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield
        return
    PENDING[0] = 0
    signal.signal(signal.SIGINT, _record)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    check_interrupt()


@contextmanager
def interrupts_allowed(active: bool = True) -> Iterator[None]:
    """Within a deferred fit (and if ``active``): Ctrl-C raises at once, a pending one on entering --
    for the waits on parallel workers, where no compiled code runs in this process."""
    if not active or signal.getsignal(signal.SIGINT) is not _record \
            or threading.current_thread() is not threading.main_thread():
        yield
        return
    check_interrupt()
    if not getattr(threading.excepthook, "structfs_pool_teardown", False):
        threading.excepthook = _pool_teardown_hook(threading.excepthook)
    signal.signal(signal.SIGINT, _raise_in_wait)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, _record)


def interruptible(items: Iterable[Any], active: bool = True) -> Iterator[Any]:
    """The items of an iterable whose production waits on parallel workers, each awaited under
    :func:`interrupts_allowed` (the consumer's own work between items stays deferred)."""
    iterator = iter(items)
    while True:
        with interrupts_allowed(active):
            try:
                item = next(iterator)
            except StopIteration:
                return
        yield item
