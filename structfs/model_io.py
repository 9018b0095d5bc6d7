"""Portable model files: JSON holding every parameter, sparse weights, bias, classes, feature names.

Read and written by the CLI and by :func:`save_model` / :func:`load_model`; pickling estimators keeps
working too. What is written round-trips exactly (``get_params()``, predictions, ``feature_names_in_``)
or is refused: a loss that JSON cannot hold (a user's ``ContingencyLoss`` with a lambda) makes
``save_model`` raise instead of being replaced by another loss on load. What is read is validated
against the schema below before any model is built; any breach is one ValueError naming the field.

Parameters are written from ``get_params(deep=False)``, so a new estimator parameter is saved without
touching this module; a nested estimator (``OneVsRestStructSVM(estimator=...)``) is written the same
way. Format 1 files (structfs 0.1) are still read, with defaults for what they did not record. A
one-vs-rest model whose binaries have parameters of their own (one-vs-rest over StructSVMCV: each
class's C, budget, groups) records them per model, as format 3, which an older reader refuses rather
than build every binary from the shared parameters.
"""
from __future__ import annotations

import json
import math
import numbers
import os
import re
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator

from . import __version__
from ._files import atomic_write, read_small_text
from ._validation import MAX_ABS_VALUE
from .estimators import (
    OneVsRestStructSVM,
    StructSVM,
    check_groups,
    check_parameters,
    nonzero_weights,
    set_fitted_weights,
)
from .solvers.data import weights_in

FORMAT = "structfs-model"
# A parameter that is a 1-D integer array (StructSVM's groups) is written as {NDARRAY: [...], "dtype": ...}.
NDARRAY = "__ndarray__"
FORMAT_VERSION = 2
# A one-vs-rest file whose binary models differ in their parameters (each class's own C, budget, ...:
# one-vs-rest over StructSVMCV, `structfs train --cv`) records them per model, as version 3: a reader
# of version 2 would build every model from the shared parameters, so it must refuse such a file.
FORMAT_VERSION_PER_MODEL = 3
# A model with interactions (products of feature pairs: StructSVM(interactions=True)) records them as
# models[i].pairs and models[i].pair_values, as version 4: a reader of version 3 would drop them and
# predict with the linear part alone, so it must refuse such a file.
FORMAT_VERSION_INTERACTIONS = 4
# A multi-label model fitted on a class vector (MultiLabelStructSVM's single_label_: predict marks each
# row's top-scoring label) records "single_label": true, as version 5: a reader of version 4 would
# predict by the cut at 0, so it must refuse such a file.
FORMAT_VERSION_SINGLE_LABEL = 5
_KINDS = {"binary": StructSVM, "one-vs-rest": OneVsRestStructSVM}


class ModelFileError(ValueError):
    """A model file that does not match the schema (a ValueError, with the field in its message)."""


# -- writing --------------------------------------------------------------------------------------------
def _loss_record(loss: Any) -> Any:
    """A loss parameter as JSON: a name, a built-in loss object as {"name", "params"}, or a user's
    ContingencyLoss as {"name": "contingency", "params"} with its functions recorded by importable name
    ("module:function"), never as code."""
    if loss is None or isinstance(loss, str):
        return loss
    from .losses import LOSSES, ContingencyLoss

    if type(loss) is LOSSES.get(getattr(loss, "name", "")):
        return {"name": loss.name, "params": {k: _plain(v, "loss.params") for k, v in loss.params.items()}}
    if type(loss) is ContingencyLoss:
        return {"name": "contingency", "params": {
            "fn": _function_reference(loss, loss.fn),
            "feasible": None if loss.feasible is None else _function_reference(loss, loss.feasible),
            "monotone": loss.monotone, "label": loss.name}}
    import pickle

    try:
        pickle.dumps(loss)
        instead = "pickle the model instead (pickle/joblib)"
    except Exception:
        instead = ("it does not pickle either: define its function at module level (not a lambda or a local "
                   "function), then pickle the model (pickle/joblib)")
    raise ValueError(f"save_model cannot write the loss {loss!r}: a model file holds built-in losses and "
                     f"ContingencyLoss with importable functions only; {instead}.")


