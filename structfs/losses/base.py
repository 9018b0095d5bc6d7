"""The loss interface and the exact grid oracle for any contingency-table loss.

A structured loss is (Delta, Psi, oracle). For a labeling ybar, Psi(y, ybar) = sum_i coef_i x~_i with
coef = (50/n)(y - ybar); the oracle returns argmax_ybar H(ybar) = Delta(y, ybar) - coef(ybar) . s.

For a contingency-table loss Delta depends on ybar only through (a, b) = (#positives labelled +,
#negatives labelled +). For fixed (a, b) the best labeling puts + on the a highest-scoring positives
and on the b highest-scoring negatives, so with the classes sorted by score

    H(a, b) = Delta(a, b) - (100/n) * (sum of the P - a lowest positive scores)
                          + (100/n) * (sum of the b highest negative scores)

and the oracle is a search over the (P+1) x (N+1) grid. The built-ins override the search with
O(n log n) structure-specific ones; the grid stays available as ``_grid_oracle`` for testing.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from .._jit import njit
from .._validation import check_pm1, check_scores
from ..metrics import _table_at_sign
from ._table_search import check_monotone, compile_table_function, monotone_maximum

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

_GRID_BLOCK = 1 << 22  # grid cells evaluated per call of the user's function (memory bound)


class Loss:
    """Base class of structfs losses.

    The protocol a loss implements (the learner calls nothing else):

    * ``oracle(y, s) -> (coef, delta)``: the output maximising H = Delta(y, ybar) - coef(ybar) . s
      *exactly*, as the per-example coefficients of Psi(y, ybar) = sum_i coef_i x~_i and its loss,
      on validated input (y in {-1,+1} float64, finite float64 scores of the same length). It is
      called once or more per cutting plane, so make it fast.
    * ``_score(y, s) -> float``: the measure (100 - Delta) of decision scores, in percent.
    * optionally ``_check_classes(y)`` (e.g. needs a positive), ``params`` and, for contingency
      losses, ``delta(y, y_bar)``.
    * optionally ``jit_oracle``: the same oracle as a ``numba.njit`` function ``(y, s, jit_params) ->
      (coef, delta)`` on float64 C-contiguous vectors (``delta`` a float), ``jit_params`` a float64
      vector of the loss's settings. The cutting-plane loop runs compiled either way; without it,
      the loop calls ``oracle`` back in Python (a few microseconds a call on top of the oracle's own
      time).

    ``name`` and ``params`` identify the loss so that ``get_loss(loss.name, **loss.params)`` rebuilds
    it. A loss must pickle (models hold it; joblib ships it to workers): no lambdas in attributes.
    ``structfs.testing.check_loss(loss)`` verifies an implementation by enumeration.

    Examples
    --------
    Every built-in loss is a Loss; most users name it (``get_loss("f1")``) rather than build it:

    >>> from structfs.losses import Loss, get_loss
    >>> loss = get_loss("prec@k", k_frac=0.5)
    >>> isinstance(loss, Loss), loss.name
    (True, 'prec@k')
    """

    name = "loss"
    is_contingency = False
    # True where the loss's outputs are restricted so that a bias feature in Psi would absorb Delta (the
    # operating-point losses: every admissible violator predicts too many or too few positives): such a
    # loss is fitted without the bias feature, as a ranking, and the estimator cuts the scores at the
    # best admissible operating point of its training data (``best_cut``).
    ranks_only = False
    # optional: a numba-compiled oracle (y, s, jit_params) -> (coef, delta)
    jit_oracle: Callable[..., Any] | None = None

    @property
    def jit_params(self) -> np.ndarray:
        """The float64 array of settings ``jit_oracle`` takes."""
        return np.zeros(0)

    @property
    def params(self) -> dict[str, Any]:
        return {}

    def validate(self, y: ArrayLike, s: ArrayLike | None = None) -> Any:
        """Check labels (and scores); also checks the loss's own needs, e.g. a positive example."""
        y = check_pm1(y, "y")
        self._check_classes(y)
        if s is None:
            return y
        return y, check_scores(s, y.shape[0], "s")

    def _check_classes(self, y: np.ndarray) -> None:
        pass

    def most_violated(self, y: ArrayLike, s: ArrayLike) -> tuple[np.ndarray, float]:
        """Output maximising H(ybar) = Delta(y, ybar) - coef(ybar) . s, as (coef, delta)."""
        y_pm, scores = self.validate(y, s)
        return self.oracle(y_pm, scores)

    def score(self, y: ArrayLike, s: ArrayLike) -> float:
        """The performance measure (100 - Delta) of decision scores ``s``, in percent."""
        y_pm, scores = self.validate(y, s)
        return float(self._score(y_pm, scores))

    def oracle(self, y: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, float]:
        """The most violated output on validated input (see the class docstring)."""
        legacy = getattr(self, "_oracle", None)        # losses written for structfs 0.1 override _oracle
        if legacy is None:
            raise NotImplementedError(f"{type(self).__name__} must implement oracle(y, s) -> (coef, delta).")
        return legacy(y, s)

    def _score(self, y: np.ndarray, s: np.ndarray) -> float:  # pragma: no cover - interface
        raise NotImplementedError

    def best_cut(self, y: np.ndarray, s: np.ndarray) -> float:
        """The cut t whose labeling ``s - t > 0`` this loss's measure rates best: a loss that measures one
        labeling (the contingency losses) defines it."""
        raise NotImplementedError(f"{type(self).__name__} measures no one labeling, so it has no best cut.")

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"{type(self).__name__}({args})"


