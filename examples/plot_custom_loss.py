"""
Writing your own loss
=====================

A loss that is a function of the contingency table -- a (true positives), b (false positives),
c (false negatives), d (true negatives) -- is one small Python function away: structfs builds its
exact most-violated-output oracle, :func:`structfs.testing.check_loss` verifies it, and every
estimator trains on it.

Here a missed positive costs five false alarms: on breast-cancer data (positives are the malignant
tumours) the model should trade false alarms for fewer misses.
"""

# %%
# The loss
# --------
# Δ in percent: 0 for the true labeling, at most 100. Define it as a named module-level function, so
# that models holding the loss pickle.
import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from structfs import StructSVM
from structfs.losses import ContingencyLoss
from structfs.metrics import contingency_table
from structfs.testing import check_loss


def missed_positive_costs_five(a, b, c, d):
    """Cost-sensitive error in percent of the worst case: a missed positive costs 5, a false alarm 1."""
    return 100.0 * (b + 5 * c) / (5 * (a + c) + (b + d))


loss = ContingencyLoss(missed_positive_costs_five)
print(f"check_loss: {check_loss(loss)} cases verified against brute force")

# %%
# Training on it
# --------------
# scikit-learn's breast-cancer data label malignant tumours 0; make them the positive class.
X, benign = load_breast_cancer(return_X_y=True)
y = 1 - benign
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.5, stratify=y, random_state=0)
scaler = StandardScaler().fit(X_train)
X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)

for name, chosen in [("error rate", "error"), ("missed positive costs five", loss)]:
    model = StructSVM(loss=chosen, C=100.0).fit(X_train, y_train)
    a, b, c, d = contingency_table(y_test, model.predict(X_test))
    print(f"{name:28s} missed malignant: {c:2d}   false alarms: {b:2d}")

# %%
# A loss that breaks the rules is caught before training: here Δ(y, y) is not 0.


def wrong(a, b, c, d):
    return 100.0 * (b + c + 1) / (a + b + c + d + 1)


try:
    check_loss(ContingencyLoss(wrong))
except AssertionError as exc:
    print(str(exc).splitlines()[0][:200])

# %%
# Losses of other structures (rankings, for instance) subclass :class:`structfs.losses.Loss` and
# implement its exact oracle; ``check_loss`` verifies them the same way. The model trained above is
# an ordinary scikit-learn estimator:
print(np.round(model.coef_[0][:5], 3), model.classes_)
