"""Random corruptions of the three things structfs reads from disk -- SVMlight files, model files and
shard manifests: each read is a one-line ValueError or a correct result, never another exception or
a hang. 2,000 cases each (slow tier)."""
import json
import math
import os

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from structfs import OneVsRestStructSVM, StructSVM, load_model, save_model
from structfs._validation import MAX_ABS_VALUE
from structfs.shards import ShardedMatrix, svmlight_to_shards, write_shards
from structfs.svmlight import load_svmlight

pytestmark = pytest.mark.slow
FUZZ = settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                          HealthCheck.too_slow])


def _one_line(exc):
    return "\n" not in str(exc).strip() and str(exc).strip() != ""


# -- SVMlight ----------------------------------------------------------------------------------------
VALID = "1 1:0.5 3:2 # first\n-1 2:1e-3 4:-7\n\n1 qid:2 1:1 2:2 5:.25\n-1 6:3\n"


def _reference(text):
    """Rows of a file by a plain reading of the format; None if any line is invalid."""
    rows = []
    for line in text.split("\n"):
        body = line.split("#", 1)[0].split()
        if not body:
            continue
        try:
            label = float(body[0])
        except ValueError:
            return None
        if not math.isfinite(label):
            return None
        pairs, last = {}, 0
        features = body[1:]
        if features and features[0].startswith("qid"):     # a query id, ignored
            if ":" not in features[0]:
                return None
            features = features[1:]
        for token in features:
            head, sep, value = token.partition(":")
            if not sep:
                return None
            try:
                index = int(head)
            except ValueError:
                return None
            if index <= last or index > 2 ** 31 - 1:
                return None
            last = index
            try:
                number = float(value)
            except ValueError:
                return None
            if not math.isfinite(number) or abs(number) > MAX_ABS_VALUE:
                return None
            pairs[last] = number
        rows.append((label, pairs))
    return rows


def _mutated(text, edits):
    chars = list(text)
    for position, op, char in edits:
        if not chars:
            break
        i = position % (len(chars) + 1)
        if op == 0:
            chars.insert(i, char)
        elif op == 1 and i < len(chars):
            del chars[i]
        elif i < len(chars):
            chars[i] = char
    return "".join(chars)


_CHARS = st.sampled_from(list("0123456789:.-+e #\nqid\tnaf"))
_EDITS = st.lists(st.tuples(st.integers(0, 200), st.integers(0, 2), _CHARS), min_size=1, max_size=4)


@FUZZ
@given(edits=_EDITS, shard_bytes=st.integers(1, 64))
def test_svmlight_reader_is_exact_or_names_the_problem(tmp_path_factory, edits, shard_bytes):
    text = _mutated(VALID, edits)
    root = tmp_path_factory.mktemp("svm")
    path = root / "x.svm"
    path.write_text(text)
    reference = _reference(text)
    try:
        X, y = load_svmlight(path)
    except ValueError as exc:
        assert _one_line(exc)
        return
    assert reference is not None, text
    assert y.tolist() == [label for label, _ in reference]
    for i, (_, pairs) in enumerate(reference):
        row = X.getrow(i)
        assert {j + 1: v for j, v in zip(row.indices, row.data) if v != 0} == {k: v for k, v in pairs.items() if v != 0}
    try:
        shards = svmlight_to_shards(path, root / "d", shard_bytes=shard_bytes)
    except ValueError as exc:                # e.g. three labels: a shard directory holds one binary problem
        assert _one_line(exc) and len(set(y.tolist())) > 2
        return
    w = np.arange(1.0, X.shape[1] + 1)
    assert np.array_equal(shards.y, y)
    assert np.allclose(shards.dot(np.arange(X.shape[1]), w), X @ w)


# -- model files -------------------------------------------------------------------------------------
_JSON = st.recursive(st.none() | st.booleans() | st.integers(-2 ** 70, 2 ** 70) | st.floats(allow_nan=False)
                     | st.text(max_size=5),
                     lambda inner: (st.lists(inner, max_size=3)
                                    | st.dictionaries(st.text(max_size=5), inner, max_size=3)),
                     max_leaves=6)


