"""Multiple-instance learning through the MILES bag embedding (Chen, Bi & Wang 2006).

Every bag B_i becomes the vector of its similarities to the training instances x^k,

    s(x^k, B_i) = max_j exp(-||x_ij - x^k||^2 / (2 sigma^2)) = exp(-min_j ||x_ij - x^k||^2 / (2 sigma^2)),

and a sparse linear classifier on that embedding selects the few instances the decision rests on.
MILES used an L1-SVM; :class:`MILESClassifier` uses :class:`structfs.StructSVMCV` so the selection
serves F1 (or any structfs loss) directly, under a budget (Mao & Tsang), with C, the budget, the
number of instances and sigma chosen by inner cross-validation.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, TransformerMixin, _fit_context, clone
from sklearn.utils import metadata_routing
from sklearn.utils._param_validation import HasMethods, Interval
from sklearn.utils.validation import check_is_fitted

from ._validation import check_magnitude, check_positive_float, keeps_state_on_failure
from .estimators import check_parameters
from .losses import Loss
from .model_selection import SearchData, StructSVMCV, budget_under_cap, check_grid

__all__ = ["MILESEmbedding", "MILESClassifier", "SIGMA_FACTORS", "check_bags"]

if TYPE_CHECKING:
    from numpy.typing import ArrayLike
    from typing_extensions import Self

_BLOCK = 1 << 23     # distance-matrix entries per block (64 MB of float64)
# Rows per block of leave_own_out, which needs only the distances within each bag: a block's entries
# between different bags are waste, so its blocks are small (a larger bag is a block of its own).
# 128 rows: on the training bags of musk2, birds and corel_historical 7-16 ms, against 85-119 ms in blocks of 2,896.
_OWN_BLOCK_ROWS = 128


def check_bags(bags: Any, n_features: int | None = None, name: str = "bags") -> list[np.ndarray]:
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
        out.append(check_magnitude(arr, f"bag {i}"))
    return out


def _bag_blocks(sizes: np.ndarray, max_rows: int) -> Iterator[tuple[int, int]]:
    """(first, stop) ranges of consecutive whole bags of at most ``max_rows`` instances in all (a larger
    bag alone): the blocks of the blocked distance computations."""
    ends = np.cumsum(sizes)
    first = 0
    while first < len(sizes):
        stop = first + 1
        while stop < len(sizes) and ends[stop] - ends[first] + sizes[first] <= max_rows:
            stop += 1
        yield first, stop
        first = stop


# exp(-d^2 / (2 sigma^2)) needs 2 sigma^2 to be a finite, normal double
_SIGMA = Interval(Real, 1e-150, 1e150, closed="both")


class MILESEmbedding(TransformerMixin, BaseEstimator):
    """Bag -> similarities to the training instances (a scikit-learn transformer on lists of bags).

    Parameters
    ----------
    sigma : float or None
        Kernel width. None: sigma^2 = median squared distance between training instances / 2 (on a
        seeded sample of at most 2,000), i.e. about the feature dimension d for standardised data.
    standardize : bool, default=True
        Standardise features with the mean and standard deviation of the training instances.

    Examples
    --------
    >>> import numpy as np
    >>> from structfs.mil import MILESEmbedding
    >>> bags = [np.array([[0.0, 1.0], [1.0, 0.0]]), np.array([[2.0, 2.0]])]
    >>> MILESEmbedding(sigma=1.0).fit(bags).transform(bags).shape    # one column per training instance
    (2, 3)
    """

    _parameter_constraints: dict = {"sigma": [_SIGMA, None], "standardize": ["boolean"]}
    # the bags are the data (scikit-learn's X), not metadata to route
    __metadata_request__fit = __metadata_request__transform = {"bags": metadata_routing.UNUSED}

    def __init__(self, sigma: float | None = None, standardize: bool = True) -> None:
        self.sigma = sigma
        self.standardize = standardize

    @keeps_state_on_failure
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, bags: Sequence[ArrayLike], y: ArrayLike | None = None) -> Self:
        """Keep the training instances (standardised) and set ``sigma_``; ``y`` is ignored."""
        sigma = None if self.sigma is None else float(self.sigma)
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

    def _prepare(self, bags: Sequence[ArrayLike]) -> list[np.ndarray]:
        checked = check_bags(bags, self.n_features_in_)
        if self.standardize:
            checked = [(b - self.mean_) / self.scale_ for b in checked]
        return checked

    def min_sq_distances(self, bags: Sequence[ArrayLike]) -> np.ndarray:
        """(n_bags, n_pool): min over each bag's instances of the squared distance to each pool instance.

        Blocked BLAS (||a||^2 + ||b||^2 - 2 a.b) over whole bags, memory bounded by _BLOCK entries.
        """
        check_is_fitted(self)
        bags = self._prepare(bags)
        n_pool = self.pool_.shape[0]
        out = np.empty((len(bags), n_pool))
        sizes = np.array([b.shape[0] for b in bags])
        for start, stop in _bag_blocks(sizes, max(1, _BLOCK // n_pool)):
            block = np.vstack(bags[start:stop])
            d2 = (np.einsum("ij,ij->i", block, block)[:, None] + self._pool_sq[None, :]
                  - 2.0 * block @ self.pool_.T)
            offsets = np.concatenate(([0], np.cumsum(sizes[start:stop])[:-1]))
            out[start:stop] = np.minimum.reduceat(d2, offsets, axis=0)
        return np.maximum(out, 0.0)

    def transform(self, bags: Sequence[ArrayLike]) -> np.ndarray:
        """(n_bags, n_pool) similarities of each bag to every training instance."""
        return np.exp(-self.min_sq_distances(bags) / (2.0 * self.sigma_ ** 2))

    def get_feature_names_out(self, input_features: Any = None) -> np.ndarray:
        """One name per training instance, ``instance{k}`` (k its index in ``pool_``)."""
        check_is_fitted(self)
        return np.asarray([f"instance{k}" for k in range(self.pool_.shape[0])], dtype=object)

    def leave_own_out(self, D: np.ndarray) -> np.ndarray:
        """``D`` = ``min_sq_distances`` of the training bags (in ``fit``'s order) with each bag's entries
        for its own pool instances replaced by the squared distance from that instance to the bag's
        nearest *other* instance (inf for a one-instance bag).

        A training bag is at distance 0 from its own instances (similarity 1), which no new bag is:
        scores of the training bags on this embedding are not inflated by that, so a cut chosen on them
        suits new bags. Within-bag distances only, blocked over whole bags like ``min_sq_distances``.
        """
        check_is_fitted(self)
        n_bags = int(self.pool_bag_[-1]) + 1
        if D.shape != (n_bags, self.pool_.shape[0]):
            raise ValueError(f"D must be the ({n_bags}, {self.pool_.shape[0]}) distances of the training bags, "
                             f"got shape {D.shape}.")
        out = np.array(D, dtype=float, copy=True)
        starts = np.searchsorted(self.pool_bag_, np.arange(n_bags + 1))
        for first, last in _bag_blocks(np.diff(starts), _OWN_BLOCK_ROWS):
            lo, hi = starts[first], starts[last]
            block, sq, bag = self.pool_[lo:hi], self._pool_sq[lo:hi], self.pool_bag_[lo:hi]
            d2 = np.maximum(sq[:, None] + sq[None, :] - 2.0 * block @ block.T, 0.0)
            d2[bag[:, None] != bag[None, :]] = np.inf          # other bags' instances
            np.fill_diagonal(d2, np.inf)                       # the instance itself
            out[bag, np.arange(lo, hi)] = d2.min(axis=1)
        return out

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        return tags


# The kernel widths tried by MILESClassifier's cross-validation, as multiples of the embedding's
# default (half the median squared distance); chosen on the four MIL dev sets (docs/mil.md).
SIGMA_FACTORS = (0.5, 1.0, 2.0)
# The default estimator's budgets: StructSVMCV's without the unbudgeted candidate (all instances);
# its C grid is per example (scale_C=False, see MILESClassifier's ``estimator``).
MIL_BUDGETS = (5,)


class MILESClassifier(ClassifierMixin, BaseEstimator):
    """MILES embedding + a structfs classifier: bags ranked by a sparse linear model on their
    similarities to the training instances, trained on a multivariate loss.

    By default the classifier is a :class:`structfs.StructSVMCV`: C, the budget, the number of
    instances (the length of the feature-generation path) and the kernel width sigma are chosen by
    the same inner cross-validation over bags. In each fold only the instances of the fold's training
    bags are candidate features, so a validation bag never scores against its own instances.

    Parameters
    ----------
    estimator : StructSVMCV, StructSVM or None, default=None
        The classifier on the embedding. None: ``StructSVMCV(loss=loss or "f1", budgets=(5,),
        scale_C=False)`` — StructSVMCV's defaults without the unbudgeted candidate, since selecting
        instances is the point, and with the grid per example, not per unit squared norm: a bag's
        squared norm counts the pool's instances near it (10 to 4,800 on the dev sets), and the grid
        divided by it cost musk2 7.0 and elephant 2.4 F1 points. A StructSVMCV is
        cross-validated as above (its grid, folds and n_jobs are used); any other estimator is fitted
        once on the embedding with a fixed sigma. Where the loss gives the zero model (every candidate
        of every width, or the refitted model), the search falls back to the ranking loss
        ``FALLBACK_LOSS`` ("auc") and warns, as StructSVMCV's own fit (``estimator_.loss_``); its
        models' cut is chosen on the training bags' scores without their own instances
        (:meth:`MILESEmbedding.leave_own_out`).
    loss : str, Loss or None, default=None
        Shortcut for the default estimator's loss ("f1" when None); give the loss to ``estimator``
        instead when you pass one.
    sigma : float, sequence of float or None, default=None
        Kernel width. None: with a StructSVMCV, chosen by its cross-validation among ``SIGMA_FACTORS``
        = (0.5, 1, 2) times the default width (sigma^2 = half the median squared distance between
        training instances); with another estimator, the default width. A sequence: cross-validated
        among those values. A float: fixed.
    standardize : bool, default=True
        Standardise features with the training instances' mean and standard deviation.
    max_instances : int or None, default=None
        Hard cap on the selected instances: the estimator's ``max_features`` (feature generation stops
        once the groups hold k instances; StructSVMCV and budgeted StructSVMs). An unbudgeted StructSVM
        keeps its k heaviest instances and is refitted on them. With the default estimator the groups
        are shrunk under a small cap (min(5, k // 5) instances, at least 1: ``budget_under_cap``), so
        that the path to k has five points or more to choose from.
    n_jobs : int or None, default=None
        Parallel fold paths of the default estimator's search (``StructSVMCV(n_jobs=...)``); with
        ``estimator=...`` set ``n_jobs`` on the estimator itself.

    Attributes
    ----------
    sigma_ : float, the kernel width used (chosen by the inner cross-validation, or the one given)
    embedding_ : MILESEmbedding with the chosen ``sigma_``
    estimator_ : the fitted classifier on the embedding (its ``cv_results_`` include ``param_sigma``)
    selected_instances_ : (k, 2) int array: pool index of each selected training instance
        (``embedding_.pool_``) and the training bag it came from
    classes_ : the two bag classes, ``classes_[1]`` positive

    Examples
    --------
    >>> import numpy as np
    >>> from structfs.mil import MILESClassifier
    >>> rng = np.random.default_rng(0)
    >>> y = np.arange(20) % 2                     # a positive bag holds one shifted instance
    >>> bags = [np.vstack([rng.normal(size=(3, 2)), rng.normal(size=(1, 2)) + 3 * label]) for label in y]
    >>> clf = MILESClassifier().fit(bags, y)
    >>> clf.predict(bags[:4]).tolist(), clf.sigma_ > 0
    ([0, 1, 0, 1], True)
    """

    __metadata_request__fit = __metadata_request__decision_function = __metadata_request__predict = {
        "bags": metadata_routing.UNUSED}           # the bags are the data (scikit-learn's X), not metadata
    _parameter_constraints: dict = {
        "estimator": [HasMethods(["fit", "decision_function"]), None],
        "loss": [str, Loss, None],
        "sigma": [_SIGMA, "array-like", None],
        "standardize": ["boolean"],
        "max_instances": [Interval(Integral, 1, None, closed="left"), None],
        "n_jobs": [Integral, None],
    }

    def __init__(self, estimator: BaseEstimator | None = None, loss: str | Loss | None = None,
                 sigma: float | Sequence[float] | None = None, standardize: bool = True,
                 max_instances: int | None = None, n_jobs: int | None = None) -> None:
        self.estimator = estimator
        self.loss = loss
        self.sigma = sigma
        self.standardize = standardize
        self.max_instances = max_instances
        self.n_jobs = n_jobs

    def _resolve_estimator(self) -> Any:
        if self.estimator is None:     # selecting instances is the point of MILES: no unbudgeted candidate
            budgets = [budget_under_cap(b, self.max_instances) for b in MIL_BUDGETS]    # shrunk under a small cap
            return StructSVMCV(loss="f1" if self.loss is None else self.loss, budgets=budgets, scale_C=False,
                               n_jobs=self.n_jobs)
        for name in ("loss", "n_jobs"):
            if getattr(self, name) is not None:
                raise ValueError(f"{name} is a setting of the default estimator; with estimator=... set {name} on "
                                 "the estimator itself.")
        return clone(self.estimator)

    def _sigmas(self, default: float, cross_validated: bool) -> list[float]:
        if self.sigma is None:
            return [default * f for f in SIGMA_FACTORS] if cross_validated else [default]
        if np.iterable(self.sigma) and not isinstance(self.sigma, str):
            return check_grid(self.sigma, "sigma", check_positive_float)
        return [check_positive_float(self.sigma, "sigma")]

    @keeps_state_on_failure
    @_fit_context(prefer_skip_nested_validation=False)     # a given estimator's parameters are checked too
    def fit(self, bags: Sequence[ArrayLike], y: ArrayLike) -> Self:
        """Embed the bags (a list of (n_instances, n_features) arrays), choose sigma with the estimator's
        cross-validation when it searches, and fit it on the embedding; ``y``: one label per bag."""
        est = self._resolve_estimator()
        searching = isinstance(est, StructSVMCV)
        if self.sigma is not None:
            self._sigmas(1.0, searching)               # bad sigma fails before any work
        bags = check_bags(bags)
        y = np.asarray(y)
        if y.ndim != 1 or y.shape[0] != len(bags):
            raise ValueError(f"y must hold one label per bag: {len(bags)} bags but y has shape {y.shape}.")
        classes = np.unique(y)
        if classes.shape[0] != 2:
            what = "a single class: one class only" if classes.shape[0] == 1 else f"{classes.shape[0]} classes"
            raise ValueError(f"y has {what}, but MIL training needs bags of exactly two classes.")
        budgeted = searching or getattr(est, "budget", None) is not None
        if self.max_instances is not None and budgeted:
            est.set_params(max_features=self.max_instances)
        if searching:
            check_parameters(est)
        embedding = MILESEmbedding(None, self.standardize).fit(bags)
        sigmas = self._sigmas(embedding.sigma_, searching)
        D = embedding.min_sq_distances(bags)
        self.columns_ = np.arange(D.shape[1])
        if searching:
            est.fit_data(_EmbeddingWidths(embedding, D, sigmas), y)     # may fall back to a ranking loss
            sigma = float(est.cv_results_["param_sigma"][est.best_index_])
        else:
            sigma = sigmas[0]
            Z = np.exp(-D / (2.0 * sigma ** 2))
            est.fit(Z, y)
            if self.max_instances is not None and not budgeted and len(est.selected_features_) > self.max_instances:
                weights = np.abs(est.coef_[0])
                self.columns_ = np.sort(np.argsort(-weights, kind="stable")[:self.max_instances])
                est = clone(est).fit(Z[:, self.columns_], y)
        embedding.sigma_ = self.sigma_ = sigma
        self.embedding_ = embedding
        self.estimator_ = est
        self.classes_ = est.classes_
        chosen = self.columns_[np.flatnonzero(est.coef_[0])]
        self.selected_instances_ = np.column_stack([chosen, embedding.pool_bag_[chosen]])
        return self

    def decision_function(self, bags: Sequence[ArrayLike]) -> np.ndarray:
        """A score per bag: the linear model on the bag's similarities to the selected instances."""
        check_is_fitted(self)
        return self.estimator_.decision_function(self.embedding_.transform(bags)[:, self.columns_])

    def predict(self, bags: Sequence[ArrayLike]) -> np.ndarray:
        """``classes_[1]`` for bags whose score is > 0, else ``classes_[0]``."""
        scores = self.decision_function(bags)
        return self.classes_[(scores > 0).astype(int)]

    def instance_scores(self, bags: Sequence[ArrayLike]) -> list[np.ndarray]:
        """Each instance's contribution to its bag's decision value: one array per bag.

        A bag's similarity to a selected training instance x^k is attained by one of its instances, the
        one nearest to x^k (ties: the first); that instance is credited with the term w_k s(x^k, bag) of
        the decision value. So an instance's score is the sum of the terms it attains, the scores of a
        bag add up to ``decision_function(bag) - intercept_``, and the instances with the largest
        scores are those that make a bag positive (an instance nearest to no selected x^k scores 0).
        """
        check_is_fitted(self)
        weights = np.asarray(self.estimator_.coef_[0]).ravel()
        used = np.flatnonzero(weights)
        pool = self.embedding_.pool_[self.columns_[used]]
        pool_sq = np.einsum("ij,ij->i", pool, pool)
        inv_two_sigma_sq = 1.0 / (2.0 * self.embedding_.sigma_ ** 2)
        out = []
        for bag in self.embedding_._prepare(bags):
            d2 = np.maximum(np.einsum("ij,ij->i", bag, bag)[:, None] + pool_sq[None, :] - 2.0 * bag @ pool.T, 0.0)
            nearest = np.argmin(d2, axis=0)                    # per selected instance: the bag's nearest
            terms = weights[used] * np.exp(-d2[nearest, np.arange(used.shape[0])] * inv_two_sigma_sq)
            out.append(np.bincount(nearest, weights=terms, minlength=bag.shape[0]))
        return out


class _EmbeddingWidths(SearchData):
    """The embedding of the training bags at every kernel width in ``sigmas``, for StructSVMCV's search
    (a :class:`structfs.model_selection.SearchData`): a width only rescales the squared distances ``D``
    computed once, so each costs the grid's fits only; a fold uses the instances of its own training bags
    as columns; a cut on the training bags is set on their embedding without each bag's own instances
    (:meth:`MILESEmbedding.leave_own_out`), as on bags the model has not seen."""

    def __init__(self, embedding: MILESEmbedding, D: np.ndarray, sigmas: Sequence[float]) -> None:
        self.embedding, self.D = embedding, D
        self.settings = tuple({"sigma": sigma} for sigma in sigmas)
        self._own_out: np.ndarray | None = None

    def X(self, setting: dict[str, Any]) -> np.ndarray:
        return np.exp(-self.D / (2.0 * setting["sigma"] ** 2))

    def fold_columns(self, folds: Sequence[tuple[np.ndarray, np.ndarray]]) -> list[np.ndarray]:
        return [np.flatnonzero(np.isin(self.embedding.pool_bag_, train)) for train, _ in folds]

    def cut_X(self, setting: dict[str, Any]) -> np.ndarray:
        if self._own_out is None:             # computed once, on first use (a cut on the training bags)
            self._own_out = self.embedding.leave_own_out(self.D)
        return np.exp(-self._own_out / (2.0 * setting["sigma"] ** 2))
