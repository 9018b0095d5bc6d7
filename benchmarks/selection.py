"""Which selection rule should StructSVMCV use?  Every candidate's inner-CV score *and* test score.

    python -m benchmarks.selection collect mil [--splits 10] [--out /tmp/sel_mil.jsonl]
    python -m benchmarks.selection collect sms [--splits 5]
    python -m benchmarks.selection collect r8
    python -m benchmarks.selection analyze /tmp/sel_*.jsonl [/tmp/other_C_grid_*.jsonl]
    python -m benchmarks.selection compare /tmp/sel_r8.jsonl /tmp/sel_r8_cv5.jsonl

``collect`` runs the default search of ``MILESClassifier()`` / ``StructSVMCV(loss="f1")`` (R8:
``max_features=100``) on each problem (MIL and SMS: the seeded splits of benchmarks/cv.py; R8: the 8
topics) and, for every (sigma, C, budget) cell of the grid, the path of the same cell fitted on the
whole training part and scored on the test part at every length. It writes one JSON line per problem,
with the baseline's test F1 and feature count (MIL: MILES + L1-SVM; text: LinearSVC and L1-LinearSVC,
C by 3-fold CV). ``analyze`` then replays selection rules on those lines -- each rule sees only the
inner-CV scores -- and prints the test F1 and features of what each rule picks, paired against the
baseline, per data set. A rule chosen this way is chosen on all dev sets at once, not on one figure.
"""
import argparse
import json
import time
import warnings
from collections import defaultdict
from dataclasses import replace

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.model_selection import StratifiedShuffleSplit

from benchmarks.cv import linear_baselines
from benchmarks.mil import DATASETS, load_splits, miles_baseline
from structfs import StructSVMCV
from structfs.datasets import get_data_home, load_r8, load_sms_spam
from structfs.metrics import f1
from structfs.mil import MIL_BUDGETS, SIGMA_FACTORS, MILESEmbedding
from structfs.model_selection._path import Fold, fold_path
from structfs.model_selection._results import path_smoothed_scores


def test_paths(cv, X, y, n_train, table):
    """For each (C, budget) cell of ``table``: test scores and feature counts along its full-data path."""
    scoring = cv._path_scoring(cv._problem(), np.unique(y))
    out = {}
    fold = Fold(np.arange(n_train), np.arange(n_train, X.shape[0]), None, float(cv.bias))
    for C, B in dict.fromkeys(zip(table["C"], table["budget"])):
        length = max(k for c, b, k in zip(table["C"], table["budget"], table["n_groups"]) if (c, b) == (C, B)) \
            if B is not None else 1
        scores, n_feat, *_ = fold_path(X, y, fold, C, B,
                                         replace(scoring, solver=replace(scoring.solver, max_outer=length)))
        out[(C, B)] = (scores.tolist(), n_feat.tolist())
    return out


def rows_of(table, paths, sigma=None):
    """One record per candidate: fold scores, mean features, and its
    test score/features."""
    rows = []
    for i, (C, B, k) in enumerate(zip(table["C"], table["budget"], table["n_groups"])):
        scores, n_feat = paths[(C, B)]
        j = min((k or 1) - 1, len(scores) - 1)
        rows.append(dict(sigma=sigma, C=C, budget=B, n_groups=k, folds=list(map(float, table["scores"][i])),
                         n_features=float(table["n_features"][i]), test=scores[j], test_features=n_feat[j]))
    return rows