def require_both_classes(y: np.ndarray, what: str) -> None:
    if not ((y > 0).any() and (y < 0).any()):
        raise ValueError(f"y must contain both classes (-1 and +1) for the {what} loss.")


def require_positive(y: np.ndarray, what: str) -> None:
    if not (y > 0).any():
        raise ValueError(f"y has no positive example; the {what} loss needs at least one.")


def untied_cuts(ranked: np.ndarray) -> np.ndarray:
    """Which of the n + 1 cuts of scores ``ranked`` in decreasing order (cut k: below the k highest) fall
    between two distinct scores; the cuts above all and below all always do."""
    admissible = np.ones(ranked.shape[0] + 1, dtype=bool)
    admissible[1:-1] = ranked[:-1] > ranked[1:]
    return admissible


def cut_value(ranked: np.ndarray, k: int, beyond: float = 2.0) -> float:
    """The threshold of cut k of scores ``ranked`` in decreasing order: midway between the k-th and the
    (k+1)-th highest, ``beyond`` past an end."""
    above = ranked[k - 1] if k > 0 else ranked[0] + beyond
    below = ranked[k] if k < ranked.shape[0] else ranked[-1] - beyond
    return float((above + below) / 2.0)


class SortedClasses:
    """Scores of the positives and of the negatives sorted in decreasing order, with prefix sums.

    Only values are sorted (np.sort is several times faster than argsort); the labeling of a table
    (a, b) is recovered afterwards by thresholding, in O(n).

    Examples
    --------
    >>> import numpy as np
    >>> from structfs.losses import SortedClasses
    >>> classes = SortedClasses(np.array([1.0, -1.0, 1.0]), np.array([0.5, 2.0, 1.0]))
    >>> classes.sorted_pos.tolist(), classes.sorted_neg.tolist()
    ([1.0, 0.5], [2.0])
    """

    __slots__ = ("n", "y", "s", "sorted_pos", "sorted_neg", "cum_pos", "cum_neg")

    def __init__(self, y: np.ndarray, s: np.ndarray) -> None:
        self.n = y.shape[0]
        self.y, self.s = y, s
        pos = y > 0
        self.sorted_pos = np.sort(s[pos])[::-1]
        self.sorted_neg = np.sort(s[~pos])[::-1]
        self.cum_pos = np.concatenate(([0.0], np.cumsum(self.sorted_pos)))
        self.cum_neg = np.concatenate(([0.0], np.cumsum(self.sorted_neg)))

    @property
    def P(self) -> int:
        return self.sorted_pos.shape[0]

    @property
    def N(self) -> int:
        return self.sorted_neg.shape[0]

    def score_part(self, a: Any, b: Any) -> Any:
        """-coef . s of the best labeling with table (a, b); vectorised over a and b."""
        scale = 100.0 / self.n
        return scale * (self.cum_neg[b] - (self.cum_pos[-1] - self.cum_pos[a]))

    def _top(self, cls_mask: np.ndarray, sorted_desc: np.ndarray, count: int) -> np.ndarray:
        """Mask of ``count`` examples of a class with the highest scores (ties: lowest index first)."""
        top = np.zeros(self.n, dtype=bool)
        if count == 0:
            return top
        threshold = sorted_desc[count - 1]
        top[:] = cls_mask & (self.s > threshold)
        tied = np.flatnonzero(cls_mask & (self.s == threshold))
        top[tied[:count - np.count_nonzero(top)]] = True
        return top

    def coef(self, a: int, b: int) -> np.ndarray:
        """coef = (50/n)(y - ybar) of the labeling with + on the top a positives / top b negatives."""
        pos = self.y > 0
        coef = np.where(pos, 100.0 / self.n, 0.0)
        coef[self._top(pos, self.sorted_pos, a)] = 0.0
        coef[self._top(~pos, self.sorted_neg, b)] = -100.0 / self.n
        return coef


