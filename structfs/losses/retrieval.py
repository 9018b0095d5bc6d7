"""Retrieval losses over rankings: average precision ("ap") and partial ROC area ("pauc").

Both take the pairwise joint feature of "auc" (:mod:`structfs.losses.auc`): an output orders every pair
(i positive, j negative), and a pair ranked the wrong way ("swapped") adds scale * (x_i - x_j) to Psi,
so coef_i = scale * #swapped pairs of positive i, coef_j = -scale * #swapped pairs of negative j.
Unlike "auc", the outputs are rankings (pairwise orders consistent with one total order).

AP (Yue, Finley, Radlinski & Joachims, SIGIR 2007; scale 100/(P N)). In a most violated ranking each
class keeps its score order (exchange argument), so a ranking is an interleaving: negative j (the
j-th highest) sits just above positive k_j (the k_j-th highest), k_1 <= ... <= k_N in 1..P+1. Adding
the negatives in order, negative j pushes down positives k_j..P, each then preceded by j - 1 negatives,
so with a_ij = i/(i+j-1) - i/(i+j) (the precision positive i loses)

    Delta = 100 (1 - AP) = (100/P) sum_j sum_{i >= k_j} a_ij,
    H = sum_j G_j(k_j),   G_j(k) = sum_{i >= k} [(100/P) a_ij - scale (s+_i - s-_j)].

H separates over the negatives. a_ij decreases strictly in j and s-_j does not increase, so G_j has
strictly increasing differences in (j, k): every maximiser of G_{j+1} lies at or after every maximiser
of G_j. The per-negative maxima therefore form a valid interleaving, and divide and conquer over j
(maximise the middle negative over its k range, split the range at its answer) finds them all with
O((P + N) log N) evaluations of G, each O(1) from prefix sums of the positive scores and harmonic
numbers (sum_{i=k}^P a_ij = j (H_{P+j} - H_{k+j-1}) - (j-1) (H_{P+j-1} - H_{k+j-2})): O(n log n)
with the two sorts. Yue et al. interleave greedily; this is the same optimum with a bound that does
not depend on P N.

pAUC over false-positive rates [0, beta] (Narasimhan & Agarwal, ICML 2013; scale 100/(P k),
k = ceil(beta N)): an output chooses k negatives -- the top k of the output ranking -- and orders
every pair of a positive with one of them; Delta is 100 x the fraction of those P k pairs swapped.
Every pair term (scale)(1 - (s_i - s_j)) grows with s_j, so the most violated output takes the k
highest-scoring negatives and, among them, swaps exactly the pairs with s_i - 1 < s_j ("auc"'s
oracle on that subset; the result is a ranking, by the values s_i - 1 / s_j). O(n) selection plus
O((P + k) log(P + k)).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from .._jit import njit
from ..metrics import average_precision, partial_auc, resolve_beta
from .auc import count_swaps
from .base import Loss, require_both_classes


class _RankingLoss(Loss):
    """Shared: both classes needed; every ranking enumerated for ``structfs.testing.check_loss``."""

    # (coef, delta) of every ranking given by its positives' places and swaps (each subclass's own)
    _ranking_outputs: Callable[..., tuple[np.ndarray, np.ndarray]]

    def _check_classes(self, y: np.ndarray) -> None:
        require_both_classes(y, self.name)

    def outputs(self, y: np.ndarray) -> Iterator[tuple[np.ndarray, float]]:
        """Every ranking of the n examples as (coef, delta), duplicates removed: n! orders, for
        verification on tiny n (``structfs.testing.check_loss``)."""
        import itertools

        n = y.shape[0]
        orders = np.array(list(itertools.permutations(range(n))), dtype=np.int64)   # top first
        ranked_pos = (y > 0)[orders]
        neg_above = np.cumsum(~ranked_pos, axis=1)       # per position: negatives ranked at or above it
        pos_below = ranked_pos.sum(axis=1, keepdims=True) - np.cumsum(ranked_pos, axis=1)
        swapped_pos = np.where(ranked_pos, neg_above, 0)
        swapped_neg = np.where(ranked_pos, 0, pos_below)
        coef_sorted, delta = self._ranking_outputs(ranked_pos, swapped_pos, swapped_neg)
        coef = np.empty_like(coef_sorted)
        np.put_along_axis(coef, orders, coef_sorted, axis=1)
        table = np.unique(np.column_stack([coef, delta]), axis=0)
        for row in table:
            yield row[:-1], row[-1]


class AveragePrecisionLoss(_RankingLoss):
    """Delta = 100 (1 - AP) of a ranking (SVM^map); measure: average precision of the scores, as
    scikit-learn's ``average_precision_score``.

    Examples
    --------
    >>> import numpy as np
    >>> from structfs.losses import AveragePrecisionLoss
    >>> y = np.array([1.0, -1.0, 1.0, -1.0, -1.0, 1.0])
    >>> s = np.array([2.0, 1.5, -0.5, -1.0, 0.3, 0.8])
    >>> loss = AveragePrecisionLoss()
    >>> round(loss.score(y, s), 2)                 # its measure of the scores, in percent
    75.56
    >>> coef, delta = loss.most_violated(y, s)     # the output maximising loss - margin
    >>> round(float(delta), 2)                     # and its loss
    41.11
    """

    name = "ap"

    def oracle(self, y: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, float]:
        pos = y > 0
        s_pos, idx_pos, s_neg, idx_neg = _split_by_class(s, pos, int(np.count_nonzero(pos)))
        by_score = np.argsort(s_pos)[::-1]
        order_pos = idx_pos[by_score]                                  # positives by decreasing score
        sorted_neg = np.sort(s_neg)[::-1]                              # negatives' scores, decreasing
        P, N = order_pos.shape[0], sorted_neg.shape[0]
        slot = _ap_interleaving(s_pos[by_score], sorted_neg, _harmonic_numbers(P + N))
        coef, delta, by_value = _ap_coefficients(s_neg, idx_neg, order_pos, sorted_neg, slot)
        if not by_value:                   # tied negatives straddle a slot change: rank them explicitly
            order_neg = idx_neg[np.argsort(s_neg)][::-1]
            coef[order_neg] = (-100.0 / (P * N)) * (P - slot)
        return coef, max(delta, 0.0)

    def _ranking_outputs(self, ranked_pos: np.ndarray, swapped_pos: np.ndarray,
                         swapped_neg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        P = int(ranked_pos[0].sum())
        N = ranked_pos.shape[1] - P
        position = np.arange(1, ranked_pos.shape[1] + 1)
        hits = np.cumsum(ranked_pos, axis=1)
        ap = np.where(ranked_pos, hits / position, 0.0).sum(axis=1) / P
        scale = 100.0 / (P * N)
        return scale * (swapped_pos - swapped_neg), 100.0 * (1.0 - ap)

    def _score(self, y: np.ndarray, s: np.ndarray) -> float:
        return average_precision(y, s)


_harmonic = np.zeros(1)


def _harmonic_numbers(n: int) -> np.ndarray:
    """H_0..H_m for some m >= n. Kept between calls: the solver calls the oracle with the same n
    every plane, and at n = 10^6 the table costs as much as the positives' argsort."""
    global _harmonic
    table = _harmonic
    if table.shape[0] <= n:
        table = np.concatenate([[0.0], np.cumsum(1.0 / np.arange(1, n + 1))])
        _harmonic = table
    return table


