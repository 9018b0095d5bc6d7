"""Golden files: fixed fits recorded once, so that a change of the engine shows whether it still returns
the same models -- judged by what the method guarantees, not by one numpy/BLAS build's round-off.

A fit certifies ``lower_bound_ <= F* <= objective_`` for the optimal objective F* of its problem.
Two fits of one problem (the record, and today's on whatever BLAS) therefore agree when

* their certified intervals overlap: ``lower_bound`` of each at most the other's ``objective``;
* ``objective_`` is the objective of the weights returned (recomputed here from ``coef_`` and
  ``intercept_`` with the loss's own oracle): the upper end of the certificate is not a claim;
* without a budget the objective is 1-strongly convex in (w, w_b), so a fit within ``gap`` of F* is
  within sqrt(2 gap) of the optimum in the Euclidean norm and each decision value x~.w moves by at most
  ||x~|| (sqrt(2 gap_record) + sqrt(2 gap_today)): the test decisions are compared within that bound;
* with a budget (the squared B-support norm, not strongly convex) two fits within their certificates
  may use different features where the choice is a near-tie: the selected features are compared only
  when the record's selection has a margin (its smallest selected weight more than the distance the
  gaps allow), and the margin is printed.

Model selection (``StructSVMCV``, ``MILESClassifier``) is a discrete choice over cross-validated scores of
fold fits that are themselves only certified (another BLAS moves a fold's F1 by a document or a bag): today's
choice must be a candidate whose recorded score is within one standard error (over the folds) of the
recorded best; where it is the recorded choice, the final model is then checked as above.

Regenerate (only when the models are meant to change, and say why in the commit):
``STRUCTFS_REGENERATE_GOLDEN=1 python -m pytest tests/test_golden.py``.
"""
import json
import os
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_digits

from structfs import StructSVM, StructSVMCV
from structfs.solvers.objective import primal_objective

GOLDEN = Path(__file__).parent / "golden"
# the losses the records hold; a loss added later has its own exact-optimum tests
RECORDED_LOSSES = ("error", "f1", "fbeta", "prec@k", "rec@k", "prbep", "auc", "ap", "pauc")
REGENERATE = bool(os.environ.get("STRUCTFS_REGENERATE_GOLDEN"))
DATA = os.environ.get("STRUCTFS_DATA")
N_DECISIONS = 200           # test decisions recorded per fit
ROUND_OFF = 1e-9            # relative slack for comparing objectives computed in different orders


def _digits():
    d = load_digits()
    X, y = d.data / 16.0, (d.target == 8).astype(int)
    return X[:1000], y[:1000], X[1000:]


def _r8_grain():
    from sklearn.feature_extraction.text import TfidfVectorizer

    from structfs.datasets import load_r8

    xtr, ytr, xte, _ = load_r8(DATA)
    vec = TfidfVectorizer(sublinear_tf=True, min_df=2)
    return vec.fit_transform(xtr), (np.asarray(ytr) == "grain").astype(int), vec.transform(xte)


def _sparse_weights(model):
    coef = model.coef_
    coef = coef.toarray() if sp.issparse(coef) else np.asarray(coef)
    w = coef.ravel()
    return {int(j): float(w[j]) for j in np.flatnonzero(w)}


def _record(model, X_test):
    """What a fit is checked by: its certificate, its weights (sparse; not kept for the thousands of an
    unbudgeted text model, whose decisions say as much) and test decisions."""
    weights = _sparse_weights(model)
    return {"objective": float(model.objective_), "lower_bound": float(model.lower_bound_),
            "C": float(model.C), "budget": model.budget, "bias": float(model.bias),
            "intercept": float(model.intercept_[0]), "weights": weights,
            "decisions": model.decision_function(X_test[:N_DECISIONS]).tolist(),
            "x_norms": _x_tilde_norms(X_test, float(model.bias))}      # of the data, not recorded


def _cv_record(search, X_test, choice_of):
    """``choice_of(index)``: the candidate's settings as a list."""
    res = search.cv_results_
    n_folds = sum(key.startswith("split") and key.endswith("_test_score") for key in res)
    return {"choice": choice_of(search.best_index_),
            "candidates": [choice_of(i) for i in range(len(res["mean_test_score"]))],
            "scores": np.asarray(res["mean_test_score"], dtype=float).tolist(),
            "standard_errors": (np.asarray(res["std_test_score"], dtype=float) / np.sqrt(n_folds)).tolist(),
            "final": _record(search.estimator_, X_test)}


def _choice(search, *extra):
    res = search.cv_results_
    return lambda i: [float(res[key][i]) if res[key][i] is not None else None
                      for key in ("param_C", "param_budget", "param_n_groups", *extra)]


def _fits(X, y, X_test, budgets):
    """name -> (model, record) of every fixed fit on one problem."""
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for loss in RECORDED_LOSSES:
            for budget in budgets:
                model = StructSVM(loss=loss, C=1000.0, budget=budget).fit(X, y)
                out[f"{loss}, budget {budget}"] = _record(model, X_test)
        out["f1, capped"] = _record(StructSVM(loss="f1", C=1000.0, budget=5, max_features=12).fit(X, y), X_test)
        search = StructSVMCV(loss="f1", max_features=30).fit(X, y)
        out["StructSVMCV f1, max_features 30"] = _cv_record(search, X_test, _choice(search))
    return out


