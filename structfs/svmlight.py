"""SVMlight/LIBSVM files (1-based indices, as svm_perf): read whole, or in chunks of whole lines.

Parsing is scikit-learn's (``load_svmlight_file``, compiled): a line is a label, an optional first
token ``qid...:value`` (ignored), then ``index:value`` pairs with increasing indices from 1, the label,
indices and values as Python's ``float``/``int`` read them; ``#`` starts a comment. What it accepts
silently (NaN and infinite values) or reports without a place (unsorted or repeated indices, an index
beyond 2^31 - 1) is refused here with the file and line number, and so is a value beyond
``MAX_ABS_VALUE`` (1e100) in magnitude, which no estimator accepts: a file is either read exactly or
refused with one line saying where, by the whole-file reader and the chunked one alike.
"""
from __future__ import annotations

import io
import math
import os
from collections.abc import Iterator
from typing import Any

import numpy as np

from ._validation import MAX_ABS_VALUE

__all__ = ["load_svmlight", "svmlight_chunks"]

MAX_INDEX = 2 ** 31 - 1


def load_svmlight(path: Any, n_features: int | None = None, dtype: Any = np.float64,
                  multilabel: bool = False) -> tuple[Any, Any]:
    """(X CSR, y) of a whole file; ValueError naming the file and line of the first problem. With
    ``multilabel``, a line's label is a comma-separated list of labels (possibly empty) and y a list of
    tuples, as scikit-learn's ``load_svmlight_file(multilabel=True)``."""
    from sklearn.datasets import load_svmlight_file

    path = os.fspath(path)
    if not os.path.exists(path):
        raise ValueError(f"no such file: {path}")
    if os.path.isdir(path):
        raise ValueError(f"{path} is a directory, not a file")
    if os.path.isfile(path):
        def opened() -> Any:
            return open(path, "rb")
    else:                                 # a pipe, a FIFO, /dev/stdin: readable once, so read it whole
        with open(path, "rb") as fh:
            data = fh.read()

        def opened() -> Any:
            return io.BytesIO(data)
    try:
        with opened() as fh:
            X, y = load_svmlight_file(fh, n_features=n_features, zero_based=False, dtype=dtype, multilabel=multilabel)
        labels = np.array([v for labels in y for v in labels]) if multilabel else y
        error: object = _value_problem(X, labels)
    except (ValueError, OverflowError) as exc:
        error = exc
    if error:
        with opened() as fh:
            raise ValueError(f"{path}: {first_problem(fh, 1, multilabel) or error}") from None
    return X, y


def svmlight_chunks(path: Any, chunk_bytes: int, dtype: Any = np.float64) -> Iterator[tuple[Any, np.ndarray, str]]:
    """Yield ``(X, y, where)`` for consecutive pieces of about ``chunk_bytes`` bytes of whole lines
    (a line longer than a chunk is one piece of its own: no line is read twice or cut). ``where``
    names the file and lines. X has the index space 2^31 - 1 (the caller renumbers)."""
    from sklearn.datasets import load_svmlight_file

    path = os.fspath(path)
    line = 1
    with open(path, "rb") as fh:
        while True:
            piece = fh.read(chunk_bytes)
            if not piece:
                return
            if not piece.endswith(b"\n"):
                piece += fh.readline()           # complete the last line
            n_lines = piece.count(b"\n") + (not piece.endswith(b"\n"))
            where = f"{path}, lines {line}-{line + n_lines - 1}"
            try:
                X, y = load_svmlight_file(io.BytesIO(piece), n_features=MAX_INDEX, zero_based=False, dtype=dtype)
                error: object = _value_problem(X, y)
            except (ValueError, OverflowError) as exc:
                error = exc
            if error:
                raise ValueError(f"{path}: {first_problem(io.BytesIO(piece), line) or error}")
            if X.shape[0]:
                yield X, y, where
            line += n_lines


def _value_problem(X: Any, y: np.ndarray) -> str | None:
    """What the parser accepted but a reader refuses (one rule for both readers), or None."""
    if not (np.isfinite(X.data).all() and np.isfinite(y).all()):
        return "a value is not finite"
    if X.data.size and np.max(np.abs(X.data)) > MAX_ABS_VALUE:
        return f"a value is beyond {MAX_ABS_VALUE:g} in magnitude"
    return None


def first_problem(fh: Any, first_line: int, multilabel: bool = False) -> str | None:
    """'line N: ...' for the first line of a binary file object that is not a valid SVMlight line
    (numbering from ``first_line``), or None."""
    for number, raw in enumerate(fh, first_line):
        data = raw.split(b"#", 1)[0]
        if not data.isascii():
            # Python's float() and str.split() take non-ASCII digits and spaces that the parser does not
            at = next(i for i, byte in enumerate(data) if byte > 127)
            char = data[at:].decode("utf-8", errors="replace")[:1]
            return f"line {number}: a non-ASCII character {char!r} (U+{ord(char):04X}); SVMlight data are ASCII"
        body = data.decode("ascii").split()
        if body:
            problem = _line_problem(body, multilabel)
            if problem:
                return f"line {number}: {problem}"
    return None


def _finite_number(token: Any, what: str) -> tuple[float | None, str | None]:
    """(float(token), None) for a finite number, else (None, why not), ``what`` naming the token
    ("the label '...' is not a number")."""
    try:
        number = float(token)
    except ValueError:
        return None, f"{what} is not a number"
    return (number, None) if math.isfinite(number) else (None, f"{what} is not finite")


def _line_problem(body: Any, multilabel: bool = False) -> str | None:
    if multilabel and ":" in body[0]:                       # no label: an unlabelled example
        labels: list[Any] = []
        features = body
    else:
        labels, features = (body[0].split(",") if multilabel else [body[0]]), body[1:]
    for token in labels:
        _, problem = _finite_number(token, f"the label {token!r}")
        if problem:
            return problem
    last = 0
    if features and features[0].startswith("qid"):          # a query id (ignored)
        if ":" not in features[0]:
            return f"{features[0]!r} is not a qid:value pair"
        features = features[1:]
    for token in features:
        head, sep, value = token.partition(":")
        try:
            index = int(head) if sep else None
        except ValueError:
            index = None
        if index is None:
            return f"{token!r} is not an index:value pair"
        if index < 1:
            return f"feature indices are 1-based, found {head}"
        if index > MAX_INDEX:
            return f"feature index {head} exceeds 2^31 - 1, the largest supported (hash into a smaller space)"
        if index <= last:
            return f"feature index {index} after {last}: indices must be increasing and unique"
        last = index
        number, problem = _finite_number(value, f"the value {value!r} of feature {index}")
        if problem or number is None:
            return problem
        if abs(number) > MAX_ABS_VALUE:
            return (f"the value {value!r} of feature {index} is beyond {MAX_ABS_VALUE:g} in magnitude "
                    "(scale the features)")
    return None
