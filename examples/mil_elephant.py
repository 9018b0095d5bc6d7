"""Image retrieval by multiple-instance learning: Corel "elephant" with MILES + F1 under a budget,
C, budget, number of instances and kernel width chosen by inner cross-validation (the defaults).

    python examples/mil_elephant.py [DATA_DIR] [--quick]
"""
import argparse
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split

from structfs import StructSVMCV
from structfs.datasets import get_data_home, load_mil_csv
from structfs.metrics import f1, precision_at_k
from structfs.mil import MILESClassifier


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("data", nargs="?", default=None)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    bags, y, _ = load_mil_csv(get_data_home(args.data) / "mil" / "elephant.csv.xz")
    idx_tr, idx_te = train_test_split(np.arange(len(bags)), test_size=0.4, random_state=0, stratify=y)
    train, test = [bags[i] for i in idx_tr], [bags[i] for i in idx_te]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        # --quick: one C, one budget and the default width instead of the full grid
        estimator = StructSVMCV(loss="f1", Cs=[100.0], budgets=[2]) if args.quick else None
        clf = MILESClassifier(estimator=estimator, sigma=None, max_instances=50).fit(train, y[idx_tr])
    scores = clf.decision_function(test)
    print(f"test F1 {f1(y[idx_te], scores):.1f}   Prec@10 {precision_at_k(y[idx_te], scores, k=10):.1f}")
    est = clf.estimator_
    print(f"chosen by inner CV: C={est.C_:g}, budget={est.budget_}, {est.n_groups_} groups, "
          f"sigma={clf.embedding_.sigma_:.2f}")
    print(f"the decision rests on {len(clf.selected_instances_)} training instances:")
    for pool_index, bag in clf.selected_instances_[:10]:
        w = clf.estimator_.coef_[0, pool_index]
        print(f"  instance {pool_index:5d} of training bag {bag:3d} (label {y[idx_tr][bag]}), weight {w:+.3f}")


if __name__ == "__main__":
    main()
