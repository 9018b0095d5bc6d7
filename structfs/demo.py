"""``structfs demo``: StructSVMCV on scikit-learn's digits against L1-LinearSVC and LinearSVC."""
import time

import numpy as np

from . import __version__


def run(jobs=-1, plot="structfs-demo.png"):
    """StructSVMCV on the ten one-vs-rest digit problems: its choice, the F1-vs-features path along
    feature generation, L1-LinearSVC's path at the same feature counts, LinearSVC on every pixel."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.model_selection import train_test_split

    from .datasets import load_digits_imbalanced
    from .losses import get_loss
    from .metrics import f1
    from .model_selection import StructSVMCV
    from .solvers import Solver, refit_path, solve

    loss, groups = get_loss("f1"), 10          # the path is shown for up to 10 feature groups
    X, y = load_digits_imbalanced()
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.5, random_state=0, stratify=y)
    print(f"structfs {__version__} demo: scikit-learn's digits, ten one-vs-rest problems (about 1:9), "
          f"{X.shape[1]} pixel features, {len(y_tr)} train / {len(y_te)} test images.")
    print(f"StructSVMCV(loss='f1', Cs=[900, 2700], budgets=[5], max_outer={groups}) (two C = n and 3n of its "
          "default grid, to stay within a minute) chooses C and the number of feature groups by 3-fold CV; "
          "its path at that C is shown group by group. L1-LinearSVC's path runs over C; LinearSVC uses every "
          "pixel (both class_weight='balanced', LinearSVC's C by the same 3-fold CV).\n")
    t0 = time.perf_counter()
    chosen, path, l1_path, full = [], [], [], []
    l1_Cs = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for digit in range(10):
            ytr, yte = (y_tr == digit).astype(int), (y_te == digit).astype(int)
            cv = StructSVMCV(loss="f1", Cs=[900.0, 2700.0], budgets=[5], max_outer=groups,
                             n_jobs=jobs).fit(X_tr, ytr)
            chosen.append((len(cv.selected_features_), f1(yte, cv.decision_function(X_te)), cv.C_, cv.n_groups_))
            # the whole path at the chosen C, each point debiased as the CV scores it
            y_pm = np.where(ytr == 1, 1.0, -1.0)
            res = solve(X_tr, y_pm, loss, cv.C_, budget=cv.budget_, max_outer=groups)
            points = refit_path(X_tr, y_pm, loss, cv.C_, [c[w != 0] for c, w, _ in res.path], 1.0,
                                Solver.default())
            points += [points[-1]] * (groups - len(points))      # converged early: the model stays
            path.append([(len(c), f1(yte, X_te[:, c] @ w + w_b)) for c, w, w_b in points])
            l1_path.append([_l1_linear_svc(X_tr, ytr, X_te, yte, C) for C in l1_Cs])
            full.append(_best_linear_svc(X_tr, ytr, X_te, yte))
    seconds = time.perf_counter() - t0
    structfs_path = [(np.mean([p[k][0] for p in path]), np.mean([p[k][1] for p in path])) for k in range(groups)]
    lasso_path = [(np.mean([p[j][0] for p in l1_path]), np.mean([p[j][1] for p in l1_path])) for j in range(len(l1_Cs))]
    rows = [[f"StructSVM, {k + 1} group(s)", f"{n:.1f}", f"{v:.1f}"] for k, (n, v) in enumerate(structfs_path)]
    rows += [[f"L1-LinearSVC, C={C:g}", f"{n:.1f}", f"{v:.1f}"] for C, (n, v) in zip(l1_Cs, lasso_path)]
    choice = (np.mean([c[0] for c in chosen]), np.mean([c[1] for c in chosen]))     # (features, macro-F1)
    rows.append(["StructSVMCV (its choice)", f"{choice[0]:.1f}", f"{choice[1]:.1f}"])
    rows.append(["LinearSVC, every pixel", f"{X.shape[1]}", f"{np.mean(full):.1f}"])
    print_table(["model (macro over the ten digits)", "#features", "macro-F1"], rows)
    reference = float(np.mean(full))
    reach = [n for n, v in structfs_path if v >= reference - 1.0]
    lasso_reach = [n for n, v in lasso_path if v >= reference - 1.0]
    print(f"{seconds:.1f} s in all. Within one point of LinearSVC's macro-F1 ({reference:.1f}): StructSVM's path "
          f"from {min(reach):.0f} pixels" if reach else f"{seconds:.1f} s in all. StructSVM's path stays below "
          f"LinearSVC's macro-F1 ({reference:.1f})", end="")
    print(f", L1-LinearSVC's from {min(lasso_reach):.0f}." if lasso_reach else ", L1-LinearSVC's path never.")
    if plot:
        try:
            from .plotting import plot_budget_path
        except ImportError as exc:  # matplotlib is an optional extra
            print(f"(no plot: {exc}; pip install 'structfs[plot]')")
            return 0
        out = plot_budget_path(*zip(*structfs_path), ylabel="macro-F1 (%)", out=plot,
                               label="StructSVM (feature-generation path)",
                               title="digits one-vs-rest: F1 against selected pixels",
                               baselines={"L1-LinearSVC path": list(zip(*lasso_path)),
                                          "StructSVMCV's choice": choice,
                                          "LinearSVC, every pixel": float(np.mean(full))})
        print(f"plot written to {out}")
    return 0


def _l1_linear_svc(X_tr, y_tr, X_te, y_te, C):
    """(nonzero weights, test F1) of a balanced L1-LinearSVC."""
    from sklearn.svm import LinearSVC

    from .metrics import f1

    svc = LinearSVC(penalty="l1", dual=False, C=C, class_weight="balanced", max_iter=5000,
                    random_state=0).fit(X_tr, y_tr)
    return int(np.count_nonzero(svc.coef_)), f1(y_te, svc.decision_function(X_te))


def _best_linear_svc(X_tr, y_tr, X_te, y_te):
    """Test F1 of a balanced LinearSVC whose C is chosen by 3-fold CV on F1."""
    from sklearn.model_selection import GridSearchCV
    from sklearn.svm import LinearSVC

    from .metrics import f1

    svc = GridSearchCV(LinearSVC(class_weight="balanced", max_iter=5000), {"C": [0.01, 0.1, 1.0, 10.0]},
                       scoring="f1", cv=3).fit(X_tr, y_tr)
    return f1(y_te, svc.decision_function(X_te))


def print_table(header, rows):
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    print("  ".join(h.rjust(w) for h, w in zip(header, widths)))
    for r in rows:
        print("  ".join(str(c).rjust(w) for c, w in zip(r, widths)))
