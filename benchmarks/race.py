"""The race of the budgeted cells: what it saves, and that it changes no choice that matters.

    python -m benchmarks.race [--splits 5]

Each problem is searched by ``StructSVMCV(loss="f1")`` three ways, in one run: at its defaults (successive
halving, which starts with the race of the budgeted cells over the folds), without budgeted cells
(``budgets=[None]``: what the race saves at most) and over the full grid (``halving_factor=None``: every
path on every fold, the reference). Problems: R8's eight topics, SMS spam over ``--splits`` stratified
70/30 splits, and the case where budgeted models win by far -- ``make_classification`` with 2,000
features of which 8 are informative, 15% positives, half for training, 6 seeds. Test F1 in %, seconds
summed over the problems, differences paired over them.
"""
import argparse
import warnings

import numpy as np
from sklearn.datasets import make_classification
from sklearn.model_selection import train_test_split

from benchmarks.halving import _r8_topics, _sms_problems, _timed
from benchmarks.mil import paired
from structfs import StructSVMCV
from structfs.metrics import f1

SEARCHES = {"default (race)": {}, "no budgeted cells": {"budgets": [None]}, "full grid": {"halving_factor": None}}


def _irrelevant_features(seeds=6):
    problems = []
    for seed in range(seeds):
        X, y = make_classification(600, 2000, n_informative=8, n_redundant=0, weights=[0.85], flip_y=0.01,
                                   random_state=seed)
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.5, stratify=y, random_state=seed)
        problems.append((Xtr, ytr, Xte, yte))
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--splits", type=int, default=5)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    print("| problems | search | F1 | seconds | F1 − default | budgeted picks |")
    print("|---|---|---|---|---|---|")
    for name, problems in (("R8, 8 topics", _r8_topics()), (f"SMS spam, {args.splits} splits",
                                                            _sms_problems(args.splits)),
                           ("2,000 features, 8 informative (6 seeds)", _irrelevant_features())):
        scores = {key: [] for key in SEARCHES}
        seconds = dict.fromkeys(SEARCHES, 0.0)
        budgeted = dict.fromkeys(SEARCHES, 0)
        for Xtr, ytr, Xte, yte in problems:
            for key, params in SEARCHES.items():
                search, t = _timed(StructSVMCV(loss="f1", **params), Xtr, ytr)
                scores[key].append(f1(yte, search.predict(Xte)))
                seconds[key] += t
                budgeted[key] += search.budget_ is not None
        for key in SEARCHES:
            versus = "" if key == "default (race)" else paired(scores[key], scores["default (race)"], 2)
            print(f"| {name} | {key} | {np.mean(scores[key]):.2f} | {seconds[key]:.1f} | {versus} | "
                  f"{budgeted[key]} of {len(problems)} |", flush=True)


if __name__ == "__main__":
    main()
