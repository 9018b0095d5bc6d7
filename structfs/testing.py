"""``check_loss``: the loss-writer's ``check_estimator``.

A structural SVM is only as right as its oracle: an oracle that misses the most violated output
makes the cutting-plane method stop early with a wrong certificate, silently. ``check_loss(loss)``
enumerates every output on small random problems and reports where an oracle misses the maximum of
H = Delta - coef . s, returns a delta that is not the loss of its own output, where a contingency
loss charges the true labeling (Delta(y, y) != 0) or leaves 0..100 percent, or where the loss does
not pickle.

Contingency-table losses (``loss.is_contingency``) are enumerated over all labelings, respecting
``loss.feasible``. A loss of another structure must provide ``outputs(y)``, an iterable of every
admissible (coef, delta) — :class:`structfs.losses.ROCAreaLoss` does (all pairwise orderings);
``check_loss`` refuses a loss it cannot enumerate rather than pass it unchecked. The measure
``_score``, which ``StructSVMCV`` scores candidates by, is checked too.
"""
from __future__ import annotations

import itertools
import pickle
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .losses import Loss

__all__ = ["check_loss"]


def _labels(rng: np.random.Generator, n: int) -> Any:
    yield np.where(rng.random(n) < 0.5, 1.0, -1.0)
    if n >= 2:
        one = -np.ones(n)
        one[rng.integers(n)] = 1.0                  # a single positive (extreme ratio)
        yield one
        yield -one                                  # a single negative
    yield np.ones(n)                                # one class only (the loss may decline it)


def _scores(rng: np.random.Generator, n: int) -> Any:
    yield rng.normal(size=n)
    yield rng.integers(-2, 3, size=n).astype(float) * 0.5      # ties, some exactly at the margin
    yield np.zeros(n)                                          # all equal
    yield rng.normal(size=n) * 1e3
    yield rng.normal(size=n) * 1e-4


def _labelings(n: int) -> np.ndarray:
    """Every -1/+1 labeling of n examples, one per row."""
    return np.array(list(itertools.product((-1.0, 1.0), repeat=n))).reshape(-1, n)


def _contingency_outputs(loss: Any, y: np.ndarray) -> Any:
    """(coef, Delta) of every admissible labeling, Delta by ``loss.delta`` (by its vectorised table
    function where a ContingencyLoss has one: 4,096 labelings at n = 12)."""
    n = y.shape[0]
    pos = y > 0
    P, N = int(pos.sum()), int((~pos).sum())
    labelings = _labelings(n)
    pred = labelings > 0
    a, b = (pred & pos).sum(axis=1), (pred & ~pos).sum(axis=1)
    feasible = getattr(loss, "feasible", None)
    keep = np.ones(a.shape[0], dtype=bool) if feasible is None else np.broadcast_to(
        np.asarray(feasible(a, b, P, N), dtype=bool), a.shape)
    if hasattr(loss, "_delta_table"):
        deltas = np.asarray(loss._delta_table(a, b, P - a, N - b, keep), dtype=float)
    else:
        deltas = np.array([loss.delta(y, y_bar) if k else np.nan for y_bar, k in zip(labelings, keep)])
    for y_bar, delta, k in zip(labelings, deltas, keep):
        if k:
            yield (50.0 / n) * (y - y_bar), float(delta)


def _truth_admissible(loss: Any, P: int, N: int) -> bool:
    """Whether the true labeling (a = P, b = 0) is among a contingency loss's admissible outputs."""
    feasible = getattr(loss, "feasible", None)
    return feasible is None or bool(np.asarray(feasible(P, 0, P, N)))


def _check_delta(loss: Any, y: np.ndarray) -> list[str]:
    """Failure messages for Delta itself on labels ``y``: Delta(y, y) = 0 (the true labeling costs
    nothing) where y has both classes (with one class a measure such as F1 is 0 by convention), and
    0 <= Delta <= 100 (percent) on every admissible labeling."""
    out = []
    P, N = int((y > 0).sum()), int((y < 0).sum())
    if P and N and _truth_admissible(loss, P, N):
        own = float(loss.delta(y, y))
        if own != 0.0:
            out.append(f"Delta(y, y) = {own:.10g} for the true labeling; it must be 0")
    for _, delta in _contingency_outputs(loss, y):
        if not 0.0 <= float(delta) <= 100.0:
            out.append(f"Delta = {float(delta):.10g} on an admissible labeling; it must lie in 0..100 (percent)")
            break
    return out