def _function_reference(loss: Any, fn: Any) -> str:
    """"module:qualified.name" of a function that importing that module gives back; ValueError otherwise."""
    module, name = getattr(fn, "__module__", None), getattr(fn, "__qualname__", "")
    found = None
    if module and name and "<" not in name:
        try:
            found = _resolve(module, name)
        except (ImportError, AttributeError):
            pass
    if found is not fn:
        raise ValueError(f"save_model cannot write the loss {loss!r}: a model file records a loss function by the "
                         f"name it is imported by, and {fn!r} is not importable as {module}:{name} (a lambda, a "
                         "local function or a redefined one). Define it at the top of a module, or pickle the model.")
    return f"{module}:{name}"


def _resolve(module: str, name: str) -> Any:
    import importlib

    found = importlib.import_module(module)
    for part in name.split("."):
        found = getattr(found, part)
    return found


_REFERENCE = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")


def imported_function(text: str) -> Any:
    """The function named by ``"module:function"``, imported (model files and the command line name a
    user's loss function so, never holding its code); ValueError saying why when it cannot be."""
    if not isinstance(text, str) or len(text) > 500 or not _REFERENCE.fullmatch(text):
        raise ValueError(f"{text!r:.80} is not a function's importable name 'module:function'")
    module, name = text.split(":")
    try:
        fn = _resolve(module, name)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"the loss function {text} cannot be imported ({exc}); make the module that defines it "
                         "importable (installed, or on sys.path)") from None
    if not callable(fn):
        raise ValueError(f"{text} is not a function")
    return fn


def _imported_function(text: Any, field: str) -> Any:
    try:
        return imported_function(text)
    except ValueError as exc:
        raise ModelFileError(f"field {field}: {exc}") from None


def _loss_from_record(loss: Any, where: str) -> Any:
    """The loss object a {"name", "params"} record describes."""
    from .losses import ContingencyLoss, get_loss

    name = _field(loss, "name", "str", where)
    params = _field(loss, "params", "dict", where)
    if name != "contingency":
        return get_loss(name, **params)
    unknown = set(params) - {"fn", "feasible", "monotone", "label"}
    if unknown or "fn" not in params:
        raise ModelFileError(f"field {where}params must hold fn, feasible, monotone and label")
    if params.get("monotone") not in (None, True, False):
        raise ModelFileError(f"field {where}params.monotone must be null, true or false")
    label = params.get("label", "contingency")
    if not isinstance(label, str):
        raise ModelFileError(f"field {where}params.label must be a string")
    feasible = params.get("feasible")
    return ContingencyLoss(_imported_function(params["fn"], where + "params.fn"),
                           None if feasible is None else _imported_function(feasible, where + "params.feasible"),
                           name=label, monotone=params.get("monotone"))


def _plain(value: Any, field: str) -> Any:
    """A JSON-safe copy of a parameter value; ValueError naming the field when there is none."""
    if isinstance(value, (np.generic,)):
        value = value.item()
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        if not math.isfinite(value):
            raise ValueError(f"save_model cannot write {field}={value!r}: not a finite number.")
        return float(value)
    if isinstance(value, np.ndarray) and value.ndim == 1 and value.dtype.kind in "iu":
        return {NDARRAY: [int(v) for v in value], "dtype": value.dtype.str}    # read back as the same array
    if isinstance(value, (list, tuple)):
        return [_plain(v, field) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v, f"{field}.{k}") for k, v in value.items()}
    raise ValueError(f"save_model cannot write {field}={value!r} ({type(value).__name__}); pickle the model instead.")


def _params_record(estimator: Any) -> dict[str, Any]:
    out = {}
    for key, value in estimator.get_params(deep=False).items():
        if key == "loss":
            out[key] = _loss_record(value)
        elif key == "estimator" and value is not None:
            if not isinstance(value, StructSVM):
                raise ValueError(f"save_model writes one-vs-rest models over StructSVM; this one's estimator is "
                                 f"{type(value).__name__}. Pickle it instead.")
            out[key] = {"class": "StructSVM", "params": _params_record(value)}
        else:
            out[key] = _plain(value, key)
    return out


