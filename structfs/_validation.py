"""Argument checks shared by losses, metrics and estimators.

Every public entry point validates before doing any work, so that a bad argument fails with a
message naming it instead of producing a silently wrong loss or a numba error deep in a kernel.
"""
from __future__ import annotations

import functools
import numbers
from collections.abc import Callable
from typing import Any, TypeAlias

import numpy as np
import scipy.sparse as sp

from ._interrupt import deferred_interrupts

# What estimators take as X: an array-like, any scipy.sparse matrix, a shard directory's matrix or row
# blocks on a cluster. The checks at run time say which; no static type names that union usefully.
MatrixLike: TypeAlias = Any

# The largest magnitude accepted in features and stored weights: squares and sums of squares of values
# up to 1e100 stay far from float64's overflow (1.8e308), whatever n; beyond ~1e154 a square is inf and
# the solvers' linear algebra fails or never returns.
MAX_ABS_VALUE = 1e100


def check_pm1(y: Any, name: str = "y") -> np.ndarray:
    """Return ``y`` as a float64 vector of -1/+1 labels, or raise ValueError naming ``name``."""
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array of labels in {{-1, +1}}, got shape {y.shape}.")
    if y.size == 0:
        raise ValueError(f"{name} is empty; at least one example is needed.")
    if y.dtype.kind not in "biuf":
        raise ValueError(f"{name} must hold the numbers -1 and +1, got dtype {y.dtype}.")
    bad = (y != 1) & (y != -1)
    if bad.any():
        raise ValueError(
            f"{name} must contain only -1 and +1; found {np.unique(y[bad])[:5].tolist()}. "
            "Map your two classes to -1/+1 first (the estimators do this for you)."
        )
    return y.astype(np.float64, copy=False)


def check_binary_labels(y: Any, name: str = "y") -> np.ndarray:
    """Labels for a measure: {-1,+1}, {0,1} or bool, returned as -1/+1 float64."""
    y = np.asarray(y)
    if y.ndim == 1 and y.dtype.kind in "biuf" and y.size:
        u = np.unique(y)
        if np.all(np.isin(u, (0, 1))) and not np.all(np.isin(u, (-1, 1))):
            y = np.where(y == 1, 1.0, -1.0)
    return check_pm1(y, name)


def check_scores(s: Any, n: int, name: str = "s") -> np.ndarray:
    """Return finite float64 scores of length ``n``."""
    s = np.asarray(s)
    if s.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array of scores, got shape {s.shape}.")
    if s.dtype.kind not in "biuf":
        raise ValueError(f"{name} must be numeric, got dtype {s.dtype}.")
    if s.shape[0] != n:
        raise ValueError(f"{name} has length {s.shape[0]} but y has length {n}; they must match.")
    s = s.astype(np.float64, copy=False)
    if not np.isfinite(s).all():
        raise ValueError(f"{name} contains NaN or infinite values; scores must be finite.")
    return s


def check_positive_int(value: Any, name: str, low: int = 1) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}.")
    if value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}.")
    return int(value)


def check_positive_float(value: Any, name: str, allow_zero: bool = False) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a positive number, got {value!r}.")
    value = float(value)
    if not np.isfinite(value) or value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be a finite number {bound}, got {value!r}.")
    return value


def is_dask_array(X: Any) -> bool:
    """True for a dask.array.Array (checked without importing dask, an optional dependency)."""
    return type(X).__module__.startswith("dask.array") and hasattr(X, "to_delayed")


def check_magnitude(X: Any, name: str = "X", limit: float | None = None, why: str = "overflow when squared") -> Any:
    """ValueError when a dense or sparse ``X`` holds a value beyond :data:`MAX_ABS_VALUE` in magnitude.

    Skipped, like scikit-learn's finiteness check, under ``sklearn.config_context(assume_finite=True)``:
    a search sets it to refit on data its own fit has checked."""
    from sklearn import get_config

    if get_config()["assume_finite"]:
        return X
    if sp.issparse(X):
        values = X.data if X.format in ("csr", "csc", "coo", "bsr", "dia") else X.tocoo().data
    else:
        values = np.asarray(X)
    limit = MAX_ABS_VALUE if limit is None else limit
    if values.size:
        largest = float(np.max(np.abs(values)))
        if largest > limit:
            raise ValueError(f"{name} holds a value of magnitude {largest:.3g}; values beyond {limit:g} "
                             f"{why}. Scale the features (e.g. sklearn.preprocessing.MaxAbsScaler).")
    return X


def keeps_state_on_failure(fit: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate an estimator's ``fit`` so that a fit that raises (bad input found late, an interrupt)
    leaves the estimator exactly as it was: fitted with its old model, or unfitted (NotFittedError),
    never with new ``classes_`` over old weights. Ctrl-C during the fit is raised between compiled
    calls (:mod:`structfs._interrupt`)."""
    @functools.wraps(fit)
    def guarded(self: Any, *args: Any, **kwargs: Any) -> Any:
        before = dict(self.__dict__)
        try:
            with deferred_interrupts():
                return fit(self, *args, **kwargs)
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(before)
            raise
    return guarded
