"""R8 topics and SMS spam under a feature cap K: StructSVMCV(loss="f1", max_features=K) with groups of 5
against groups of 2, paired (R8: the 8 one-vs-rest topics; SMS: 5 seeded stratified 70/30 splits).

    python benchmarks/experiments/text_cap_budget.py 25
"""
import sys
import warnings

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.model_selection import StratifiedShuffleSplit

from structfs import StructSVMCV
from structfs.datasets import load_r8, load_sms_spam
from structfs.metrics import f1

warnings.simplefilter("ignore")
K = int(sys.argv[1])
probs = []
xtr, ytr, xte, yte = load_r8(None)
vec = TfidfVectorizer(sublinear_tf=True, min_df=2); Xtr, Xte = vec.fit_transform(xtr), vec.transform(xte)
for t in sorted(set(ytr)):
    probs.append(("r8 " + t, Xtr, (ytr == t).astype(int), Xte, (yte == t).astype(int)))
texts, labels = load_sms_spam(None); texts = np.asarray(texts, dtype=object); y = (np.asarray(labels) == "spam").astype(int)
for s, (tr, te) in enumerate(StratifiedShuffleSplit(5, test_size=0.3, random_state=0).split(texts, y)):
    v = TfidfVectorizer(sublinear_tf=True, min_df=2)
    probs.append((f"sms {s}", v.fit_transform(texts[tr]), y[tr], v.transform(texts[te]), y[te]))
res = {}
for name, A, a, B_, b in probs:
    row = []
    for B in (5, 2):
        cv = StructSVMCV(loss="f1", max_features=K, budgets=[B]).fit(A, a)
        row += [f1(b, cv.decision_function(B_)), len(cv.selected_features_)]
    res.setdefault(name.split()[0], []).append(row)
    print(f"{name}: B5 {row[0]:.2f} ({row[1]}) B2 {row[2]:.2f} ({row[3]})", flush=True)
for k, rows in res.items():
    r = np.array(rows); d = r[:, 2] - r[:, 0]
    print(f"== {k} cap {K}: B5 {r[:,0].mean():.2f} ({r[:,1].mean():.1f}) B2 {r[:,2].mean():.2f} ({r[:,3].mean():.1f}) d {d.mean():+.2f} ± {d.std(ddof=1)/np.sqrt(len(d)):.2f}")