def _nonzero_weights(est: Any) -> tuple[np.ndarray, np.ndarray]:
    """(sorted indices, values) of a model's nonzero weights; nothing of the index space's size."""
    return nonzero_weights(est.coef_ if sp.issparse(est.coef_) else est.coef_[0])


def _binary_record(est: Any, shared_params: dict[str, Any] | None = None) -> dict[str, Any]:
    """One binary model; with its own parameters where they are not ``shared_params`` (those of the
    template a one-vs-rest model builds its binaries from)."""
    idx, values = _nonzero_weights(est)
    objective = float(est.objective_)
    record = {"indices": idx.tolist(), "values": values.tolist(), "intercept": float(est.intercept_[0]),
              "objective": objective if math.isfinite(objective) else None}     # None: not recorded
    if hasattr(est, "interactions_"):
        record["pairs"] = est.interactions_.tolist()
        record["pair_values"] = est.interaction_coef_.tolist()
    if shared_params is not None:
        own = _params_record(est)
        if own != shared_params:
            record["params"] = own
    return record


def save_model(estimator: BaseEstimator, path: str | os.PathLike) -> None:
    """Write a fitted StructSVM, OneVsRestStructSVM (of StructSVMs) or multi-label model to ``path`` (JSON);
    a MultiLabelStructSVMCV is written as the MultiLabelStructSVM of its chosen C and budget.

    Refuses (ValueError, nothing written) what it could not read back exactly: a user-defined loss,
    non-finite values, parameters JSON cannot hold.
    """
    from .multilabel import MultiLabelStructSVM, MultiLabelStructSVMCV

    if isinstance(estimator, (MultiLabelStructSVM, MultiLabelStructSVMCV)):
        return _save_multilabel(estimator, path)
    if not isinstance(estimator, (StructSVM, OneVsRestStructSVM)):
        hint = " (save its refitted model: save_model(cv.estimator_, path))" if hasattr(estimator, "estimator_") else ""
        raise TypeError(f"save_model takes a fitted StructSVM or OneVsRestStructSVM, got "
                        f"{type(estimator).__name__}{hint}.")
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(estimator)         # NotFittedError (a ValueError) rather than a missing attribute
    binaries = estimator.estimators_ if isinstance(estimator, OneVsRestStructSVM) else [estimator]
    if not all(isinstance(b, StructSVM) for b in binaries):
        raise TypeError("save_model writes one-vs-rest models made of StructSVMs; this one holds "
                        f"{type(binaries[0]).__name__} (pickle it, or save each estimators_[i].estimator_).")
    for b in binaries:
        pair_values = getattr(b, "interaction_coef_", np.zeros(0))
        if not (np.isfinite(_nonzero_weights(b)[1]).all() and np.isfinite(b.intercept_).all()
                and np.isfinite(pair_values).all()):
            raise ValueError("save_model refuses a model with non-finite weights.")
    shared = _params_record(estimator.binary_estimator()) if isinstance(estimator, OneVsRestStructSVM) else None
    models = [_binary_record(b, shared) for b in binaries]
    version = FORMAT_VERSION_PER_MODEL if any("params" in m for m in models) else FORMAT_VERSION
    doc = {
        "format": FORMAT, "structfs_version": __version__,
        "format_version": FORMAT_VERSION_INTERACTIONS if any("pairs" in m for m in models) else version,
        "kind": "one-vs-rest" if isinstance(estimator, OneVsRestStructSVM) else "binary",
        "n_features": int(estimator.n_features_in_),
        "classes": [_plain(c, "classes") for c in estimator.classes_],
        "feature_names": ([str(f) for f in estimator.feature_names_in_]
                          if hasattr(estimator, "feature_names_in_") else None),
        "params": _params_record(estimator),
        "models": models,
    }
    return _write(doc, path)