@njit(cache=True)
def _split_by_class(s: np.ndarray, pos: np.ndarray, n_pos: int) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                    np.ndarray]:
    """The positives' and the negatives' scores and indices in one pass (boolean masks cost three
    times as much at 20% positives: the branch in numpy's compress mispredicts)."""
    s_pos, idx_pos = np.empty(n_pos), np.empty(n_pos, dtype=np.int64)
    s_neg, idx_neg = np.empty(s.shape[0] - n_pos), np.empty(s.shape[0] - n_pos, dtype=np.int64)
    a = b = 0
    for i in range(s.shape[0]):
        if pos[i]:
            s_pos[a], idx_pos[a] = s[i], i
            a += 1
        else:
            s_neg[b], idx_neg[b] = s[i], i
            b += 1
    return s_pos, idx_pos, s_neg, idx_neg


@njit(cache=True)
def _ap_interleaving(s_pos: np.ndarray, s_neg: np.ndarray, harmonic: np.ndarray) -> np.ndarray:
    """0-based slot k_j - 1 of every negative (sorted decreasingly, as are the positives) in the most
    violated AP ranking: negative j sits above positives slot_j.. and below the others. ``harmonic``
    holds H_0..H_{P+N} at least (``_harmonic_numbers``)."""
    P, N = s_pos.shape[0], s_neg.shape[0]
    suffix = np.zeros(P + 1)                 # suffix[k] = sum of s_pos[k:]
    for i in range(P - 1, -1, -1):
        suffix[i] = suffix[i + 1] + s_pos[i]
    ap_scale = 100.0 / P
    pair_scale = 100.0 / (P * N)
    slot = np.empty(N, dtype=np.int64)
    # divide and conquer over negatives; a stack of (j_lo, j_hi, k_lo, k_hi), inclusive ranges. Each
    # pop pushes two halves, so the stack holds at most 2 log2(N) + 2 ranges.
    stack = np.empty((130, 4), dtype=np.int64)
    stack[0, 0], stack[0, 1], stack[0, 2], stack[0, 3] = 0, N - 1, 0, P
    top = 1
    while top > 0:
        top -= 1
        j_lo, j_hi, k_lo, k_hi = stack[top, 0], stack[top, 1], stack[top, 2], stack[top, 3]
        if j_lo > j_hi:
            continue
        if k_lo == k_hi:                      # the range is pinned: every negative in it has that slot
            slot[j_lo:j_hi + 1] = k_lo
            continue
        j0 = (j_lo + j_hi) // 2
        j = j0 + 1                            # 1-based rank of the negative
        # G(k) for the 0-based slot k (positives k.. pushed down, 1-based k+1..P):
        #   (100/P) sum_{i=k+1}^{P} a_ij - (100/(P N)) (sum_{i>k} s+_i - (P - k) s-_j),
        # sum_{i=k+1}^{P} a_ij = (H_{P+j-1} + j/(P+j)) - (H_{k+j-1} + j/(k+j)) (no products j H that cancel);
        # G(P) = 0 (below every positive). Ties go to the later slot (fewer swaps): the scan runs
        # down from k_hi and takes strict improvements only, by a select rather than a branch.
        c_j = ap_scale * (harmonic[P + j - 1] + j / (P + j))
        shift = pair_scale * s_neg[j0]
        if k_hi == P:                         # G(P) = 0 without evaluation
            best, best_k, k = 0.0, P, P - 1
        else:                                 # the range's top wins its first comparison
            best, best_k, k = -np.inf, k_hi, k_hi
        while k >= k_lo:
            g = (c_j - ap_scale * (harmonic[k + j - 1] + j / (k + j)) - pair_scale * suffix[k]
                 + (P - k) * shift)
            better = g > best
            best = g if better else best
            best_k = k if better else best_k
            k -= 1
        slot[j0] = best_k
        stack[top, 0], stack[top, 1], stack[top, 2], stack[top, 3] = j_lo, j0 - 1, k_lo, best_k
        top += 1
        stack[top, 0], stack[top, 1], stack[top, 2], stack[top, 3] = j0 + 1, j_hi, best_k, k_hi
        top += 1
    return slot