@njit(cache=True)
def _grid_argmax(delta: np.ndarray, base_a: np.ndarray, gain_b: np.ndarray, a0: int) -> tuple[float, int, int]:
    """argmax over a block of rows of delta[i, b] + base_a[i] + gain_b[b]; -inf marks infeasible."""
    best = -np.inf
    best_a = -1
    best_b = -1
    for i in range(delta.shape[0]):
        for b in range(delta.shape[1]):
            h = delta[i, b] + base_a[i] + gain_b[b]
            if h > best:
                best = h
                best_a = a0 + i
                best_b = b
    return best, best_a, best_b


@njit(cache=True)
def _first_invalid(values: np.ndarray, mask: np.ndarray, masked: bool) -> tuple[int, int]:
    """(index, kind) of the first value that is NaN (0), infinite (1) or negative (2) where ``mask``
    holds (everywhere unless ``masked``), or (-1, -1): one pass, as the grid is searched by blocks."""
    for i in range(values.shape[0]):
        v = values[i]
        if v >= 0.0 and v != np.inf:
            continue
        if masked and not mask[i]:
            continue
        if v != v:
            return i, 0
        return i, (1 if v == np.inf or v == -np.inf else 2)
    return -1, -1


_EVERYWHERE = np.ones(1, dtype=np.bool_)      # _first_invalid's mask when nothing is masked