def _write(doc: dict[str, Any], path: Any) -> Any:
    """A model file's JSON, written whole or not at all (a failed write leaves the previous file)."""
    text = json.dumps(doc, allow_nan=False)
    with atomic_write(path) as fh:
        fh.write(text)
    return path


def _save_multilabel(estimator: Any, path: Any) -> Any:
    """A multi-label model: one weight record per label, and the parameters of the MultiLabelStructSVM
    it is (for a search: at the chosen C and budget)."""
    from sklearn.utils.validation import check_is_fitted

    from .multilabel import MultiLabelStructSVM

    check_is_fitted(estimator)
    if not (np.isfinite(estimator.coef_).all() and np.isfinite(estimator.intercept_).all()):
        raise ValueError("save_model refuses a model with non-finite weights.")
    params = {k: v for k, v in estimator.get_params(deep=False).items()
              if k in MultiLabelStructSVM().get_params(deep=False)}
    if not isinstance(estimator, MultiLabelStructSVM):
        params.update(C=float(estimator.C_), budget=estimator.budget_)
    models = []
    for coef, intercept in zip(estimator.coef_, estimator.intercept_):
        idx, values = nonzero_weights(coef)
        models.append({"indices": idx.tolist(), "values": values.tolist(), "intercept": float(intercept),
                       "objective": None})
    doc = {"format": FORMAT, "structfs_version": __version__, "format_version": FORMAT_VERSION_INTERACTIONS,
           "kind": "multi-label", "n_features": int(estimator.n_features_in_),
           "classes": [_plain(c, "classes") for c in estimator.classes_], "feature_names": None,
           "params": _params_record(MultiLabelStructSVM(**params)), "models": models}
    if getattr(estimator, "single_label_", False):
        doc.update(format_version=FORMAT_VERSION_SINGLE_LABEL, single_label=True)
    return _write(doc, path)


# -- reading --------------------------------------------------------------------------------------------
def _shown(name: str) -> str:
    """A field name as the one-line error shows it: as written, or quoted where it has control characters."""
    return name if name.isprintable() else repr(name)


def _field(doc: Any, key: str, kind: str, where: str = "") -> Any:
    if not isinstance(doc, dict) or key not in doc:
        raise ModelFileError(f"missing field {where}{key}")
    value = doc[key]
    ok = {"int": lambda v: isinstance(v, int) and not isinstance(v, bool) and abs(v) < 2 ** 63,
          "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and abs(v) <= MAX_ABS_VALUE,
          "list": lambda v: isinstance(v, list), "dict": lambda v: isinstance(v, dict),
          "str": lambda v: isinstance(v, str)}[kind]
    if not ok(value):
        raise ModelFileError(f"field {where}{key} must be a finite {kind}, got {value!r:.60}")
    return value


def _weights(record: Any, n_features: int, where: str, version: int) -> tuple[Any, float, Any, Any]:
    indices = _field(record, "indices", "list", where)
    values = _field(record, "values", "list", where)
    if len(indices) != len(values):
        raise ModelFileError(f"{where}indices and {where}values differ in length")
    if not all(isinstance(i, int) and not isinstance(i, bool) and 0 <= i < n_features for i in indices):
        raise ModelFileError(f"{where}indices must be integers in 0..n_features-1 ({n_features})")
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and abs(v) <= MAX_ABS_VALUE for v in values):
        raise ModelFileError(f"{where}values must be finite numbers of magnitude at most {MAX_ABS_VALUE:g} (larger "
                             "weights overflow the decision values)")
    idx = np.asarray(indices, dtype=np.int64)
    if np.unique(idx).size != idx.size:
        raise ModelFileError(f"{where}indices repeat a feature")
    order = np.argsort(idx)
    w = weights_in(idx[order], np.asarray(values, dtype=np.float64)[order], n_features)
    known = {"indices", "values", "intercept", "objective", "params"}
    if version >= FORMAT_VERSION_INTERACTIONS:
        known |= {"pairs", "pair_values"}
    unknown = sorted(set(record) - known)
    if unknown:
        raise ModelFileError(f"field {where}{_shown(unknown[0])} is not part of a model record")
    intercept = _field(record, "intercept", "number", where)
    objective = float("nan") if record.get("objective") is None else _field(record, "objective", "number", where)
    return w, float(intercept), float(objective), _pairs(record, n_features, where)


