"""The ``structfs`` command line: train / predict / evaluate / path / demo / compile.

SVMperf users find svm_perf_learn's options where they mean the same (-c, -l, --b, --p, -e, -v);
errors are one line on stderr and a non-zero exit, never a traceback.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any, NoReturn

from . import __version__, _defaults
from ._files import atomic_write


class _LazyNumpy:
    """numpy imported on first use: ``structfs --help`` must answer in well under a second."""

    def __getattr__(self, name: str) -> Any:
        import numpy

        return getattr(numpy, name)


np = _LazyNumpy()


class CLIError(Exception):
    """An error reported to the user as one line (exit status 1)."""


def _demo(args: argparse.Namespace) -> int:
    if args.plot:
        _check_output(args.plot)
    from .demo import run

    return run(jobs=args.jobs, plot=args.plot)


def _compile(args: argparse.Namespace) -> int:
    from .warmup import compile_kernels

    print(f"structfs {__version__}: compiling the numba kernels (or loading them from numba's cache)...", flush=True)
    print(f"done in {compile_kernels():.1f} s")
    return 0


def read_svmlight(path: str, n_features: int | None = None, multilabel: bool = False) -> tuple[Any, Any]:
    """(X CSR, y) from an SVMlight/LIBSVM file (1-based indices, qid ignored, # comments allowed);
    a malformed file is reported with its line number. ``multilabel``: comma-separated labels per line,
    y a list of tuples."""
    from .svmlight import load_svmlight

    try:
        return load_svmlight(path, n_features=n_features, multilabel=multilabel)
    except ValueError as exc:
        raise CLIError(str(exc)) from None


def _loss_name(value: str) -> Any:
    """A built-in loss's name (also from an SVMperf code), or for "module:function" a ContingencyLoss of
    that function (imported; a model file then records it by that name)."""
    from .losses import LOSSES, SVMPERF_CODES

    if ":" in value:
        from .losses import ContingencyLoss
        from .model_io import imported_function

        try:
            return ContingencyLoss(imported_function(value))
        except ValueError as exc:
            raise CLIError(f"-l {exc}") from None
    if value.isdigit():
        code = int(value)
        if code not in SVMPERF_CODES:
            raise CLIError(f"unknown SVMperf loss code {code}; structfs knows {sorted(SVMPERF_CODES)} "
                           f"({', '.join(f'{k}={v}' for k, v in SVMPERF_CODES.items())})")
        return SVMPERF_CODES[code]
    if value not in LOSSES:
        raise CLIError(f"unknown loss {value!r}; known losses: {', '.join(LOSSES)} (or SVMperf codes 1,2,3,4,5,10, "
                       "or module:function for your own contingency loss)")
    return value


def _loss_params(args: argparse.Namespace, loss: str) -> dict[str, Any] | None:
    """The loss parameters the options give for ``loss`` (None: its defaults)."""
    if loss in ("prec@k", "rec@k") and args.p:
        return {"k_frac": args.p}
    if loss in ("fbeta", "pauc") and args.beta is not None:
        return {"beta": args.beta}
    operating = _operating_options(args)
    if loss in OPERATING_POINTS and OPERATING_POINTS[loss][0] in operating:
        option = OPERATING_POINTS[loss][0]
        return {option: operating[option]}
    return None


def _estimator(args: argparse.Namespace, n_classes: int) -> Any:
    from .estimators import OneVsRestStructSVM, StructSVM

    loss = _loss_name(args.loss)
    loss_params = _loss_params(args, loss)
    if args.pos_label is not None and n_classes > 2:
        raise CLIError(f"--pos-label names the positive class of a two-class problem; these data have {n_classes} "
                       "classes (one-vs-rest measures every class)")
    if getattr(args, "cv", None) is not None:
        return _cv_estimator(args, n_classes, loss, loss_params)
    params = dict(loss=loss, loss_params=loss_params, C=_defaults.C if args.C is None else args.C, budget=args.budget,
                  bias=args.bias, tol=_defaults.TOL if args.tol is None else args.tol, max_outer=args.max_outer,
                  max_features=args.max_features,
                  refit=args.refit, interactions=getattr(args, "interactions", False),
                  pos_label=args.pos_label, verbose=max(0, args.verbose - 1))
    if n_classes > 2:
        return OneVsRestStructSVM(estimator=StructSVM(**params), n_jobs=args.jobs)
    return StructSVM(**params)


def _cv_estimator(args: argparse.Namespace, n_classes: int, loss: str, loss_params: dict[str, Any] | None) -> Any:
    """``train --cv K``: StructSVMCV (one-vs-rest over it for more classes); -c / -B fix C / the budget."""
    from .estimators import OneVsRestStructSVM
    from .model_selection import StructSVMCV

    if args.cv < 2:
        raise CLIError(f"--cv must be at least 2 folds, got {args.cv}")
    if args.refit is not None:
        raise CLIError("--refit is not used with --cv: the search debiases every budgeted candidate at its own C")
    binary = StructSVMCV(loss=loss, loss_params=loss_params, cv=args.cv, bias=args.bias, tol=args.tol,
                         max_outer=args.max_outer, max_features=args.max_features,
                         Cs=None if args.C is None else [args.C],
                         budgets=None if args.budget is None else [args.budget],
                         interactions=getattr(args, "interactions", False), pos_label=args.pos_label,
                         n_jobs=args.jobs if n_classes <= 2 else None,        # one-vs-rest: classes in parallel
                         verbose=max(0, args.verbose - 1))
    return OneVsRestStructSVM(estimator=binary, n_jobs=args.jobs) if n_classes > 2 else binary


def _refitted(clf: Any) -> Any:
    """What a model file holds for ``clf``: a cross-validated estimator's refitted StructSVM(s)."""
    from .estimators import OneVsRestStructSVM, StructSVM
    from .model_selection import StructSVMCV

    if isinstance(clf, StructSVMCV):
        return clf.estimator_
    if isinstance(clf, OneVsRestStructSVM) and isinstance(clf.estimator, StructSVMCV):
        cv = clf.estimator
        plain = OneVsRestStructSVM(estimator=StructSVM(loss=cv.loss, loss_params=cv.loss_params, bias=cv.bias,
                                                       tol=_defaults.TOL if cv.tol is None else cv.tol,
                                                       max_outer=cv.max_outer,
                                                       max_features=cv.max_features, interactions=cv.interactions),
                                   n_jobs=clf.n_jobs)
        plain.classes_, plain.n_features_in_ = clf.classes_, clf.n_features_in_
        plain.estimators_ = [est.estimator_ for est in clf.estimators_]    # each with its own C, budget, groups
        return plain
    return clf


def _check_output(path: str, *inputs: str) -> None:
    """Refuse an output that would overwrite an input, or that cannot be written, before any work."""
    import os

    target = os.path.realpath(path)
    for source in inputs:
        if os.path.exists(source) and os.path.exists(target) and os.path.samefile(source, target):
            raise CLIError(f"output {path} is the input {source}; it would be overwritten")
    if os.path.isdir(target):
        raise CLIError(f"output {path} is a directory; give a file name")
    folder = os.path.dirname(target) or "."
    if not os.path.isdir(folder):
        raise CLIError(f"cannot write {path}: no such directory {folder}")
    if not os.access(folder, os.W_OK) or (os.path.exists(target) and not os.access(target, os.W_OK)):
        raise CLIError(f"cannot write {path}: permission denied")


def _read_training_data(path: str) -> tuple[Any, Any]:
    """(X, y): an SVMlight file in memory, or a shard directory (``structfs shard``) left on disk."""
    from .shards import ShardedMatrix, is_shard_directory

    if is_shard_directory(path):
        X = ShardedMatrix(path)
        return X, X.y
    return read_svmlight(path)


def _train(args: argparse.Namespace) -> int:
    from .estimators import check_parameters
    from .model_io import save_model
    from .shards import is_shard_directory

    _check_output(args.model_file, args.train_file)
    if args.algorithm is not None and args.verbose:
        print(f"structfs: note: -w {args.algorithm} (svm_perf's algorithm choice) is accepted and ignored; structfs "
              "has one algorithm", file=sys.stderr)
    if args.cv is not None and is_shard_directory(args.train_file):
        raise CLIError("--cv needs the training data in memory (an SVMlight file), not a shard directory")
    if getattr(args, "multilabel", False):
        return _train_multilabel(args)
    check_parameters(_estimator(args, 2))          # bad options fail before the data are read
    X, y = _read_training_data(args.train_file)
    n_classes = np.unique(y).shape[0]
    clf = _estimator(args, n_classes)
    if args.verbose >= 2:        # svm_perf's "Reading training examples...done": the fit begins now
        print(f"read {X.shape[0]} examples x {X.shape[1]} features from {args.train_file}; training", flush=True)
    t0 = time.perf_counter()
    clf.fit(X, y)
    seconds = time.perf_counter() - t0
    model = _refitted(clf)
    save_model(model, args.model_file)
    if args.verbose:
        feats = _mean_selected(model)
        binaries = getattr(model, "estimators_", [model])
        pairs = "" if not args.interactions else \
            f" and {np.mean([len(getattr(b, 'interaction_coef_', ())) for b in binaries]):.1f} pairs"
        print(f"trained on {X.shape[0]} examples x {X.shape[1]} features, {n_classes} classes in {seconds:.2f} s; "
              f"{feats:.1f} selected features{pairs} per model; model written to {args.model_file}")
        if args.cv is not None:
            searched = clf.estimators_ if hasattr(clf, "estimators_") else [clf]
            print(f"chosen by {args.cv}-fold cross-validation: " + "; ".join(
                f"C {est.C_:.4g}, budget {est.budget_}, groups {est.n_groups_}, loss {est.loss_.name}"
                for est in searched))
    return 0


def _multilabel_estimator(args: argparse.Namespace) -> Any:
    from .multilabel import MultiLabelStructSVM, MultiLabelStructSVMCV

    loss = _loss_name(args.loss)
    loss_params = _loss_params(args, loss)
    if args.cv is not None:
        return MultiLabelStructSVMCV(loss=loss, average=args.average, max_features=args.max_features, cv=args.cv,
                                     bias=args.bias, loss_params=loss_params, n_jobs=args.jobs)
    if args.max_features is not None and args.budget is None:
        raise CLIError("--max-features with --multilabel caps a search (--cv); without it set -B, the shared budget")
    return MultiLabelStructSVM(loss=loss, average=args.average, C=_defaults.C if args.C is None else args.C,
                               budget=args.budget, bias=args.bias, loss_params=loss_params,
                               tol=_defaults.TOL if args.tol is None else args.tol,
                               max_outer=args.max_outer)


def _train_multilabel(args: argparse.Namespace) -> int:
    """One joint model for a file whose lines carry comma-separated labels; -B is the budget all labels
    share, --average micro or macro."""
    from sklearn.preprocessing import MultiLabelBinarizer

    from .model_io import save_model

    if args.pos_label is not None or args.interactions:
        raise CLIError("--multilabel takes neither --pos-label nor --interactions")
    model = _multilabel_estimator(args)       # option errors before the data are read (argparse checks --average)
    X, labels = read_svmlight(args.train_file, multilabel=True)
    binarizer = MultiLabelBinarizer()
    Y = binarizer.fit_transform(labels)
    t0 = time.perf_counter()
    model.fit(X, Y)
    model.classes_ = binarizer.classes_            # the labels as the file writes them
    save_model(model, args.model_file)
    if args.verbose:
        print(f"trained on {X.shape[0]} examples x {X.shape[1]} features, {Y.shape[1]} labels ({args.average}-"
              f"averaged {model.loss}) in {time.perf_counter() - t0:.2f} s; {len(model.selected_features_)} "
              f"features shared by all labels; model written to {args.model_file}")
    return 0


def _multilabel_report(test_file: str, model: Any, scores: Any, labels: Any) -> None:
    """Micro- and macro-averaged precision, recall and F1 of the labels the model predicts: those of score
    > 0, or for a model fitted on a class vector (``single_label_``) each example's top-scoring label,
    as its ``predict`` does."""
    from sklearn.metrics import f1_score, precision_score, recall_score

    from .multilabel import label_decisions

    Y = np.array([[c in set(row) for c in model.classes_] for row in labels], dtype=int)
    single = getattr(model, "single_label_", False)
    P = label_decisions(scores, single)
    rule = "one class per example, its top-scoring label" if single else "a label is predicted where its score is > 0"
    print(f"{test_file}: {len(labels)} examples, {Y.shape[1]} labels (multi-label; {rule})")
    for average in ("micro", "macro"):
        print(f"{average}-precision: {100 * precision_score(Y, P, average=average, zero_division=0):6.2f}  "
              f"{average}-recall: {100 * recall_score(Y, P, average=average, zero_division=0):6.2f}  "
              f"{average}-F1: {100 * f1_score(Y, P, average=average, zero_division=0):6.2f}")
    print(f"exact label sets: {100 * np.mean(np.all(Y == P, axis=1)):.2f}%")


def _scores_on_shards(model: Any, path: str) -> tuple[Any, Any]:
    """Decision values of a binary linear model on a shard directory, one pass; as for SVMlight
    input, features the model never saw have no weight."""
    from .estimators import sparse_row_nonzeros
    from .shards import ShardedMatrix

    X = ShardedMatrix(path)
    coef = getattr(model, "coef_", None)
    if coef is None or coef.shape[0] != 1:
        raise CLIError(f"{path} is a shard directory: only binary linear models (StructSVM) predict on shards")
    idx, values = sparse_row_nonzeros(coef)
    keep = idx < X.shape[1]
    scores = X.dot(idx[keep], values[keep]) + model.intercept_[0]
    pairs = getattr(model, "interactions_", np.zeros((0, 2), dtype=np.int64))
    present = pairs[:, 1] < X.shape[1] if pairs.shape[0] else np.zeros(0, dtype=bool)   # a missing feature is 0
    if present.any():
        from .solvers.interactions import pair_products

        scores = scores + pair_products(X, pairs[present]) @ model.interaction_coef_[present]
    return scores, X.y


def _scores_for(args: argparse.Namespace) -> tuple[Any, Any, Any]:
    from .model_io import load_model
    from .shards import is_shard_directory

    model = load_model(args.model_file)
    if is_shard_directory(args.test_file):
        scores, y = _scores_on_shards(model, args.test_file)
        return model, scores, y
    from .multilabel import MultiLabelStructSVM

    X, y = read_svmlight(args.test_file, n_features=None, multilabel=isinstance(model, MultiLabelStructSVM))
    n_model = model.n_features_in_
    if X.shape[1] > n_model:
        # as svm_perf_classify: features the model never saw have no weight (new vocabulary is normal)
        unseen = int(X[:, n_model:].getnnz())
        print(f"structfs: note: {args.test_file} has feature indices up to {X.shape[1]}; the model knows "
              f"{n_model}, so {unseen} value(s) of unseen features are ignored", file=sys.stderr)
        X = X[:, :n_model]
    if X.shape[1] < n_model:
        X.resize((X.shape[0], n_model))
    return model, model.decision_function(X), y


def _numeric_classes(model: Any) -> Any:
    """The model's classes as floats (an SVMlight file's labels), or None when they are not numbers."""
    try:
        return np.asarray(model.classes_, dtype=float)
    except (TypeError, ValueError):
        return None


def _predict(args: argparse.Namespace) -> int:
    _check_output(args.out_file, args.test_file, args.model_file)
    model, scores, y = _scores_for(args)
    with atomic_write(args.out_file) as fh:          # a full disk leaves no partial prediction file
        np.savetxt(fh, scores[:, None] if scores.ndim == 1 else scores, fmt="%.10g")
    # as svm_perf_classify: the test file's labels, when they are the model's classes, give the report
    if isinstance(y, list):
        if args.verbose:
            _multilabel_report(args.test_file, model, scores, y)
        return 0
    if args.verbose and _numeric_classes(model) is not None and np.all(np.isin(y, _numeric_classes(model))):
        _print_report(args.test_file, model.classes_, scores, y)
    return 0


# (name, measure, needs both classes) in the order svm_perf_classify prints them, then structfs's own
_MEASURES = (("Accuracy", "accuracy", False), ("Precision", "precision", False), ("Recall", "recall", True),
             ("F1", "f1", False), ("PRBEP", "prbep", True), ("ROC-AUC", "roc_auc", True),
             ("AP", "average_precision", True), ("Prec@k", "precision_at_k", False), ("Rec@k", "recall_at_k", True),
             ("pAUC", "partial_auc", True), ("Prec@Rec", "precision_at_recall", True),
             ("Rec@Prec", "recall_at_precision", True), ("TPR@FPR", "tpr_at_fpr", True), ("Error", "error_rate", False))
_SVMPERF_NAMES = {"ROC-AUC": "ROCArea", "AP": "AvgPrec"}
_K_LOSSES = {"Prec@k": "prec@k", "Rec@k": "rec@k"}      # the measures whose k the report prints
# the operating-point losses and measures: their constraint's option (and loss parameter), its default
OPERATING_POINTS = {"prec@rec": ("recall", 0.9), "rec@prec": ("precision", 0.9), "tpr@fpr": ("fpr", 0.01)}
_OPERATING_MEASURES = {"Prec@Rec": "prec@rec", "Rec@Prec": "rec@prec", "TPR@FPR": "tpr@fpr"}


def _precision(y: Any, s: Any) -> float:
    from .metrics import contingency_table

    a, b, _, _ = contingency_table(y, np.where(s > 0, 1, -1))
    return 100.0 * a / (a + b) if a + b else 0.0


def _recall(y: Any, s: Any) -> float:
    from .metrics import contingency_table

    a, _, c, _ = contingency_table(y, np.where(s > 0, 1, -1))
    return 100.0 * a / (a + c) if a + c else 0.0


def evaluate_scores(classes: Any, scores: Any, y: Any, k_frac: float | None = None, beta: float = 0.1,
                    pos_label: Any = None, operating: dict[str, float] | None = None) -> dict[str, Any]:
    """Every measure (percent) of the scores, labels cut at 0; macro-averaged over one-vs-rest columns for
    more than two classes. Also "k of Prec@k" and "k of Rec@k": the k of each column. Two classes: the
    measures are those of ``pos_label`` (None: ``classes[1]``, the class of positive scores).
    ``operating``: the constraints of the operating points, e.g. ``{"recall": 0.8}`` (defaults: recall and
    precision 0.9, false-positive rate 0.01)."""
    operating = _with_default_points(operating)
    from . import metrics
    from .losses import get_loss

    columns = [scores] if scores.ndim == 1 else [scores[:, j] for j in range(scores.shape[1])]
    targets = [classes[1]] if scores.ndim == 1 else list(classes)
    if scores.ndim == 1 and pos_label is not None and pos_label == classes[0]:
        columns, targets = [-scores], [classes[0]]          # the model's scores rank classes[1] high
    measures = {"precision": _precision, "recall": _recall}
    out: dict[str, Any] = {"k of Prec@k": [], "k of Rec@k": []}
    for name, function, needs_both in _MEASURES:
        fn = measures.get(function) or getattr(metrics, function)
        values = []
        for col, target in zip(columns, targets):
            yy = np.where(y == target, 1, -1)
            n_pos = int((yy > 0).sum())
            if needs_both and n_pos in (0, len(yy)):
                continue
            kw = {"k_frac": k_frac} if k_frac and name in ("Prec@k", "Rec@k") else {}
            if name in _K_LOSSES:          # the loss knows svm_perf's default k and whether k may exceed n
                try:
                    k_loss: Any = get_loss(_K_LOSSES[name], k_frac=k_frac or None)
                    out[f"k of {name}"].append(k_loss.k_for(n_pos, len(yy)))
                except ValueError:         # Prec@k with k beyond n (--p asked for Rec@k's sake): undefined
                    values.append(float("nan"))
                    continue
            if name == "pAUC":
                kw = {"beta": beta}
            if name in _OPERATING_MEASURES:
                option = OPERATING_POINTS[_OPERATING_MEASURES[name]][0]
                kw = {option: operating[option]}
            values.append(fn(yy, col, **kw))
        out[name] = float(np.mean(values)) if values and not np.isnan(values).any() else float("nan")
    return out


def _shard(args: argparse.Namespace) -> int:
    import os

    from .shards import svmlight_to_shards

    for source in args.sources:
        if not os.path.isfile(source):
            raise CLIError(f"no such file: {source}")
    if not args.shard_mb * 2 ** 20 >= 1:
        raise CLIError(f"--shard-mb must be at least one byte (1e-6 MB), got {args.shard_mb}")
    t0 = time.perf_counter()
    X = svmlight_to_shards(args.sources, args.out_dir, shard_bytes=int(args.shard_mb * 2 ** 20))
    if args.verbose:
        print(f"{X.shape[0]} examples x {X.shape[1]} features ({X.nnz} nonzeros, {X.meta['n_columns']} columns in use) "
              f"in {X.n_shards} shards written to {args.out_dir} in {time.perf_counter() - t0:.1f} s")
    return 0


def _with_default_points(operating: dict[str, float] | None) -> dict[str, float]:
    """The operating points' constraints ``operating`` ({"recall": 0.8, ...}) with the defaults for the others."""
    return {**dict(OPERATING_POINTS.values()), **(operating or {})}


def _operating_options(args: argparse.Namespace) -> dict[str, float]:
    """The operating points' constraints given on the command line, checked: {"recall": 0.8, ...}."""
    from .metrics import check_rate

    given = {}
    for option, _ in OPERATING_POINTS.values():
        value = getattr(args, option, None)
        if value is not None:
            given[option] = check_rate(value, f"--{option}", allow_zero=option == "fpr")
    return given


def _evaluate(args: argparse.Namespace) -> int:
    from .metrics import resolve_beta

    resolve_beta(args.beta, "--beta")                 # before reading anything
    operating = _operating_options(args)
    model, scores, y = _scores_for(args)
    if isinstance(y, list):                          # a multi-label model on a multi-label file
        _multilabel_report(args.test_file, model, scores, y)
        return 0
    classes = _numeric_classes(model)
    if classes is None:
        raise CLIError(f"{args.model_file} has the classes {np.asarray(model.classes_).tolist()[:5]}, not numbers: an "
                       f"SVMlight file's labels cannot be them (predict writes the scores)")
    unknown = np.setdiff1d(np.unique(y), classes)
    if unknown.size:
        raise CLIError(f"{args.test_file} has labels {unknown[:5].tolist()} that are not the model's classes "
                       f"{np.asarray(model.classes_).tolist()}")
    _print_report(args.test_file, model.classes_, scores, y, args.p, args.beta, getattr(model, "pos_label", None),
                  operating)
    return 0


def _print_report(test_file: str, classes: Any, scores: Any, y: Any, k_frac: float | None = None, beta: float = 0.1,
                  pos_label: Any = None, operating: dict[str, float] | None = None) -> None:
    """What svm_perf_classify prints (the zero/one error with counts, accuracy, precision, recall, F1,
    PRBEP, ROC area, average precision), then Prec@k and Rec@k with their k, the partial ROC area and the
    operating points; the measures of ``pos_label`` (None: the class of positive scores)."""
    from .losses import LOSSES

    operating = _with_default_points(operating)
    result = evaluate_scores(classes, scores, y, k_frac, beta, pos_label, operating)
    classes = np.asarray(classes)
    predicted = classes[(scores > 0).astype(int)] if scores.ndim == 1 else classes[np.argmax(scores, axis=1)]
    correct = int(np.count_nonzero(predicted == y))
    label = f"macro-averaged one-vs-rest over {len(classes)} classes" if scores.ndim == 2 else "binary"
    print(f"{test_file}: {len(y)} examples ({label}; labels are the scores cut at 0)")
    print(f"Zero/one-error on test set: {100.0 * (len(y) - correct) / len(y):.2f}% ({correct} correct, "
          f"{len(y) - correct} incorrect, {len(y)} total)")
    for name, _, _ in _MEASURES:
        if name == "Error":
            continue
        shown = f"{_SVMPERF_NAMES.get(name, name) + ':':10s} {result[name]:6.2f}"
        if name == "Prec@k" and np.isnan(result[name]):
            print(f"{shown[:10]}    n/a  (k = {k_frac:g} x the positives exceeds the examples; Prec@k needs k <= n)")
            continue
        ks = result.get(f"k of {name}")
        if ks:
            k_loss_class: Any = LOSSES[_K_LOSSES[name]]
            fraction = f"{k_frac or k_loss_class.default_frac:g}"
            shown += (f"  (k = {ks[0]}: {fraction} x the positives)" if len(ks) == 1
                      else f"  (k = {fraction} x each class's positives)")
        if name == "pAUC":
            shown += f"  (false-positive rates up to {beta:g})"
        if name in _OPERATING_MEASURES:
            option = OPERATING_POINTS[_OPERATING_MEASURES[name]][0]
            shown += f"  (at {option.replace('fpr', 'false-positive rate')} {'<=' if option == 'fpr' else '>='} " \
                     f"{operating[option]:g})"
        print(shown)


def _path(args: argparse.Namespace) -> int:
    from .estimators import check_parameters

    if args.plot:
        _check_output(args.plot, args.train_file)
    check_parameters(_estimator(argparse.Namespace(**{**vars(args), "budget": min(args.budgets)}), 2))
    X, y = read_svmlight(args.train_file)
    if args.test:
        Xt, yt = read_svmlight(args.test, n_features=X.shape[1])
    else:
        from sklearn.model_selection import train_test_split
        X, Xt, y, yt = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    classes = np.unique(y)
    from joblib import Parallel, delayed

    from .demo import print_table
    from .estimators import progress_bar

    fits = Parallel(n_jobs=args.jobs)(delayed(_fit_budget)(args, budget, len(classes), X, y, Xt, yt)
                                      for budget in progress_bar(args.budgets, 1, "budgets"))
    rows = [[str(b), f"{nf:.1f}", f"{value:.2f}", f"{seconds:.2f}"] for b, nf, value, seconds in fits]
    feats = [f[1] for f in fits]
    values = [f[2] for f in fits]
    print_table(["B", "#features", args.measure, "seconds"], rows)
    if args.plot:
        from .plotting import plot_budget_path

        print(f"plot written to {plot_budget_path(feats, values, ylabel=args.measure, out=args.plot)}")
    return 0


def _fit_budget(args: argparse.Namespace, budget: int, n_classes: int, X: Any, y: Any, Xt: Any, yt: Any) -> tuple[int,
                float, float, float]:
    """One point of a budget path: (B, mean #features, measure on the test data, fit seconds)."""
    args = argparse.Namespace(**{**vars(args), "budget": budget, "func": None})
    clf = _estimator(args, n_classes)
    if args.verbose >= 2:        # svm_perf's "Reading training examples...done": the fit begins now
        print(f"read {X.shape[0]} examples x {X.shape[1]} features from {args.train_file}; training", flush=True)
    t0 = time.perf_counter()
    clf.fit(X, y)
    seconds = time.perf_counter() - t0
    nf = _mean_selected(clf)
    beta = args.beta if args.beta is not None and _loss_name(args.loss) == "pauc" else 0.1
    value = evaluate_scores(clf.classes_, clf.decision_function(Xt), yt, args.p, beta, args.pos_label)[args.measure]
    return budget, nf, value, seconds


def _mean_selected(clf: Any) -> float:
    """Selected features per binary model (one model, or one per class for one-vs-rest)."""
    return float(np.mean([len(b.selected_features_) for b in getattr(clf, "estimators_", [clf])]))


# svm_perf options that have no meaning in structfs, each with the reason it is refused (the options that
# do have one -- -c -l -e -v -y -w --b --p, and -p 1 / -o 2, which are what structfs solves -- are accepted)
_KERNEL = "kernels: structfs learns linear models (map the features explicitly, e.g. sklearn.kernel_approximation)"
_INTERNAL = "a setting of svm_perf's own solver, which structfs's solver does not have"
SVMPERF_REFUSED = {
    "-t": _KERNEL, "-d": _KERNEL, "-g": _KERNEL, "-s": _KERNEL, "-r": _KERNEL, "-u": _KERNEL,
    "--i": "sparse kernel approximation: " + _KERNEL, "--k": "basis functions of the kernel approximation: "
    + _KERNEL, "--r": "seed of the kernel approximation: " + _KERNEL, "--s": "the kernel approximation: " + _KERNEL,
    "--t": "the kernel approximation: " + _KERNEL,
    "-k": _INTERNAL, "-f": _INTERNAL, "-b": _INTERNAL, "-n": _INTERNAL, "-m": _INTERNAL, "-#": _INTERNAL,
    "-a": "the dual variables: structfs's model file holds the primal weights",
}
_SLACK_NORM = {"-p": ("1", "structfs solves the L1-slack problem (svm_perf's default -p 1)"),
               "-o": ("2", "structfs uses margin rescaling (svm_perf's default -o 2)")}


def _refuse_svmperf_options(argv: list[str]) -> None:
    """A one-line error for an svm_perf option without a meaning here (before argparse's generic one)."""
    for i, token in enumerate(argv):
        if token in SVMPERF_REFUSED:
            raise CLIError(f"svm_perf's {token} is not supported: {SVMPERF_REFUSED[token]}")
        if token in _SLACK_NORM:
            kept, reason = _SLACK_NORM[token]
            value = argv[i + 1] if i + 1 < len(argv) else ""
            if value != kept:
                raise CLIError(f"svm_perf's {token} {value} is not supported: {reason}")


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr (exit 2), like every other structfs error."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _operating_point_options(p: argparse.ArgumentParser, whose: str) -> None:
    """--recall, --precision, --fpr: the operating-point losses' constraints."""
    p.add_argument("--recall", type=float, default=None,
                   help=f"prec@rec: the least recall {whose}, in (0, 1] (default 0.9)")
    p.add_argument("--precision", type=float, default=None,
                   help=f"rec@prec: the least precision {whose}, in (0, 1] (default 0.9)")
    p.add_argument("--fpr", type=float, default=None,
                   help=f"tpr@fpr: the largest false-positive rate {whose}, in [0, 1] (default 0.01)")


def _learning_options(p: argparse.ArgumentParser) -> None:
    """What ``train`` and ``path`` share: svm_perf_learn's options and structfs's."""
    p.add_argument("-c", dest="C", type=float, default=None,
                   help=f"trade-off C, as svm_perf_learn -c (default {_defaults.C:g})")
    p.add_argument("-l", dest="loss", default="f1",
                   help="loss: error, f1, fbeta, prec@k, rec@k, prbep, auc, ap, pauc, prec@rec, rec@prec, tpr@fpr, "
                        "or SVMperf's code 1 (F1), "
                        "2 (error rate), 3 (PRBEP), 4 (Prec@k), 5 (Rec@k), 10 (ROC area); or module:function, "
                        "your fn(a, b, c, d) -> loss in percent of the contingency table (TP, FP, FN, TN), "
                        "imported; default f1")
    p.add_argument("--b", dest="bias", type=float, default=1.0,
                   help="value of the bias feature (0: none; default 1)")
    p.add_argument("--p", dest="p", type=float, default=None,
                   help="k for Prec@k/Rec@k as a fraction of the positives (default 0.5 for Prec@k, 2 for Rec@k)")
    p.add_argument("--beta", dest="beta", type=float, default=None,
                   help="beta of fbeta (default 1) or of pauc: the largest false-positive rate counted "
                        "(default 0.1)")
    _operating_point_options(p, "of the loss")
    p.add_argument("-e", dest="tol", type=float, default=None,
                   help=f"tolerance as svm_perf_learn -e: slack precision in percent (default {_defaults.TOL:g}; "
                        "with --cv the final model's, default: as its candidate was solved in the folds)")
    p.add_argument("--max-outer", dest="max_outer", type=int, default=_defaults.MAX_OUTER,
                   help="with -B: at most this many feature groups, hence <= max_outer*B features (default "
                        f"{_defaults.MAX_OUTER})")
    p.add_argument("--max-features", dest="max_features", type=int, default=None,
                   help="with -B: hard cap on the selected features (feature generation stops there)")
    p.add_argument("--refit", dest="refit", type=float, default=None,
                   help="with -B: re-solve without budget at this C on the selected features (debiasing)")
    p.add_argument("--pos-label", dest="pos_label", type=float, default=None,
                   help="two classes: the label whose F1, precision, recall... the loss measures (default: the "
                        "larger label, e.g. +1); evaluate then reports that class's measures")
    p.add_argument("-v", dest="verbose", type=int, default=1, help="verbosity 0..3 (default 1)")
    p.add_argument("-y", dest="struct_verbose", type=int, default=None,
                   help="svm_perf's verbosity of the structural learner: accepted; -v sets structfs's")
    p.add_argument("-w", dest="algorithm", type=int, default=None, choices=range(10), metavar="{0..9}",
                   help="svm_perf's choice among its optimisation algorithms: accepted and noted; structfs "
                        "has one (stabilised 1-slack cutting planes, with feature generation under -B)")
    p.add_argument("-p", dest="slack_norm", choices=["1"], default="1",
                   help="svm_perf's L-norm of the slacks: 1 (the only one structfs solves)")
    p.add_argument("-o", dest="rescaling", choices=["2"], default="2",
                   help="svm_perf's rescaling: 2, margin rescaling (the only one structfs solves)")
    p.add_argument("-j", "--jobs", type=int, default=None, help="parallel one-vs-rest fits (joblib n_jobs)")


def _add_train(sub: Any) -> None:
    """The ``train`` command: svm_perf_learn's options, and structfs's."""
    train = sub.add_parser("train", help="learn a model from an SVMlight file or a shard directory",
                           description="Learn a linear model optimising the chosen measure; more than two "
                                       "classes are handled one-vs-rest. TRAIN_FILE may be a shard directory "
                                       "(structfs shard): it is read from disk one shard at a time (needs -B).")
    train.add_argument("--multilabel", action="store_true",
                       help="lines carry comma-separated labels (e.g. '2,5 1:0.3 7:1'): one joint model for all "
                            "labels, -B the number of features they share")
    train.add_argument("--average", choices=["micro", "macro"], default="micro",
                       help="with --multilabel: the loss over all (example, label) decisions pooled (micro, "
                            "default) or the mean of the labels' losses (macro)")
    train.add_argument("train_file", metavar="TRAIN_FILE")
    train.add_argument("model_file", metavar="MODEL_FILE")
    _learning_options(train)
    train.add_argument("-B", dest="budget", type=int, default=None, help="feature budget B (default: none)")
    train.add_argument("--interactions", action="store_true",
                       help="with -B: also select products x_j*x_k of feature pairs (never all formed; the model "
                            "file records the selected pairs)")
    train.add_argument("--cv", dest="cv", type=int, default=None,
                       help="choose C, the budget and the number of feature groups by K-fold cross-validation "
                            "(StructSVMCV's defaults; -c or -B, if given, are kept instead of searched); the model "
                            "file holds each class's refitted model")
    train.set_defaults(func=_train)


def _add_shard(sub: Any) -> None:
    """The ``shard`` command: SVMlight files to a shard directory."""
    shard = sub.add_parser("shard", help="convert SVMlight file(s) to a shard directory for out-of-core training",
                           description="Write SVMlight/LIBSVM file(s) as a directory of CSR row blocks that "
                                       "train, predict and evaluate read one block at a time; each file is read "
                                       "--shard-mb at a time, so files larger than memory convert.")
    shard.add_argument("sources", metavar="SVMLIGHT_FILE", nargs="+")
    shard.add_argument("out_dir", metavar="OUT_DIR", help="a new (or empty) directory")
    shard.add_argument("--shard-mb", dest="shard_mb", type=float, default=256.0,
                       help="MB of SVMlight text per shard (default 256)")
    shard.add_argument("-v", dest="verbose", type=int, default=1, help="verbosity 0..1 (default 1)")
    shard.set_defaults(func=_shard)


def _add_predict(sub: Any) -> None:
    """The ``predict`` command: svm_perf_classify's."""
    predict = sub.add_parser("predict", help="write decision values for an SVMlight file")
    predict.add_argument("test_file", metavar="TEST_FILE")
    predict.add_argument("model_file", metavar="MODEL_FILE")
    predict.add_argument("out_file", metavar="OUT_FILE")
    predict.add_argument("-v", dest="verbose", type=int, default=1,
                         help="1 (default): also print the measures when the file's labels are the model's "
                              "classes, as svm_perf_classify; 0: write the predictions only")
    predict.set_defaults(func=_predict)


def _add_evaluate(sub: Any) -> None:
    """The ``evaluate`` command: every measure of a model on a file."""
    evaluate = sub.add_parser("evaluate", help="print every measure of a model on an SVMlight file")
    evaluate.add_argument("test_file", metavar="TEST_FILE")
    evaluate.add_argument("model_file", metavar="MODEL_FILE")
    evaluate.add_argument("-v", dest="verbose", type=int, default=1, help="verbosity (svm_perf_classify's -v; "
                          "accepted)")
    evaluate.add_argument("--p", dest="p", type=float, default=None,
                          help="k for Prec@k/Rec@k as a fraction of positives")
    evaluate.add_argument("--beta", dest="beta", type=float, default=0.1,
                          help="largest false-positive rate of the partial ROC area (default 0.1)")
    _operating_point_options(evaluate, "of the reported operating point")
    evaluate.set_defaults(func=_evaluate)


def _add_path(sub: Any) -> None:
    """The ``path`` command: the measure against the feature budget."""
    path = sub.add_parser("path", help="sweep feature budgets: table and PNG of measure vs #features")
    path.add_argument("train_file", metavar="TRAIN_FILE")
    path.add_argument("--test", default=None, help="test file (default: a seeded 30%% split of TRAIN_FILE)")
    path.add_argument("--budgets", type=int, nargs="+", default=[2, 5, 10, 20, 50])
    path.add_argument("--measure", default="F1",
                      choices=["F1", "PRBEP", "Prec@k", "Rec@k", "ROC-AUC", "AP", "pAUC", "Error"])
    path.add_argument("--plot", default="structfs-path.png", help="PNG to write ('' for none)")
    _learning_options(path)
    path.set_defaults(func=_path, budget=None)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="structfs", description="Sparse linear classifiers optimising "
                                     "F1, Prec@k, PRBEP, ROC-AUC... under a feature budget.")
    parser.add_argument("--version", action="version", version=f"structfs {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    demo = sub.add_parser("demo", help="StructSVMCV against tuned-threshold logistic regression, LinearSVC and "
                                       "L1-LinearSVC on scikit-learn's digits: F1, features, seconds, and a plot")
    demo.add_argument("-j", "--jobs", type=int, default=-1, help="parallel CV fits (joblib n_jobs; default: all cores)")
    demo.add_argument("--plot", default="structfs-demo.png", help="PNG to write ('' for none)")
    demo.set_defaults(func=_demo)
    compile_ = sub.add_parser("compile", help="compile structfs's numba kernels now (once after installing, one to "
                                              "two minutes), so that the first fit starts warm")
    compile_.set_defaults(func=_compile)
    for add in (_add_train, _add_shard, _add_predict, _add_evaluate, _add_path):
        add(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in ("train", "path", "predict", "evaluate"):
        try:
            _refuse_svmperf_options(argv[1:])
        except CLIError as exc:
            print(f"structfs {argv[0]}: error: {exc}", file=sys.stderr)
            return 2
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return args.func(args)
    except BrokenPipeError:
        # the reader (a pager, `head`) stopped reading: end quietly, as cat does (128 + SIGPIPE), and keep
        # Python from reporting the same broken pipe again when it flushes stdout at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except (CLIError, ValueError, TypeError, OSError, OverflowError, MemoryError) as exc:
        print(f"structfs {args.command}: error: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}",
              file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"structfs {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
