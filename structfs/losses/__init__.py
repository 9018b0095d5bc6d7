"""Multivariate losses Delta(y, ybar) in percent and their exact most-violated-output oracles.

``get_loss(name, **params)`` builds a built-in loss; ``ContingencyLoss(fn)`` wraps any function of the
contingency table; subclass :class:`Loss` for a loss of another structure (see the losses guide,
docs/losses.md).
"""
from __future__ import annotations

from typing import Any, overload

import numpy as np

from .auc import ROCAreaLoss
from .base import ContingencyLoss, Loss, SortedClasses
from .error import ErrorRateLoss
from .fmeasure import F1Loss, FBetaLoss
from .operating_point import PrecisionAtRecallLoss, RecallAtPrecisionLoss, TPRAtFPRLoss
from .per_query import PerQuery
from .ranking import PRBEPLoss, PrecisionAtKLoss, RecallAtKLoss
from .retrieval import AveragePrecisionLoss, PartialAUCLoss
from .weighted import SampleWeighted

LOSSES = {
    "error": ErrorRateLoss,
    "f1": F1Loss,
    "fbeta": FBetaLoss,
    "prec@k": PrecisionAtKLoss,
    "rec@k": RecallAtKLoss,
    "prbep": PRBEPLoss,
    "auc": ROCAreaLoss,
    "ap": AveragePrecisionLoss,
    "pauc": PartialAUCLoss,
    "prec@rec": PrecisionAtRecallLoss,
    "rec@prec": RecallAtPrecisionLoss,
    "tpr@fpr": TPRAtFPRLoss,
}

@overload
def on_rows(loss: None, sample_weight: np.ndarray | None = None, qid: np.ndarray | None = None) -> None: ...
@overload
def on_rows(loss: Loss, sample_weight: np.ndarray | None = None, qid: np.ndarray | None = None) -> Loss: ...
def on_rows(loss: Loss | None, sample_weight: np.ndarray | None = None, qid: np.ndarray | None = None) -> Loss | None:
    """``loss`` on examples weighted by ``sample_weight`` (:class:`SampleWeighted`) or averaged over the
    queries ``qid`` (:class:`PerQuery`; a fit takes one or the other); ``loss`` itself for neither (and
    None for a None loss)."""
    if loss is None:
        return None
    if qid is not None:
        return PerQuery(loss, qid)
    return loss if sample_weight is None else SampleWeighted(loss, sample_weight)


# svm_perf_learn -l codes for the losses structfs shares with it.
SVMPERF_CODES = {1: "f1", 2: "error", 3: "prbep", 4: "prec@k", 5: "rec@k", 10: "auc"}


def get_loss(name: str | Loss, **params: Any) -> Loss:
    """A loss object by name (see ``LOSSES``), or ``name`` itself if it is already a :class:`Loss`."""
    if isinstance(name, Loss):
        if params:
            raise ValueError("loss_params cannot be applied to a loss object; configure the object instead.")
        return name
    if not isinstance(name, str) or name not in LOSSES:
        raise ValueError(f"Unknown loss {name!r}; known losses: {', '.join(LOSSES)} "
                         "(or pass a structfs.losses.Loss / ContingencyLoss object).")
    try:
        return LOSSES[name](**params)
    except TypeError as exc:
        raise ValueError(f"Bad parameters {params!r} for loss {name!r}: {exc}") from None


__all__ = ["Loss", "ContingencyLoss", "SortedClasses", "SampleWeighted", "PerQuery", "get_loss", "LOSSES",
           "SVMPERF_CODES",
           "ErrorRateLoss", "F1Loss", "FBetaLoss", "PrecisionAtKLoss", "RecallAtKLoss", "PRBEPLoss",
           "ROCAreaLoss", "AveragePrecisionLoss", "PartialAUCLoss",
           "PrecisionAtRecallLoss", "RecallAtPrecisionLoss", "TPRAtFPRLoss"]
