"""Golden files: fixed fits whose objective, selected features and test decisions are recorded, so a
refactor of the engine shows that it returns the same models (objective within 1e-6 relative, the same
features, decisions within 1e-5).

Regenerate (only when a change of the models is intended, and say why in the commit):
``STRUCTFS_REGENERATE_GOLDEN=1 python -m pytest tests/test_golden.py``.
"""
import hashlib
import json
import os
import warnings
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_digits

from structfs import StructSVM, StructSVMCV
from structfs.losses import LOSSES

GOLDEN = Path(__file__).parent / "golden"
REGENERATE = bool(os.environ.get("STRUCTFS_REGENERATE_GOLDEN"))
DATA = os.environ.get("STRUCTFS_DATA")
N_DECISIONS = 200           # test decisions recorded per fit


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


def _features(selected):
    """The selected features as their count and a hash of the sorted indices (an unbudgeted text
    model selects thousands)."""
    selected = np.asarray(selected, dtype=np.int64)
    return [int(selected.size), hashlib.sha256(selected.tobytes()).hexdigest()[:16]]


def _record(model, X_test):
    record = {"features": _features(model.selected_features_),
              "decisions": model.decision_function(X_test[:N_DECISIONS]).tolist()}
    if hasattr(model, "objective_"):
        record["objective"] = float(model.objective_)
    return record


def _fits(X, y, X_test, budgets):
    """name -> record of every fixed fit on one problem."""
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for loss in LOSSES:
            for budget in budgets:
                model = StructSVM(loss=loss, C=1000.0, budget=budget, max_outer=4).fit(X, y)
                out[f"{loss}, budget {budget}"] = _record(model, X_test)
        out["f1, capped"] = _record(StructSVM(loss="f1", C=1000.0, budget=5, max_features=12).fit(X, y), X_test)
        out["StructSVMCV f1, max_features 30"] = _record(StructSVMCV(loss="f1", max_features=30).fit(X, y), X_test)
    return out


def _compare(name, fits):
    path = GOLDEN / f"{name}.json"
    if REGENERATE:
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(json.dumps(fits, indent=0, sort_keys=True) + "\n")
        pytest.skip(f"regenerated {path}")
    golden = json.loads(path.read_text())
    assert sorted(golden) == sorted(fits)
    for key, record in golden.items():
        got = fits[key]
        assert got["features"] == record["features"], key
        if "objective" in record:
            assert got["objective"] == pytest.approx(record["objective"], rel=1e-6), key
        np.testing.assert_allclose(got["decisions"], record["decisions"], rtol=1e-5, atol=1e-5, err_msg=key)


def test_digits_fits_are_unchanged():
    X, y, X_test = _digits()
    _compare("digits", _fits(X, y, X_test, budgets=[None, 5]))


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
    fits["MILESClassifier musk1"] = {"features": _features(mil.selected_instances_[:, 0]),
                                     "decisions": mil.decision_function(bags[1::2]).tolist()}
    _compare("r8_musk1", fits)
