"""Loaders for the shared benchmark data (read in place, never copied) and SVMlight files.

The data directory is given explicitly or through the ``STRUCTFS_DATA`` environment variable; it holds
``text/r8``, ``text/sms_spam`` and ``mil`` as described in its README.
"""
import lzma
import os
from pathlib import Path

import numpy as np

__all__ = ["get_data_home", "load_r8", "load_sms_spam", "load_mil_csv", "load_digits_imbalanced"]


def get_data_home(data_home=None):
    """The data directory: ``data_home``, else ``$STRUCTFS_DATA``; ValueError when neither exists."""
    path = data_home or os.environ.get("STRUCTFS_DATA")
    if not path:
        raise ValueError("No data directory: pass data_home=... or set STRUCTFS_DATA to the shared "
                         "datasets folder (the one holding text/ and mil/).")
    path = Path(path).expanduser()
    if not path.is_dir():
        raise ValueError(f"Data directory {str(path)!r} does not exist; set STRUCTFS_DATA correctly.")
    return path


def _open_text(path):
    path = Path(path)
    if path.suffix == ".xz":
        return lzma.open(path, "rt", encoding="utf-8", newline="\n")
    return open(path, encoding="utf-8", newline="\n")


def _read_tsv(path):
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


def load_r8(data_home=None):
    """Reuters-21578 R8: (train_texts, train_labels, test_texts, test_labels), labels are topic names."""
    root = get_data_home(data_home) / "text" / "r8"
    x_train, y_train = _read_tsv(root / "train.tsv.xz")
    x_test, y_test = _read_tsv(root / "test.tsv.xz")
    return x_train, y_train, x_test, y_test


def load_sms_spam(data_home=None):
    """SMS Spam Collection: (texts, labels) with labels 'ham'/'spam'; no fixed split."""
    return _read_tsv(get_data_home(data_home) / "text" / "sms_spam" / "sms_spam.tsv.xz")


def load_mil_csv(path):
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


def load_digits_imbalanced():
    """scikit-learn's bundled 8x8 digits (no download): (X, y) with y the digit 0..9.

    One-vs-rest over the ten digits gives ten imbalanced (about 1:9) binary problems.
    """
    from sklearn.datasets import load_digits

    data = load_digits()
    return data.data / 16.0, data.target
