"""A loss's Python oracle called from the compiled loop.

The compiled inner loop (``compiled_loop.py``) takes the oracle as a compiled function of one type,
``(y, s, params) -> (coef, delta)``. A loss that offers one (``Loss.jit_oracle``) is called directly. Any
other loss -- a user's, a ranking or operating-point loss, a per-label or per-query wrapper -- is called
through :func:`_bridge`, a compiled function of that same type whose object-mode block calls the loss's
``oracle`` in Python (about 8 microseconds a call on top of the oracle's own time). So every loss gets the
compiled iteration; only the oracle itself runs in Python.

``params`` of the bridge is the key of the call's entry in :data:`_CALLS` (a float64 holds any key
below 2**53), which holds the loss. numba drops an exception raised in an object-mode block reached
through a function pointer, so the bridge catches it, keeps it with the entry and sets the entry's
``failed`` flag, which the loop polls once per plane; :meth:`OracleCall.raise_failure` raises it after
the loop has returned. The bridge also refuses an answer of the wrong shape, which the compiled code
would read past its end.
"""
from __future__ import annotations

import itertools
import threading
from types import TracebackType
from typing import TYPE_CHECKING

import numba
import numpy as np
from numba import types

from .._jit import first_class, njit

if TYPE_CHECKING:
    from .cutting_plane import LossOracle

# What ``Loss.jit_oracle`` must be: (y, s, params) -> (coef, delta), float64 C-contiguous vectors. Compiled
# code takes the oracle as a function of this type, not as the numba dispatcher it is: numba compiles (and
# caches on disk) one loop for every such oracle, where a dispatcher argument made each process compile
# the loop again for each loss (16 s each).
ORACLE_SIGNATURE = types.Tuple((types.float64[::1], types.float64))(types.float64[::1], types.float64[::1],
                                                                    types.float64[::1])
ORACLE_TYPE = types.FunctionType(ORACLE_SIGNATURE)

_CALLS: dict[int, OracleCall] = {}
_KEYS = itertools.count(1)
_LOCK = threading.Lock()        # threads of a parallel search register calls at once


class OracleCall:
    """``loss``'s oracle for the compiled steps of one restricted solve (a ``with`` block around them):
    ``function`` of ORACLE_TYPE with ``params`` -- the loss's compiled oracle, or :func:`_bridge` to its
    Python one, registered for the block -- and ``failed``, the flag the compiled loop polls. After the
    block, :meth:`raise_failure` raises what a Python oracle raised (a compiled one raises nothing)."""

    def __init__(self, loss: LossOracle) -> None:
        self.loss = loss
        self.failed = np.zeros(1, dtype=np.int64)
        self.error: BaseException | None = None
        self.key: int | None = None
        if loss.jit_oracle is not None:
            self.function = first_class(loss.jit_oracle, ORACLE_SIGNATURE)
            self.params = np.asarray(loss.jit_params, dtype=np.float64)
        else:
            with _LOCK:
                self.key = next(_KEYS)
            self.function = first_class(_bridge, ORACLE_SIGNATURE)
            self.params = np.array([float(self.key)])

    def __enter__(self) -> OracleCall:
        if self.key is not None:
            _CALLS[self.key] = self
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if self.key is not None:
            _CALLS.pop(self.key, None)

    def answer(self, y: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, float]:
        """The loss's oracle at ``s``, as the compiled loop reads it; zeros after a failure (the loop stops
        at its next plane and its state is thrown away)."""
        if self.error is None:
            try:
                coef, delta = self.loss.oracle(y, s)
                coef = np.ascontiguousarray(coef, dtype=np.float64)
                if coef.shape != y.shape:
                    raise ValueError(f"{type(self.loss).__name__}.oracle returned coefficients of shape "
                                     f"{coef.shape} for {y.shape[0]} examples; it must return one per example.")
                return coef, float(delta)
            except BaseException as exc:    # noqa: BLE001 -- kept and raised in Python once the loop returns
                self.error = exc
                self.failed[0] = 1
        return np.zeros(y.shape[0]), 0.0

    def raise_failure(self) -> None:
        """Raise what the oracle raised during the block, if anything."""
        if self.error is not None:
            raise self.error


def _answer(key: float, y: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, float]:
    return _CALLS[int(key)].answer(y, s)


@njit(cache=True)
def _bridge(y: np.ndarray, s: np.ndarray, params: np.ndarray) -> tuple[np.ndarray, float]:
    """The oracle of the loss registered under key ``params[0]``, from compiled code."""
    with numba.objmode(coef="float64[::1]", delta="float64"):
        coef, delta = _answer(params[0], y, s)
    return coef, delta
