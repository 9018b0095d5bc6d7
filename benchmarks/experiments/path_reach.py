"""How many features can a budgeted path reach? R8 topics, every C of StructSVMCV's default grid.

    python benchmarks/experiments/path_reach.py [--loss f1] [--budgets 5 20] [--max-outer 30]

For each topic, C = c * n (c in DEFAULT_C_PER_SAMPLE; TF-IDF rows have unit norm) and budget B:
``StructSVM(loss, C, budget=B, max_outer=30, max_features=100)`` (the issue's cap) fitted on the
training documents, and the features the path holds after 5, 10, 20 and 30 groups. With the squared
B-support norm the optimum on the generated groups keeps a number of nonzeros set by B and C, not by
the number of groups: once it is reached, further groups replace features rather than add them.
"""
import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))        # benchmarks/
from structfs import StructSVM  # noqa: E402
from structfs.datasets import get_data_home, load_r8  # noqa: E402
from structfs.model_selection import DEFAULT_C_PER_SAMPLE  # noqa: E402

LENGTHS = (5, 10, 20, 30)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--loss", default="f1")
    parser.add_argument("--budgets", type=int, nargs="+", default=[5, 20])
    parser.add_argument("--max-outer", type=int, default=30)
    args = parser.parse_args()
    xtr, ytr, _, _ = load_r8(get_data_home(None))
    X = TfidfVectorizer(sublinear_tf=True, min_df=2).fit_transform(xtr)
    lengths = [k for k in LENGTHS if k <= args.max_outer]
    print(f"loss {args.loss!r}, max_features=100: features held after " + ", ".join(map(str, lengths)) + " groups\n")
    print("| topic | c = C / n | " + " | ".join(f"B = {B}" for B in args.budgets) + " |")
    print("|---|---|" + "---|" * len(args.budgets))
    reached = {B: [] for B in args.budgets}
    for topic in sorted(set(ytr)):
        y = (ytr == topic).astype(int)
        for c in DEFAULT_C_PER_SAMPLE:
            cells = []
            for B in args.budgets:
                counts = []
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    for k in lengths:
                        est = StructSVM(loss=args.loss, C=c * X.shape[0], budget=B, max_outer=k, max_features=100)
                        counts.append(len(est.fit(X, y).selected_features_))
                reached[B].append(counts[-1])
                cells.append(" / ".join(map(str, counts)))
            print(f"| {topic} | {c:g} | " + " | ".join(cells) + " |", flush=True)
    print("\nfeatures after " + str(lengths[-1]) + " groups, mean (max) over topics and C: "
          + ", ".join(f"B = {B}: {np.mean(v):.1f} ({max(v)})" for B, v in reached.items()))


if __name__ == "__main__":
    main()
