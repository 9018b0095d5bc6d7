"""Multiple-instance learning through the MILES bag embedding (Chen, Bi & Wang 2006).

Every bag B_i becomes the vector of its similarities to the training instances x^k,

    s(x^k, B_i) = max_j exp(-||x_ij - x^k||^2 / (2 sigma^2)) = exp(-min_j ||x_ij - x^k||^2 / (2 sigma^2)),

and a sparse linear classifier on that embedding selects the few instances the decision rests on.
MILES used an L1-SVM; :class:`MILESClassifier` uses :class:`structfs.StructSVM` so the selection
serves F1 (or any structfs loss) directly, under a budget (Mao & Tsang).
"""
import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from ._validation import check_positive_float, check_positive_int
from .estimators import StructSVM

__all__ = ["MILESEmbedding", "MILESClassifier", "check_bags"]

_BLOCK = 1 << 23     # distance-matrix entries per block (64 MB of float64)


def check_bags(bags, n_features=None, name="bags"):
    """A list of 2-D finite float arrays with the same number of columns; ValueError otherwise."""
    if isinstance(bags, np.ndarray) and bags.dtype != object:
        raise ValueError(f"{name} must be a list of 2-D arrays (instances x features), one per bag; "
                         f"got a single array of shape {bags.shape}.")
    try:
        bags = list(bags)
    except TypeError:
        raise ValueError(f"{name} must be a list of 2-D arrays (instances x features).") from None
    if not bags:
        raise ValueError(f"{name} is empty; at least one bag is needed.")
    out = []
    for i, bag in enumerate(bags):
        arr = np.asarray(bag, dtype=np.float64)
        if arr.ndim != 2:
            raise ValueError(f"bag {i} has {arr.ndim} dimension(s); every bag must be a 2-D array "
                             "(instances x features) — reshape a single instance with bag[None, :].")
        if arr.shape[0] == 0:
            raise ValueError(f"bag {i} is empty; every bag needs at least one instance.")
        if n_features is None:
            n_features = arr.shape[1]
        if arr.shape[1] != n_features:
            raise ValueError(f"bag {i} has {arr.shape[1]} features but {n_features} were expected; "
                             "all bags must have the same number of features.")
        if not np.isfinite(arr).all():
            raise ValueError(f"bag {i} contains NaN or infinite values.")
        out.append(arr)
    return out


def _check_sigma(sigma):
    return None if sigma is None else check_positive_float(sigma, "sigma")


