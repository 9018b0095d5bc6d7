"""A custom loss end to end: cost-sensitive error (a missed spam costs five false alarms) on SMS spam.

    python examples/custom_loss.py [DATA_DIR] [--quick]
"""
import argparse

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.model_selection import train_test_split

from structfs import StructSVM
from structfs.datasets import load_sms_spam
from structfs.losses import ContingencyLoss
from structfs.metrics import contingency_table


def cost(a, b, c, d):
    """Percent of the worst case: false alarms cost 1, missed spam costs 5."""
    return 100.0 * (b + 5 * c) / (5 * (a + c) + (b + d))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("data", nargs="?", default=None)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    texts, labels = load_sms_spam(args.data)
    if args.quick:
        texts, labels = texts[:1500], labels[:1500]
    y = (labels == "spam").astype(int)
    tr, te = train_test_split(np.arange(len(y)), test_size=0.3, random_state=0, stratify=y)
    vec = TfidfVectorizer(sublinear_tf=True, min_df=2)
    Xtr, Xte = vec.fit_transform([texts[i] for i in tr]), vec.transform([texts[i] for i in te])
    for name, loss in (("error", "error"), ("cost-sensitive", ContingencyLoss(cost, name="cost5"))):
        clf = StructSVM(loss=loss, C=1000.0).fit(Xtr, y[tr])
        a, b, c, d = contingency_table(np.where(y[te] == 1, 1, -1), np.where(clf.decision_function(Xte) > 0, 1, -1))
        print(f"{name:15s} missed spam {c:3d}  false alarms {b:3d}  cost {cost(a, b, c, d):.2f}%")


if __name__ == "__main__":
    main()