@njit(cache=True)
def _ap_coefficients(s_neg: np.ndarray, idx_neg: np.ndarray, order_pos: np.ndarray, sorted_neg: np.ndarray,
                     slot: np.ndarray) -> tuple[np.ndarray, float, bool]:
    """coef and Delta of the interleaving ``slot`` (per rank of the negatives' decreasing scores).

    A negative's coefficient depends on its rank only through its slot, a step function of the rank
    with m <= P + 1 steps; unless tied scores straddle a step it is a step function of the score, so
    each negative finds its step from its score and the negatives need no argsort (at n = 10^6 the
    argsort and its scatter cost more than all the rest). If ties straddle a step, only the positives
    are written and ``by_value`` is False: the caller ranks the negatives explicitly."""
    P, N = order_pos.shape[0], sorted_neg.shape[0]
    n = P + N
    scale = 100.0 / (P * N)
    coef = np.empty(n)
    total = 0.0
    j = 0
    for i in range(P):                    # positive i is preceded by the negatives with slot <= i
        while j < N and slot[j] <= i:
            j += 1
        coef[order_pos[i]] = scale * j
        total += (i + 1.0) / (i + 1.0 + j)
    delta = 100.0 * (1.0 - total / P)
    # steps[r] = (lowest score of step r, coefficient of step r), one record so that a lookup touches
    # one cache line; the last step's lowest score is -inf (nothing lies below it).
    steps = np.empty((min(P + 1, N), 2))
    m = 1
    steps[0, 1] = -scale * (P - slot[0])
    for j in range(1, N):
        if slot[j] != slot[j - 1]:
            if sorted_neg[j] == sorted_neg[j - 1]:
                return coef, delta, False
            steps[m - 1, 0] = sorted_neg[j - 1]
            steps[m, 1] = -scale * (P - slot[j])
            m += 1
    steps[m - 1, 0] = -np.inf
    # The step of a score v is the number of steps whose lowest score is > v. A binary search per
    # negative costs ~150 ns at m = 10^4 (each probe waits for the last), so the scores' range is cut
    # into 4 m equal buckets: the steps whose lowest score falls in a higher bucket are above every v
    # of this bucket (the bucket of a value is monotone in it), those in a lower one below, and only
    # v's own bucket -- most often holding at most one step -- needs comparisons.
    lowest, highest = sorted_neg[N - 1], sorted_neg[0]
    n_buckets = 4 * m
    per_unit = n_buckets / (highest - lowest) if highest > lowest else 0.0
    if not np.isfinite(per_unit):         # an infinite or subnormal span: one bucket, binary search
        per_unit = 0.0
    at_or_above = np.zeros(n_buckets + 1, dtype=np.int32)   # steps whose lowest score's bucket >= b
    for r in range(m - 1):
        at_or_above[_bucket(steps[r, 0], lowest, per_unit, n_buckets)] += 1
    for b in range(n_buckets - 1, -1, -1):
        at_or_above[b] += at_or_above[b + 1]
    for t in range(N):
        v = s_neg[t]
        b = _bucket(v, lowest, per_unit, n_buckets)
        base = at_or_above[b + 1]
        length = at_or_above[b] - base            # steps in v's own bucket
        while length > 1:                         # rare: a branch-free binary search among them
            half = length >> 1
            base = base + half if steps[base + half - 1, 0] > v else base
            length -= half
        base += (length == 1) & (steps[base, 0] > v)
        coef[idx_neg[t]] = steps[base, 1]
    return coef, delta, True


