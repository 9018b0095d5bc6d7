"""Would the debiasing refit do better at another C than the selection's?  (issue 10, tenth session)

    python benchmarks/selection.py collect r8 --out /tmp/sel_r8.jsonl
    python benchmarks/experiments/debias_c.py /tmp/sel_r8.jsonl [factors ...]   (default 0.1 0.3 1 3 10 30)

For each R8 topic, the candidate (C, B, groups) the shipped rule picks from the inner-CV records is
fitted on the whole training part with its path's points refitted without budget at C * factor, and
the test F1 of the chosen length is printed per factor. It looks at the test set, so it can only say
whether a fixed factor is worth a cross-validated search: a factor that does not win clearly here
would not win under CV either.
"""
import json
import sys
from pathlib import Path

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from selection import rule_smooth  # noqa: E402

from structfs.datasets import load_r8  # noqa: E402
from structfs.losses import get_loss  # noqa: E402
from structfs.metrics import f1  # noqa: E402
from structfs.solvers import PathRefitter, solve  # noqa: E402


def main():
    records = {r["split"]: r for r in map(json.loads, open(sys.argv[1]))}
    factors = [float(a) for a in sys.argv[2:]] or [0.1, 0.3, 1.0, 3.0, 10.0, 30.0]
    xtr, ytr, xte, yte = load_r8()
    vec = TfidfVectorizer(sublinear_tf=True, min_df=2)
    Xtr, Xte = vec.fit_transform(xtr).tocsr(), vec.transform(xte).tocsr()
    loss = get_loss("f1")
    print("| topic | C, B, groups | " + " | ".join(f"refit C x{f:g}" for f in factors) + " |")
    print("|---|---|" + "---|" * len(factors))
    macro = {f: [] for f in factors}
    for topic, rec in sorted(records.items()):
        row = rec["rows"][rule_smooth(rec["rows"])]
        C, B, k = row["C"], row["budget"], row["n_groups"]
        y, y_test = np.where(ytr == topic, 1.0, -1.0), np.where(yte == topic, 1.0, -1.0)
        refitters = {f: PathRefitter(Xtr, y, loss, C * f, bias=1.0, tol=0.1, max_iter=2000) for f in factors}
        points = {f: [] for f in factors}

        def score(cols, w, w_b):
            for f in factors:
                c, weights, b = refitters[f].refit(cols[w != 0])
                points[f].append(f1(y_test, Xte[:, c] @ weights + b))
            return False

        solve(Xtr, y, loss, C, budget=B, on_group=score, bias=1.0, tol=0.01, max_iter=2000, max_outer=k,
              max_features=100)
        for f in factors:
            macro[f].append(points[f][min(k, len(points[f])) - 1])
        print(f"| {topic} | {C:.0f}, {B}, {k} | " + " | ".join(f"{macro[f][-1]:.2f}" for f in factors) + " |",
              flush=True)
    print("| macro | | " + " | ".join(f"{np.mean(macro[f]):.2f}" for f in factors) + " |")


if __name__ == "__main__":
    main()
