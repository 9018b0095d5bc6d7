"""Portable model files: JSON holding sparse weights, bias, loss, feature count, classes, version.

Read and written by the CLI and by :func:`save_model` / :func:`load_model`; pickling estimators keeps
working too. A file is refused with one clear ValueError when it is corrupt, truncated or from an
incompatible format version.
"""
import json

import numpy as np

from . import __version__
from .estimators import OneVsRestStructSVM, StructSVM

FORMAT = "structfs-model"
FORMAT_VERSION = 1


def _jsonable(value):
    if isinstance(value, np.generic):
        return value.item()
    return value


def _binary_record(est):
    w = est.coef_[0]
    idx = np.flatnonzero(w)
    return {"indices": idx.tolist(), "values": w[idx].tolist(), "intercept": float(est.intercept_[0]),
            "objective": float(est.objective_)}


def save_model(estimator, path):
    """Write a fitted StructSVM or OneVsRestStructSVM to ``path`` (JSON)."""
    if isinstance(estimator, OneVsRestStructSVM):
        binaries = getattr(estimator, "estimators_", [None])
    elif isinstance(estimator, StructSVM):
        binaries = [estimator]
    else:
        hint = " (save its refitted model: save_model(cv.estimator_, path))" if hasattr(estimator, "estimator_") else ""
        raise TypeError(f"save_model takes a fitted StructSVM or OneVsRestStructSVM, got "
                        f"{type(estimator).__name__}{hint}.")
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(estimator)         # NotFittedError (a ValueError) rather than a missing attribute
    if not all(isinstance(b, StructSVM) for b in binaries):
        raise TypeError("save_model writes one-vs-rest models made of StructSVMs; this one holds "
                        f"{type(binaries[0]).__name__} (pickle it, or save each estimators_[i].estimator_).")
    first = binaries[0]
    loss = first.loss_
    try:
        loss_params = json.loads(json.dumps({k: _jsonable(v) for k, v in loss.params.items()}))
        loss_name = loss.name
    except TypeError:      # a user loss holding functions: recorded by name only
        loss_params, loss_name = None, loss.name
    doc = {
        "format": FORMAT, "format_version": FORMAT_VERSION, "structfs_version": __version__,
        "kind": "one-vs-rest" if isinstance(estimator, OneVsRestStructSVM) else "binary",
        "n_features": int(first.n_features_in_),
        "classes": [_jsonable(c) for c in estimator.classes_],
        "loss": loss_name, "loss_params": loss_params,
        "C": float(first.C), "budget": first.budget, "bias": float(first.bias), "tol": float(first.tol),
        # the remaining training parameters, so that a model file says how it was made (optional keys:
        # files written before they existed load with the defaults)
        "max_outer": int(first.max_outer), "refit": None if first.refit is None else float(first.refit),
        "max_features": None if first.max_features is None else int(first.max_features),
        "models": [_binary_record(b) for b in binaries],
    }
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(doc, fh)
    return path


def _binary_from(record, doc, classes):
    est = StructSVM(loss=doc["loss"] if doc["loss_params"] is not None else "f1",
                    loss_params=doc["loss_params"] or None, C=doc["C"], budget=doc["budget"], bias=doc["bias"],
                    tol=doc["tol"], max_outer=doc.get("max_outer", 30), max_features=doc.get("max_features"),
                    refit=doc.get("refit"))
    w = np.zeros(doc["n_features"])
    idx = np.asarray(record["indices"], dtype=np.int64)
    if idx.size and (idx.min() < 0 or idx.max() >= w.shape[0]):
        raise ValueError("model file is corrupt: a weight index lies outside 0..n_features-1.")
    w[idx] = np.asarray(record["values"], dtype=np.float64)
    est.coef_ = w[None, :]
    est.intercept_ = np.array([float(record["intercept"])])
    est.classes_ = np.asarray(classes)
    est.n_features_in_ = doc["n_features"]
    est.selected_features_ = np.flatnonzero(w)
    est.objective_ = record.get("objective", np.nan)
    from .losses import get_loss
    est.loss_ = get_loss(est.loss, **(est.loss_params or {}))
    return est


def load_model(path):
    """Read a model file written by :func:`save_model` (or ``structfs train``)."""
    try:
        with open(path, encoding="utf-8") as fh:
            doc = json.load(fh)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not a structfs model file (corrupt or truncated JSON: {exc.msg}).") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ValueError(f"{path}: not a structfs model file.")
    if doc.get("format_version") != FORMAT_VERSION:
        raise ValueError(f"{path}: model format version {doc.get('format_version')!r} is not supported by "
                         f"structfs {__version__} (which reads version {FORMAT_VERSION}).")
    try:
        classes = np.asarray(doc["classes"])
        if doc["kind"] == "binary":
            return _binary_from(doc["models"][0], doc, classes)
        ovr = OneVsRestStructSVM(loss=doc["loss"], C=doc["C"], budget=doc["budget"], bias=doc["bias"])
        ovr.classes_ = classes
        ovr.n_features_in_ = doc["n_features"]
        ovr.estimators_ = [_binary_from(r, doc, np.array([0, 1])) for r in doc["models"]]
        return ovr
    except (KeyError, IndexError, TypeError) as exc:
        raise ValueError(f"{path}: model file is corrupt or truncated (missing {exc}).") from None
