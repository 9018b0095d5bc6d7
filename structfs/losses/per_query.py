"""Per-query measures: a loss taken on each query's examples and averaged over the queries.

In retrieval the examples come in queries (a query's candidate documents) and the measure is the mean
over queries of a per-query measure: mean average precision, mean NDCG@k, mean ROC area. With query ids
q(i), Delta(y, ybar) = (1/Q) sum_q Delta(y_q, ybar_q) and Psi = (1/Q) sum_q Psi_q, each query's part
built by the loss on that query's rows alone. H = Delta - coef . s then splits into one independent
term per query, so the most violated output is each query's own most violated output: the loss's exact
oracle run once per query (a Python call per query and oracle call; the queries' rows are grouped once).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .base import Loss

__all__ = ["PerQuery"]


class PerQuery(Loss):
    """``loss`` on each query's examples, averaged over the queries (see the module docstring): what
    :meth:`structfs.StructSVM.fit` trains with when given ``qid``.

    Parameters
    ----------
    loss : Loss
        The per-query loss; every query must hold what it needs (e.g. a positive and a negative for
        ``"auc"`` and ``"ap"``): a query without them is refused, by its id.
    qid : array of shape (n_samples,)
        Each example's query id (any sortable values).

    Examples
    --------
    Mean ROC area over two queries:

    >>> import numpy as np
    >>> from structfs.losses import PerQuery, get_loss
    >>> y = np.array([1.0, -1.0, -1.0, 1.0, -1.0])
    >>> s = np.array([0.9, 0.2, 0.5, 0.1, 0.3])
    >>> qid = np.array([1, 1, 1, 2, 2])
    >>> PerQuery(get_loss("auc"), qid).score(y, s)        # (100 + 0) / 2
    50.0
    """

    def __init__(self, loss: Loss, qid: np.ndarray) -> None:
        if not isinstance(loss, Loss):
            raise TypeError(f"loss must be a structfs Loss, got {loss!r}.")
        qid = np.asarray(qid)
        if qid.ndim != 1:
            raise ValueError(f"qid must be a 1-d array of query ids, one per example; got shape {qid.shape}.")
        self.loss = loss
        self.qid = qid
        self.name = loss.name
        self.is_contingency = False      # the mean over queries is not a function of one table
        order = np.argsort(qid, kind="stable")
        starts = (np.flatnonzero(np.concatenate(([True], qid[order][1:] != qid[order][:-1]))) if qid.size
                  else np.zeros(0, dtype=np.int64))
        self.queries = qid[order][starts]
        self._rows = np.split(order, starts[1:]) if qid.size else []

    @property
    def params(self) -> dict[str, Any]:
        return self.loss.params

    def _check_classes(self, y: np.ndarray) -> None:
        if y.shape[0] != self.qid.shape[0]:
            raise ValueError(f"qid has {self.qid.shape[0]} entries but y has {y.shape[0]}.")
        for q, rows in zip(self.queries, self._rows):
            try:
                self.loss._check_classes(y[rows])
            except ValueError as exc:
                raise ValueError(f"query {q.item()!r} (qid): {exc} Drop such queries, or use a per-query loss "
                                 "they satisfy.") from None

    def oracle(self, y: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, float]:
        coef = np.empty(y.shape[0])
        total = 0.0
        for rows in self._rows:
            part, delta = self.loss.oracle(y[rows], s[rows])
            coef[rows] = part
            total += delta
        Q = len(self._rows)
        coef /= Q
        return coef, total / Q

    def _score(self, y: np.ndarray, s: np.ndarray) -> float:
        return float(np.mean([self.loss._score(y[rows], s[rows]) for rows in self._rows]))

    def __repr__(self) -> str:
        return f"PerQuery({self.loss!r}, <{len(self._rows)} queries>)"