def _x_tilde_norms(X_test, bias):
    X_test = X_test[:N_DECISIONS]
    sq = np.asarray(X_test.multiply(X_test).sum(axis=1)).ravel() if sp.issparse(X_test) else (X_test ** 2).sum(1)
    return np.sqrt(sq + bias * bias)


def _recomputed_objective(record, loss, X, y):
    """The primal objective of the recorded weights, with the loss's exact oracle for the slack."""
    from structfs.losses import get_loss

    w = np.zeros(X.shape[1])
    for j, value in record["weights"].items():
        w[int(j)] = value
    bias = record["bias"]
    w_b = record["intercept"] / bias if bias else 0.0
    s = np.asarray(X @ w).ravel() + record["intercept"]
    y_pm = np.where(np.asarray(y) == 1, 1.0, -1.0)
    coef, delta = get_loss(loss).most_violated(y_pm, s)
    xi = max(0.0, delta - float(coef @ s))
    return primal_objective(w, w_b, xi, record["C"], record["budget"])


def _check_fit(key, record, got, loss=None, data=None):
    """One StructSVM fit against its record, by the guarantees listed in the module's docstring."""
    slack = ROUND_OFF * max(1.0, abs(record["objective"]))
    assert got["lower_bound"] <= record["objective"] + slack, f"{key}: today's bound above the record's objective"
    assert record["lower_bound"] <= got["objective"] + slack, f"{key}: today's objective below the record's bound"
    if data is not None:                 # the upper end of today's certificate is the objective of its weights
        assert _recomputed_objective(got, loss, *data) == pytest.approx(got["objective"], rel=1e-7), key
    reach = np.sqrt(2 * max(record["objective"] - record["lower_bound"], 0.0)) \
        + np.sqrt(2 * max(got["objective"] - got["lower_bound"], 0.0))
    if record["budget"] is None:
        bound = got["x_norms"] * reach + 1e-9 * (1 + np.abs(record["decisions"]))
        excess = np.abs(np.subtract(got["decisions"], record["decisions"])) - bound
        assert excess.max() <= 0, f"{key}: a decision moved {excess.max():.3g} beyond its certified bound"
        return
    weights = {int(j): v for j, v in (record["weights"] or {}).items()}
    if not weights:
        return
    margin = min(abs(v) for v in weights.values()) - reach
    print(f"{key}: selection margin {margin:.4g} (smallest selected |w| less the certified reach {reach:.4g})")
    if margin > 0:
        assert sorted(weights) == sorted(int(j) for j in got["weights"]), f"{key}: selection with a margin moved"


def _compare(name, fits, data=None):
    path = GOLDEN / f"{name}.json"
    if REGENERATE:
        GOLDEN.mkdir(exist_ok=True)
        for record in fits.values():
            record = record.get("final") or record
            record.pop("x_norms")
            if len(record["weights"]) > 1000:
                record["weights"] = None
        path.write_text(json.dumps(fits, indent=0, sort_keys=True) + "\n")
        pytest.skip(f"regenerated {path}")
    golden = json.loads(path.read_text())
    assert sorted(golden) == sorted(fits)
    for key, record in golden.items():
        got = fits[key]
        if "choice" in record:
            assert got["choice"] in record["candidates"], f"{key}: chose {got['choice']}, not a recorded candidate"
            best = record["candidates"].index(record["choice"])
            mine = record["candidates"].index(got["choice"])
            floor = record["scores"][best] - record["standard_errors"][best]
            assert record["scores"][mine] >= floor - 1e-12, f"{key}: chose a candidate beyond the noise of the best"
            if got["choice"] != record["choice"]:
                continue                    # a tie went the other way: a different (equally good) problem
            record, got = record["final"], got["final"]
            loss = None
        else:
            loss = key.split(",")[0]
        _check_fit(key, record, got, loss, data if loss is not None else None)


def test_digits_fits_are_unchanged():
    X, y, X_test = _digits()
    _compare("digits", _fits(X, y, X_test, budgets=[None, 5]), (X, y))


def test_the_objective_of_recorded_weights_is_recomputed_exactly():
    """Where bit-level arithmetic is the point: the primal objective of a recorded model, evaluated
    from its weights by the loss's exact oracle and the B-support norm, is the recorded objective to
    round-off, for every loss with and without a budget."""
    X, y, _ = _digits()
    golden = json.loads((GOLDEN / "digits.json").read_text())
    for key, record in golden.items():
        if "choice" in record:
            continue
        loss = key.split(",")[0]
        assert _recomputed_objective(record, loss, X, y) == pytest.approx(record["objective"], rel=1e-12), key


@pytest.mark.slow
@pytest.mark.skipif(not DATA, reason="STRUCTFS_DATA is not set: R8 and musk1 are absent")
def test_r8_and_musk1_fits_are_unchanged():
    from structfs.datasets import get_data_home, load_mil_csv
    from structfs.mil import MILESClassifier

    X, y, X_test = _r8_grain()
    fits = _fits(X, y, X_test, budgets=[None, 5])
    bags, labels, _ = load_mil_csv(get_data_home(DATA) / "mil" / "musk1.csv.xz")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mil = MILESClassifier().fit(bags[::2], labels[::2])
    search = mil.estimator_
    record = _cv_record(search, mil.embedding_.transform(bags[1::2])[:, mil.columns_],
                        _choice(search, "param_sigma"))
    fits["MILESClassifier musk1"] = record
    _compare("r8_musk1", fits, (X, y))