def _pairs(record: Any, n_features: int, where: str) -> tuple[np.ndarray, np.ndarray] | None:
    """(pairs (p, 2), their weights) of a record with interactions, or None."""
    if "pairs" not in record and "pair_values" not in record:
        return None
    pairs = _field(record, "pairs", "list", where)
    values = _field(record, "pair_values", "list", where)
    if len(pairs) != len(values):
        raise ModelFileError(f"{where}pairs and {where}pair_values differ in length")
    if not all(isinstance(p, list) and len(p) == 2 and all(isinstance(i, int) and not isinstance(i, bool) for i in p)
               and 0 <= p[0] < p[1] < n_features for p in pairs):
        raise ModelFileError(f"{where}pairs must be pairs [j, k] of integers, 0 <= j < k < n_features ({n_features})")
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and abs(v) <= MAX_ABS_VALUE for v in values):
        raise ModelFileError(f"{where}pair_values must be finite numbers of magnitude at most {MAX_ABS_VALUE:g}")
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    if pairs.shape[0] > 1 and not np.all(np.diff(pairs[:, 0] * n_features + pairs[:, 1]) > 0):
        raise ModelFileError(f"{where}pairs must be sorted and distinct")
    return pairs, np.asarray(values, dtype=np.float64)


def _build(cls: Any, params: Any, where: str = "params.") -> Any:
    params = dict(params)
    for key, value in params.items():
        if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 2 ** 63:
            raise ModelFileError(f"field {where}{key} is an integer beyond 2^63")
    if isinstance(params.get("loss"), dict):
        try:
            params["loss"] = _loss_from_record(params["loss"], where + "loss.")
        except (TypeError, OverflowError) as exc:
            raise ModelFileError(f"field {where}loss: {exc}") from None
    if params.get("estimator") is not None and not isinstance(params["estimator"], dict):
        raise ModelFileError(f"field {where}estimator must be null or a record of an estimator")
    if isinstance(params.get("estimator"), dict):
        nested = params["estimator"]
        if _field(nested, "class", "str", where + "estimator.") != "StructSVM":
            raise ModelFileError(f"field {where}estimator.class must be 'StructSVM', got {nested['class']!r:.60}")
        params["estimator"] = _build(StructSVM, _field(nested, "params", "dict", where + "estimator."),
                                     where + "estimator.params.")
    for key, value in params.items():
        if isinstance(value, dict) and NDARRAY in value:
            params[key] = _array(value, where + key)
    known = set(cls().get_params(deep=False))
    unknown = sorted(set(params) - known)
    if unknown:
        raise ModelFileError(f"field {where}{_shown(unknown[0])} is not a parameter of {cls.__name__} (a file from a "
                             "newer structfs?)")
    est = cls(**params)
    try:
        check_parameters(est)
    except (ValueError, TypeError, OverflowError) as exc:
        raise ModelFileError(f"field {where[:-1]}: {exc}") from None
    return est


def _array(record: Any, where: str) -> np.ndarray:
    """A 1-D integer array parameter written by :func:`_plain`."""
    if set(record) != {NDARRAY, "dtype"} or not isinstance(record[NDARRAY], list):
        raise ModelFileError(f"field {where} must be {{{NDARRAY!r}: [integers], 'dtype': ...}}")
    dtype = record["dtype"]
    if not isinstance(dtype, str) or dtype not in ("<i8", "<i4", "<i2", "|i1", "<u8", "<u4", "<u2", "|u1"):
        raise ModelFileError(f"field {where}.dtype must name an integer type, got {dtype!r:.40}")
    values = record[NDARRAY]
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        raise ModelFileError(f"field {where} must hold integers")
    info = np.iinfo(np.dtype(dtype))
    if values and (min(values) < info.min or max(values) > info.max):
        raise ModelFileError(f"field {where} holds a value outside {np.dtype(dtype).name}")
    return np.array(values, dtype=np.dtype(dtype))