class MILESEmbedding(TransformerMixin, BaseEstimator):
    """Bag -> similarities to the training instances (a scikit-learn transformer on lists of bags).

    Parameters
    ----------
    sigma : float or None
        Kernel width. None: sigma^2 = median squared distance between training instances / 2 (on a
        seeded sample of at most 2,000), i.e. about the feature dimension d for standardised data.
    standardize : bool, default=True
        Standardise features with the mean and standard deviation of the training instances.
    """

    def __init__(self, sigma=None, standardize=True):
        self.sigma = sigma
        self.standardize = standardize

    def fit(self, bags, y=None):
        sigma = _check_sigma(self.sigma)
        bags = check_bags(bags)
        pool = np.vstack(bags)
        self.n_features_in_ = pool.shape[1]
        if self.standardize:
            self.mean_ = pool.mean(axis=0)
            scale = pool.std(axis=0)
            self.scale_ = np.where(scale > 0, scale, 1.0)
            pool = (pool - self.mean_) / self.scale_
        self.pool_ = pool
        self.pool_bag_ = np.repeat(np.arange(len(bags)), [b.shape[0] for b in bags])
        self._pool_sq = np.einsum("ij,ij->i", pool, pool)
        if sigma is None:
            rng = np.random.default_rng(0)
            sample = pool[rng.choice(pool.shape[0], min(pool.shape[0], 2000), replace=False)]
            sq = np.einsum("ij,ij->i", sample, sample)
            d2 = np.maximum(sq[:, None] + sq[None, :] - 2.0 * sample @ sample.T, 0.0)
            off = d2[np.triu_indices(sample.shape[0], 1)]
            sigma = float(np.sqrt(np.median(off) / 2.0)) if off.size and np.median(off) > 0 else 1.0
        self.sigma_ = sigma
        return self

    def _prepare(self, bags):
        bags = check_bags(bags, self.n_features_in_)
        if self.standardize:
            bags = [(b - self.mean_) / self.scale_ for b in bags]
        return bags

    def min_sq_distances(self, bags):
        """(n_bags, n_pool): min over each bag's instances of the squared distance to each pool instance.

        Blocked BLAS (||a||^2 + ||b||^2 - 2 a.b) over whole bags, memory bounded by _BLOCK entries.
        """
        check_is_fitted(self)
        bags = self._prepare(bags)
        n_pool = self.pool_.shape[0]
        out = np.empty((len(bags), n_pool))
        sizes = np.array([b.shape[0] for b in bags])
        rows_per_block = max(1, _BLOCK // n_pool)
        start = 0
        while start < len(bags):
            stop = start + 1
            while stop < len(bags) and sizes[start:stop + 1].sum() <= rows_per_block:
                stop += 1
            block = np.vstack(bags[start:stop])
            d2 = (np.einsum("ij,ij->i", block, block)[:, None] + self._pool_sq[None, :]
                  - 2.0 * block @ self.pool_.T)
            offsets = np.concatenate(([0], np.cumsum(sizes[start:stop])[:-1]))
            out[start:stop] = np.minimum.reduceat(d2, offsets, axis=0)
            start = stop
        return np.maximum(out, 0.0)

    def transform(self, bags):
        return np.exp(-self.min_sq_distances(bags) / (2.0 * self.sigma_ ** 2))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        return tags


class MILESClassifier(ClassifierMixin, BaseEstimator):
    """MILES embedding + StructSVM: a bag classifier that optimises ``loss`` under a budget.

    ``fit(bags, y)`` takes a list of (instances x features) arrays and one label per bag (any two
    classes). After fitting, ``selected_instances_`` is an (k, 2) integer array: column 0 the index of
    each selected training instance in the pool (``embedding_.pool_``), column 1 the training bag it
    came from, so a user sees which instances the retrieval decision rests on.

    ``budget`` is the B of the convex B-support-norm problem, whose solution may use more than B
    instances; ``budget=1`` is the squared-L1 regulariser (the multivariate counterpart of MILES's
    L1-SVM): instances enter one per feature group, at most ``max_outer`` of them. ``max_instances=k``
    is a hard cap. With a budget it is StructSVM's ``max_features``: feature generation stops once
    k instances are in play and the problem is solved on them (keep ``max_outer >= k / budget`` so
    that the cap is what stops it). Without a budget the k instances with the largest weights are
    kept and the classifier is refitted on their similarities alone. The other parameters are
    StructSVM's.
    """

    def __init__(self, loss="f1", C=100.0, budget=None, sigma=None, standardize=True, bias=1.0,
                 loss_params=None, tol=0.01, outer_tol=1e-3, max_iter=2000, max_outer=30, max_instances=None,
                 refit=None, master_solver="ipm", verbose=0):
        self.loss = loss
        self.C = C
        self.budget = budget
        self.sigma = sigma
        self.standardize = standardize
        self.bias = bias
        self.loss_params = loss_params
        self.tol = tol
        self.outer_tol = outer_tol
        self.max_iter = max_iter
        self.max_outer = max_outer
        self.max_instances = max_instances
        self.refit = refit
        self.master_solver = master_solver
        self.verbose = verbose

    def _svm(self, budget, max_features=None):
        return StructSVM(loss=self.loss, C=self.C, budget=budget, bias=self.bias, loss_params=self.loss_params,
                         tol=self.tol, outer_tol=self.outer_tol, max_iter=self.max_iter, max_outer=self.max_outer,
                         max_features=max_features, refit=self.refit, master_solver=self.master_solver,
                         verbose=self.verbose)

    def fit(self, bags, y):
        _check_sigma(self.sigma)
        if self.max_instances is not None:
            check_positive_int(self.max_instances, "max_instances")
        bags = check_bags(bags)
        y = np.asarray(y)
        if y.ndim != 1 or y.shape[0] != len(bags):
            raise ValueError(f"y must hold one label per bag: {len(bags)} bags but y has shape {y.shape}.")
        if np.unique(y).shape[0] < 2:
            raise ValueError("y has a single class: one class only, but MIL training needs bags of two classes.")
        self.embedding_ = MILESEmbedding(self.sigma, self.standardize).fit(bags)
        Z = self.embedding_.transform(bags)
        self.columns_ = np.arange(Z.shape[1])
        cap = self.max_instances if self.budget is not None else None
        self.svm_ = self._svm(self.budget, cap).fit(Z, y)
        if self.max_instances is not None and len(self.svm_.selected_features_) > self.max_instances:
            weights = np.abs(self.svm_.coef_[0])
            self.columns_ = np.sort(np.argsort(-weights, kind="stable")[:self.max_instances])
            self.svm_ = self._svm(None).fit(Z[:, self.columns_], y)
        self.classes_ = self.svm_.classes_
        chosen = self.columns_[self.svm_.selected_features_]
        self.selected_instances_ = np.column_stack([chosen, self.embedding_.pool_bag_[chosen]])
        return self

    def decision_function(self, bags):
        check_is_fitted(self)
        return self.svm_.decision_function(self.embedding_.transform(bags)[:, self.columns_])

    def predict(self, bags):
        scores = self.decision_function(bags)
        return self.classes_[(scores > 0).astype(int)]
