"""Does optimising AP (or pAUC) pay off?  Test AP and pAUC(0.1) of models trained on each loss.

    python -m benchmarks.retrieval r8  [--Cs 100 1000 10000]
    python -m benchmarks.retrieval mil [--Cs 10 100 1000] [--splits 10] [--datasets musk1 ...]

R8: TF-IDF (sublinear_tf, min_df=2) on the training texts, one unbudgeted StructSVM per topic and loss,
macro averages over the 8 topics of the test set. MIL: the default MILES embedding of the training bags,
one unbudgeted StructSVM per loss, the seeded stratified 60/40 splits of benchmarks/mil.py, means over
the splits. Losses "ap", "pauc" (beta 0.1), "auc", "f1", "error" at every C of the same grid. Each cell:
test AP / test pAUC(0.1) in percent (structfs.metrics: scikit-learn's average precision; the ROC area
over FPR [0, 0.1] divided by 0.1). Paired columns: "ap" minus each other loss at the same C, mean ±
standard error over topics or splits.
"""
import argparse
import time
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_extraction.text import TfidfVectorizer

from benchmarks.mil import DATASETS, load_splits
from structfs import StructSVM
from structfs.datasets import get_data_home, load_r8
from structfs.metrics import average_precision, partial_auc
from structfs.mil import MILESEmbedding

LOSSES = [("ap", None), ("pauc", {"beta": 0.1}), ("auc", None), ("f1", None), ("error", None)]


def evaluate(Xtr, ytr, Xte, yte, C):
    """{loss: (test AP, test pAUC(0.1), seconds)} for one binary problem at one C."""
    y_pm = np.where(yte == 1, 1, -1)
    out = {}
    for name, params in LOSSES:
        t0 = time.perf_counter()
        est = StructSVM(loss=name, loss_params=params, C=C).fit(Xtr, ytr)
        s = est.decision_function(Xte)
        out[name] = (average_precision(y_pm, s), partial_auc(y_pm, s, 0.1), time.perf_counter() - t0)
    return out


def se(d):
    d = np.asarray(d)
    return d.std(ddof=1) / np.sqrt(d.shape[0]) if d.shape[0] > 1 else float("nan")


def table(title, per_C):
    """per_C: {C: [ {loss: (ap, pauc, s)} per problem ]}."""
    print(f"\n### {title}\n")
    print("| C | " + " | ".join(f"{n} AP / pAUC" for n, _ in LOSSES) + " | " +
          " | ".join(f"ap − {n} (AP)" for n, _ in LOSSES[1:]) + " | pauc − auc (pAUC) |")
    print("|---|" + "---|" * (2 * len(LOSSES)))
    for C, rows in per_C.items():
        cells = [f"{np.mean([r[n][0] for r in rows]):.2f} / {np.mean([r[n][1] for r in rows]):.2f}" for n, _ in LOSSES]
        diffs = []
        for n, _ in LOSSES[1:]:
            d = [r["ap"][0] - r[n][0] for r in rows]
            diffs.append(f"{np.mean(d):+.2f} ± {se(d):.2f}")
        d = [r["pauc"][1] - r["auc"][1] for r in rows]
        diffs.append(f"{np.mean(d):+.2f} ± {se(d):.2f}")
        print(f"| {C:g} | " + " | ".join(cells) + " | " + " | ".join(diffs) + " |", flush=True)


def run_r8(args):
    xtr, ytr, xte, yte = load_r8(args.data)
    vec = TfidfVectorizer(sublinear_tf=True, min_df=2)
    Xtr, Xte = vec.fit_transform(xtr), vec.transform(xte)
    per_C = {C: [evaluate(Xtr, (ytr == t).astype(int), Xte, (yte == t).astype(int), C) for t in sorted(set(ytr))]
             for C in args.Cs or [100.0, 1000.0, 10000.0]}
    table("R8, 8 topics, macro averages", per_C)


def run_mil(args):
    data = get_data_home(args.data)
    for name in args.datasets:
        per_C = {C: [] for C in args.Cs or [10.0, 100.0, 1000.0]}
        for tr, te, y_tr, y_te in load_splits(data, name, args.splits):
            emb = MILESEmbedding().fit(tr)
            Ztr, Zte = emb.transform(tr), emb.transform(te)
            for C in per_C:
                per_C[C].append(evaluate(Ztr, y_tr, Zte, y_te, C))
        table(f"{name}, {args.splits} splits, means", per_C)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["r8", "mil"])
    parser.add_argument("--data", default=None, help="data directory (default: $STRUCTFS_DATA)")
    parser.add_argument("--Cs", type=float, nargs="+", default=None)
    parser.add_argument("--splits", type=int, default=10)
    parser.add_argument("--datasets", nargs="+", default=DATASETS)
    args = parser.parse_args()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        {"r8": run_r8, "mil": run_mil}[args.what](args)


if __name__ == "__main__":
    main()
