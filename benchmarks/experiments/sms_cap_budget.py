"""SMS spam under a small feature cap: the default budget (min(5, k // 5) since the fourteenth session)
against groups of 5, paired over seeded stratified 70/30 splits (benchmarks/cv.py's).

    python benchmarks/experiments/sms_cap_budget.py [--cap 10] [--splits 5]
"""
import argparse

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.model_selection import StratifiedShuffleSplit

from structfs import StructSVMCV
from structfs.datasets import load_sms_spam
from structfs.metrics import f1

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("--cap", type=int, default=10)
parser.add_argument("--splits", type=int, default=5)
args = parser.parse_args()
texts, labels = load_sms_spam(None)
texts, y = np.asarray(texts, dtype=object), (np.asarray(labels) == "spam").astype(int)
rows = []
for split, (tr, te) in enumerate(StratifiedShuffleSplit(args.splits, test_size=0.3, random_state=0).split(texts, y)):
    vec = TfidfVectorizer(sublinear_tf=True, min_df=2)
    Xtr, Xte = vec.fit_transform(texts[tr]), vec.transform(texts[te])
    row = []
    for budgets in (None, [5]):            # None: the default grid under the cap
        cv = StructSVMCV(loss="f1", max_features=args.cap, budgets=budgets).fit(Xtr, y[tr])
        row += [f1(y[te], cv.decision_function(Xte)), len(cv.selected_features_), cv.budget_]
    print(f"split {split}: default (B={row[2]}) {row[0]:.2f} with {row[1]}, B=5 {row[3]:.2f} with {row[4]}", flush=True)
    rows.append(row)
d = np.array([r[0] - r[3] for r in rows])
print(f"mean: default {np.mean([r[0] for r in rows]):.2f}, B=5 {np.mean([r[3] for r in rows]):.2f}, "
      f"paired {d.mean():+.2f} ± {d.std(ddof=1) / np.sqrt(len(d)):.2f}")