def collect_mil(args, out):
    data = get_data_home(args.data)
    for name in args.datasets:
        for split, (tr, te, y_tr, y_te) in enumerate(load_splits(data, name, args.splits)):
            t0 = time.perf_counter()
            emb = MILESEmbedding().fit(tr)
            l1 = miles_baseline(emb.transform(tr), y_tr)
            base = (f1(y_te, l1.decision_function(emb.transform(te))), int(np.count_nonzero(l1.best_estimator_.coef_)))
            cv = StructSVMCV(loss="f1", budgets=args.budgets or MIL_BUDGETS, cv=args.cv, scale_C=args.scale_c,
                             n_iter_no_change=args.n_iter_no_change, halving_factor=None, threshold="learned")
            D = emb.min_sq_distances(tr)
            D_all = np.vstack([D, emb.min_sq_distances(te)])
            y_all = np.concatenate([y_tr, y_te])
            classes = np.unique(y_tr)
            folds = cv._folds(y_tr)
            columns = [np.flatnonzero(np.isin(emb.pool_bag_, train)) for train, _ in folds]
            rows = []
            for factor in args.sigma_factors or SIGMA_FACTORS:
                sigma = emb.sigma_ * factor
                table = cv._search(cv._problem(), [np.exp(-D / (2 * sigma ** 2))], y_tr, classes, folds,
                                   columns=columns)
                paths = test_paths(cv, np.exp(-D_all / (2 * sigma ** 2)), y_all, len(tr), table)
                rows += rows_of(table, paths, factor)
            rec = dict(kind="mil", data=name, split=split, baselines={"MILES+L1": base}, rows=rows,
                       seconds=time.perf_counter() - t0)
            out.write(json.dumps(rec) + "\n")
            out.flush()
            print(f"{name} split {split}: {rec['seconds']:.0f} s", flush=True)


def collect_text(name, Xtr, ytr, Xte, yte, out, cv_params, **key):
    import scipy.sparse as sp

    t0 = time.perf_counter()
    base = {m: (f1(yte, est.decision_function(Xte)), int(np.count_nonzero(est.coef_)))
            for m, (est, _) in linear_baselines(Xtr, ytr).items()}
    # every path whole, each at its own cut (the test paths are scored so): rules replay on them
    cv = StructSVMCV(loss="f1", halving_factor=None, threshold="learned", **cv_params)
    classes = np.unique(ytr)
    folds = cv._folds(ytr)
    table = cv._search(cv._problem(), [Xtr], ytr, classes, folds)
    paths = test_paths(cv, sp.vstack([Xtr, Xte]).tocsr(), np.concatenate([ytr, yte]), Xtr.shape[0], table)
    rec = dict(kind="text", data=name, baselines=base, rows=rows_of(table, paths),
               seconds=time.perf_counter() - t0, **key)
    out.write(json.dumps(rec) + "\n")
    out.flush()
    print(f"{name} {key}: {rec['seconds']:.0f} s", flush=True)


def collect_sms(args, out):
    texts, labels = load_sms_spam(args.data)
    texts = np.asarray(texts, dtype=object)
    y = (np.asarray(labels) == "spam").astype(int)
    splitter = StratifiedShuffleSplit(n_splits=args.splits, test_size=0.3, random_state=0)
    for split, (tr, te) in enumerate(splitter.split(texts, y)):
        vec = TfidfVectorizer(sublinear_tf=True, min_df=2)
        collect_text("sms", vec.fit_transform(texts[tr]), y[tr], vec.transform(texts[te]), y[te], out,
                     dict(cv=args.cv, n_iter_no_change=args.n_iter_no_change), split=split)


def collect_r8(args, out):
    xtr, ytr, xte, yte = load_r8(args.data)
    vec = TfidfVectorizer(sublinear_tf=True, min_df=2)
    Xtr, Xte = vec.fit_transform(xtr), vec.transform(xte)
    for topic in sorted(set(ytr)):
        collect_text("r8", Xtr, (ytr == topic).astype(int), Xte, (yte == topic).astype(int), out,
                     dict(max_features=args.max_features or None, cv=args.cv,
                          n_iter_no_change=args.n_iter_no_change), split=topic)


# --------------------------------------------------------------------------------------------------
# Selection rules: each gets the candidate rows of one problem and returns the index it picks.

def _mean(rows):
    return np.array([np.mean(r["folds"]) for r in rows])


def _se(rows):
    return np.array([np.std(r["folds"], ddof=1) / np.sqrt(len(r["folds"])) for r in rows])


def _argmax(rows, score):
    """Best score; ties to fewer features, then smaller C (StructSVMCV's rule)."""
    order = np.lexsort((np.array([r["C"] for r in rows]), np.array([r["n_features"] for r in rows]), -score))
    return int(order[0])


def rule_max(rows):
    return _argmax(rows, _mean(rows))


