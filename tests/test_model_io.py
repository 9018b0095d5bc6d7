"""Model files: every parameter round-trips, unwritable losses are refused, corrupt files are refused."""
import json

import numpy as np
import pytest
from sklearn.base import clone

from structfs import OneVsRestStructSVM, StructSVM, load_model, save_model
from structfs.losses import ContingencyLoss, get_loss


def _data(n=60, m=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, m))
    return X, np.where(X[:, 0] + 0.5 * X[:, 1] > 0, "yes", "no")


MODELS = [
    lambda: StructSVM(loss="error", C=5.0, tol=0.05, max_iter=300, outer_tol=1e-3, master_solver="ecos"),
    lambda: StructSVM(loss="prec@k", loss_params={"k": 10}, C=50.0, budget=2, refit=80.0, max_outer=4),
    lambda: StructSVM(loss=get_loss("fbeta", beta=2.0), C=20.0, budget=1, max_features=2, max_outer=10),
    lambda: StructSVM(loss="rec@k", loss_params={"k_frac": 1.5}, C=10.0),
    lambda: OneVsRestStructSVM(estimator=StructSVM(loss="auc", C=10.0, budget=2, tol=0.05, refit=20.0, max_features=3)),
    lambda: OneVsRestStructSVM(estimator=StructSVM(loss="prbep", C=30.0, budget=2)),
]


@pytest.mark.parametrize("make", MODELS)
def test_round_trip_is_lossless(make, tmp_path):
    X, y = _data()
    if isinstance(make(), OneVsRestStructSVM):
        y = np.array(["a", "b", "c"])[np.digitize(X[:, 0], [-0.4, 0.4])]
    model = make().fit(X, y)
    save_model(model, tmp_path / "m.json")
    back = load_model(tmp_path / "m.json")
    assert repr(back.get_params()) == repr(model.get_params())
    assert np.array_equal(back.predict(X), model.predict(X))
    assert np.allclose(back.decision_function(X), model.decision_function(X))
    refitted = clone(back).fit(X, y)                     # the same training, not a different model
    assert np.allclose(refitted.decision_function(X), model.decision_function(X), atol=1e-6)


def test_feature_names_survive_and_are_checked(tmp_path):
    pd = pytest.importorskip("pandas")
    X, y = _data()
    frame = pd.DataFrame(X, columns=list("abcde"))
    model = StructSVM(C=10.0).fit(frame, y)
    save_model(model, tmp_path / "m.json")
    back = load_model(tmp_path / "m.json")
    assert list(back.feature_names_in_) == list("abcde")
    with pytest.raises(ValueError, match="feature names"):
        back.predict(frame[list("edcba")])


def test_a_user_loss_is_refused_not_replaced(tmp_path):
    X, y = _data()
    model = StructSVM(loss=ContingencyLoss(lambda a, b, c, d: 100.0 * (b + 3 * c) / (a + b + c + d))).fit(X, y)
    with pytest.raises(ValueError, match="not importable.*lambda.*top of a module, or pickle the model"):
        save_model(model, tmp_path / "m.json")
    assert not (tmp_path / "m.json").exists()


def missed_costs_three(a, b, c, d):
    return 100.0 * (b + 3 * c) / (3 * (a + c) + (b + d))


def test_a_user_contingency_loss_round_trips_by_its_importable_name(tmp_path):
    X, y = _data()
    model = StructSVM(loss=ContingencyLoss(missed_costs_three, monotone=True), C=10.0).fit(X, y)
    save_model(model, tmp_path / "m.json")
    record = json.loads((tmp_path / "m.json").read_text())
    assert record["params"]["loss"]["params"]["fn"] == f"{__name__}:missed_costs_three"
    back = load_model(tmp_path / "m.json")
    assert back.loss.fn is missed_costs_three and back.loss.monotone is True
    assert np.array_equal(back.decision_function(X), model.decision_function(X))
    assert back.get_params()["C"] == 10.0


@pytest.mark.parametrize("reference,match", [("no_such_module_xyz:fn", "cannot be imported"),
                                             ("os:getcwd()", "importable name"),
                                             (f"{__name__}:no_such_function", "cannot be imported")])
def test_a_loss_function_that_cannot_be_imported_is_refused_on_load(tmp_path, reference, match):
    X, y = _data()
    save_model(StructSVM(loss=ContingencyLoss(missed_costs_three)).fit(X, y), tmp_path / "m.json")
    doc = json.loads((tmp_path / "m.json").read_text())
    doc["params"]["loss"]["params"]["fn"] = reference
    (tmp_path / "m.json").write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=match):
        load_model(tmp_path / "m.json")


def _good(tmp_path, ovr=False):
    X, y = _data()
    if ovr:
        y = np.array(["a", "b", "c"])[np.digitize(X[:, 0], [-0.4, 0.4])]
        model = OneVsRestStructSVM(estimator=StructSVM(C=10.0)).fit(X, y)
    else:
        model = StructSVM(C=10.0, budget=2).fit(X, y)
    save_model(model, tmp_path / "good.json")
    return json.loads((tmp_path / "good.json").read_text())


