"""Data: generators and bundled data for examples, and loaders for the benchmark data.

:func:`load_digits_imbalanced`, :func:`make_imbalanced_text` and :func:`make_digit_bags` need no
download. The benchmark loaders read a data directory given explicitly or through the
``STRUCTFS_DATA`` environment variable, holding ``text/r8``, ``text/sms_spam`` and ``mil``.
"""
from __future__ import annotations

import lzma
import os
from pathlib import Path
from typing import IO

import numpy as np

__all__ = ["get_data_home", "load_r8", "load_sms_spam", "load_mil_csv", "load_digits_imbalanced",
           "make_imbalanced_text", "make_digit_bags"]


def get_data_home(data_home: str | os.PathLike[str] | None = None) -> Path:
    """The data directory: ``data_home``, else ``$STRUCTFS_DATA``; ValueError when neither exists."""
    path = data_home or os.environ.get("STRUCTFS_DATA")
    if not path:
        raise ValueError("No data directory: pass data_home=... or set STRUCTFS_DATA to the shared "
                         "datasets folder (the one holding text/ and mil/).")
    path = Path(path).expanduser()
    if not path.is_dir():
        raise ValueError(f"Data directory {str(path)!r} does not exist; set STRUCTFS_DATA correctly.")
    return path


def _open_text(path: str | os.PathLike[str]) -> IO[str]:
    path = Path(path)
    if path.suffix == ".xz":
        return lzma.open(path, "rt", encoding="utf-8", newline="\n")
    return open(path, encoding="utf-8", newline="\n")


def _read_tsv(path: str | os.PathLike[str]) -> tuple[list[str], np.ndarray]:
    labels, texts = [], []
    with _open_text(path) as fh:
        for line in fh:
            line = line.rstrip("\n")
            if not line:
                continue
            label, _, text = line.partition("\t")
            labels.append(label)
            texts.append(text)
    return texts, np.array(labels)


def load_r8(data_home: str | os.PathLike[str] | None = None) -> tuple[list[str], np.ndarray, list[str], np.ndarray]:
    """Reuters-21578 R8: (train_texts, train_labels, test_texts, test_labels), labels are topic names."""
    root = get_data_home(data_home) / "text" / "r8"
    x_train, y_train = _read_tsv(root / "train.tsv.xz")
    x_test, y_test = _read_tsv(root / "test.tsv.xz")
    return x_train, y_train, x_test, y_test


def load_sms_spam(data_home: str | os.PathLike[str] | None = None) -> tuple[list[str], np.ndarray]:
    """SMS Spam Collection: (texts, labels) with labels 'ham'/'spam'; no fixed split."""
    return _read_tsv(get_data_home(data_home) / "text" / "sms_spam" / "sms_spam.tsv.xz")


def load_mil_csv(path: str | os.PathLike[str]) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """A MIL benchmark CSV (plain or .xz): rows ``bag_label, bag_id, features...``.

    Returns ``(bags, y, bag_ids)``: a list of (instances x features) float arrays in order of first
    appearance of each bag id, the bag labels (0/1) and the bag ids.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"MIL file {str(path)!r} does not exist.")
    with _open_text(path) as fh:
        data = np.loadtxt(fh, delimiter=",", ndmin=2)
    if data.shape[1] < 3:
        raise ValueError(f"{path}: expected 'bag_label, bag_id, feature_1, ...' per line, got {data.shape[1]} columns.")
    labels, ids, feats = data[:, 0], data[:, 1], data[:, 2:]
    uniq, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")          # bags in file order
    sort_idx = np.argsort(inverse, kind="stable")
    bounds = np.searchsorted(inverse[sort_idx], np.arange(uniq.shape[0] + 1))
    bags_by_id = [feats[sort_idx[bounds[i]:bounds[i + 1]]] for i in range(uniq.shape[0])]
    bag_labels = np.array([labels[sort_idx[bounds[i]]] for i in range(uniq.shape[0])])
    bags = [bags_by_id[i] for i in order]
    return bags, bag_labels[order].astype(int), uniq[order]


def load_digits_imbalanced() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's bundled 8x8 digits (no download): (X, y) with y the digit 0..9.

    One-vs-rest over the ten digits gives ten imbalanced (about 1:9) binary problems.
    """
    from sklearn.datasets import load_digits

    data = load_digits()
    return data.data / 16.0, data.target


