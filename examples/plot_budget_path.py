"""
Budgets and the sparsity path
=============================

With a budget B, :class:`structfs.StructSVM` adds features in groups of at most B, each time the
group that the current model's worst violations point to, and solves the problem again on the
features found so far. Stopping after k groups gives a model with at most k·B features: the
feature-generation path. Here, on scikit-learn's digits (an 8 against the other nine), each point of
the path is refitted without budget on its features (``refit``), and compared with an L1-penalised
LinearSVC over C.
"""

# %%
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split
from sklearn.svm import LinearSVC

from structfs import StructSVM
from structfs.datasets import load_digits_imbalanced
from structfs.metrics import f1

X, digit = load_digits_imbalanced()
y = (digit == 8).astype(int)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.5, stratify=y, random_state=0)

# %%
# The path: one fit per length, each debiased at the same C.
C, B = 100.0, 3
path = []
for k in range(1, 9):
    model = StructSVM(loss="f1", C=C, budget=B, max_outer=k, refit=C).fit(X_train, y_train)
    path.append((len(model.selected_features_), f1(y_test, model.decision_function(X_test))))
    print(f"{k} group(s): {path[-1][0]:2d} pixels, test F1 {path[-1][1]:.1f}")

# %%
# L1-LinearSVC's path over C, and LinearSVC on every pixel.
lasso = []
with warnings.catch_warnings():
    warnings.simplefilter("ignore", ConvergenceWarning)
    for c in [0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0]:
        svc = LinearSVC(penalty="l1", dual=False, C=c, class_weight="balanced").fit(X_train, y_train)
        lasso.append((np.count_nonzero(svc.coef_), f1(y_test, svc.decision_function(X_test))))
    full = f1(y_test, LinearSVC(class_weight="balanced").fit(X_train, y_train).decision_function(X_test))

fig, ax = plt.subplots(figsize=(6, 4))
ax.plot(*zip(*path), "o-", label=f"StructSVM, budget B = {B}, debiased")
ax.plot(*zip(*lasso), "s--", label="L1-LinearSVC, path over C")
ax.axhline(full, color="gray", linestyle=":", label="LinearSVC, all 64 pixels")
ax.set_xlabel("selected pixels")
ax.set_ylabel("test F1 (%)")
ax.legend(loc="lower right")
fig.tight_layout()

# %%
# Which pixels
# ------------
# The last model of the path, its weights on the 8x8 image: the budget picks the strokes that tell
# an 8 apart.
weights = np.zeros(64)
weights[model.selected_features_] = model.coef_[0][model.selected_features_]
fig, ax = plt.subplots(figsize=(3, 3))
limit = np.abs(weights).max()
ax.imshow(weights.reshape(8, 8), cmap="RdBu_r", vmin=-limit, vmax=limit)
ax.set_axis_off()
ax.set_title(f"{len(model.selected_features_)} pixels")
fig.tight_layout()