def _edit(doc, path, value):
    target = doc
    for key in path[:-1]:
        target = target[key]
    if value is _DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return doc


_DELETE = object()
CORRUPTIONS = [
    (("models", 0), {"indices": [0, 0], "values": [1.0, 2.0], "intercept": 0.0}, "repeat"),
    (("models", 0), {"indices": [0, 99], "values": [1.0, 2.0], "intercept": 0.0}, r"in 0\.\.n_features-1"),
    (("models", 0), {"indices": [0.5, 1], "values": [1.0, 2.0], "intercept": 0.0}, "integers"),
    (("models", 0), {"indices": [0, 1], "values": [None, 1.0], "intercept": 0.0}, "finite"),
    (("models", 0), {"indices": [0, 1], "values": [1.0]}, "differ in length"),
    (("models", 0, "intercept"), "Infinity-as-text", "intercept"),
    (("classes",), ["yes", "no"], "sorted"),
    (("classes",), ["a", "b", "c"], "binary model has 2 classes"),
    (("params", "C"), -1.0, "'C' parameter"),
    (("params", "budget"), "5", "budget"),
    (("params", "no_such_param"), 1, "no_such_param"),
    (("n_features",), 10 ** 12, "n_features"),
    (("models",), [], "model"),
    (("params",), _DELETE, "params"),
    (("feature_names",), ["x"], "feature_names"),
]


@pytest.mark.parametrize("path,value,message", CORRUPTIONS)
def test_corrupt_files_are_refused_with_the_field_named(tmp_path, path, value, message):
    doc = _edit(_good(tmp_path), path, value)
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=message):
        load_model(tmp_path / "bad.json")


def test_non_finite_json_constants_and_one_vs_rest_counts_are_refused(tmp_path):
    text = json.dumps(_good(tmp_path)).replace('"intercept": ', '"intercept": NaN, "x": ', 1)
    (tmp_path / "nan.json").write_text(text)
    with pytest.raises(ValueError, match="NaN"):
        load_model(tmp_path / "nan.json")
    doc = _good(tmp_path, ovr=True)
    doc["models"] = doc["models"][:2]
    (tmp_path / "ovr.json").write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="3 classes need 3"):
        load_model(tmp_path / "ovr.json")


def test_format_1_files_still_load(tmp_path):
    X, y = _data()
    model = StructSVM(loss="prec@k", loss_params={"k": 10}, C=50.0, budget=2).fit(X, y)
    w = model.coef_[0]
    v1 = {"format": "structfs-model", "format_version": 1, "structfs_version": "0.1.0", "kind": "binary",
          "n_features": 5, "classes": ["no", "yes"], "loss": "prec@k", "loss_params": {"k": 10, "k_frac": None},
          "C": 50.0, "budget": 2, "bias": 1.0, "tol": 0.01, "max_outer": 30, "refit": None, "max_features": None,
          "models": [{"indices": np.flatnonzero(w).tolist(), "values": w[w != 0].tolist(),
                      "intercept": float(model.intercept_[0]), "objective": model.objective_}]}
    (tmp_path / "v1.json").write_text(json.dumps(v1))
    back = load_model(tmp_path / "v1.json")
    assert np.allclose(back.decision_function(X), model.decision_function(X)) and back.C == 50.0


def test_one_vs_rest_models_with_their_own_parameters_round_trip_as_format_3(tmp_path):
    X, _ = _data()
    y = np.array(["a", "b", "c"])[np.digitize(X[:, 0], [-0.4, 0.4])]
    ovr = OneVsRestStructSVM(estimator=StructSVM(loss="f1", C=10.0)).fit(X, y)
    ovr.estimators_ = [StructSVM(loss="f1", C=C, budget=B).fit(X, (y == c).astype(int))   # as one-vs-rest over CV
                       for C, B, c in ((10.0, None, "a"), (3.0, 2, "b"), (30.0, 1, "c"))]
    save_model(ovr, tmp_path / "m.json")
    doc = json.loads((tmp_path / "m.json").read_text())
    assert doc["format_version"] == 3
    assert "params" not in doc["models"][0] and doc["models"][1]["params"]["C"] == 3.0   # only where they differ
    back = load_model(tmp_path / "m.json")
    assert [repr(b.get_params()) for b in back.estimators_] == [repr(b.get_params()) for b in ovr.estimators_]
    assert np.array_equal(back.decision_function(X), ovr.decision_function(X))
    doc["format_version"] = 2                       # a version-2 reader would build them from the shared ones
    (tmp_path / "v2.json").write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=r"models\[1\].params: per-model parameters need format version 3"):
        load_model(tmp_path / "v2.json")
    doc["format_version"] = 3
    doc["models"][2]["params"]["C"] = -1.0
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=r"models\[2\].params"):
        load_model(tmp_path / "bad.json")
