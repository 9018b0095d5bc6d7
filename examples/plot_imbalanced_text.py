"""
F1 on imbalanced text, with a budget of words
=============================================

A rare topic (5% of the documents) in a text corpus: accuracy would be 95% for a model that never
says "yes", so the measure that matters is F1. ``StructSVMCV(loss="f1")`` trains for F1 itself and,
with ``max_features``, keeps at most that many words. The corpus is synthetic
(:func:`structfs.datasets.make_imbalanced_text`) so that the example needs no download; the pipeline
is the one you would use on your own documents.
"""

# %%
# The corpus and the pipeline
# ---------------------------
import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.svm import LinearSVC

from structfs import StructSVMCV
from structfs.datasets import make_imbalanced_text
from structfs.metrics import f1

documents, y = make_imbalanced_text(n_documents=2000, positive_fraction=0.05, random_state=0)
docs_train, docs_test, y_train, y_test = train_test_split(documents, y, test_size=0.5, stratify=y,
                                                          random_state=0)
print(f"{len(docs_train)} training documents, {y_train.sum()} of them on the topic")

# %%
# StructSVMCV chooses C, the budget and the number of feature groups by 3-fold cross-validation on
# F1; ``max_features=50`` caps the words the model may use.
t0 = time.perf_counter()
structfs_model = make_pipeline(TfidfVectorizer(sublinear_tf=True, min_df=2),
                               StructSVMCV(loss="f1", max_features=50))
structfs_model.fit(docs_train, y_train)
structfs_seconds = time.perf_counter() - t0
search = structfs_model[-1]
print(f"chosen: C = {search.C_:.3g}, budget = {search.budget_}, {len(search.selected_features_)} words")

# %%
# The baseline: a class-balanced LinearSVC on every word, its C chosen by the same 3-fold CV on F1.
t0 = time.perf_counter()
with warnings.catch_warnings():
    warnings.simplefilter("ignore", ConvergenceWarning)
    baseline = make_pipeline(TfidfVectorizer(sublinear_tf=True, min_df=2),
                             GridSearchCV(LinearSVC(class_weight="balanced"), {"C": [0.01, 0.1, 1, 10, 100]},
                                          scoring="f1", cv=3))
    baseline.fit(docs_train, y_train)
baseline_seconds = time.perf_counter() - t0
n_words = baseline[0].transform(docs_train[:1]).shape[1]

# %%
# Test F1 (in percent), words used and seconds:
rows = [("StructSVMCV(loss='f1', max_features=50)", f1(y_test, structfs_model.decision_function(docs_test)),
         len(search.selected_features_), structfs_seconds),
        ("LinearSVC(class_weight='balanced')", f1(y_test, baseline.decision_function(docs_test)), n_words,
         baseline_seconds)]
for name, score, words, seconds in rows:
    print(f"{name:42s} F1 {score:5.1f}   {words:5d} words   {seconds:5.1f} s")

# %%
# The words the model kept, by weight
# -----------------------------------
# A budgeted model is small enough to read: its largest weights are the topic's words.
vocabulary = structfs_model[0].get_feature_names_out()
weights = search.coef_[0]
top = np.argsort(-weights)[:15]
fig, ax = plt.subplots(figsize=(6, 4))
ax.barh(vocabulary[top][::-1], weights[top][::-1])
ax.set_xlabel("weight")
ax.set_title("StructSVMCV: the 15 largest weights")
fig.tight_layout()