def _cells(rows):
    cells = defaultdict(list)
    for i, r in enumerate(rows):
        cells[(r["sigma"], r["C"], r["budget"])].append(i)
    return cells


def _shipped_scores(rows, scores=None):
    """StructSVMCV's path-smoothed mean score of every row (3-point window, ends repeated), of the
    folds' scores or of ``scores`` (one list per row)."""
    table = {"scores": [r["folds"] for r in rows] if scores is None else scores, "C": [r["C"] for r in rows],
             "budget": [r["budget"] for r in rows], "sigma": [r["sigma"] for r in rows]}
    return path_smoothed_scores(table)


def rule_smooth(rows):
    """The shipped rule: StructSVMCV's path-smoothed mean (3-point window, ends repeated)."""
    return _argmax(rows, _shipped_scores(rows))


def _smoothed(rows, half_width=1, pad=True):
    """Each cell's mean-score path averaged over a window of 2 half_width + 1 path lengths (pad: the
    ends repeat their value; otherwise the window shrinks at the ends)."""
    score = _mean(rows)
    out = score.copy()
    for idx in _cells(rows).values():
        s = score[idx]
        for p in range(len(idx)):
            lo, hi = p - half_width, p + half_width + 1
            if pad:
                window = s[np.clip(np.arange(lo, hi), 0, len(s) - 1)]
            else:
                window = s[max(lo, 0):min(hi, len(s))]
            out[idx[p]] = window.mean()
    return out


def rule_smooth_shrink(rows):
    return _argmax(rows, _smoothed(rows, 1, pad=False))


def rule_smooth5(rows):
    return _argmax(rows, _smoothed(rows, 2, pad=False))


def rule_smooth_fewer(rows):
    """Smoothed (3, shrinking ends); then the fewest features within 0.5 SE of the smoothed best."""
    sm, se = _smoothed(rows, 1, pad=False), _se(rows)
    best = _argmax(rows, sm)
    ok = [i for i in range(len(rows)) if sm[i] >= sm[best] - 0.5 * se[best]]
    return min(ok, key=lambda i: (rows[i]["n_features"], -sm[i]))


def rule_pooled_rank(rows):
    """Per fold, rank the candidates; pick the best mean rank (robust to one fold's scale)."""
    folds = np.array([r["folds"] for r in rows])
    ranks = np.argsort(np.argsort(-folds, axis=0), axis=0)
    return _argmax(rows, -ranks.mean(axis=1))


def rule_one_se_path(rows):
    """Best cell by max; along that cell's path the shortest length within one SE of the best."""
    score, se = _mean(rows), _se(rows)
    best = rule_max(rows)
    r = rows[best]
    idx = _cells(rows)[(r["sigma"], r["C"], r["budget"])]
    ok = [i for i in idx if score[i] >= score[best] - se[best]]
    return min(ok, key=lambda i: rows[i]["n_features"])


def _within_noise(rows, paired):
    """Positions of the candidates within one standard error of the shipped rule's pick: of the pick's
    fold scores (glmnet's lambda.1se), or ``paired``: of the fold-wise differences to the pick."""
    smoothed = _shipped_scores(rows)
    best = rule_smooth(rows)
    folds = np.array([r["folds"] for r in rows])
    k = folds.shape[1]
    if paired:
        diff = folds[best] - folds
        se = diff.std(axis=1, ddof=1) / np.sqrt(k)
        return [i for i in range(len(rows)) if smoothed[best] - smoothed[i] <= se[i]]
    se = folds[best].std(ddof=1) / np.sqrt(k)
    return [i for i in range(len(rows)) if smoothed[i] >= smoothed[best] - se]


def _simplest(rows, idx):
    """The smallest C, then the fewest features, among ``idx``."""
    return min(idx, key=lambda i: (rows[i]["C"], rows[i]["n_features"]))


def rule_one_se_smaller_C(rows):
    """Within one SE of the shipped pick (its fold scores' SE): the smallest C, then fewest features."""
    return _simplest(rows, _within_noise(rows, paired=False))


def rule_paired_se_smaller_C(rows):
    """Within one paired SE (fold-wise differences) of the shipped pick: smallest C, then fewest features."""
    return _simplest(rows, _within_noise(rows, paired=True))