def _check_case(loss: Any, y: np.ndarray, s: np.ndarray, tol: float) -> list[str]:
    """Failure messages for one (y, s)."""
    out = []
    coef, delta = loss.oracle(y, s)
    coef = np.asarray(coef, dtype=float)
    delta = float(delta)
    h = delta - float(coef @ s)
    if coef.shape != y.shape or not np.isfinite(coef).all() or not np.isfinite(delta) or delta < 0:
        return [f"oracle returned coef of shape {coef.shape} / delta {delta!r}: coef must be finite (n,), "
                "delta finite and >= 0"]
    if loss.is_contingency:
        y_bar = y - coef * y.shape[0] / 50.0
        if not np.allclose(np.abs(y_bar), 1.0):
            return ["oracle's coef is not (50/n)(y - ybar) for any labeling ybar"]
        own = loss.delta(y, np.sign(y_bar))
        if abs(own - delta) > tol * max(1.0, abs(delta)):
            out.append(f"oracle's delta {delta:.10g} is not the loss {own:.10g} of its own labeling")
        outputs = _contingency_outputs(loss, y)
    else:
        outputs = loss.outputs(y)
    best = max((float(d) - float(np.asarray(c) @ s) for c, d in outputs), default=None)
    if best is None:
        out.append("no output is admissible, but the oracle returned one")
    elif abs(best - h) > tol * max(1.0, abs(best)):
        out.append(f"oracle's H = {h:.10g} but the best output has H = {best:.10g}")
    return out


CONTINGENCY_SIZES = (1, 2, 3, 4, 6, 8, 10, 12)
OUTPUT_SIZES = (1, 2, 3, 4, 6, 8)


def _score_problems(loss: Any, rng: np.random.Generator, n: int) -> tuple[list[str], Any]:
    """(failure messages, saturation) for the measure ``_score`` on random labels of n examples: it must
    be 100 at a perfect score vector (Delta(y, y) = 0, where the true labeling is admissible), no lower
    than at random scores, and the same for any order of the examples (so for any order of tied
    scores). ``saturation``: the message for a reversed score vector that scores no lower than the
    perfect one below 100 -- a measure may saturate on one problem (Rec@k with k >= n), so the caller
    fails it only where it does on every size; None otherwise."""
    y = np.where(rng.random(n) < 0.25, 1.0, -1.0)
    y[:2] = (1.0, -1.0)
    try:
        loss.validate(y)
    except ValueError:
        return [], None
    perfect = float(loss._score(y, y * (1.0 + rng.random(n))))
    reversed_ = float(loss._score(y, -y * (1.0 + rng.random(n))))
    out = []
    P, N = int((y > 0).sum()), int((y < 0).sum())
    truth_admissible = not loss.is_contingency or _truth_admissible(loss, P, N)
    if truth_admissible and not (np.isfinite(perfect) and abs(perfect - 100.0) <= 1e-9):
        out.append(f"_score = {perfect!r} for scores that order and sign every example right; it must be 100 "
                   "(100 - Delta(y, y))")
    best_random = max(float(loss._score(y, rng.normal(size=n))) for _ in range(5))
    if best_random > perfect + 1e-9:
        out.append(f"_score = {best_random!r} for random scores, above its {perfect!r} for scores that order and "
                   "sign every example right")
    saturation = None
    if not reversed_ < perfect and perfect != 100.0:   # saturated at its best (TPR at FPR 1) is legitimate
        saturation = (f"_score = {reversed_!r} for scores that order and sign every example wrong, not below its "
                      f"{perfect!r} for the right ones: the measure does not read the scores")
    s = np.round(rng.normal(size=n), 1)                  # ties
    order = rng.permutation(n)
    a, b = float(loss._score(y, s)), float(loss._score(y[order], s[order]))
    if not abs(a - b) <= 1e-9 * max(1.0, abs(a)):
        out.append(f"_score changes from {a!r} to {b!r} when the examples (and their tied scores) are reordered")
    return out, saturation


