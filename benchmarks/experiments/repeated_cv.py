"""Repeated inner cross-validation: does averaging two shuffles of the 3 folds choose better models?

    python benchmarks/experiments/repeated_cv.py mil 10 musk1 musk2 elephant birds_brown_creeper
    python benchmarks/experiments/repeated_cv.py r8 1 r8           # 8 topics, max_features=100
    python benchmarks/experiments/repeated_cv.py sms 5 sms

The selection's weak point on every dev set is noise: a few validation positives per fold, scored at
up to 4 C x 30 path lengths (x 3 kernel widths on MIL). Repeating the 3-fold split with another
shuffle halves the variance of each candidate's mean validation score without shrinking the
validation folds (five folds did shrink them, and lost on every set: RESULTS.md, tenth session).
(a) the shipped search (``cv=3``: unshuffled StratifiedKFold); (b) ``cv=RepeatedStratifiedKFold(3,
2, random_state=0)``, everything else the same; (c) ``StratifiedKFold(3, shuffle=True,
random_state=0)`` alone, to tell the shuffle from the repetition (``--shuffled``). Splits are
benchmarks/mil.py's and cv.py's; test F1, paired difference (b) - (a) with its standard error,
features or instances, fit seconds. ``--out F`` writes every row as JSON lines.
"""
import argparse
import json
import sys
from pathlib import Path

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.metrics import f1_score
from sklearn.model_selection import RepeatedStratifiedKFold, StratifiedKFold, StratifiedShuffleSplit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))        # benchmarks/
from bias_scale import timed  # noqa: E402  (this folder is the script's path)
from mil import load_splits, paired, set_name  # noqa: E402

from structfs import StructSVMCV  # noqa: E402
from structfs.datasets import get_data_home, load_r8, load_sms_spam  # noqa: E402
from structfs.mil import MIL_BUDGETS, MILESClassifier  # noqa: E402

VARIANTS = {
    "shipped": lambda: 3,
    "repeated": lambda: RepeatedStratifiedKFold(n_splits=3, n_repeats=2, random_state=0),
    "shuffled": lambda: StratifiedKFold(n_splits=3, shuffle=True, random_state=0),
}


def mil_runs(name, splits, variants):
    for tr, te, ytr, yte in load_splits(get_data_home(None), name, splits):
        row = {}
        for v in variants:
            est = StructSVMCV(loss="f1", budgets=list(MIL_BUDGETS), scale_C=False, cv=VARIANTS[v]())
            model, seconds = timed(lambda: MILESClassifier(estimator=est).fit(tr, ytr))
            row[v] = (100 * f1_score(yte, model.predict(te), pos_label=model.classes_[1]),
                      len(model.selected_instances_), seconds)
        yield name, row


def text_problem_runs(problems, variants, **params):
    for label, Xtr, ytr, Xte, yte in problems:
        row = {}
        for v in variants:
            model, seconds = timed(lambda: StructSVMCV(loss="f1", cv=VARIANTS[v](), **params).fit(Xtr, ytr))
            row[v] = (100 * f1_score(yte, model.predict(Xte)), len(model.selected_features_), seconds)
        yield label, row


def r8_runs(name, splits, variants):
    xtr, ytr, xte, yte = load_r8(get_data_home(None))
    vec = TfidfVectorizer(sublinear_tf=True, min_df=2)
    Xtr, Xte = vec.fit_transform(xtr), vec.transform(xte)
    problems = ((topic, Xtr, (ytr == topic).astype(int), Xte, (yte == topic).astype(int))
                for topic in sorted(set(ytr)))
    return text_problem_runs(problems, variants, max_features=100)


def sms_runs(name, splits, variants):
    texts, labels = load_sms_spam(get_data_home(None))
    texts, y = np.asarray(texts, dtype=object), (np.asarray(labels) == "spam").astype(int)

    def problems():
        for i, (tr, te) in enumerate(StratifiedShuffleSplit(n_splits=splits, test_size=0.3,
                                                            random_state=0).split(texts, y)):
            vec = TfidfVectorizer(sublinear_tf=True, min_df=2)
            yield f"sms split {i}", vec.fit_transform(texts[tr]), y[tr], vec.transform(texts[te]), y[te]
    return text_problem_runs(problems(), variants)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=["mil", "r8", "sms"])
    parser.add_argument("splits", type=int)
    parser.add_argument("names", nargs="+")
    parser.add_argument("--shuffled", action="store_true", help="also (c): one shuffled 3-fold split")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    variants = ["shipped", "repeated"] + (["shuffled"] if args.shuffled else [])
    runs = {"mil": mil_runs, "r8": r8_runs, "sms": sms_runs}[args.mode]
    out = open(args.out, "a") if args.out else None
    others = variants[1:]
    print("| problem | " + " | ".join(f"{v} F1" for v in variants) + " | "
          + " | ".join(f"{v} − shipped" for v in others) + " | features | seconds |")
    print("|---|" + "---|" * (2 * len(variants) + 1))
    for name in args.names:
        rows = []
        for label, row in runs(name, args.splits, variants):
            rows.append(row)
            if out:
                out.write(json.dumps({"problem": label, **row}) + "\n")
                out.flush()
            print("  " + label + ": " + ", ".join(f"{v} {row[v][0]:.1f} ({row[v][1]}, {row[v][2]:.0f} s)"
                                                  for v in variants), flush=True)
        f1 = {v: np.array([r[v][0] for r in rows]) for v in variants}
        diffs = [paired(f1[v], f1["shipped"], digits=2) for v in others]
        feats = " / ".join(f"{np.mean([r[v][1] for r in rows]):.1f}" for v in variants)
        secs = " / ".join(f"{np.mean([r[v][2] for r in rows]):.1f}" for v in variants)
        print(f"| {set_name(name)} | " + " | ".join(f"{f1[v].mean():.2f}" for v in variants) + " | "
              + " | ".join(diffs) + f" | {feats} | {secs} |", flush=True)


if __name__ == "__main__":
    main()
