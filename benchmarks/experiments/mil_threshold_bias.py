"""Is the threshold of MILESClassifier()'s models biased? A MILES model is trained on bags that hold
their own pool instances (similarity 1), so its training scores are optimistic; if its learned
threshold were off for new bags, test bags would be predicted positive too rarely or too often.

    python benchmarks/experiments/mil_threshold_bias.py 5 musk2 elephant birds_brown_creeper ...

Per data set (benchmarks/mil.py's splits; a name or a MIL CSV path): test F1 at the model's own cut
and at the best cut on the test scores (an oracle, an upper bound), and predicted / true positives on
test and on training bags.
"""
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))        # benchmarks/
from mil import load_splits  # noqa: E402

from structfs.datasets import get_data_home  # noqa: E402
from structfs.losses import get_loss  # noqa: E402
from structfs.metrics import f1  # noqa: E402
from structfs.mil import MILESClassifier  # noqa: E402
from structfs.model_selection import best_threshold  # noqa: E402

warnings.simplefilter("ignore")
F1 = get_loss("f1")
for name in sys.argv[2:]:
    rows = []
    for tr, te, ytr, yte in load_splits(get_data_home(None), name, int(sys.argv[1])):
        clf = MILESClassifier().fit(tr, ytr)
        s = clf.decision_function(te); yp = np.where(yte == 1, 1.0, -1.0)
        t = best_threshold(F1, yp, s)
        s_train = clf.decision_function(tr)
        rows.append((f1(yte, s), f1(yte, s - t), (s > 0).sum(), (yte == 1).sum(), (s_train > 0).sum(), (ytr == 1).sum()))
        print(f"  {name}: F1 {rows[-1][0]:.1f} oracle-cut {rows[-1][1]:.1f} test pred+ {rows[-1][2]} true+ {rows[-1][3]} | train pred+ {rows[-1][4]} true+ {rows[-1][5]}", flush=True)
    r = np.array(rows, dtype=float)
    print(f"{name}: F1 {r[:,0].mean():.1f} oracle-cut {r[:,1].mean():.1f}; test predicted/true positives {r[:,2].sum()/r[:,3].sum():.2f}; train {r[:,4].sum()/r[:,5].sum():.2f}", flush=True)
