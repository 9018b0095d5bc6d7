"""``check_loss``: the loss-writer's ``check_estimator``.

A structural SVM is only as right as its oracle: an oracle that misses the most violated output
makes the cutting-plane method stop early with a wrong certificate, silently. ``check_loss(loss)``
enumerates every output on small random problems and reports where an oracle misses the maximum of
H = Delta - coef . s, returns a delta that is not the loss of its own output, where a contingency
loss charges the true labeling (Delta(y, y) != 0) or leaves 0..100 percent, or where the loss does
not pickle.

Contingency-table losses (``loss.is_contingency``) are enumerated over all labelings, respecting
``loss.feasible``. A loss of another structure is enumerated if it provides ``outputs(y)``, an
iterable of every admissible (coef, delta) — :class:`structfs.losses.ROCAreaLoss` does (all pairwise
orderings); otherwise only consistency and pickling are checked.
"""
from __future__ import annotations

import itertools
import pickle
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from .losses import Loss

__all__ = ["check_loss"]


def _labels(rng, n):
    yield np.where(rng.random(n) < 0.5, 1.0, -1.0)
    if n >= 2:
        one = -np.ones(n)
        one[rng.integers(n)] = 1.0                  # a single positive (extreme ratio)
        yield one
        yield -one                                  # a single negative
    yield np.ones(n)                                # one class only (the loss may decline it)


def _scores(rng, n):
    yield rng.normal(size=n)
    yield rng.integers(-2, 3, size=n).astype(float) * 0.5      # ties, some exactly at the margin
    yield np.zeros(n)                                          # all equal
    yield rng.normal(size=n) * 1e3
    yield rng.normal(size=n) * 1e-4


def _contingency_outputs(loss, y):
    n = y.shape[0]
    pos = y > 0
    P, N = int(pos.sum()), int((~pos).sum())
    for bits in itertools.product((-1.0, 1.0), repeat=n):
        y_bar = np.array(bits)
        pred = y_bar > 0
        a, b = int((pos & pred).sum()), int((~pos & pred).sum())
        if loss.feasible is not None and not bool(np.asarray(loss.feasible(a, b, P, N))):
            continue
        yield (50.0 / n) * (y - y_bar), loss.delta(y, y_bar)


def _check_delta(loss, y):
    """Failure messages for Delta itself on labels ``y``: Delta(y, y) = 0 (the true labeling costs
    nothing) where y has both classes (with one class a measure such as F1 is 0 by convention), and
    0 <= Delta <= 100 (percent) on every admissible labeling."""
    out = []
    P, N = int((y > 0).sum()), int((y < 0).sum())
    admissible = loss.feasible is None or bool(np.asarray(loss.feasible(P, 0, P, N)))
    if P and N and admissible:
        own = float(loss.delta(y, y))
        if own != 0.0:
            out.append(f"Delta(y, y) = {own:.10g} for the true labeling; it must be 0")
    for _, delta in _contingency_outputs(loss, y):
        if not 0.0 <= float(delta) <= 100.0:
            out.append(f"Delta = {float(delta):.10g} on an admissible labeling; it must lie in 0..100 (percent)")
            break
    return out


def _check_case(loss, y, s, tol):
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
    elif hasattr(loss, "outputs"):
        outputs = loss.outputs(y)
    else:
        return out
    best = max((float(d) - float(np.asarray(c) @ s) for c, d in outputs), default=None)
    if best is None:
        out.append("no output is admissible, but the oracle returned one")
    elif abs(best - h) > tol * max(1.0, abs(best)):
        out.append(f"oracle's H = {h:.10g} but the best output has H = {best:.10g}")
    return out


def check_loss(loss: Loss, sizes: Sequence[int] = (1, 2, 3, 4, 6, 8), seed: int = 0, tol: float = 1e-9) -> int:
    """Verify ``loss`` by enumeration; raise AssertionError naming the failing cases.

    For every n in ``sizes`` it tries random, single-positive, single-negative and one-class labels
    against random, tied, all-equal and extremely scaled scores (labels the loss declines with a
    ValueError in ``validate`` are skipped); a ``jit_oracle`` must answer as ``oracle`` does. Returns
    the number of cases checked.
    """
    try:
        clone = pickle.loads(pickle.dumps(loss))
    except Exception as exc:               # noqa: BLE001 - any pickling failure is the finding
        raise AssertionError(f"{loss!r} does not pickle ({type(exc).__name__}: {exc}); models hold their loss "
                             "and joblib ships it to workers: avoid lambdas and local functions in attributes."
                             ) from None
    rng = np.random.default_rng(seed)
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
    if failures:
        more = f" (and {len(failures) - 5} more)" if len(failures) > 5 else ""
        raise AssertionError(f"check_loss({loss!r}) failed in {len(failures)} case(s){more}:\n  "
                             + "\n  ".join(failures[:5]))
    return checked