def _words(rng: np.random.Generator, n: int) -> list[str]:
    """``n`` distinct made-up words of two to four syllables."""
    onsets, vowels = list("bdfgklmnprstvz"), ["a", "e", "i", "o", "u", "ai", "ou"]
    words: set[str] = set()
    while len(words) < n:
        k = rng.integers(2, 5)
        words.add("".join(rng.choice(onsets) + rng.choice(vowels) for _ in range(k)))
    return sorted(words)


def make_imbalanced_text(n_documents: int = 2000, positive_fraction: float = 0.05, vocabulary: int = 3000,
                         topic_words: int = 40, random_state: int = 0) -> tuple[list[str], np.ndarray]:
    """A synthetic text corpus with a rare topic: (documents, labels), labels 1 for the topic.

    Words follow Zipf's law over a made-up ``vocabulary``. A positive document draws 8% of its words
    from the topic's ``topic_words`` words; a negative one draws from them rarely (1% of its words), so
    that no single word decides the class -- an imbalanced problem of the kind where the
    measure (F1) and not accuracy matters. Deterministic for a given ``random_state``.

    Examples
    --------
    >>> from structfs.datasets import make_imbalanced_text
    >>> docs, y = make_imbalanced_text(n_documents=200)
    >>> len(docs), int(y.sum())
    (200, 10)
    """
    from ._validation import check_positive_int

    check_positive_int(n_documents, "n_documents", low=2)
    check_positive_int(vocabulary, "vocabulary", low=2)
    check_positive_int(topic_words, "topic_words")
    if not 0.0 < positive_fraction < 1.0:
        raise ValueError(f"positive_fraction must be in (0, 1), got {positive_fraction!r}.")
    rng = np.random.default_rng(random_state)
    words = rng.permutation(_words(rng, vocabulary + topic_words))
    common, topic = words[:vocabulary], words[vocabulary:]
    zipf = 1.0 / np.arange(1, vocabulary + 1)
    zipf /= zipf.sum()
    n_pos = max(1, int(round(positive_fraction * n_documents)))
    y = np.zeros(n_documents, dtype=int)
    y[rng.permutation(n_documents)[:n_pos]] = 1
    lengths = rng.poisson(60, n_documents) + 10
    topic_rate = np.where(y == 1, 0.08, 0.01)
    docs = []
    for length, rate in zip(lengths, topic_rate):
        from_topic = rng.random(length) < rate
        tokens = np.where(from_topic, rng.choice(topic, length), rng.choice(common, length, p=zipf))
        docs.append(" ".join(tokens))
    return docs, y


def make_digit_bags(n_bags: int = 300, target: int = 3, bag_size: tuple[int, int] = (3, 8),
                    positive_fraction: float = 0.2, random_state: int = 0) -> tuple[list[np.ndarray], np.ndarray]:
    """Multiple-instance data from scikit-learn's digits: a bag is a set of digit images, positive when it
    holds at least one image of ``target`` -- an image-retrieval problem in miniature.

    Returns (bags, y): a list of (n_instances, 64) arrays with pixel values in [0, 1], and 0/1 labels.

    Examples
    --------
    >>> from structfs.datasets import make_digit_bags
    >>> bags, y = make_digit_bags(n_bags=50)
    >>> len(bags), bags[0].shape[1], int(y.sum())
    (50, 64, 10)
    """
    from sklearn.datasets import load_digits

    from ._validation import check_positive_int

    check_positive_int(n_bags, "n_bags", low=2)
    low, high = bag_size
    check_positive_int(low, "bag_size")
    check_positive_int(high, "bag_size", low=low)
    if not 0.0 < positive_fraction < 1.0:
        raise ValueError(f"positive_fraction must be in (0, 1), got {positive_fraction!r}.")
    X, digit = load_digits(return_X_y=True)
    X = X / 16.0
    if target not in set(digit.tolist()):
        raise ValueError(f"target must be a digit 0..9, got {target!r}.")
    rng = np.random.default_rng(random_state)
    with_target, others = np.flatnonzero(digit == target), np.flatnonzero(digit != target)
    n_pos = max(1, int(round(positive_fraction * n_bags)))
    y = np.zeros(n_bags, dtype=int)
    y[rng.permutation(n_bags)[:n_pos]] = 1
    bags = []
    for label in y:
        size = int(rng.integers(low, high + 1))
        rows = rng.choice(others, size, replace=False)
        if label:                               # one or two images of the target digit
            k = min(size, int(rng.integers(1, 3)))
            rows[:k] = rng.choice(with_target, k, replace=False)
        bags.append(X[rng.permutation(rows)])
    return bags, y
