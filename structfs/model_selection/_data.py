"""What a search fits on: the protocol between StructSVMCV and the sources of its data.

A search needs a matrix whose rows are the examples. Some sources offer several versions of it and let
the search choose among them as it chooses C: MILESClassifier's embedding of bags at each kernel
width, whose columns (training instances) also differ per fold, since a fold may only use the
instances of its own training bags. :class:`SearchData` says how such a source answers; the search
is the same loop over candidates and fold paths for every source, and knows nothing of what the
versions are.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._validation import MatrixLike


class SearchData:
    """The data a :class:`StructSVMCV` search fits on: ``settings`` names the versions of the matrix it
    chooses among, each a dict of parameter values (``cv_results_`` reports them as ``param_<name>``;
    the one version of a plain matrix is ``{}``); :meth:`X` is the matrix of a version, rows the
    examples; :meth:`fold_columns` the columns each fold may use; :meth:`cut_X` the matrix whose scores
    on the training rows set or check a model's cut.

    Pass a subclass to :meth:`StructSVMCV.fit_data`.

    Examples
    --------
    >>> import numpy as np
    >>> from structfs.model_selection import SearchData, StructSVMCV
    >>> class Scaled(SearchData):                 # the search chooses the scale of X as it chooses C
    ...     settings = ({"scale": 0.1}, {"scale": 1.0})
    ...     def __init__(self, X):
    ...         self.base = X
    ...     def X(self, setting):
    ...         return setting["scale"] * self.base
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(120, 5)); y = (X[:, 0] + 0.3 * rng.normal(size=120) > 0).astype(int)
    >>> search = StructSVMCV(Cs=[1.0], budgets=[None]).fit_data(Scaled(X), y)
    >>> sorted(search.cv_results_["param_scale"].tolist())
    [0.1, 1.0]
    """

    settings: Sequence[dict[str, Any]] = ({},)

    def X(self, setting: dict[str, Any]) -> MatrixLike:
        """The matrix of version ``setting`` (one of ``settings``), one row per example."""
        raise NotImplementedError

    def fold_columns(self, folds: Sequence[tuple[np.ndarray, np.ndarray]]) -> list[np.ndarray] | None:
        """The columns each of the (train, test) ``folds`` may use, in every version; None: all."""
        return None

    def cut_X(self, setting: dict[str, Any]) -> MatrixLike | None:
        """The matrix whose scores on the training rows set or check a model's cut (the fallback to a
        ranking loss; the cut by cross-validation carried to the refitted model); None: :meth:`X` itself."""
        return None


class MatrixData(SearchData):
    """One matrix, as :meth:`StructSVMCV.fit` searches on it."""

    def __init__(self, X: MatrixLike) -> None:
        self.matrix = X

    def X(self, setting: dict[str, Any]) -> MatrixLike:
        return self.matrix