def _fill(est: Any, w: Any, intercept: float, objective: Any, pairs: Any, classes: Any, n_features: int) -> Any:
    from .losses import get_loss

    if pairs is not None and not getattr(est, "interactions", False):
        raise ModelFileError("field models: the file records interactions for a model without interactions=True")
    if getattr(est, "interactions", False) and pairs is None:
        pairs = (np.zeros((0, 2), np.int64), np.zeros(0))
    groups = None
    if getattr(est, "groups", None) is not None:
        try:
            groups = check_groups(est.groups, n_features)
        except ValueError as exc:
            raise ModelFileError(f"field params.groups: {exc}") from None
    set_fitted_weights(est, w, intercept, classes, n_features, pairs, groups)
    est.objective_ = objective
    est.loss_ = get_loss(est.loss, **(est.loss_params or {})) if isinstance(est.loss, str) else est.loss
    return est


def _params_v1(doc: dict[str, Any]) -> dict[str, Any]:
    """The parameters a format-1 file recorded (others take their defaults)."""
    params: dict[str, Any] = {k: doc[k] for k in ("C", "budget", "bias", "tol") if k in doc}
    params.update({k: doc[k] for k in ("max_outer", "refit", "max_features") if doc.get(k) is not None})
    if doc.get("loss_params") is None and doc.get("loss") not in (None, "f1"):
        raise ModelFileError(f"field loss: the file records a user-defined loss {doc.get('loss')!r} by name only; "
                             "it cannot be loaded without it")
    params["loss"] = doc.get("loss", "f1")
    params["loss_params"] = doc.get("loss_params") or None
    return params


def _load(doc: Any) -> Any:
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ModelFileError("not a structfs model file")
    version = doc.get("format_version")
    if isinstance(version, bool) or version not in (1, FORMAT_VERSION, FORMAT_VERSION_PER_MODEL,
                                                    FORMAT_VERSION_INTERACTIONS, FORMAT_VERSION_SINGLE_LABEL):
        raise ModelFileError(f"model format version {version!r} is not supported by structfs {__version__} "
                             f"(which reads versions 1 to {FORMAT_VERSION_SINGLE_LABEL})")
    if version != 1:
        known = {"format", "structfs_version", "format_version", "kind", "n_features", "classes", "feature_names",
                 "params", "models"} | ({"single_label"} if version >= FORMAT_VERSION_SINGLE_LABEL else set())
        unknown = sorted(set(doc) - known)
        if unknown:
            raise ModelFileError(f"field {_shown(unknown[0])} is not part of a model file of version {version}")
    kind = _field(doc, "kind", "str")
    if kind not in _KINDS and kind != "multi-label":
        raise ModelFileError(f"field kind must be 'binary', 'one-vs-rest' or 'multi-label', got {kind!r}")
    if "single_label" in doc and kind != "multi-label":
        raise ModelFileError(f"field single_label belongs to multi-label models; this one is {kind!r}")
    n_features = _field(doc, "n_features", "int")
    if not 1 <= n_features <= 2 ** 31:
        raise ModelFileError(f"field n_features must be in 1..2^31, got {n_features}")
    classes = _field(doc, "classes", "list")
    numbers_only = all(isinstance(c, (int, float)) and not isinstance(c, bool) and abs(c) <= MAX_ABS_VALUE
                       for c in classes)
    if not (numbers_only or all(isinstance(c, str) for c in classes)) or len(set(classes)) != len(classes):
        raise ModelFileError("field classes must hold distinct values, all finite numbers or all strings")
    if sorted(classes, key=lambda c: (isinstance(c, str), c)) != classes:
        raise ModelFileError("field classes must be sorted (classes_[1] is the positive class)")
    models = _field(doc, "models", "list")
    expected = 1 if len(classes) == 2 and kind != "multi-label" else len(classes)
    if kind == "binary" and len(classes) != 2:
        raise ModelFileError(f"field classes: a binary model has 2 classes, this file has {len(classes)}")
    if kind == "one-vs-rest" and len(classes) < 2:
        raise ModelFileError("field classes: a one-vs-rest model has at least 2 classes")
    if len(models) != expected:
        raise ModelFileError(f"field models: {len(classes)} classes need {expected} model(s), the file has "
                             f"{len(models)}")
    params = _params_v1(doc) if version == 1 else _field(doc, "params", "dict")
    if kind == "multi-label":
        from .multilabel import MultiLabelStructSVM

        est = _build(MultiLabelStructSVM, params)
    else:
        est = _build(_KINDS[kind], params)
    names = doc.get("feature_names")
    if names is not None and (not isinstance(names, list) or len(names) != n_features
                              or not all(isinstance(n, str) for n in names)):
        raise ModelFileError("field feature_names must list one name per feature")
    weights = [_weights(r, n_features, f"models[{i}].", version) for i, r in enumerate(models)]
    if kind == "binary":
        _fill(est, *weights[0], classes, n_features)
    elif kind == "multi-label":
        if any(wt[3] is not None for wt in weights):
            raise ModelFileError("field models: a multi-label model has no interaction pairs")
        est.coef_ = np.vstack([np.asarray(wt[0].toarray() if sp.issparse(wt[0]) else wt[0]).ravel() for wt in weights])
        est.intercept_ = np.array([wt[1] for wt in weights])
        est.single_label_ = _single_label(doc, version)
        est.classes_ = np.asarray(classes)
        est.n_features_in_ = n_features
        est.selected_features_ = np.flatnonzero(np.any(est.coef_ != 0, axis=0))
    else:
        est.classes_ = np.asarray(classes)
        est.n_features_in_ = n_features
        est.estimators_ = [_fill(_binary_of(est, r, i, version), *wt, np.array([0, 1]), n_features)
                           for i, (r, wt) in enumerate(zip(models, weights))]
    if names is not None:
        est.feature_names_in_ = np.asarray(names, dtype=object)
    return est