def rule_one_se_unbudgeted_C(rows):
    """The shipped pick; where it is unbudgeted, the smallest C among the unbudgeted candidates within
    one SE of it (its fold scores' SE): budgeted paths (MIL's only kind) are untouched."""
    best = rule_smooth(rows)
    if rows[best]["budget"] is not None:
        return best
    smoothed = _shipped_scores(rows)
    folds = np.array(rows[best]["folds"])
    se = folds.std(ddof=1) / np.sqrt(folds.shape[0])
    ok = [i for i, r in enumerate(rows) if r["budget"] is None and smoothed[i] >= smoothed[best] - se]
    return min(ok, key=lambda i: rows[i]["C"])


def rule_cell_mean(rows):
    """Choose the cell by its path's mean score (robust), then the length by max along it."""
    score = _mean(rows)
    cells = _cells(rows)
    best_cell = max(cells, key=lambda c: (np.mean(np.sort(score[cells[c]])[-3:]), -c[1]))
    idx = cells[best_cell]
    return idx[_argmax([rows[i] for i in idx], score[idx])]


def rule_sigma1(rows):
    """The default width only (no sigma search), then max."""
    keep = [i for i, r in enumerate(rows) if r["sigma"] in (None, 1.0)]
    return keep[rule_max([rows[i] for i in keep])]


def rule_sigma_default_unless_se(rows):
    """The shipped (smoothed) rule, but another kernel width than the default only where its pick's
    smoothed score beats the default width's best by more than that pick's standard error over folds:
    a width is one more dimension to overfit a noisy validation score on (pAUC)."""
    smoothed, se = _shipped_scores(rows), _se(rows)
    best = _argmax(rows, smoothed)
    default = [i for i, r in enumerate(rows) if r["sigma"] in (None, 1.0)]
    if not default or rows[best]["sigma"] in (None, 1.0):
        return best
    best_default = default[_argmax([rows[i] for i in default], smoothed[default])]
    return best if smoothed[best] - smoothed[best_default] > se[best] else best_default


def _c_subset(keep):
    """The shipped rule on a sub-grid of C / n (``keep``: positions in the sorted default grid)."""
    def rule(rows):
        Cs = sorted(set(r["C"] for r in rows))
        idx = [i for i, r in enumerate(rows) if Cs.index(r["C"]) in keep]
        return idx[rule_smooth([rows[i] for i in idx])]
    return rule


def _early_stop(n_stop):
    """The shipped rule had every fold path stopped after ``n_stop`` groups without improvement
    (emulated exactly by truncation, since a path's start does not depend on its stop: for any n_stop on
    records collected with ``--n-iter-no-change none``, for n_stop <= 5 on the default ones)."""
    def rule(rows):
        rows = [dict(r, folds=list(r["folds"])) for r in rows]
        keep = set(range(len(rows)))
        for idx in _cells(rows).values():
            if rows[idx[0]]["budget"] is None:
                continue
            longest = 0
            for f in range(len(rows[idx[0]]["folds"])):
                path = [rows[i]["folds"][f] for i in idx]
                stop = next((k for k in range(len(path)) if k - int(np.argmax(path[:k + 1])) >= n_stop),
                            len(path) - 1)
                for k in range(stop + 1, len(path)):
                    rows[idx[k]]["folds"][f] = path[stop]
                longest = max(longest, stop + 1)
            keep -= set(idx[longest:])
        kept = sorted(keep)
        return kept[rule_smooth([rows[i] for i in kept])]
    return rule


def rule_smooth_over_C(rows):
    """Path-smoothed score averaged also over the neighbouring C values of the grid (3 x 3 window)."""
    mean = _mean(rows)
    Cs = sorted(set(r["C"] for r in rows))
    where = {(r["sigma"], r["C"], r["budget"], r["n_groups"]): i for i, r in enumerate(rows)}
    length = {key: len(idx) for key, idx in _cells(rows).items()}
    score = mean.copy()
    for i, r in enumerate(rows):
        if r["budget"] is None:
            continue
        values = []
        for C in Cs[max(Cs.index(r["C"]) - 1, 0):Cs.index(r["C"]) + 2]:
            key = (r["sigma"], C, r["budget"])
            values += [mean[where[key + (min(max(r["n_groups"] + d, 1), length[key]),)]] for d in (-1, 0, 1)]
        score[i] = np.mean(values)
    return _argmax(rows, score)


