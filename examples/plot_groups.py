"""
Selecting input features through their expansions: budgets over groups
======================================================================

A non-linear feature map often expands every input feature into a block of columns of its own:
scikit-learn's ``AdditiveChi2Sampler`` (the additive chi-squared kernel's map, used for histograms
and images), ``SplineTransformer``, ``OneHotEncoder``. With ``groups``, the budget of
:class:`structfs.StructSVMCV` counts these blocks, so the model selects *input* features -- here pixels
-- each with its whole expansion, rather than scattered columns.
"""

# %%
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.kernel_approximation import AdditiveChi2Sampler
from sklearn.model_selection import train_test_split

from structfs import StructSVMCV
from structfs.metrics import f1
from structfs.preprocessing import expansion_groups

digits = load_digits()
keep = np.isin(digits.target, [3, 8])
X, y = digits.data[keep] / 16.0, (digits.target[keep] == 8).astype(int)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.5, stratify=y, random_state=0)

expander = AdditiveChi2Sampler(sample_steps=2).fit(X_train)
Z_train, Z_test = expander.transform(X_train), expander.transform(X_test)
pixel = expansion_groups(expander, X_train)             # the input pixel of each of the 192 columns
print(f"{X.shape[1]} pixels expanded into {Z_train.shape[1]} columns")

# %%
# The same cap of 30 columns, counted in pixels (groups) or in columns:
by_pixel = StructSVMCV(loss="f1", groups=pixel, max_features=30).fit(Z_train, y_train)
by_column = StructSVMCV(loss="f1", max_features=30).fit(Z_train, y_train)
for name, model in [("budget in pixels", by_pixel), ("budget in columns", by_column)]:
    used = np.unique(pixel[model.selected_features_])
    print(f"{name:18s} test F1 {f1(y_test, model.decision_function(Z_test)):5.1f}, "
          f"{len(model.selected_features_)} columns on {len(used)} pixels")

# %%
# Which pixels each model reads: group selection keeps fewer pixels, each with its expansion (the last
# one trimmed to the cap of 30 columns).
fig, axes = plt.subplots(1, 2, figsize=(6, 3))
for ax, (name, model) in zip(axes, [("budget in pixels", by_pixel), ("budget in columns", by_column)]):
    image = np.zeros(64)
    np.add.at(image, pixel[model.selected_features_], np.abs(model.coef_[0][model.selected_features_]))
    ax.imshow(image.reshape(8, 8), cmap="Greys")
    ax.set_title(name)
    ax.set_axis_off()
fig.tight_layout()