def _single_label(doc: dict[str, Any], version: int) -> bool:
    """A multi-label file's single_label field: True only as version 5 writes it, else absent (False)."""
    if "single_label" not in doc:
        return False
    if doc["single_label"] is not True or version < FORMAT_VERSION_SINGLE_LABEL:
        raise ModelFileError("field single_label must be true where present (a version 5 multi-label file)")
    return True


def _binary_of(ovr: Any, record: Any, i: int, version: int) -> Any:
    """The unfitted binary model of a one-vs-rest file's model ``i``: from its own parameters (format 3)
    or from the shared ones."""
    if "params" not in record:
        return ovr.binary_estimator()
    if version < FORMAT_VERSION_PER_MODEL:
        raise ModelFileError(f"field models[{i}].params: per-model parameters need format version "
                             f"{FORMAT_VERSION_PER_MODEL}, the file says {version}")
    return _build(StructSVM, _field(record, "params", "dict", f"models[{i}]."), f"models[{i}].params.")


def load_model(path: str | os.PathLike) -> BaseEstimator:
    """Read and validate a model file written by :func:`save_model` (or ``structfs train``)."""
    text = read_small_text(path, "structfs model file")
    try:
        return _load(json.loads(text, parse_constant=_reject_constant, parse_int=_parse_int))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not a structfs model file (corrupt or truncated JSON: {exc.msg}).") from None
    except RecursionError:
        raise ValueError(f"{path}: not a structfs model file (JSON nested too deeply).") from None
    except ModelFileError as exc:
        raise ValueError(f"{path}: model file is corrupt or invalid: {str(exc).rstrip('.')}.") from None


def _parse_int(digits: str) -> int:
    # No count, index or label of a model needs 40 digits; Python refuses 4,300 with a message naming
    # neither the file nor the value.
    if len(digits.lstrip("-")) > 40:
        raise ModelFileError(f"an integer of {len(digits.lstrip('-'))} digits ({digits[:12]}...) is no count, index or "
                             "label of a model")
    return int(digits)


def _reject_constant(name: str) -> None:
    raise ModelFileError(f"{name} is not a valid weight or parameter")
