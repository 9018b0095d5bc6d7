"""``structfs demo``: StructSVMCV at its defaults against what a practitioner tries first for F1.

Data: scikit-learn's bundled digits, each digit against the other nine (ten problems of about 1:9),
half for training and half for testing. Every model chooses its settings by 3-fold cross-validation
on F1 on the training half; the table gives macro-F1 on the test half, the features each model uses
and its wall time; the plot shows cross-validated F1 against the number of features, along
StructSVMCV's feature-generation path and along L1-LinearSVC's path over C.
"""
from __future__ import annotations

import time
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from . import __version__

# the baselines' C grid: five values a decade apart around scikit-learn's default C = 1
BASELINE_CS = (0.01, 0.1, 1.0, 10.0, 100.0)


def _models() -> dict[str, Any]:
    """{name: factory} of the compared models, each choosing its settings by 3-fold CV on F1."""
    from sklearn.linear_model import LogisticRegressionCV
    from sklearn.model_selection import GridSearchCV, TunedThresholdClassifierCV
    from sklearn.svm import LinearSVC

    from .model_selection import StructSVMCV

    return {
        'StructSVMCV(loss="f1")': lambda: StructSVMCV(loss="f1"),
        "logistic regression, tuned threshold": lambda: TunedThresholdClassifierCV(
            LogisticRegressionCV(Cs=6, cv=3, scoring="f1", class_weight="balanced", solver="liblinear",
                                 l1_ratios=(0.0,), use_legacy_attributes=False),
            scoring="f1", cv=3),
        "LinearSVC (balanced)": lambda: GridSearchCV(
            LinearSVC(class_weight="balanced", random_state=0), {"C": list(BASELINE_CS)}, scoring="f1", cv=3),
        "L1-LinearSVC (balanced)": lambda: GridSearchCV(
            LinearSVC(penalty="l1", dual=False, class_weight="balanced", random_state=0),
            {"C": list(BASELINE_CS)}, scoring="f1", cv=3),
    }


def _fit_one(factory: Any, X: Any, y: Any, path: bool = False) -> Any:
    """The model fitted on X, y; ``path``: also the features its estimator keeps at each C of the grid
    (the L1 path of the plot, computed in the worker that fitted the model)."""
    from sklearn.base import clone

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")       # liblinear's iteration warnings on the smallest C
        model = factory().fit(X, y)
        if path:
            model.path_features_ = [int(np.count_nonzero(clone(model.estimator).set_params(C=C).fit(X, y).coef_))
                                    for C in BASELINE_CS]
    return model


def _n_features(model: Any) -> int:
    """Features the fitted model's decision uses."""
    if hasattr(model, "selected_features_"):
        return len(model.selected_features_)
    inner = getattr(model, "best_estimator_", None) or model.estimator_
    return int(np.count_nonzero(inner.coef_))


def _cv_path(search: Any) -> tuple[np.ndarray, np.ndarray]:
    """(features, cross-validated F1 in %) along the search's path at its chosen C and the path's budget."""
    from .model_selection import DEFAULT_BUDGETS

    res = search.cv_results_
    on_path = (res["param_C"] == search.C_) & (res["param_budget"] == DEFAULT_BUDGETS[0])
    order = np.argsort(res["param_n_groups"][on_path].astype(float))
    return res["mean_n_features"][on_path][order], 100 * res["mean_test_score"][on_path][order]


def run(jobs: int = -1, plot: str | None = "structfs-demo.png") -> int:
    """Fit every model on the ten one-vs-rest problems, print the table and draw the plot."""
    from joblib import Parallel, delayed
    from sklearn.model_selection import train_test_split

    from .datasets import load_digits_imbalanced
    from .metrics import f1

    X, y = load_digits_imbalanced()
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.5, random_state=0, stratify=y)
    print(f"structfs {__version__} demo: scikit-learn's digits, each digit against the other nine (about 1:9), "
          f"{X.shape[1]} pixels, {len(y_tr)} training and {len(y_te)} test images. Every model chooses its "
          "settings by 3-fold CV on F1 (the baselines' C among "
          f"{', '.join(f'{c:g}' for c in BASELINE_CS)}); macro-F1 on the test images.\n", flush=True)
    from .warmup import compile_kernels, kernels_cached

    if not kernels_cached():             # compiled here, once, in this process: the workers load the cache
        print("Compiling structfs's numba kernels first, once after installing (one to two minutes on 2 cores; not "
              "counted in the table)...", flush=True)
        print(f"compiled in {compile_kernels():.0f} s.\n", flush=True)
    rows, fitted = [], {}
    for name, factory in _models().items():
        t0 = time.perf_counter()
        path = bool(plot) and name.startswith("L1")
        models = Parallel(n_jobs=jobs)(delayed(_fit_one)(factory, X_tr, (y_tr == d).astype(int), path)
                                       for d in range(10))
        seconds = time.perf_counter() - t0
        scores = [f1((y_te == d).astype(int), m.predict(X_te), ) for d, m in enumerate(models)]
        features = np.mean([_n_features(m) for m in models])
        rows.append([name, f"{np.mean(scores):.1f}", f"{features:.1f}", f"{seconds:.1f}"])
        fitted[name] = models
    print_table(["model (ten one-vs-rest problems)", "macro-F1", "features", "seconds"], rows)
    if plot:
        out = _plot(fitted, plot)
        print(f"\nplot written to {out}")
    return 0


def _plot(fitted: Any, out: str | None) -> Any:
    """Cross-validated macro-F1 against features: StructSVMCV's path and L1-LinearSVC's over C."""
    from .plotting import plot_budget_path

    structfs_name, lr_name, svc_name, l1_name = list(fitted)
    paths = [_cv_path(m) for m in fitted[structfs_name]]
    length = min(len(p[0]) for p in paths)
    n_features = np.mean([p[0][:length] for p in paths], axis=0)
    scores = np.mean([p[1][:length] for p in paths], axis=0)
    grids = fitted[l1_name]
    l1_scores = [100 * np.mean([g.cv_results_["mean_test_score"][i] for g in grids]) for i in range(len(BASELINE_CS))]
    l1_features = np.mean([g.path_features_ for g in grids], axis=0)
    svc_cv = 100 * np.mean([g.best_score_ for g in fitted[svc_name]])
    return plot_budget_path(n_features, scores, ylabel="cross-validated macro-F1 (%)", out=out,
                            label="StructSVMCV: feature-generation path (B = 5)",
                            title="digits, one-vs-rest: F1 against selected pixels",
                            baselines={"L1-LinearSVC: path over C": [l1_features, l1_scores],
                                       "LinearSVC, every pixel (best C)": float(svc_cv)})


def print_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    print("  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(header, widths))))
    for r in rows:
        print("  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w) for i, (c, w) in enumerate(zip(r, widths))))
