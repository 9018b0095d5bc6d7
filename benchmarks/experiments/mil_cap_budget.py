"""MILESClassifier(max_instances=K) with groups of B instances: which default budget under a small cap?

    python benchmarks/experiments/mil_cap_budget.py 10 musk1 musk2 elephant birds_brown_creeper \
        "birds_brown_creeper@5%" "elephant@10%"
    python benchmarks/experiments/mil_cap_budget.py 25 --variants B5 B2 musk1 ...   # some variants, no L1

A data set is a shared set's name or the path of a MIL CSV (benchmarks/mil.py's ``load_splits``).

For each data set, 10 seeded splits (benchmarks/mil.py's), ``MILESClassifier(estimator=StructSVMCV(loss="f1",
budgets=B, scale_C=False), max_instances=K)`` for B in (5,), (1,), (2,), (1, 5), and a capped L1 baseline
(MILES + L1-LinearSVC, balanced; C from 15 values by 3-fold CV on F1 among those whose model keeps 1..K
instances). Prints mean test F1 (instances) and the paired difference to B = 5 with its standard error.
"""
import sys
import warnings
from pathlib import Path

import numpy as np
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import cross_val_score
from sklearn.svm import LinearSVC

from structfs import StructSVMCV
from structfs.datasets import get_data_home
from structfs.metrics import f1
from structfs.mil import MILESClassifier, MILESEmbedding

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))        # benchmarks/
from mil import load_splits  # noqa: E402

K = int(sys.argv[1]); sets = sys.argv[2:]
variants = {"B5": (5,), "B1": (1,), "B2": (2,), "B1,5": (1, 5)}
capped_l1 = True
if sets and sets[0] == "--variants":       # --variants B5 B2 ...: those only (B5 first), without the capped L1-SVM
    names = [a for a in sets[1:] if a in variants]
    sets = sets[1 + len(names):]
    variants, capped_l1 = {v: variants[v] for v in names}, False
warnings.simplefilter("ignore", ConvergenceWarning)
for name in sets:
    R = {v: [] for v in list(variants) + (["L1cap"] if capped_l1 else [])}; N = {v: [] for v in R}
    for tr, te, ytr, yte in load_splits(get_data_home(None), name, 10):
        for v, b in variants.items():
            clf = MILESClassifier(estimator=StructSVMCV(loss="f1", budgets=b, scale_C=False), max_instances=K).fit(tr, ytr)
            R[v].append(f1(yte, clf.decision_function(te))); N[v].append(len(clf.selected_instances_))
        if not capped_l1:
            continue
        emb = MILESEmbedding().fit(tr); Z, Zt = emb.transform(tr), emb.transform(te)
        best = None                # (CV F1, model) over the C whose model keeps 1..K instances
        for C in np.logspace(-2, 1.5, 15):
            l1 = LinearSVC(penalty="l1", dual=False, class_weight="balanced", C=C, random_state=0)
            m = clone(l1).fit(Z, ytr)
            if 0 < np.count_nonzero(m.coef_) <= K:
                score = cross_val_score(l1, Z, ytr, scoring="f1", cv=3).mean()
                if best is None or score > best[0]:
                    best = (score, m)
        R["L1cap"].append(f1(yte, best[1].decision_function(Zt)) if best else 0.0)
        N["L1cap"].append(np.count_nonzero(best[1].coef_) if best else 0)
    base = np.array(R["B5"])
    print(name, " | ".join(f"{v} {np.mean(R[v]):.1f} ({np.mean(N[v]):.1f}) d={np.mean(np.array(R[v]) - base):+.1f}±{np.std(np.array(R[v]) - base, ddof=1)/np.sqrt(len(base)):.1f}" for v in R), flush=True)