class ContingencyLoss(Loss):
    """A user-defined loss Delta = fn(a, b, c, d) in percent of the contingency table.

    The oracle is exact. ``fn`` is compiled by numba on first use (once per function and process); where
    Delta is monotone -- a true positive never costs, a false alarm never pays -- the oracle is a branch
    and bound that visits a small part of the (P+1) x (N+1) tables, else it evaluates all of them.

    Parameters
    ----------
    fn : callable
        ``fn(a, b, c, d)`` of TP, FP, FN, TN (int64 arrays, or numbers for a function written with
        ``if``) returning Delta in percent: >= 0, finite, 0 for the true labeling. A top-level function
        of a module, so that models holding the loss pickle and ``save_model`` records it by name.
    feasible : callable or None, default=None
        ``feasible(a, b, P, N)`` -> bool (broadcastable): the labelings allowed, e.g.
        ``a + b == 10`` for a Prec@10-style loss. The oracle then evaluates every table.
    name : str or None, default=None
        The loss's name in reports (default "contingency").
    monotone : bool or None, default=None
        None: verify, once per class size (P, N), whether Delta is non-increasing in a and
        non-decreasing in b (one pass over the tables), and use the branch and bound where it is.
        True: assume it without the pass (``check_loss`` verifies the claim; calls are slower on
        balanced classes, as the pass also records the steps of Delta that tighten the bound).
        False: always evaluate every table.

    Examples
    --------
    A missed positive costs three false alarms. In a module, define the function at its top level so
    that models holding the loss pickle, and verify it with :func:`structfs.testing.check_loss`.

    >>> import numpy as np
    >>> from structfs.losses import ContingencyLoss
    >>> def missed_costs_three(a, b, c, d):
    ...     return 100.0 * (b + 3 * c) / (3 * (a + c) + (b + d))
    >>> loss = ContingencyLoss(missed_costs_three)
    >>> y = np.array([1.0, 1.0, -1.0, -1.0])
    >>> float(loss.delta(y, np.array([1.0, -1.0, 1.0, -1.0])))    # one miss, one false alarm
    50.0
    """

    name = "contingency"
    is_contingency = True

    def __init__(self, fn: Callable[..., Any], feasible: Callable[..., Any] | None = None, name: str | None = None,
                 monotone: bool | None = None) -> None:
        if not callable(fn):
            raise TypeError(f"fn must be a callable fn(a, b, c, d) -> Delta in percent, got {fn!r}.")
        if feasible is not None and not callable(feasible):
            raise TypeError(f"feasible must be a callable feasible(a, b, P, N) -> bool, got {feasible!r}.")
        if monotone not in (None, True, False):
            raise TypeError(f"monotone must be None (verify), True or False, got {monotone!r}.")
        self.fn = fn
        self.feasible = feasible
        self.monotone = monotone
        if name is not None:
            self.name = name
        self._evaluate: Callable[..., Any] | None = None    # fn as _evaluator() chose it: compiled, or fn
        # (P, N) -> (monotone on that grid, its TableSteps or None)
        self._monotone_verdicts: dict[tuple[int, int], tuple[bool, Any]] = {}

    @property
    def params(self) -> dict[str, Any]:
        return {"fn": self.fn, "feasible": self.feasible, "monotone": self.monotone}

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.pop("_evaluate", None)    # a compiled ufunc: rebuilt on first use, never pickled
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        state.setdefault("monotone", None)
        state.setdefault("_monotone_verdicts", {})
        self.__dict__.update(state)
        self._evaluate = None

    # -- Delta ------------------------------------------------------------------------------
    def _evaluator(self) -> Callable[..., Any]:
        """The function that evaluates ``fn`` on arrays of tables, chosen once: numba's compilation of
        fn where it compiles and agrees with fn on arrays (or fn works on scalars only), else fn."""
        evaluate = getattr(self, "_evaluate", None)
        if evaluate is not None:
            return evaluate
        compiled = compile_table_function(self.fn)
        if compiled is not None:
            probe = np.array([[0, 0, 3, 5], [3, 5, 0, 0], [1, 2, 2, 3], [0, 5, 3, 0], [3, 0, 0, 5],
                              [7, 90, 2, 901], [4_000, 35_000, 1_000, 60_000]], dtype=np.int64).T
            try:
                with np.errstate(all="ignore"):
                    reference = np.broadcast_to(np.asarray(self.fn(*probe), dtype=np.float64), probe[0].shape)
                    agrees = np.allclose(compiled(*probe), reference, rtol=1e-12, atol=1e-12, equal_nan=True)
            except (TypeError, ValueError):
                agrees = True                   # written for scalars (e.g. with `if`): numba's reading is the one
            if not agrees:                      # a construct numba reads otherwise: fn's own meaning wins
                compiled = None
        self._evaluate = self.fn if compiled is None else compiled
        return self._evaluate

    def _delta_table(self, a: Any, b: Any, c: Any, d: Any, mask: Any = None) -> np.ndarray:
        """fn on (broadcast) tables, checked for NaN and negative values where ``mask`` is True."""
        evaluate = self._evaluator()
        try:
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                out = np.asarray(evaluate(a, b, c, d), dtype=np.float64)
        except (TypeError, ValueError) as exc:
            if evaluate is not self.fn:
                raise
            raise TypeError(f"fn {getattr(self.fn, '__name__', self.fn)!r} fails on arrays of tables ({exc}) and "
                            "numba cannot compile it: write it with NumPy operations on its arguments, e.g. "
                            "np.where(cond, x, y) instead of `if`, np.maximum instead of max().") from None
        # one table with a valid value (a search scores one per path point): no broadcasting, no array-wide check
        if mask is None and out.ndim == 0 and all(np.ndim(v) == 0 for v in (a, b, c, d)) and np.isfinite(out) \
                and out >= 0:
            return out
        out = np.broadcast_to(out, np.broadcast(a, b, c, d).shape)
        if mask is None:
            at, kind = _first_invalid(np.ravel(out), _EVERYWHERE, False)
        else:
            at, kind = _first_invalid(np.ravel(out), np.ravel(np.broadcast_to(mask, out.shape)), True)
        if at >= 0:
            where = np.unravel_index(at, out.shape)
            table = tuple(int(np.broadcast_to(v, out.shape)[where]) for v in (a, b, c, d))
            what = ("NaN; the loss function must be defined on every contingency table",
                    "an infinite value; Delta must be finite (percent, e.g. 0..100)",
                    "a negative value; Delta must be >= 0 (percent)")[kind]
            raise ValueError(f"fn{table} (a, b, c, d = TP, FP, FN, TN) returned {what}.")
        return out

    def delta(self, y: ArrayLike, y_bar: ArrayLike) -> float:
        """Delta(y, y_bar) for two -1/+1 labelings."""
        y = check_pm1(y, "y")
        y_bar = check_pm1(y_bar, "y_bar")
        if y_bar.shape != y.shape:
            raise ValueError(f"y_bar has length {y_bar.shape[0]} but y has length {y.shape[0]}.")
        return float(self._delta_table(*map(np.int64, _table_at_sign(y, y_bar))))

    def is_monotone(self, P: int, N: int) -> bool:
        """Whether the oracle may assume Delta non-increasing in a and non-decreasing in b on the grid
        of P positives and N negatives: ``monotone`` where given, else verified over the whole grid once
        per (P, N) (a pass over (P+1)(N+1) tables; ``monotone=True`` skips it)."""
        return bool(self._grid_facts(P, N)[0])

    def _grid_facts(self, P: int, N: int) -> tuple[bool | None, Any]:
        """(monotone, its TableSteps or None) on the grid of P positives and N negatives, cached."""
        if getattr(self, "monotone", None) is not None:
            return self.monotone, None
        verdicts = self.__dict__.setdefault("_monotone_verdicts", {})
        key = (int(P), int(N))
        if key not in verdicts:
            verdicts[key] = self._check_grid(*key)
        return verdicts[key]

    def verify_monotone(self, P: int, N: int) -> bool:
        """Whether Delta is non-increasing in a and non-decreasing in b on every table of P positives
        and N negatives: one pass over the grid, by blocks of rows (not cached)."""
        return self._check_grid(P, N)[0]

    def _check_grid(self, P: int, N: int) -> tuple[bool, Any]:
        """:func:`check_monotone` of this loss's Delta on the grid of P positives and N negatives."""
        bs = np.arange(N + 1, dtype=np.int64)[None, :]
        return check_monotone(lambda a: self._delta_table(a, bs, P - a, N - bs), P, N)

    # -- oracle -----------------------------------------------------------------------------
    def _feasible_mask(self, a: Any, b: Any, P: int, N: int) -> np.ndarray | None:
        if self.feasible is None:
            return None
        return np.broadcast_to(np.asarray(self.feasible(a, b, P, N), dtype=bool),
                               np.broadcast(a, b).shape)

    def oracle(self, y: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, float]:
        """Exact maximiser of H: by branch and bound where Delta is monotone (see ``is_monotone``) and no
        ``feasible`` restricts the tables, else by evaluating every table."""
        srt = SortedClasses(y, s)
        monotone, steps = (False, None) if self.feasible is not None else self._grid_facts(srt.P, srt.N)
        if not monotone:
            return self._grid_search(srt)
        P, N = srt.P, srt.N
        scale = 100.0 / srt.n
        evaluate = self._evaluator()

        def table(a: np.ndarray, b: np.ndarray) -> np.ndarray:
            # _delta_table's work on the few corners of a level, without its per-call set-up (tens of
            # levels a call: on small n that set-up was most of the oracle); it names any bad table
            try:
                out = np.asarray(evaluate(a, b, P - a, N - b), dtype=np.float64)
            except (TypeError, ValueError):
                out = None
            if out is not None and out.shape != a.shape:
                out = np.ascontiguousarray(np.broadcast_to(out, a.shape))
            if out is None or _first_invalid(out, _EVERYWHERE, False)[0] >= 0:
                return self._delta_table(a, b, P - a, N - b)    # raises, with the message
            return out

        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            a, b = monotone_maximum(table, P, N, -scale * (srt.cum_pos[-1] - srt.cum_pos), scale * srt.cum_neg,
                                    int(np.count_nonzero(srt.sorted_pos > 0)),
                                    int(np.count_nonzero(srt.sorted_neg > 0)), steps)
        delta = float(self._delta_table(np.int64(a), np.int64(b), np.int64(P - a), np.int64(N - b)))
        return srt.coef(a, b), delta

    def _grid_oracle(self, y: np.ndarray, s: np.ndarray) -> tuple[np.ndarray, float]:
        """Exact maximiser of H by evaluating every (a, b) -- O(P*N); the reference for all oracles."""
        return self._grid_search(SortedClasses(y, s))

    def _grid_search(self, srt: SortedClasses) -> tuple[np.ndarray, float]:
        P, N = srt.P, srt.N
        scale = 100.0 / srt.n
        gain_b = scale * srt.cum_neg
        base_a = -scale * (srt.cum_pos[-1] - srt.cum_pos)
        bs = np.arange(N + 1, dtype=np.int64)[None, :]
        rows = max(1, _GRID_BLOCK // (N + 1))
        best, best_a, best_b = -np.inf, -1, -1
        for a0 in range(0, P + 1, rows):
            a = np.arange(a0, min(P + 1, a0 + rows), dtype=np.int64)[:, None]
            mask = self._feasible_mask(a, bs, P, N)
            d = np.array(self._delta_table(a, bs, P - a, N - bs, mask), dtype=np.float64)
            if mask is not None:
                d[~mask] = -np.inf
            h, ia, ib = _grid_argmax(d, base_a[a0:a0 + d.shape[0]], gain_b, a0)
            if h > best:
                best, best_a, best_b = h, ia, ib
        if best_a < 0:
            raise ValueError("No labeling is feasible for this loss on these labels.")
        delta = float(self._delta_table(np.int64(best_a), np.int64(best_b),
                                        np.int64(P - best_a), np.int64(N - best_b)))
        return srt.coef(best_a, best_b), delta

    def best_cut(self, y: np.ndarray, s: np.ndarray) -> float:
        """The cut t maximising this loss's measure of the labeling ``s - t > 0`` (labels ``y`` in -1/+1):
        every cut between two distinct scores is tried (Delta on the tables of all of them at once,
        O(n log n)); t is the midpoint of the gap, ties go to the fewest positives."""
        order = np.argsort(-s, kind="stable")
        ranked, positive = s[order], y[order] > 0
        a = np.concatenate(([0], np.cumsum(positive)))              # cut after the k highest scores
        b = np.arange(ranked.shape[0] + 1) - a
        P, N = a[-1], b[-1]
        mask = self._feasible_mask(a, b, P, N)
        delta = np.array(self._delta_table(a, b, P - a, N - b, mask), dtype=float)
        admissible = untied_cuts(ranked) if mask is None else mask & untied_cuts(ranked)
        if not admissible.any():
            return 0.0
        k = int(np.flatnonzero(admissible)[np.argmin(delta[admissible])])
        return cut_value(ranked, k)

    def _score(self, y: np.ndarray, s: np.ndarray) -> float:
        # delta(y, sign(s)) on input validated by score(), without its checks and the labeling's array: a
        # search scores every point of every path this way
        return 100.0 - float(self._delta_table(*map(np.int64, _table_at_sign(y, s))))
