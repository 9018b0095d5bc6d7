"""Groups of expanded features: which input feature each output column of a feature map comes from.

An additive feature map (scikit-learn's ``AdditiveChi2Sampler``, ``SplineTransformer``,
``KBinsDiscretizer(encode="onehot")``, ``OneHotEncoder``) expands every input feature into a block of
columns of its own. With ``StructSVM(budget=B, groups=expansion_groups(expander, X))`` the budget then
counts input features: the model selects whole expansions, i.e. input features through their maps.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp


def expansion_groups(expander: Any, X: Any) -> np.ndarray:
    """The input feature of every output column of the fitted transformer ``expander``.

    Found by probing: one row of ``X`` (numeric, n_samples >= 2) is transformed, then again with each
    input feature in turn set to five of its quantiles in ``X``; an output column that changes belongs
    to that feature. A column that never changes (constant on these probes) gets a group of its
    own. ValueError when a column changes with two input features: the map is not additive, and the
    budget could not count input features.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.kernel_approximation import AdditiveChi2Sampler
    >>> from structfs.preprocessing import expansion_groups
    >>> X = np.array([[0.1, 0.5], [0.4, 0.2], [0.9, 0.7]])
    >>> expander = AdditiveChi2Sampler(sample_steps=2).fit(X)
    >>> expansion_groups(expander, X).tolist()          # sqrt, cos and sin terms of each input feature
    [0, 1, 0, 1, 0, 1]
    """
    X = np.asarray(X.toarray() if sp.issparse(X) else X, dtype=float)
    if X.ndim != 2 or X.shape[0] < 2:
        raise ValueError(f"X must be a 2-D array of at least two rows to probe the map, got shape {X.shape}.")
    m = X.shape[1]
    base = X[0]
    # each feature set in turn to five of its quantiles: a column local to part of the range (a spline's
    # basis function, a bin) changes for one of them
    levels = np.quantile(X, [0.0, 0.25, 0.5, 0.75, 1.0], axis=0, method="nearest")   # values X takes
    probes = np.repeat(base[None, :], 5 * m + 1, axis=0)
    rows = 1 + np.arange(5 * m)
    probes[rows, np.repeat(np.arange(m), 5)] = levels.T.ravel()
    out = expander.transform(probes)
    out = np.asarray(out.toarray() if sp.issparse(out) else out, dtype=float)
    moved = ~np.isclose(out[1:], out[0], rtol=1e-12, atol=1e-12)               # (5 m, output columns)
    changed = moved.reshape(m, 5, -1).any(axis=1)                              # (input feature, column)
    owners = changed.sum(axis=0)
    if np.any(owners > 1):
        column = int(np.flatnonzero(owners > 1)[0])
        raise ValueError(f"output column {column} of {type(expander).__name__} depends on several input "
                         "features: the map is not additive, so its columns have no input feature to group by.")
    groups = np.argmax(changed, axis=0)
    constant = np.flatnonzero(owners == 0)
    groups[constant] = m + np.arange(constant.shape[0])
    return groups.astype(np.int64)