def _paths(doc, prefix=()):
    yield prefix
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from _paths(value, prefix + (key,))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            yield from _paths(value, prefix + (i,))


def _replace(doc, path, value):
    if not path:
        return value
    doc = json.loads(json.dumps(doc))
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return doc


@pytest.fixture(scope="module")
def saved_models(tmp_path_factory):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 6))
    y = np.where(X[:, 0] > 0.3, 1, -1)
    root = tmp_path_factory.mktemp("models")
    docs = []
    for i, model in enumerate([StructSVM(C=10.0, budget=2).fit(X, y),
                               OneVsRestStructSVM(estimator=StructSVM(C=10.0)).fit(X, np.arange(80) % 3)]):
        save_model(model, root / f"{i}.json")
        docs.append(json.loads((root / f"{i}.json").read_text()))
    return X, docs


@FUZZ
@given(which=st.integers(0, 1), pick=st.integers(0, 10 ** 6), value=_JSON, cut=st.integers(0, 10 ** 6),
       text_level=st.booleans())
@example(which=1, pick=1925, value=1, cut=0, text_level=False)     # n_features 6 -> 1: still a valid file
def test_model_loader_is_valid_or_names_the_field(tmp_path_factory, saved_models, which, pick, value, cut,
                                                  text_level):
    X, docs = saved_models
    doc = docs[which]
    if text_level:                          # a truncated or garbled file
        text = json.dumps(doc)
        text = text[:cut % (len(text) + 1)] + text[cut % (len(text) + 1):][1:]
    else:
        paths = list(_paths(doc))
        text = json.dumps(_replace(doc, paths[pick % len(paths)], value))
    path = tmp_path_factory.mktemp("m") / "m.json"
    path.write_text(text)
    try:
        model = load_model(path)
    except ValueError as exc:
        assert _one_line(exc)
        return
    # a file may validly declare another number of features (n_features edited in a model whose weights
    # all fit under it): the model then predicts on data of that width
    n = model.n_features_in_
    if n != X.shape[1]:
        X = sp.hstack([sp.csr_matrix(X[:, :n]), sp.csr_matrix((X.shape[0], max(n - X.shape[1], 0)))]).tocsr()
    scores = model.decision_function(X)
    assert np.isfinite(scores).all()
    assert set(np.unique(model.predict(X))) <= set(model.classes_.tolist())
    save_model(model, path)                 # what loads saves again and loads the same
    assert np.array_equal(load_model(path).decision_function(X), scores)


# -- shard manifests ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def shard_source(tmp_path_factory):
    X = sp.random(90, 12, density=0.3, random_state=1, format="csr")
    X = (X @ sp.diags(np.r_[np.ones(10), 0, 0])).tocsr()        # two columns never occur
    X.eliminate_zeros()
    y = np.where(np.arange(90) % 4 == 0, 1, -1)
    root = tmp_path_factory.mktemp("shards")
    write_shards(X, y, root / "d", rows_per_shard=40)
    return X, y, root / "d"


@FUZZ
@given(pick=st.integers(0, 10 ** 6), value=_JSON)
def test_manifest_reader_is_exact_or_names_the_field(tmp_path_factory, shard_source, pick, value):
    import shutil

    X, y, source = shard_source
    target = tmp_path_factory.mktemp("copy") / "d"
    shutil.copytree(source, target)
    doc = json.loads((target / "manifest.json").read_text())
    paths = list(_paths(doc))
    (target / "manifest.json").write_text(json.dumps(_replace(doc, paths[pick % len(paths)], value)))
    w = np.arange(1.0, 13.0)
    try:
        shards = ShardedMatrix(target)
        scores, labels = shards.dot(np.arange(12), w), shards.y
    except ValueError as exc:
        assert _one_line(exc)
        return
    assert shards.shape == X.shape
    assert np.allclose(scores, X @ w) and np.array_equal(labels, y)
    assert os.path.samefile(shards.path, target)