# grids on which a ContingencyLoss's monotone=True is verified: every small one and lopsided large ones
MONOTONE_GRIDS = [(P, N) for P in range(0, 31) for N in range(0, 31) if P + N] + [(1, 2_000), (2_000, 1), (300, 300)]


def _monotone_claim_problems(loss: Any) -> list[str]:
    """Failure messages where a loss declares ``monotone=True`` but Delta is not non-increasing in TP and
    non-decreasing in FP: its oracle's branch and bound would then miss outputs."""
    for P, N in MONOTONE_GRIDS:
        try:
            monotone = loss.verify_monotone(P, N)
        except ValueError as exc:
            return [f"P={P}, N={N}: {exc}"]
        if not monotone:
            return [f"monotone=True, but on P={P} positives and N={N} negatives Delta rises with a true positive "
                    "or falls with a false positive somewhere: the oracle would miss outputs; leave monotone "
                    "unset (verified per class size) or False"]
    return []


def _timing_warning(loss: Any, seed: int) -> list[float]:
    """A warning when the oracle's time grows faster than about n log n between n = 2,000 and 20,000."""
    import time
    import warnings

    rng = np.random.default_rng(seed)
    seconds = []
    for n in (2_000, 20_000):
        y = np.where(rng.random(n) < 0.1, 1.0, -1.0)
        s = rng.normal(size=n)
        loss.oracle(y, s)                                   # compile or warm
        start = time.perf_counter()
        loss.oracle(y, s)
        seconds.append(time.perf_counter() - start)
    ratio = seconds[1] / max(seconds[0], 1e-6)
    if ratio > 40.0 and seconds[1] > 0.01:                  # n log n: x13; quadratic: x100
        warnings.warn(f"{loss!r}: the oracle took {seconds[0]:.3g} s at n = 2,000 and {seconds[1]:.3g} s at n = "
                      f"20,000 ({ratio:.0f}x for 10x the examples, where n log n gives about 13x): it will dominate "
                      "fits on large data.", UserWarning, stacklevel=3)
    return seconds


def check_loss(loss: Loss, sizes: Sequence[int] | None = None, seed: int = 0, tol: float = 1e-9,
               timing: bool = False) -> int:
    """Verify ``loss`` by enumeration; raise AssertionError naming the failing cases.

    For every n in ``sizes`` (default: up to 12 for contingency losses, whose 2^n labelings are still
    cheap to enumerate, and up to 8 for losses enumerated by ``outputs``) it tries random,
    single-positive, single-negative and one-class labels against random, tied, all-equal and
    extremely scaled scores (labels the loss declines with a ValueError in ``validate`` are skipped); a
    ``jit_oracle`` must answer as ``oracle`` does. The measure ``_score`` must be 100 for perfect
    scores, lower for reversed ones, and blind to the order of the examples. A loss that cannot be
    enumerated (neither a contingency loss nor one with ``outputs(y)``) or on which no case ran is
    refused, never passed unchecked. ``timing``: also warn when the oracle grows faster than about
    n log n. Returns the number of cases checked.
    """
    clone = _checkable_copy(loss)
    if sizes is None:
        sizes = CONTINGENCY_SIZES if loss.is_contingency else OUTPUT_SIZES
    rng = np.random.default_rng(seed)
    failures, checked = _oracle_problems(loss, clone, sizes, rng, tol)
    if getattr(loss, "monotone", None) is True:
        failures += _monotone_claim_problems(loss)
    if checked == 0:
        raise AssertionError(f"check_loss({loss!r}) checked no case: validate declined every label vector of sizes "
                             f"{tuple(sizes)}, so nothing was verified.")
    failures += _measure_problems(loss, rng)
    if timing:
        _timing_warning(loss, seed)
    if failures:
        more = f" (and {len(failures) - 5} more)" if len(failures) > 5 else ""
        raise AssertionError(f"check_loss({loss!r}) failed in {len(failures)} case(s){more}:\n  "
                             + "\n  ".join(failures[:5]))
    return checked