def _merged(include, with_default=True):
    """The shipped rule on the default grid's rows (unless ``with_default`` is False) and the rows of
    merged records (analyze file2 ..., "extra") for which ``include(row, lowest C, highest C)`` holds,
    the C range being the default grid's."""
    def rule(rows):
        default = [r["C"] for r in rows if not r.get("extra")]
        lo, hi = min(default), max(default)
        extra = [i for i, r in enumerate(rows) if r.get("extra") and include(r, lo, hi)]
        if not extra:
            return None                                  # those rows were not collected for this problem
        idx = sorted(extra + ([i for i, r in enumerate(rows) if not r.get("extra")] if with_default else []))
        return idx[rule_smooth([rows[i] for i in idx])]
    return rule


def _without(drop):
    """The shipped rule on the rows for which ``drop(row)`` is false (a cell's path then starts at its
    first kept point; the smoothing window does not reach the dropped ones)."""
    def rule(rows):
        idx = [i for i, r in enumerate(rows) if not drop(r)]
        return idx[rule_smooth([rows[i] for i in idx])] if idx else rule_smooth(rows)
    return rule


RULES = {"max (current)": rule_max, "smooth path (3)": rule_smooth, "smooth (3, shrinking ends)": rule_smooth_shrink,
         "smooth (5, shrinking ends)": rule_smooth5, "smooth, then fewest within SE/2": rule_smooth_fewer,
         "mean fold rank": rule_pooled_rank,
         "1-SE along path": rule_one_se_path, "1-SE, smallest C": rule_one_se_smaller_C,
         "paired 1-SE, smallest C": rule_paired_se_smaller_C, "1-SE over C, unbudgeted": rule_one_se_unbudgeted_C,
         "cell by top-3 mean": rule_cell_mean,
         "sigma x1 only": rule_sigma1,
         # another width than the default only when it is better by more than an SE
         "smooth, other sigma only if > 1 SE better": rule_sigma_default_unless_se,
         # cheaper grids and shorter paths for the shipped (smoothed) rule
         "smooth, C/n in {0.3, 3}": _c_subset({0, 2}), "smooth, C/n in {0.3, 1, 3}": _c_subset({0, 1, 2}),
         "smooth, C/n = 1 only": _c_subset({1}), "smooth, C/n = 3 only": _c_subset({2}),
         "smooth, n_iter_no_change=10": _early_stop(10), "smooth, n_iter_no_change=8": _early_stop(8),
         "smooth, n_iter_no_change=5": _early_stop(5),
         "smooth, n_iter_no_change=4": _early_stop(4), "smooth, n_iter_no_change=3": _early_stop(3),
         "smooth, n_iter_no_change=2": _early_stop(2), "smooth over path and C (3 x 3)": rule_smooth_over_C,
         # featureless path points (rare positives: the first groups' restricted
         # optimum is the zero model) left out of the choice and of their neighbours' smoothing
         "smooth, featureless points dropped": _without(lambda r: r["n_features"] == 0)}


def _sigma_grid(factors):
    """The shipped rule on the rows (default grid's and merged) whose kernel width is one of
    ``factors`` (multiples of the default width); None where one of them was not collected."""
    def rule(rows):
        idx = [i for i, r in enumerate(rows) if r["sigma"] in factors]
        if {rows[i]["sigma"] for i in idx} != set(factors):
            return None
        return idx[rule_smooth([rows[i] for i in idx])]
    return rule


