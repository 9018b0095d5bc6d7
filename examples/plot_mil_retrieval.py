"""
Image retrieval with MILES: bags of instances
=============================================

In multiple-instance learning a label belongs to a bag of instances: an image (a bag of regions) is
relevant when *some* region shows the object. :class:`structfs.mil.MILESClassifier` embeds every bag
by its similarity to the training instances and learns a sparse linear model on that embedding, for
F1 directly; the few instances it keeps are the "concepts" the decision rests on.

Here a bag is a handful of scikit-learn digit images and is relevant when it holds a 3
(:func:`structfs.datasets.make_digit_bags`).
"""

# %%
import matplotlib.pyplot as plt
import numpy as np
from sklearn.model_selection import train_test_split

from structfs.datasets import make_digit_bags
from structfs.metrics import average_precision, f1
from structfs.mil import MILESClassifier

bags, y = make_digit_bags(n_bags=300, target=3, positive_fraction=0.2, random_state=0)
index_train, index_test = train_test_split(np.arange(len(bags)), test_size=0.5, stratify=y, random_state=0)
bags_train, bags_test = [bags[i] for i in index_train], [bags[i] for i in index_test]
y_train, y_test = y[index_train], y[index_test]
print(f"{len(bags_train)} training bags ({sum(len(b) for b in bags_train)} images), {y_train.sum()} relevant")

# %%
# C, the budget, the number of instances and the kernel width are chosen by inner cross-validation;
# ``max_instances`` caps the instances the model keeps.
clf = MILESClassifier(max_instances=10).fit(bags_train, y_train)
scores = clf.decision_function(bags_test)
print(f"test F1 {f1(y_test, scores):.1f}, average precision {average_precision(y_test, scores):.1f}, "
      f"{len(clf.selected_instances_)} instances kept of {sum(len(b) for b in bags_train)}, "
      f"sigma = {clf.sigma_:.3g}")

# %%
# The instances the model kept, with their weights: the largest positive weights fall on 3s.
pool = np.vstack(bags_train)
weights = clf.estimator_.coef_[0]
chosen = clf.selected_instances_[:, 0]
fig, axes = plt.subplots(1, len(chosen), figsize=(1.2 * len(chosen), 1.6))
for ax, instance, column in zip(np.atleast_1d(axes), chosen, np.flatnonzero(weights)):
    ax.imshow(pool[instance].reshape(8, 8), cmap="gray_r")
    ax.set_title(f"{weights[column]:+.2f}", fontsize=8)
    ax.set_axis_off()
fig.tight_layout()

# %%
# Retrieval: the test bags ranked by score, precision among the top k.
order = np.argsort(-scores)
k = np.arange(1, len(order) + 1)
fig, ax = plt.subplots(figsize=(5, 3.5))
ax.plot(k, 100 * np.cumsum(y_test[order]) / k)
ax.set_xlabel("top k bags")
ax.set_ylabel("precision at k (%)")
ax.set_ylim(0, 105)
fig.tight_layout()

# %%
# Which images make a bag relevant? ``instance_scores`` credits each image with the terms of the bag's
# decision value it attains (a bag's scores add up to its decision value minus the intercept). For the
# four highest-scoring test bags, the largest score (in red) falls on the 3.
top_bags = order[:4]
explained = clf.instance_scores([bags_test[i] for i in top_bags])
fig, axes = plt.subplots(len(top_bags), max(len(bags_test[i]) for i in top_bags), figsize=(8, 1.3 * len(top_bags)),
                         squeeze=False)
for row, (bag_index, contributions) in enumerate(zip(top_bags, explained)):
    bag = bags_test[bag_index]
    for col, ax in enumerate(axes[row]):
        ax.set_axis_off()
        if col < len(bag):
            ax.imshow(bag[col].reshape(8, 8), cmap="gray_r")
            ax.set_title(f"{contributions[col]:+.2f}", fontsize=7,
                         color="C3" if col == int(np.argmax(contributions)) else "k")
fig.tight_layout()