@njit(cache=True, inline="always")
def _bucket(v: float, lowest: float, per_unit: float, n_buckets: int) -> int:
    return min(int((v - lowest) * per_unit), n_buckets - 1)


def top_negatives(beta: float, n_neg: int) -> int:
    """k = ceil(beta N), at least 1; beta N is rounded to 9 decimals first (0.1 * 30 is 3, not 4)."""
    return max(1, int(math.ceil(round(beta * n_neg, 9))))


class PartialAUCLoss(_RankingLoss):
    """Delta = 100 x (swapped pairs among the positives and the top ceil(beta N) negatives of the
    output) / (P ceil(beta N)) (SVM^pAUC, FPR range [0, beta]); measure: the ROC area over FPR in
    [0, beta] divided by beta, in percent (``structfs.metrics.partial_auc``).

    Examples
    --------
    >>> import numpy as np
    >>> from structfs.losses import PartialAUCLoss
    >>> y = np.array([1.0, -1.0, 1.0, -1.0, -1.0, 1.0])
    >>> s = np.array([2.0, 1.5, -0.5, -1.0, 0.3, 0.8])
    >>> loss = PartialAUCLoss()
    >>> round(loss.score(y, s), 2)                 # its measure of the scores, in percent
    33.33
    >>> coef, delta = loss.most_violated(y, s)     # the output maximising loss - margin
    >>> round(float(delta), 2)                     # and its loss
    100.0
    """

    name = "pauc"

    def __init__(self, beta: float = 0.1) -> None:
        self.beta = resolve_beta(beta)

    @property
    def params(self) -> dict[str, Any]:
        return {"beta": self.beta}

    def oracle(self, y: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, float]:
        pos = y > 0
        neg = np.flatnonzero(~pos)
        k = top_negatives(self.beta, neg.shape[0])
        if k < neg.shape[0]:
            neg = neg[np.argpartition(-s[neg], k - 1)[:k]]
        subset = np.concatenate([np.flatnonzero(pos), neg])
        sub_pos = pos[subset]
        values = np.where(sub_pos, s[subset] - 1.0, s[subset])
        swapped, total = count_swaps(values, np.argsort(values), sub_pos)
        scale = 100.0 / (np.count_nonzero(pos) * k)
        coef = np.zeros(y.shape[0])
        coef[subset] = scale * np.where(sub_pos, swapped, -swapped)
        return coef, scale * total

    def _ranking_outputs(self, ranked_pos: np.ndarray, swapped_pos: np.ndarray,
                         swapped_neg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        P = int(ranked_pos[0].sum())
        k = top_negatives(self.beta, ranked_pos.shape[1] - P)
        # only the top k negatives of each ranking count: a positive's swaps are capped at k
        neg_rank = np.cumsum(~ranked_pos, axis=1)
        in_top = ~ranked_pos & (neg_rank <= k)
        scale = 100.0 / (P * k)
        swapped = np.where(ranked_pos, np.minimum(swapped_pos, k), 0) - np.where(in_top, swapped_neg, 0)
        return scale * swapped, scale * np.minimum(swapped_pos, k).sum(axis=1)

    def _score(self, y: np.ndarray, s: np.ndarray) -> float:
        return partial_auc(y, s, self.beta)