# rules that also see the rows of merged records (other C / n values or budgets); the RULES see the
# default grid's. A rule returns None where its rows were not collected, and analyze skips it.
GRID_RULES = {"smooth, C/n from 0.1": _merged(lambda r, lo, hi: r["C"] < lo),
              "smooth, C/n up to 30": _merged(lambda r, lo, hi: r["C"] > hi),
              "smooth, C/n 0.1 to 30": _merged(lambda r, lo, hi: r["C"] < lo or r["C"] > hi),
              "smooth, B in {3, 5}": _merged(lambda r, lo, hi: r["budget"] == 3),
              "smooth, B = 3 only": _merged(lambda r, lo, hi: r["budget"] == 3, with_default=False),
              # the kernel width's grid (the default's lower end, x0.5, was chosen most)
              "smooth, sigma x{0.25, 0.5, 1, 2}": _sigma_grid((0.25, 0.5, 1.0, 2.0)),
              "smooth, sigma x{0.25, 0.5, 1}": _sigma_grid((0.25, 0.5, 1.0)),
              "smooth, sigma x{0.5, 1}": _sigma_grid((0.5, 1.0)),
              "smooth, sigma x{0.25, 0.5}": _sigma_grid((0.25, 0.5))}


def _problem(rec):
    """The problem a record is of: its data set and split (R8: topic)."""
    return rec["data"], str(rec.get("split"))


def _paired(values):
    """Mean ± standard error of paired differences, as the tables print them."""
    values = np.asarray(values, dtype=float)
    se = values.std(ddof=1) / np.sqrt(len(values)) if len(values) > 1 else 0.0
    return f"{values.mean():+.2f} ± {se:.2f}"


def analyze(paths):
    by_data, seen = defaultdict(list), {}
    for p in paths:
        for rec in map(json.loads, open(p)):
            key = _problem(rec)
            if all(r["test"] <= 1.0 for r in rec["rows"]):      # path scores on 0-1, the baselines in percent
                for r in rec["rows"]:
                    r["test"] *= 100.0
            if key in seen:              # another grid's cells for the same problem: rows marked extra
                seen[key]["rows"] += [dict(r, extra=True) for r in rec["rows"]]
            else:
                seen[key] = rec
                by_data[rec["data"]].append(rec)
    for data, group in by_data.items():
        baselines = list(group[0]["baselines"])
        print(f"\n### {data} ({len(group)} problems)\n")
        print("| rule | test F1 | features | " + " | ".join(f"− {b} (± SE)" for b in baselines)
              + " | − max (± SE) | − smooth path, shipped (± SE) | oracle gap |")
        print("|---|---|---|" + "---|" * len(baselines) + "---|---|---|")
        base = [[r for r in rec["rows"] if not r.get("extra")] for rec in group]
        current = [rows[rule_max(rows)]["test"] for rows in base]
        shipped = [rows[rule_smooth(rows)]["test"] for rows in base]
        for name, rule in {**RULES, **GRID_RULES}.items():
            f, n, d, gap = [], [], defaultdict(list), []
            candidates = [rec["rows"] if name in GRID_RULES else rows for rec, rows in zip(group, base)]
            picks = [rule(rows) for rows in candidates]
            if None in picks:
                continue
            for rec, rows, pick in zip(group, candidates, picks):
                r = rows[pick]
                f.append(r["test"])
                n.append(r["test_features"])
                gap.append(max(x["test"] for x in rows) - r["test"])
                for b in baselines:
                    d[b].append(r["test"] - rec["baselines"][b][0])
            cells = [_paired(d[b]) for b in baselines]
            paired = [_paired(np.asarray(f) - np.asarray(ref)) for ref in (current, shipped)]
            print(f"| {name} | {np.mean(f):.2f} | {np.mean(n):.1f} | " + " | ".join(cells)
                  + f" | {paired[0]} | {paired[1]} | {np.mean(gap):.2f} |")
        means = [(b, np.mean([r['baselines'][b][0] for r in group]), np.mean([r['baselines'][b][1] for r in group]))
                 for b in baselines]
        print("| baselines | " + "; ".join(f"{b} {f1:.2f} with {n:.1f}" for b, f1, n in means) + " |")


