"""Prec@k, Rec@k and PRBEP: losses on labelings whose number of predicted positives is fixed.

The restriction fixes b as a function of a (a + b = k, or b = c = P - a for PRBEP), so after sorting
each class by score the oracle is one vectorised pass over the feasible a: O(n log n) in all.
"""
import numpy as np

from .._validation import check_positive_float, check_positive_int
from ..metrics import _top_k_hits, resolve_k
from .base import ContingencyLoss, SortedClasses, _require_positive


class _FixedCountLoss(ContingencyLoss):
    """Shared oracle: maximise H over a in [a_min, a_max] with b = b_of_a(a)."""

    def _b_of_a(self, a, P, N, n):  # pragma: no cover - interface
        raise NotImplementedError

    def _oracle(self, y, s):
        srt = SortedClasses(y, s)
        P, N = srt.P, srt.N
        a = np.arange(P + 1)
        b = self._b_of_a(a, P, N, srt.n)
        ok = (b >= 0) & (b <= N)
        if not ok.any():
            raise ValueError(f"No labeling satisfies the {self.name} restriction on these labels.")
        a, b = a[ok], b[ok]
        delta = self._delta_table(a, b, P - a, N - b)
        best = int(np.argmax(delta + srt.score_part(a, b)))
        return srt.coef(int(a[best]), int(b[best])), float(delta[best])


class _AtKLoss(_FixedCountLoss):
    default_frac = None
    needs_positive = False

    def __init__(self, k=None, k_frac=None):
        if k is not None and k_frac is not None:
            raise ValueError("Give either k or k_frac, not both.")
        self.k = None if k is None else check_positive_int(k, "k")
        self.k_frac = None if k_frac is None else check_positive_float(k_frac, "k_frac")
        super().__init__(self._table_delta, self._table_feasible)

    @property
    def params(self):
        return {"k": self.k, "k_frac": self.k_frac}

    def k_for(self, P, n):
        return resolve_k(self.k, self.k_frac, int(P), int(n), self.default_frac)

    def _check_classes(self, y):
        if self.needs_positive:
            _require_positive(y, self.name)
        self.k_for(np.count_nonzero(y > 0), y.shape[0])  # raises when k is outside 1..n

    def _table_feasible(self, a, b, P, N):
        return a + b == self.k_for(P, P + N)

    def _b_of_a(self, a, P, N, n):
        return self.k_for(P, n) - a

    @staticmethod
    def _table_scalars(a, b, c, d):
        P = int(np.asarray(a + c).flat[0])
        n = int(np.asarray(a + b + c + d).flat[0])
        return P, n


class PrecisionAtKLoss(_AtKLoss):
    """Delta = 100 (1 - a/k) over labelings with exactly k predicted positives (a + b = k)."""

    name = "prec@k"
    default_frac = 0.5

    def _table_delta(self, a, b, c, d):
        P, n = self._table_scalars(a, b, c, d)
        return 100.0 * (1.0 - a / self.k_for(P, n))

    def _score(self, y, s):
        k = self.k_for(np.count_nonzero(y > 0), y.shape[0])
        return 100.0 * _top_k_hits(y, s, k) / k


class RecallAtKLoss(_AtKLoss):
    """Delta = 100 (1 - a/P) over labelings with exactly k predicted positives (a + b = k)."""

    name = "rec@k"
    default_frac = 2.0
    needs_positive = True

    def _table_delta(self, a, b, c, d):
        return 100.0 * (1.0 - a / (a + c))

    def _score(self, y, s):
        P = int(np.count_nonzero(y > 0))
        return 100.0 * _top_k_hits(y, s, self.k_for(P, y.shape[0])) / P


class PRBEPLoss(_FixedCountLoss):
    """Delta = 100 (1 - a/(a+b)) over labelings with b = c, i.e. a + b = P (precision = recall)."""

    name = "prbep"

    def _check_classes(self, y):
        _require_positive(y, self.name)

    def __init__(self):
        super().__init__(lambda a, b, c, d: 100.0 * (1.0 - a / (a + c)),
                         lambda a, b, P, N: b == P - a)

    @property
    def params(self):
        return {}

    def _b_of_a(self, a, P, N, n):
        return P - a

    def _score(self, y, s):
        P = int(np.count_nonzero(y > 0))
        return 100.0 * _top_k_hits(y, s, P) / P