def _checkable_copy(loss: Any) -> Any:
    """A pickled and unpickled copy of ``loss``; AssertionError when it cannot be enumerated or pickled."""
    if not loss.is_contingency and not hasattr(loss, "outputs"):
        raise AssertionError(f"check_loss cannot verify {loss!r}: it is not a contingency loss (is_contingency) "
                             "and has no outputs(y) listing every admissible (coef, delta), so its oracle cannot be "
                             "compared with the maximum over the outputs. Give it outputs(y) (all outputs on tiny "
                             "n, as ROCAreaLoss does).")
    if loss.is_contingency and not callable(getattr(loss, "delta", None)):
        raise AssertionError(f"{loss!r} says is_contingency but has no delta(y, y_bar): a contingency loss needs "
                             "it (or derive from ContingencyLoss, which also takes feasible(a, b, P, N)).")
    try:
        return pickle.loads(pickle.dumps(loss))
    except Exception as exc:               # noqa: BLE001 - any pickling failure is the finding
        raise AssertionError(f"{loss!r} does not pickle ({type(exc).__name__}: {exc}); models hold their loss "
                             "and joblib ships it to workers: avoid lambdas and local functions in attributes."
                             ) from None


def _oracle_problems(loss: Any, clone: Any, sizes: Sequence[int], rng: np.random.Generator,
                     tol: float) -> tuple[list[str], int]:
    """The oracle (and ``jit_oracle``, and the unpickled copy) against enumeration on every case: (the
    failures, the number of cases checked)."""
    failures, checked = [], 0
    for n in sizes:
        for y in _labels(rng, n):
            try:
                loss.validate(y)
            except ValueError:
                continue
            if loss.is_contingency:
                try:
                    problems = _check_delta(loss, y)
                except ValueError as exc:       # fn undefined or negative somewhere: the message names where
                    problems = [str(exc)]
                failures += [f"n={n}, y={y.tolist()}: {message}" for message in problems]
            for s in _scores(rng, n):
                checked += 1
                try:
                    messages = _check_case(loss, y, s, tol)
                except ValueError as exc:       # e.g. fn undefined on a table: the message names it
                    messages = [str(exc)]
                for message in messages:
                    failures.append(f"n={n}, y={y.tolist()}, s={np.round(s, 6).tolist()}: {message}")
                if checked == 1:
                    a, b = loss.oracle(y, s), clone.oracle(y, s)
                    if not (np.allclose(a[0], b[0]) and np.isclose(a[1], b[1])):
                        failures.append("the unpickled loss answers differently")
                if loss.jit_oracle is not None:
                    a = loss.oracle(y, s)
                    b = loss.jit_oracle(y, np.ascontiguousarray(s, dtype=np.float64),
                                        np.asarray(loss.jit_params, dtype=np.float64))
                    if not (np.allclose(a[0], b[0], rtol=tol, atol=tol) and np.isclose(a[1], b[1], rtol=tol, atol=tol)):
                        failures.append(f"n={n}, y={y.tolist()}, s={np.round(s, 6).tolist()}: jit_oracle answers "
                                        f"delta {float(b[1])!r} where oracle answers {float(a[1])!r}")
    return failures, checked


def _measure_problems(loss: Any, rng: np.random.Generator) -> list[str]:
    """The measure ``_score`` on perfect, reversed and shuffled scores, on more examples than the oracle
    (it is cheap): with few, a measure can be saturated for any scores (Rec@k with k = 2P >= n)."""
    failures, saturated = [], []
    sizes_of_score = (12, 40, 200)
    for n in sizes_of_score:
        try:
            messages, saturation = _score_problems(loss, rng, n)
        except ValueError as exc:              # fn undefined on a table: the message names it
            messages, saturation = [f"_score: {exc}"], None
        failures += [f"n={n}: {message}" for message in messages]
        if saturation:
            saturated.append(f"n={n}: {saturation}")
    if len(saturated) == len(sizes_of_score):
        failures += saturated
    return failures