def compare(first, second):
    """The shipped rule's test F1 on the records of ``second`` minus on those of ``first``, paired by
    problem (e.g. the same problems collected with --cv 5 and with the default 3 folds)."""
    def load(path):
        return {_problem(r): r for r in map(json.loads, open(path))}

    a, b = load(first), load(second)
    diffs = defaultdict(list)
    for key in a.keys() & b.keys():
        picked = [rec["rows"][rule_smooth(rec["rows"])] for rec in (a[key], b[key])]
        diffs[key[0]].append((picked[1]["test"] - picked[0]["test"],
                              picked[1]["test_features"] - picked[0]["test_features"]))
    print(f"| data set | problems | test F1, {second} − {first} (± SE) | features |")
    print("|---|---|---|---|")
    for data, d in diffs.items():
        d = np.array(d)
        print(f"| {data} | {len(d)} | {_paired(d[:, 0])} | {d[:, 1].mean():+.1f} |")


def early_stops(paths):
    """Records collected with ``--n-iter-no-change none``: the shipped rule's test F1 (features) under
    each early stop, replayed by truncation, paired with the shipped stop (5)."""
    stops = {"none": rule_smooth, "10": _early_stop(10), "8": _early_stop(8), "5 (shipped)": _early_stop(5)}
    by_data = defaultdict(list)
    for p in paths:
        for rec in map(json.loads, open(p)):
            by_data[rec["data"]].append(rec)
    print("| data set | problems | " + " | ".join(f"n_iter_no_change={k}: test F1 (features)" for k in stops)
          + " | none − 5 | 10 − 5 | 8 − 5 |")
    print("|---|---|" + "---|" * (len(stops) + 3))
    for data, recs in by_data.items():
        picked = {k: [rec["rows"][rule(rec["rows"])] for rec in recs] for k, rule in stops.items()}
        f1s = {k: np.array([r["test"] for r in rows]) for k, rows in picked.items()}
        cells = [f"{f1s[k].mean():.2f} ({np.mean([r['test_features'] for r in picked[k]]):.1f})" for k in stops]
        diffs = [_paired(f1s[k] - f1s["5 (shipped)"]) for k in ("none", "10", "8")]
        print(f"| {data} | {len(recs)} | " + " | ".join(cells) + " | " + " | ".join(diffs) + " |")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["collect", "analyze", "compare", "early-stops"])
    parser.add_argument("what", nargs="+", help="collect: mil, sms or r8; analyze: JSON-lines files; compare: "
                                                 "two JSON-lines files of the same problems")
    parser.add_argument("--data", default=None, help="data directory (default: $STRUCTFS_DATA)")
    parser.add_argument("--splits", type=int, default=10)
    parser.add_argument("--max-features", type=int, default=100, help="collect r8: the cap (0: none)")
    parser.add_argument("--datasets", nargs="+", default=DATASETS)
    parser.add_argument("--out", default=None, help="collect: output file (default /tmp/sel_<what>.jsonl)")
    parser.add_argument("--budgets", type=int, nargs="+", default=None,
                        help="collect mil: the budgets instead of MILESClassifier's (records of other budgets for "
                             "the same problems merge in analyze)")
    parser.add_argument("--sigma-factors", type=float, nargs="+", default=None,
                        help="collect mil: the kernel widths (multiples of the default) instead of "
                             "MILESClassifier's SIGMA_FACTORS (records merge in analyze)")
    parser.add_argument("--cv", type=int, default=3, help="collect: inner folds (StructSVMCV's cv; default 3)")
    parser.add_argument("--n-iter-no-change", type=lambda v: None if v == "none" else int(v), default=5,
                        help="collect: StructSVMCV's n_iter_no_change (default 5, the shipped one; 'none': every "
                             "fold path runs to max_outer, so analyze can emulate any early stop by truncation)")
    parser.add_argument("--scale-c", action="store_true",
                        help="collect mil: StructSVMCV's scale_C=True (the grid per unit squared norm) instead of "
                             "MILESClassifier's scale_C=False")
    args = parser.parse_args()
    if args.command == "analyze":
        return analyze(args.what)
    if args.command == "compare":
        return compare(*args.what)
    if args.command == "early-stops":
        return early_stops(args.what)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for what in args.what:
            with open(args.out or f"/tmp/sel_{what}.jsonl", "a") as out:
                {"mil": collect_mil, "sms": collect_sms, "r8": collect_r8}[what](args, out)


if __name__ == "__main__":
    main()
